// Package packaging is what the formats' packagers share: the options of
// a build and their flags, the Packager interface that cmd/build-packages
// runs for each format, the parallel build of a package list, SHA256SUMS,
// the release tables and the summary a build prints. What the packages
// contain is pkg/layout's description; rpm/ and deb/ write it in their
// format (see rpm/README.md).
package packaging

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/kubelet-compat/kubelet-compat/pkg/filehash"
	"github.com/kubelet-compat/kubelet-compat/pkg/hostdeps"
	"github.com/kubelet-compat/kubelet-compat/pkg/layout"
)

// DefaultUnversionedVersion is the version of kubernetes-unversioned in
// both formats.
const DefaultUnversionedVersion = "1.0.0"

// Options are what a build takes in every format.
type Options struct {
	// InputDir holds the harness output: <InputDir>/<ver>/<binary>.
	InputDir string
	// OutputDir receives the packages (flat) and SHA256SUMS.
	OutputDir string
	// Versions to package, e.g. 1.21.14. kubernetes-unversioned is always built.
	Versions []string
	// KubeletCompat is the kubelet-compat CLI binary shipped in every node package.
	KubeletCompat string
	// SourceDateEpoch is every mtime in the packages and their build time
	// (RPM) or the changelog's date (Debian).
	SourceDateEpoch int64
	// UnversionedVersion is the version of kubernetes-unversioned
	// (default DefaultUnversionedVersion).
	UnversionedVersion string
	// Jobs is how many builds run at once (default 1); the packages do
	// not depend on it.
	Jobs int
	// Log, when set, receives the packaging tools' output.
	Log io.Writer
	// Set is the package set (layout.ForSet): kubernetes (default) or
	// runtime, whose Versions are component@version.
	Set string
}

// Packager builds the packages of one format from the description; the
// formats' own settings are its flags.
type Packager interface {
	// Format is its -format name: rpm, deb.
	Format() string
	// Host is the pkg/hostdeps path of the programs the build runs.
	Host() hostdeps.Path
	// DefaultOutput is the output directory of a build of this format alone.
	DefaultOutput() string
	// AddFlags registers the format's own flags.
	AddFlags(fs *flag.FlagSet)
	// Build builds the packages into o.OutputDir and returns them.
	Build(ctx context.Context, o Options) ([]string, error)
}

// SetDefaults fills what is unset.
func (o *Options) SetDefaults() {
	if o.UnversionedVersion == "" {
		o.UnversionedVersion = DefaultUnversionedVersion
	}
	if o.Jobs < 1 {
		o.Jobs = 1
	}
}

// Check refuses a build no format can make reproducibly (layout.CheckBuild);
// what names the packages in messages.
func (o Options) Check(what string, l layout.Layout) error {
	return layout.CheckBuild(layout.BuildRequest{What: what, OutputDir: o.OutputDir, InputDir: o.InputDir,
		KubeletCompat: o.KubeletCompat, SourceDateEpoch: o.SourceDateEpoch, Versions: o.Versions, NeedsCLI: l.UsesCLI()})
}

// Absolutise makes the input, output and CLI paths absolute, so that no
// tool run in another directory (rpmbuild's %install runs in
// %{_builddir}) reads them relative to the wrong one.
func (o *Options) Absolutise() error {
	for _, p := range []*string{&o.InputDir, &o.OutputDir, &o.KubeletCompat} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return fmt.Errorf("absolute path of %s: %w", *p, err)
		}
		*p = abs
	}
	return nil
}

// Parallel runs the builds, up to jobs at once, and returns what they
// built in the order of builds. After a failure no further build starts;
// running ones finish (on ctx). An interrupted ctx is an error.
func Parallel(ctx context.Context, jobs int, builds []func(context.Context) ([]string, error)) ([]string, error) {
	built := make([][]string, len(builds))
	errs := make([]error, len(builds))
	g, failed := errgroup.WithContext(ctx)
	g.SetLimit(max(jobs, 1))
	for i, b := range builds {
		g.Go(func() error {
			if failed.Err() != nil {
				return nil
			}
			built[i], errs[i] = b(ctx)
			return errs[i]
		})
	}
	_ = g.Wait() // every error is in errs
	var out []string
	for _, b := range built {
		out = append(out, b...)
	}
	if err := errors.Join(errs...); err != nil {
		return out, err
	}
	return out, ctx.Err()
}

// WriteSHA256Sums writes dir/SHA256SUMS in sha256sum's format over every
// file of dir whose name ends in ext (".rpm", ".deb"), so that
// `sha256sum -c` checks a build and two builds compare with diff.
func WriteSHA256Sums(dir, ext string) error {
	pkgs, err := filepath.Glob(filepath.Join(dir, "*"+ext))
	if err != nil {
		return err
	}
	sort.Strings(pkgs)
	var b strings.Builder
	for _, p := range pkgs {
		sum, err := filehash.SHA256(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, filepath.Base(p))
	}
	if err := os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write SHA256SUMS: %w", err)
	}
	return nil
}

// PrintSizes writes one line per package with its size.
func PrintSizes(w io.Writer, built []string) {
	for _, p := range built {
		if st, err := os.Stat(p); err == nil {
			fmt.Fprintf(w, "%-60s %10.1f KiB\n", filepath.Base(p), float64(st.Size())/1024)
		}
	}
}

// PrintSummary writes the line that ends a format's build.
func PrintSummary(w io.Writer, built []string, what string, o Options, took time.Duration) {
	fmt.Fprintf(w, "built %d %s into %s in %s (SOURCE_DATE_EPOCH=%d)\n", len(built), what, o.OutputDir, took.Round(time.Millisecond), o.SourceDateEpoch)
}
