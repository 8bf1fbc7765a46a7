package rpm

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
	"github.com/kubelet-compat/kubelet-compat/pkg/hostdeps"
	"github.com/kubelet-compat/kubelet-compat/pkg/layout"
	"github.com/kubelet-compat/kubelet-compat/pkg/layout/files"
	"github.com/kubelet-compat/kubelet-compat/pkg/packaging"
)

// Defaults of Config, documented in rpm/README.md.
const (
	DefaultDist               = ".kc"
	DefaultArch               = "x86_64"
	DefaultBuildHost          = "build.kubelet-compat"
	DefaultUnversionedVersion = packaging.DefaultUnversionedVersion
	// DefaultPayload is xz: EL7's rpm 4.11 cannot read rpm 4.18's zstd
	// payloads. Level 2 as EL's own packages: level 6 saves ~20% for ~3x the
	// CPU time on 100 MB kubelets. Single-threaded on purpose: rpm's
	// multithreaded xz ("w2T.xzdio") writes different bytes for different
	// thread counts, hence build hosts.
	DefaultPayload = "w2.xzdio"
)

// Config describes one run of the RPM build: the options of every format
// (Jobs counts rpmbuild runs: the unversioned spec, and one per versioned
// group and version) and the RPM format's own.
type Config struct {
	packaging.Options

	// Release (of the versioned packages, every versioned group's) and
	// UnversionedRelease: unset, from ReleaseTable, which refuses content
	// it does not record. Set, they override it, e.g. for binaries rebuilt
	// under unchanged packaging, which the table does not see.
	Release            string
	UnversionedRelease string
	Dist               string // %{dist}, appended to every Release
	Arch               string // rpm arch of the binaries
	BuildHost          string
	UnitDir            string // %{_unitdir} on the nodes (and the description's)
	Payload            string // %{_binary_payload}

	// Layout describes the packages (default: layout.New(UnitDir)).
	Layout layout.Layout
	// Templates holds templates/*.spec.tmpl, the RPM format (default: the
	// embedded Templates); tests give a changed copy.
	Templates fs.FS
	// Shipped holds the files the packages ship, by name (default:
	// pkg/layout/files, the files both formats ship).
	Shipped fs.FS
	// ReleaseTable is the content of releases.txt (default: the embedded
	// ReleaseTable).
	ReleaseTable []byte

	// Rpmbuild is the rpmbuild command (default "rpmbuild").
	Rpmbuild string

	// releases are the versioned groups' releases, by group key.
	releases map[string]string
}

func (c *Config) setDefaults() {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	c.Options.SetDefaults()
	def(&c.Dist, DefaultDist)
	def(&c.Arch, DefaultArch)
	def(&c.BuildHost, DefaultBuildHost)
	def(&c.UnitDir, DefaultUnitDir)
	def(&c.Payload, DefaultPayload)
	def(&c.Rpmbuild, hostdeps.Rpmbuild.Name)
	if len(c.Layout.Groups) == 0 {
		// An unknown set fails in Build (Check).
		c.Layout, _ = layout.ForSet(c.Set, c.UnitDir)
	}
	if c.Templates == nil {
		c.Templates = Templates
	}
	if c.Shipped == nil {
		c.Shipped = files.Shipped
	}
	if c.ReleaseTable == nil {
		c.ReleaseTable = ReleaseTable
	}
}

// Build builds kubernetes-unversioned and the versioned packages of every
// version in cfg.Versions into cfg.OutputDir, then rewrites
// OutputDir/SHA256SUMS over every RPM there. It returns the RPMs it built.
func Build(ctx context.Context, cfg Config) ([]string, error) {
	cfg.setDefaults()
	if len(cfg.Layout.Groups) == 0 {
		return nil, fmt.Errorf("no package set %q", cfg.Set)
	}
	if err := cfg.Check("RPMs", cfg.Layout); err != nil {
		return nil, err
	}
	if err := cfg.resolveReleases(); err != nil {
		return nil, err
	}
	// rpmbuild runs the %install scriptlet in %{_builddir}, so a relative
	// _topdir (the default _output/rpms) would name SOURCES relative to
	// the wrong directory.
	if err := cfg.Absolutise(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.OutputDir, 0o755); err != nil {
		return nil, fmt.Errorf("create output directory: %w", err)
	}
	builds, err := cfg.builds()
	if err != nil {
		return nil, err
	}
	// xz compression of the 100 MB kubelets is single-threaded: running
	// several rpmbuilds is what uses the cores.
	built, err := packaging.Parallel(ctx, cfg.Jobs, builds)
	if err != nil {
		return built, err
	}
	return built, packaging.WriteSHA256Sums(cfg.OutputDir, ".rpm")
}

// builds are the rpmbuild runs: kubernetes-unversioned, then every
// versioned group of every version (an optional group where the input has
// its binaries).
func (c Config) builds() ([]func(context.Context) ([]string, error), error) {
	builds := []func(context.Context) ([]string, error){
		func(ctx context.Context) ([]string, error) { return buildUnversioned(ctx, c) },
	}
	jobs, err := c.Layout.Jobs(c.InputDir, c.Versions)
	if err != nil {
		return nil, err
	}
	for _, j := range jobs {
		builds = append(builds, func(ctx context.Context) ([]string, error) { return buildVersioned(ctx, c, j.Group, j.Version) })
	}
	return builds, nil
}

func buildVersioned(ctx context.Context, cfg Config, g layout.Group, version string) ([]string, error) {
	spec, err := renderVersioned(cfg.Templates, cfg.Layout, VersionedSpec{Version: version, Release: cfg.releases[g.Key], Arch: cfg.Arch, Group: g.Key})
	if err != nil {
		return nil, err
	}
	top, err := newTopdir(cfg.OutputDir, version)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(top)
	if err := cfg.inputs().Stage(ctx, g, version, filepath.Join(top, "SOURCES"), top); err != nil {
		return nil, err
	}
	name := "kubernetes-" + version + ".spec"
	switch {
	case g.Prefix != "":
		name = g.NamePrefix() + version + ".spec"
	case g.Key != layout.VersionedKey:
		name = "kubernetes-" + version + "-" + strings.TrimPrefix(g.Key, "kubernetes-") + ".spec"
	}
	return rpmbuild(ctx, cfg, top, name, spec, "--target", cfg.Arch)
}

func buildUnversioned(ctx context.Context, cfg Config) ([]string, error) {
	spec, err := renderUnversioned(cfg.Templates, cfg.Layout, UnversionedSpec{
		Version: cfg.UnversionedVersion,
		Release: cfg.UnversionedRelease,
	})
	if err != nil {
		return nil, err
	}
	top, err := newTopdir(cfg.OutputDir, "unversioned")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(top)
	g, _ := cfg.Layout.Unversioned()
	if err := cfg.inputs().Stage(ctx, g, "", filepath.Join(top, "SOURCES"), top); err != nil {
		return nil, err
	}
	return rpmbuild(ctx, cfg, top, g.Key+".spec", spec)
}

// inputs are the build's inputs as pkg/layout stages them.
func (c Config) inputs() layout.Inputs {
	return layout.Inputs{InputDir: c.InputDir, KubeletCompat: c.KubeletCompat, Shipped: c.shipped}
}

// shipped returns a file the packages ship, by name.
func (c Config) shipped(name string) ([]byte, error) {
	b, err := fs.ReadFile(c.Shipped, name)
	if err != nil {
		return nil, fmt.Errorf("shipped file %s: %w", name, err)
	}
	return b, nil
}

// newTopdir makes a private rpmbuild tree next to the output, so that the
// finished RPMs are moved, not copied, and no half-written file ever
// appears in the output directory.
func newTopdir(outputDir, what string) (string, error) {
	top, err := os.MkdirTemp(outputDir, ".rpmbuild-"+what+"-")
	if err != nil {
		return "", fmt.Errorf("create rpmbuild tree: %w", err)
	}
	for _, d := range []string{"SOURCES", "SPECS", "BUILD", "BUILDROOT", "RPMS", "SRPMS", "tmp", "rpmdb"} {
		if err := os.Mkdir(filepath.Join(top, d), 0o755); err != nil {
			os.RemoveAll(top)
			return "", fmt.Errorf("create rpmbuild tree: %w", err)
		}
	}
	return top, nil
}

// Defines returns the macros set on rpmbuild's command line for a build in
// topdir. Everything that decides the bytes of an RPM is set here rather than
// taken from the build host (Debian's rpm has no %_unitdir and no %dist, and
// its defaults differ from EL's).
func (c Config) Defines(topdir string) []string {
	return []string{
		"_topdir " + topdir,
		"_sourcedir " + filepath.Join(topdir, "SOURCES"),
		"_specdir " + filepath.Join(topdir, "SPECS"),
		"_builddir " + filepath.Join(topdir, "BUILD"),
		"_buildrootdir " + filepath.Join(topdir, "BUILDROOT"),
		"_rpmdir " + filepath.Join(topdir, "RPMS"),
		"_srcrpmdir " + filepath.Join(topdir, "SRPMS"),
		"_tmppath " + filepath.Join(topdir, "tmp"),
		// rpmbuild needs no database; keep it away from the user's.
		"_dbpath " + filepath.Join(topdir, "rpmdb"),
		// Flat output: _output/rpms/<name>-<version>-<release>.<arch>.rpm.
		"_build_name_fmt %%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm",
		"_unitdir " + c.UnitDir,
		"_presetdir " + PresetDir,
		"dist " + c.Dist,
		"_buildhost " + c.BuildHost,
		"use_source_date_epoch_as_buildtime 1",
		"clamp_mtime_to_source_date_epoch 1",
		"source_date_epoch_from_changelog 0",
		"debug_package %{nil}",
		"_build_id_links none",
		"_binary_payload " + c.Payload,
		"_binary_filedigest_algorithm 8", // SHA-256, which EL7's rpm verifies
	}
}

// rpmbuild writes the spec into topdir, runs rpmbuild -bb and moves the
// RPMs it made into the output directory.
func rpmbuild(ctx context.Context, cfg Config, top, specName string, spec []byte, extraArgs ...string) ([]string, error) {
	// The macros must hold absolute paths whatever the caller passed (see
	// Build).
	top, err := filepath.Abs(top)
	if err != nil {
		return nil, fmt.Errorf("rpmbuild tree: %w", err)
	}
	specPath := filepath.Join(top, "SPECS", specName)
	if err := os.WriteFile(specPath, spec, 0o644); err != nil {
		return nil, fmt.Errorf("write spec: %w", err)
	}
	args := []string{"-bb"}
	for _, d := range cfg.Defines(top) {
		args = append(args, "--define", d)
	}
	args = append(args, extraArgs...)
	args = append(args, specPath)
	cmd := exec.Command(cfg.Rpmbuild, args...)
	cmd.Log = cfg.Log
	cmd.Env = []string{
		"SOURCE_DATE_EPOCH=" + strconv.FormatInt(cfg.SourceDateEpoch, 10),
		"LC_ALL=C", "TZ=UTC",
		// No ~/.rpmmacros of whoever runs the build.
		"HOME=" + top,
	}
	if _, err := cmd.Output(ctx); err != nil {
		var cmdErr *exec.Error
		if errors.As(err, &cmdErr) && cfg.Log == nil {
			return nil, fmt.Errorf("rpmbuild %s: %w\n%s", specName, err, strings.TrimSpace(cmdErr.Stderr))
		}
		return nil, fmt.Errorf("rpmbuild %s: %w", specName, err)
	}
	made, err := filepath.Glob(filepath.Join(top, "RPMS", "*.rpm"))
	if err != nil || len(made) == 0 {
		return nil, fmt.Errorf("rpmbuild %s made no RPM", specName)
	}
	var moved []string
	for _, src := range made {
		dst := filepath.Join(cfg.OutputDir, filepath.Base(src))
		if err := os.Rename(src, dst); err != nil {
			return moved, fmt.Errorf("move %s into the output: %w", filepath.Base(src), err)
		}
		moved = append(moved, dst)
	}
	sort.Strings(moved)
	return moved, nil
}
