// Command build-rpms builds the side-by-side Kubernetes RPMs from the build
// harness output; `make rpm` runs it. See rpm/README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/hostdeps"
	"github.com/kubelet-compat/kubelet-compat/pkg/matrix"
	"github.com/kubelet-compat/kubelet-compat/rpm"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "build-rpms: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	var cfg rpm.Config
	var versions, epoch string
	var verbose bool
	flag.StringVar(&cfg.InputDir, "input", "_output", "harness output: `dir`/<ver>/{kubelet,kubeadm,kubectl}")
	flag.StringVar(&cfg.OutputDir, "output", "_output/rpms", "where the RPMs go")
	flag.StringVar(&versions, "versions", "", "Kubernetes versions to package, space or comma separated: releases (1.21.14), minors of the matrix (1.21) or its sets (default, ci, all); none builds only kubernetes-unversioned")
	flag.StringVar(&cfg.KubeletCompat, "kubelet-compat", "", "the kubelet-compat CLI `binary` for the node packages")
	flag.StringVar(&epoch, "source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "mtime and build time of everything, in `seconds` (default $SOURCE_DATE_EPOCH)")
	flag.StringVar(&cfg.Release, "release", "", "Release of the versioned packages (before %{dist}); default: rpm/releases.txt's, for content it recorded")
	flag.StringVar(&cfg.UnversionedVersion, "unversioned-version", rpm.DefaultUnversionedVersion, "Version of kubernetes-unversioned")
	flag.StringVar(&cfg.UnversionedRelease, "unversioned-release", "", "Release of kubernetes-unversioned; default: rpm/releases.txt's, for content it recorded")
	flag.StringVar(&cfg.Dist, "dist", rpm.DefaultDist, "%{dist}")
	flag.StringVar(&cfg.Arch, "arch", rpm.DefaultArch, "rpm arch of the binaries")
	flag.StringVar(&cfg.Payload, "payload", rpm.DefaultPayload, "%{_binary_payload}; EL7 reads gzdio and xzdio only")
	flag.IntVar(&cfg.Jobs, "jobs", runtime.NumCPU(), "versions to build at once")
	flag.BoolVar(&verbose, "v", false, "show rpmbuild's output")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	var err error
	if cfg.Versions, err = matrix.Releases(strings.FieldsFunc(versions, func(r rune) bool { return r == ',' || r == ' ' })); err != nil {
		return err
	}
	if epoch == "" {
		return fmt.Errorf("set -source-date-epoch or SOURCE_DATE_EPOCH")
	}
	n, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return fmt.Errorf("source date epoch %q: %w", epoch, err)
	}
	cfg.SourceDateEpoch = n
	if verbose {
		cfg.Log = os.Stderr
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	// rpmbuild, from Debian's rpm package on Debian hosts.
	if err := hostdeps.Ensure(ctx, os.Stderr, hostdeps.RPM); err != nil {
		return err
	}
	start := time.Now()
	built, err := rpm.Build(ctx, cfg)
	for _, p := range built {
		if st, err := os.Stat(p); err == nil {
			fmt.Printf("%-55s %10.1f KiB\n", filepath.Base(p), float64(st.Size())/1024)
		}
	}
	if err != nil {
		return err
	}
	fmt.Printf("built %d RPMs into %s in %s (SOURCE_DATE_EPOCH=%d)\n", len(built), cfg.OutputDir, time.Since(start).Round(time.Millisecond), cfg.SourceDateEpoch)
	return nil
}
