package rpm

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
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
	unversionedKey = "kubernetes-unversioned"
	versionedKey   = "kubernetes-versioned"
)

// releaseRow is one line of the table.
type releaseRow struct {
	release int
	digest  string
}

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
	rows := map[string]releaseRow{}
	s := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; s.Scan(); n++ {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("releases.txt:%d: want <template> <release> <sha256>, got %q", n, line)
		}
		rel, err := strconv.Atoi(f[1])
		if err != nil || rel < 1 {
			return nil, fmt.Errorf("releases.txt:%d: release %q is not a positive number", n, f[1])
		}
		if len(f[2]) != 64 {
			return nil, fmt.Errorf("releases.txt:%d: %q is not a sha256", n, f[2])
		}
		if _, dup := rows[f[0]]; dup {
			return nil, fmt.Errorf("releases.txt:%d: %s given twice", n, f[0])
		}
		rows[f[0]] = releaseRow{release: rel, digest: f[2]}
	}
	return rows, s.Err()
}

func formatReleaseTable(rows map[string]releaseRow) []byte {
	keys := make([]string, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	b.WriteString(releaseTableHeader)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %d %s\n", k, rows[k].release, rows[k].digest)
	}
	return b.Bytes()
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
	var spec []byte
	var files []string
	var err error
	switch key {
	case unversionedKey:
		spec, err = render(c.Sources, unversionedTemplate, UnversionedSpec{
			Version: "@VERSION@", Release: "@RELEASE@", Links: UnversionedLinks(c.UnitDir)})
		files = unversionedFiles
	case versionedKey:
		spec, err = render(c.Sources, versionedTemplate, VersionedSpec{
			Version: "@VERSION@", Release: "@RELEASE@", Arch: "@ARCH@"})
		files = versionedFiles
	default:
		return "", fmt.Errorf("no spec template %s", key)
	}
	if err != nil {
		return "", err
	}
	var m strings.Builder
	fmt.Fprintf(&m, "kubelet-compat rpm content 1\nspec %x\n", sha256.Sum256(spec))
	for _, name := range files {
		b, err := shippedFile(c.Sources, name)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&m, "file %s %x\n", name, sha256.Sum256(b))
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
	rows, err := parseReleaseTable(table)
	if err != nil {
		return "", err
	}
	digest, err := c.contentDigest(key)
	if err != nil {
		return "", err
	}
	row, ok := rows[key]
	if !ok {
		return "", fmt.Errorf("rpm/releases.txt has no release for %s (content sha256 %s): run make rpm-releases", key, digest)
	}
	if row.digest != digest {
		return "", fmt.Errorf("the content of the %s packages changed (sha256 %s) since rpm/releases.txt gave them release %d (sha256 %s): "+
			"run make rpm-releases (go test ./rpm -run TestReleasesUpToDate -update-releases), which raises it to %d, and commit rpm/releases.txt",
			key, digest[:12], row.release, row.digest[:12], row.release+1)
	}
	return strconv.Itoa(row.release), nil
}

// resolveReleases sets Release and UnversionedRelease that are not set
// from the table; Release only when versioned packages are built.
func (c *Config) resolveReleases() error {
	var err error
	if c.UnversionedRelease == "" {
		if c.UnversionedRelease, err = c.tableRelease(c.ReleaseTable, unversionedKey); err != nil {
			return err
		}
	}
	if c.Release == "" && len(c.Versions) > 0 {
		if c.Release, err = c.tableRelease(c.ReleaseTable, versionedKey); err != nil {
			return err
		}
	}
	return nil
}

// BumpReleases returns table with the release of every template whose
// content, as cfg builds it, is not the one recorded raised by one (a
// template not in the table starts at 1), and its new digest; the rest as
// it was. It also returns the templates it bumped.
func BumpReleases(table []byte, cfg Config) ([]byte, []string, error) {
	cfg.setDefaults()
	rows, err := parseReleaseTable(table)
	if err != nil {
		return nil, nil, err
	}
	var bumped []string
	for _, key := range []string{unversionedKey, versionedKey} {
		digest, err := cfg.contentDigest(key)
		if err != nil {
			return nil, nil, err
		}
		if row, ok := rows[key]; !ok || row.digest != digest {
			rows[key] = releaseRow{release: rows[key].release + 1, digest: digest}
			bumped = append(bumped, key)
		}
	}
	return formatReleaseTable(rows), bumped, nil
}
