package rpm

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/layout"
)

// ReleaseTable is rpm/releases.txt: the Release of the packages built from
// each spec template, with the digest of the content it was given for. The
// build takes the releases from it and refuses content whose digest is not
// the one recorded, so a package whose files or scripts changed cannot come
// out with the release of different content: `rpm -U` would not replace it.
// TestReleasesUpToDate checks it; `make rpm-releases` raises the release of
// every template whose content changed by one.
//
//go:embed releases.txt
var ReleaseTable []byte

// The template names are the table's keys: every package built from one
// template shares its content inputs, hence its release.
const (
	unversionedKey = layout.UnversionedKey
	versionedKey   = layout.VersionedKey
	masterKey      = layout.MasterKey
)

// releaseRow is one line of the table.
type releaseRow = layout.Row

const releaseTableHeader = `# The Release of the packages built from each spec template, and the
# sha256 of their content for which it was given (see "Releases" in
# rpm/README.md): the template rendered with placeholders for version,
# release and arch, the files the packages ship from rpm/files, and the
# macros set on rpmbuild's command line that are not paths of one build,
# the payload, %{dist} or the build host. The build refuses content whose
# sha256 is not the one here. After changing a template or a shipped file:
#   make rpm-releases   (go test ./rpm -run TestReleasesUpToDate -update-releases)
# raises the release of each template whose content changed by one.
# template release sha256
`

func parseReleaseTable(b []byte) (map[string]releaseRow, error) {
	return layout.ParseTable("releases.txt", b)
}

func formatReleaseTable(rows map[string]releaseRow) []byte {
	return layout.FormatTable(releaseTableHeader, rows)
}

// groupKeys are the table's keys: the description's groups, in order.
func (c Config) groupKeys() []string {
	var keys []string
	for _, g := range c.Layout.Groups {
		keys = append(keys, g.Key)
	}
	return keys
}

// contentDigest returns the sha256 of what shapes the content of the
// packages built from template key, besides the binaries and the kubectl
// completion (which come from the harness output and are not in the
// repository): the spec rendered with placeholders for what is not
// content (version, release, arch), every file the packages ship from
// files/, and every macro of Defines that is not a path of one build, the
// payload compression, %{dist} or the build host. A macro added to Defines
// counts as content until it is listed here: a release too many is
// harmless, one too few is the bug this prevents.
func (c Config) contentDigest(key string) (string, error) {
	g, ok := c.Layout.Group(key)
	if !ok {
		return "", fmt.Errorf("no spec template %s", key)
	}
	var spec []byte
	var err error
	if g.Versioned {
		spec, err = renderVersioned(c.Sources, c.Layout, VersionedSpec{
			Version: placeholderVersion, Release: "@RELEASE@", Arch: "@ARCH@", Group: key})
	} else {
		spec, err = renderUnversioned(c.Sources, c.Layout, UnversionedSpec{Version: placeholderVersion, Release: "@RELEASE@"})
	}
	if err != nil {
		return "", err
	}
	var m strings.Builder
	fmt.Fprintf(&m, "kubelet-compat rpm content 1\nspec %x\n", sha256.Sum256(spec))
	for _, src := range g.Sources() {
		if src.Kind != layout.Shipped {
			continue
		}
		b, err := shippedFile(c.Sources, src.Name)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&m, "file %s %x\n", src.Name, sha256.Sum256(b))
	}
	const top = "/@TOPDIR@"
	for _, d := range c.Defines(top) {
		name, _, _ := strings.Cut(d, " ")
		if strings.Contains(d, top) || name == "dist" || name == "_binary_payload" || name == "_buildhost" {
			continue
		}
		fmt.Fprintf(&m, "define %s\n", d)
	}
	sum := sha256.Sum256([]byte(m.String()))
	return hex.EncodeToString(sum[:]), nil
}

// tableRelease returns the release that table gives the packages of
// template key, if their content is the one it was given for.
func (c Config) tableRelease(table []byte, key string) (string, error) {
	digest, err := c.contentDigest(key)
	if err != nil {
		return "", err
	}
	rel, err := layout.TableRelease("rpm/releases.txt", table, key, digest, "make rpm-releases (go test ./rpm -run TestReleasesUpToDate -update-releases)")
	if err != nil {
		return "", err
	}
	return strconv.Itoa(rel), nil
}

// resolveReleases sets UnversionedRelease and the versioned groups'
// releases that are not set from the table; the versioned ones only when
// versioned packages are built.
func (c *Config) resolveReleases() error {
	var err error
	if c.UnversionedRelease == "" {
		if c.UnversionedRelease, err = c.tableRelease(c.ReleaseTable, unversionedKey); err != nil {
			return err
		}
	}
	c.releases = map[string]string{}
	for _, g := range c.Layout.Groups {
		if !g.Versioned || len(c.Versions) == 0 {
			continue
		}
		rel := c.Release
		if rel == "" {
			if rel, err = c.tableRelease(c.ReleaseTable, g.Key); err != nil {
				return err
			}
		}
		c.releases[g.Key] = rel
	}
	if c.Release == "" {
		c.Release = c.releases[versionedKey]
	}
	return nil
}

// BumpReleases returns table with the release of every template whose
// content, as cfg builds it, is not the one recorded raised by one (a
// template not in the table starts at 1), and its new digest; the rest as
// it was. It also returns the templates it bumped.
func BumpReleases(table []byte, cfg Config) ([]byte, []string, error) {
	cfg.setDefaults()
	return layout.BumpTable("releases.txt", releaseTableHeader, table, cfg.groupKeys(), cfg.contentDigest)
}
