// Command build-debs builds the side-by-side Kubernetes Debian packages
// from the build harness output; `make deb` runs it. See rpm/README.md.
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

	"github.com/kubelet-compat/kubelet-compat/deb"
	"github.com/kubelet-compat/kubelet-compat/pkg/hostdeps"
	"github.com/kubelet-compat/kubelet-compat/pkg/matrix"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "build-debs: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	var cfg deb.Config
	var versions, epoch string
	var verbose bool
	flag.StringVar(&cfg.InputDir, "input", "_output", "harness output: `dir`/<ver>/{kubelet,kubeadm,kubectl[,kube-apiserver,...]}")
	flag.StringVar(&cfg.OutputDir, "output", "_output/debs", "where the .debs go")
	flag.StringVar(&versions, "versions", "", "Kubernetes versions to package, space or comma separated: releases (1.21.14), minors of the matrix (1.21) or its sets (default, ci, all); none builds only kubernetes-unversioned")
	flag.StringVar(&cfg.KubeletCompat, "kubelet-compat", "", "the kubelet-compat CLI `binary` for the node packages")
	flag.StringVar(&epoch, "source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "mtime of everything and the changelog's date, in `seconds` (default $SOURCE_DATE_EPOCH)")
	flag.StringVar(&cfg.Revision, "revision", "", "Debian revision of the versioned packages; default: deb/releases.txt's, for content it recorded")
	flag.StringVar(&cfg.UnversionedVersion, "unversioned-version", deb.DefaultUnversionedVersion, "upstream version of kubernetes-unversioned")
	flag.StringVar(&cfg.UnversionedRevision, "unversioned-revision", "", "Debian revision of kubernetes-unversioned; default: deb/releases.txt's")
	flag.StringVar(&cfg.Arch, "arch", deb.DefaultArch, "Debian architecture of the binaries")
	flag.StringVar(&cfg.Compression, "compression", deb.DefaultCompression, "dpkg-deb -Z")
	flag.IntVar(&cfg.Jobs, "jobs", runtime.NumCPU(), "packages to build at once")
	flag.BoolVar(&verbose, "v", false, "show dpkg-deb's output")
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
	if cfg.SourceDateEpoch, err = strconv.ParseInt(epoch, 10, 64); err != nil {
		return fmt.Errorf("source date epoch %q: %w", epoch, err)
	}
	if verbose {
		cfg.Log = os.Stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := hostdeps.Ensure(ctx, os.Stderr, hostdeps.Deb); err != nil {
		return err
	}
	start := time.Now()
	built, err := deb.Build(ctx, cfg)
	for _, p := range built {
		if st, err := os.Stat(p); err == nil {
			fmt.Printf("%-60s %10.1f KiB\n", filepath.Base(p), float64(st.Size())/1024)
		}
	}
	if err != nil {
		return err
	}
	fmt.Printf("built %d .debs into %s in %s (SOURCE_DATE_EPOCH=%d)\n", len(built), cfg.OutputDir, time.Since(start).Round(time.Millisecond), cfg.SourceDateEpoch)
	return nil
}
