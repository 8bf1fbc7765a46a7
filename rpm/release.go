package rpm

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/layout"
	"github.com/kubelet-compat/kubelet-compat/pkg/packaging"
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
type releaseRow = packaging.Row

const releaseTableHeader = `# The Release of the packages built from each spec template, and the
# sha256 of their content for which it was given (see "Releases" in
# rpm/README.md): the template rendered with placeholders for version,
# release and arch, the files the packages ship from pkg/layout/files, and
# the macros set on rpmbuild's command line that are not paths of one build,
# the payload, %{dist} or the build host. The build refuses content whose
# sha256 is not the one here. After changing a template or a shipped file:
#   make rpm-releases   (go test ./rpm -run TestReleasesUpToDate -update-releases)
# raises the release of each template whose content changed by one.
# template release sha256
`

func parseReleaseTable(b []byte) (map[string]releaseRow, error) {
	return packaging.ParseTable("releases.txt", b)
}

// table is rpm/releases.txt, with this configuration's digests.
func (c Config) table() packaging.Table {
	return packaging.Table{Name: "rpm/releases.txt", Header: releaseTableHeader,
		Fix: "make rpm-releases (go test ./rpm -run TestReleasesUpToDate -update-releases)", Digest: c.contentDigest}
}

// contentDigest returns the sha256 of what shapes the content of the
// packages built from template key, besides the binaries and the kubectl
// completion (which come from the harness output and are not in the
// repository): the spec rendered with placeholders for what is not
// content (version, release, arch), every file the packages ship from
// pkg/layout/files, and every macro of Defines that is not a path of one build, the
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
		spec, err = renderVersioned(c.Templates, c.Layout, VersionedSpec{
			Version: placeholderVersion, Release: "@RELEASE@", Arch: "@ARCH@", Group: key})
	} else {
		spec, err = renderUnversioned(c.Templates, c.Layout, UnversionedSpec{Version: placeholderVersion, Release: "@RELEASE@"})
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
		b, err := c.shipped(src.Name)
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

// resolveReleases sets UnversionedRelease and the versioned groups'
// releases that are not set from the table; the versioned ones only when
// versioned packages are built.
func (c *Config) resolveReleases() error {
	var err error
	c.UnversionedRelease, c.releases, err = c.table().Resolve(c.ReleaseTable, c.Layout, len(c.Versions) > 0, c.UnversionedRelease, c.Release)
	if err != nil {
		return err
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
	if len(cfg.Layout.Groups) > 0 {
		cfg.setDefaults()
		return cfg.table().Bump(table, cfg.Layout)
	}
	// Every set's groups: the table is shared.
	return packaging.BumpSets(table, func(set string) (packaging.Table, layout.Layout) {
		c := cfg
		c.Set = set
		c.setDefaults()
		return c.table(), c.Layout
	})
}
