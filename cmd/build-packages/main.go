// Command build-packages builds the side-by-side Kubernetes packages from
// the build harness output, as RPMs, as Debian packages or both, from the
// one description of the packages (pkg/layout); `make rpm`, `make deb` and
// the kind node images run it. See rpm/README.md.
//
//	build-packages -format rpm|deb|all [flags]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/deb"
	"github.com/kubelet-compat/kubelet-compat/pkg/hostdeps"
	"github.com/kubelet-compat/kubelet-compat/pkg/packaging"
	"github.com/kubelet-compat/kubelet-compat/rpm"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build-packages: %v\n", err)
		os.Exit(1)
	}
}

// packagers are the formats, in the order -format all builds them.
func packagers() []packaging.Packager {
	return []packaging.Packager{&rpm.Packager{}, &deb.Packager{}}
}

// what names a format's packages in the summary.
var what = map[string]string{"rpm": "RPMs", "deb": ".debs"}

// run parses args and builds every format they ask for. An interrupt
// (ctx) stops the packaging tools it runs.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("build-packages", flag.ContinueOnError)
	fs.SetOutput(stderr)
	all := packagers()
	var names []string
	for _, p := range all {
		names = append(names, p.Format())
	}
	format := fs.String("format", "", "the packages to build: "+strings.Join(names, ", ")+" or all")
	var common packaging.Flags
	common.AddFlags(fs)
	for _, p := range all {
		p.AddFlags(fs)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	chosen, err := choose(all, *format)
	if err != nil {
		return err
	}
	opts, err := common.Options()
	if err != nil {
		return err
	}
	for _, p := range chosen {
		o := opts
		o.OutputDir = common.FormatOutput(p, len(chosen))
		if err := build(ctx, p, o, stdout, stderr); err != nil {
			return err
		}
	}
	return nil
}

// choose returns the packagers -format names.
func choose(all []packaging.Packager, format string) ([]packaging.Packager, error) {
	if format == "all" {
		return all, nil
	}
	for _, p := range all {
		if p.Format() == format {
			return []packaging.Packager{p}, nil
		}
	}
	if format == "" {
		return nil, fmt.Errorf("-format is required: rpm, deb or all")
	}
	return nil, fmt.Errorf("-format %q: want rpm, deb or all", format)
}

// build installs what the format's build runs when the host lacks it,
// builds, and prints every package's size and a summary.
func build(ctx context.Context, p packaging.Packager, o packaging.Options, stdout, stderr io.Writer) error {
	if err := hostdeps.Ensure(ctx, stderr, p.Host()); err != nil {
		return err
	}
	start := time.Now()
	built, err := p.Build(ctx, o)
	packaging.PrintSizes(stdout, built)
	if err != nil {
		return fmt.Errorf("%s: %w", p.Format(), err)
	}
	packaging.PrintSummary(stdout, built, what[p.Format()], o, time.Since(start))
	return nil
}
