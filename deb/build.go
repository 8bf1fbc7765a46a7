package deb

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/md5"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
	"github.com/kubelet-compat/kubelet-compat/pkg/hostdeps"
	"github.com/kubelet-compat/kubelet-compat/pkg/layout"
	"github.com/kubelet-compat/kubelet-compat/pkg/layout/files"
	"github.com/kubelet-compat/kubelet-compat/pkg/packaging"
)

// Config describes one run of the Debian package build: the options of
// every format (Jobs counts dpkg-deb runs, one per package) and the Debian
// format's own.
type Config struct {
	packaging.Options

	// Revision (every versioned group's) and UnversionedRevision: unset,
	// from ReleaseTable, which refuses content it does not record; set,
	// they override it (binaries rebuilt under unchanged packaging).
	Revision            string
	UnversionedRevision string
	Arch                string // Debian architecture of the binaries
	// Compression is dpkg-deb's -Z.
	Compression string

	// Layout describes the packages (default: layout.Default()).
	Layout layout.Layout
	// Shipped holds the shipped files by name (default: pkg/layout/files,
	// the files both formats ship).
	Shipped fs.FS
	// ReleaseTable is the content of deb/releases.txt (default: the
	// embedded one).
	ReleaseTable []byte

	revisions map[string]string
}

func (c *Config) setDefaults() {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	c.Options.SetDefaults()
	def(&c.Arch, DefaultArch)
	def(&c.Compression, DefaultCompression)
	if len(c.Layout.Groups) == 0 {
		// An unknown set fails in Build.
		c.Layout, _ = layout.ForSet(c.Set, layout.DefaultUnitDir)
	}
	if c.Shipped == nil {
		c.Shipped = files.Shipped
	}
	if c.ReleaseTable == nil {
		c.ReleaseTable = ReleaseTable
	}
}

// shipped returns a file of pkg/layout/files as the .debs ship it: the kubelet's
// environment file at Debian's place in the units and the drop-in that
// name it.
func (c Config) shipped(name string) ([]byte, error) {
	b, err := fs.ReadFile(c.Shipped, name)
	if err != nil {
		return nil, fmt.Errorf("shipped file %s: %w", name, err)
	}
	return DebContent(b), nil
}

// DebContent is a shipped file's content in the .debs: the RPMs' with the
// environment file at Debian's place. It is the only difference in content
// between the formats.
func DebContent(b []byte) []byte {
	return bytes.ReplaceAll(b, []byte(layout.EnvFile(layout.RPM)), []byte(layout.EnvFile(layout.Deb)))
}

// job is one .deb to build.
type job struct {
	group   layout.Group
	pkg     layout.Package
	version string // "" for the unversioned group
}

// Build builds kubernetes-unversioned and the versioned packages of every
// version into cfg.OutputDir and rewrites OutputDir/SHA256SUMS over every
// .deb there. It returns the .debs it built, sorted.
func Build(ctx context.Context, cfg Config) ([]string, error) {
	cfg.setDefaults()
	if len(cfg.Layout.Groups) == 0 {
		return nil, fmt.Errorf("no package set %q", cfg.Set)
	}
	if err := cfg.Check("packages", cfg.Layout); err != nil {
		return nil, err
	}
	if err := cfg.resolveRevisions(); err != nil {
		return nil, err
	}
	if err := cfg.Absolutise(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.OutputDir, 0o755); err != nil {
		return nil, fmt.Errorf("create output directory: %w", err)
	}
	jobs, err := cfg.jobs()
	if err != nil {
		return nil, err
	}
	builds := make([]func(context.Context) ([]string, error), len(jobs))
	for i, j := range jobs {
		builds[i] = func(ctx context.Context) ([]string, error) {
			deb, err := buildOne(ctx, cfg, j)
			if deb == "" {
				return nil, err
			}
			return []string{deb}, err
		}
	}
	built, err := packaging.Parallel(ctx, cfg.Jobs, builds)
	sort.Strings(built)
	if err != nil {
		return built, err
	}
	return built, packaging.WriteSHA256Sums(cfg.OutputDir, ".deb")
}

// jobs are the .debs to build: kubernetes-unversioned's group, then every
// versioned group of every version (an optional group where the input has
// its binaries).
func (c Config) jobs() ([]job, error) {
	var jobs []job
	for _, g := range c.Layout.Groups {
		if g.Versioned {
			continue
		}
		for _, p := range g.Packages {
			jobs = append(jobs, job{g, p, ""})
		}
	}
	versioned, err := c.Layout.Jobs(c.InputDir, c.Versions)
	if err != nil {
		return nil, err
	}
	for _, v := range versioned {
		for _, p := range v.Group.Packages {
			jobs = append(jobs, job{v.Group, p, v.Version})
		}
	}
	return jobs, nil
}

// debVersion is the package's Version: the upstream version
// (layout.PackageVersion: 1.38.0~rc.1 for 1.38.0-rc.1) and the revision.
func (c Config) debVersion(j job) string {
	if j.version == "" {
		return c.UnversionedVersion + "-" + c.UnversionedRevision
	}
	return layout.PackageVersion(j.version) + "-" + c.revisions[j.group.Key]
}

// buildOne stages one package's tree and control files in a private
// directory next to the output and runs dpkg-deb on it.
func buildOne(ctx context.Context, cfg Config, j job) (string, error) {
	name := j.group.PackageName(j.pkg, j.version)
	work, err := os.MkdirTemp(cfg.OutputDir, ".debbuild-"+name+"-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	sources := filepath.Join(work, "sources")
	if err := os.Mkdir(sources, 0o755); err != nil {
		return "", err
	}
	// Stage only this package's sources.
	one := j.group
	one.Packages = []layout.Package{j.pkg}
	in := layout.Inputs{InputDir: cfg.InputDir, KubeletCompat: cfg.KubeletCompat, Shipped: cfg.shipped}
	if err := in.Stage(ctx, one, j.version, sources, work); err != nil {
		return "", err
	}
	date := time.Unix(cfg.SourceDateEpoch, 0)
	m, err := packageMeta(cfg.Layout, j.group, j.pkg, j.version, cfg.debVersion(j), cfg.Arch, date)
	if err != nil {
		return "", err
	}
	root := filepath.Join(work, "root")
	md5sums, size, err := stageTree(root, sources, j, m)
	if err != nil {
		return "", err
	}
	if err := writeControl(root, m, md5sums, size); err != nil {
		return "", err
	}
	if err := touchTree(root, date); err != nil {
		return "", err
	}
	arch := cfg.Arch
	if !j.group.Versioned {
		arch = "all"
	}
	out := filepath.Join(cfg.OutputDir, fmt.Sprintf("%s_%s_%s.deb", name, m.Version, arch))
	tmp := filepath.Join(work, "out.deb")
	cmd := exec.Command(hostdeps.DpkgDeb.Name, "--root-owner-group", "-Z"+cfg.Compression, "--threads-max=1", "--build", root, tmp)
	cmd.Log = cfg.Log
	cmd.Env = []string{"SOURCE_DATE_EPOCH=" + strconv.FormatInt(cfg.SourceDateEpoch, 10), "LC_ALL=C", "TZ=UTC"}
	if _, err := cmd.Output(ctx); err != nil {
		return "", fmt.Errorf("dpkg-deb --build %s: %w", name, err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return "", err
	}
	return out, nil
}

// stageTree makes the package's file system tree under root: the
// description's entries (every parent directory 0755, as dpkg lists
// them) and the Debian documentation. It returns md5sums' lines and the
// Installed-Size in KiB.
func stageTree(root, sources string, j job, m meta) ([]string, int64, error) {
	var md5sums []string
	var size int64
	mkdirs := func(dir string) error {
		rel := strings.TrimPrefix(dir, "/")
		cur := root
		for _, part := range strings.Split(rel, "/") {
			if part == "" {
				continue
			}
			cur = filepath.Join(cur, part)
			if err := os.Mkdir(cur, 0o755); err != nil && !os.IsExist(err) {
				return err
			}
			if err := os.Chmod(cur, 0o755); err != nil {
				return err
			}
		}
		return nil
	}
	if err := os.Mkdir(root, 0o755); err != nil {
		return nil, 0, err
	}
	addFile := func(p string, content io.Reader, mode os.FileMode) error {
		if err := mkdirs(path.Dir(p)); err != nil {
			return err
		}
		f, err := os.OpenFile(filepath.Join(root, p), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		h := md5.New()
		n, err := io.Copy(io.MultiWriter(f, h), content)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("stage %s: %w", p, err)
		}
		size += (n + 1023) / 1024
		md5sums = append(md5sums, fmt.Sprintf("%s  %s", hex.EncodeToString(h.Sum(nil)), strings.TrimPrefix(p, "/")))
		return os.Chmod(filepath.Join(root, p), mode)
	}
	sourceOf := map[string]layout.Source{}
	for _, f := range j.pkg.Files {
		if f.Type == layout.Regular {
			sourceOf[j.group.AbsPath(f, j.version)] = f.Source
		}
	}
	for _, e := range j.group.Entries(j.pkg, j.version, layout.Deb) {
		switch e.Type {
		case layout.Dir:
			if err := mkdirs(e.Path); err != nil {
				return nil, 0, err
			}
			if err := os.Chmod(filepath.Join(root, e.Path), os.FileMode(e.Mode)); err != nil {
				return nil, 0, err
			}
			size++
		case layout.Symlink:
			if err := mkdirs(path.Dir(e.Path)); err != nil {
				return nil, 0, err
			}
			if err := os.Symlink(e.Target, filepath.Join(root, e.Path)); err != nil {
				return nil, 0, err
			}
			size++
		case layout.Regular:
			src, ok := sourceOf[e.Path]
			if !ok && e.Path == layout.EnvFile(layout.Deb) {
				src, ok = sourceOf[layout.EnvFile(layout.RPM)]
			}
			if !ok {
				return nil, 0, fmt.Errorf("%s: no source", e.Path)
			}
			f, err := os.Open(filepath.Join(sources, src.StageName()))
			if err != nil {
				return nil, 0, err
			}
			err = addFile(e.Path, f, os.FileMode(e.Mode))
			f.Close()
			if err != nil {
				return nil, 0, err
			}
		}
	}
	docs := make([]string, 0, len(m.Docs))
	for p := range m.Docs {
		docs = append(docs, p)
	}
	sort.Strings(docs)
	for _, p := range docs {
		if err := addFile(p, bytes.NewReader(m.Docs[p]), 0o644); err != nil {
			return nil, 0, err
		}
	}
	sort.Slice(md5sums, func(a, b int) bool { return md5sums[a][34:] < md5sums[b][34:] })
	return md5sums, size, nil
}

func writeControl(root string, m meta, md5sums []string, size int64) error {
	dir := filepath.Join(root, "DEBIAN")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	control := strings.Replace(m.Control, "@INSTALLED_SIZE@", fmt.Sprintf("Installed-Size: %d\n", size), 1)
	files := map[string]string{"control": control, "md5sums": strings.Join(md5sums, "\n") + "\n"}
	if len(m.Conffiles) > 0 {
		files["conffiles"] = strings.Join(m.Conffiles, "\n") + "\n"
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
		if err := os.Chmod(filepath.Join(dir, name), 0o644); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(m.Scripts) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(m.Scripts[name]), 0o755); err != nil {
			return err
		}
		if err := os.Chmod(p, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// touchTree sets every mtime under root to date (dpkg-deb clamps newer
// ones to SOURCE_DATE_EPOCH, but keeps older ones).
func touchTree(root string, date time.Time) error {
	ts := []unix.Timespec{unix.NsecToTimespec(date.UnixNano()), unix.NsecToTimespec(date.UnixNano())}
	return filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW)
	})
}

// ReleaseTable is deb/releases.txt: the Debian revision of the packages of
// each group of the description, with the digest of their content.
//
//go:embed releases.txt
var ReleaseTable []byte

const releaseTableHeader = `# The Debian revision of the packages of each group of pkg/layout, and the
# sha256 of their content for which it was given (see "Releases" in
# rpm/README.md): their control files, maintainer scripts, documentation and
# file lists rendered with placeholders for version, revision and date, the
# files they ship from pkg/layout/files as the .debs ship them, and the dpkg-deb
# options. The build refuses content whose sha256 is not the one here.
#   make deb-releases   (go test ./deb -run TestReleasesUpToDate -update-releases)
# raises the revision of each group whose content changed by one.
# group revision sha256
`

const releasesFix = "make deb-releases (go test ./deb -run TestReleasesUpToDate -update-releases)"

// contentDigest is the sha256 of what shapes the .debs of group key
// besides the harness's binaries and the CLI.
func (c Config) contentDigest(key string) (string, error) {
	g, ok := c.Layout.Group(key)
	if !ok {
		return "", fmt.Errorf("no group %s in the description", key)
	}
	version := ""
	if g.Versioned {
		version = "0.0.0"
	}
	var m strings.Builder
	// Content 2: a gzipped doc counts by what it holds, not by the bytes
	// of the Go release's compressor (go1.27's differ from go1.26's).
	fmt.Fprintf(&m, "kubelet-compat deb content 2\ncompression %s\n", c.Compression)
	for _, p := range g.Packages {
		meta, err := packageMeta(c.Layout, g, p, version, "@VERSION@-@REVISION@", "@ARCH@", time.Unix(0, 0))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&m, "package %s\ncontrol %q\n", p.Name, meta.Control)
		for _, name := range sortedKeys(meta.Scripts) {
			fmt.Fprintf(&m, "script %s %q\n", name, meta.Scripts[name])
		}
		fmt.Fprintf(&m, "conffiles %q\n", meta.Conffiles)
		for _, doc := range sortedKeysBytes(meta.Docs) {
			b, err := docContent(doc, meta.Docs[doc])
			if err != nil {
				return "", err
			}
			fmt.Fprintf(&m, "doc %s %x\n", doc, sha256.Sum256(b))
		}
		for _, e := range g.Entries(p, version, layout.Deb) {
			fmt.Fprintf(&m, "entry %s %s %04o %q %v\n", e.Path, e.Type, e.Mode, e.Target, e.Config)
		}
		for _, f := range p.Files {
			if f.Type == layout.Regular && f.Source.Kind == layout.Shipped {
				b, err := c.shipped(f.Source.Name)
				if err != nil {
					return "", err
				}
				fmt.Fprintf(&m, "file %s %x\n", f.Source.Name, sha256.Sum256(b))
			}
		}
	}
	sum := sha256.Sum256([]byte(m.String()))
	return hex.EncodeToString(sum[:]), nil
}

// docContent is a doc as its reader sees it: a .gz doc uncompressed.
func docContent(name string, b []byte) ([]byte, error) {
	if !strings.HasSuffix(name, ".gz") {
		return b, nil
	}
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("doc %s: %w", name, err)
	}
	defer r.Close()
	return io.ReadAll(r)
}

// table is deb/releases.txt, with this configuration's digests.
func (c Config) table() packaging.Table {
	return packaging.Table{Name: "deb/releases.txt", Header: releaseTableHeader, Fix: releasesFix, Digest: c.contentDigest}
}

func (c *Config) resolveRevisions() error {
	var err error
	c.UnversionedRevision, c.revisions, err = c.table().Resolve(c.ReleaseTable, c.Layout, len(c.Versions) > 0, c.UnversionedRevision, c.Revision)
	return err
}

// BumpReleases returns table with the revision of every group whose
// content changed raised by one, and the groups it raised.
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

func sortedKeysBytes(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
