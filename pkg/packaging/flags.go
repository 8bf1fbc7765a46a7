package packaging

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/layout"
	"github.com/kubelet-compat/kubelet-compat/pkg/matrix"
	"github.com/kubelet-compat/kubelet-compat/pkg/runtimebuild"
	"github.com/kubelet-compat/kubelet-compat/pkg/source/shim"
)

// RuntimeVersions reads the runtime set's -versions: make runtime's
// components (name@version, a bare name for its newest, all; space or
// comma separated; empty: all, none: only runtime-unversioned) as
// component@version.
func RuntimeVersions(s string) ([]string, error) {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }), ",")
	switch s {
	case "none":
		return nil, nil
	case "":
		s = "all"
	}
	cs, err := runtimebuild.ParseRequests(s)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.String())
	}
	return out, nil
}

// Flags are the flags every format's build takes; Options turns them into
// the build's Options.
type Flags struct {
	input, output, versions, cli, epoch, unversioned, set string
	jobs                                                  int
	verbose                                               bool
}

// AddFlags registers the shared flags on fs.
func (f *Flags) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&f.set, "set", layout.SetKubernetes, "the packages: kubernetes (-versions are Kubernetes versions, -input the harness output) or runtime (-versions are make runtime's components, name@version or all, -input its output _output/runtime)")
	fs.StringVar(&f.input, "input", "_output", "harness output: `dir`/<ver>/{kubelet,kubeadm,kubectl[,kube-apiserver,...]}")
	fs.StringVar(&f.output, "output", "", "where the packages go, flat (default: the format's, _output/rpms or _output/debs); with -format all, `dir`/rpms and dir/debs")
	fs.StringVar(&f.versions, "versions", "", "Kubernetes versions to package, space or comma separated: releases (1.21.14), minors of the matrix (1.21) or its sets (default, ci, all); none builds only kubernetes-unversioned")
	fs.StringVar(&f.cli, "kubelet-compat", "", "the kubelet-compat CLI `binary` for the node packages")
	fs.StringVar(&f.epoch, "source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "every mtime, the RPMs' build time and the changelog's date, in `seconds` (default $SOURCE_DATE_EPOCH)")
	fs.StringVar(&f.unversioned, "unversioned-version", DefaultUnversionedVersion, "version of kubernetes-unversioned")
	fs.IntVar(&f.jobs, "jobs", runtime.NumCPU(), "package builds at once (rpmbuild runs, dpkg-deb runs)")
	fs.BoolVar(&f.verbose, "v", false, "show the packaging tools' output")
}

// Options returns the build's options; output is the directory of the
// format (OutputDir of a format: see FormatOutput).
func (f *Flags) Options() (Options, error) {
	o := Options{InputDir: f.input, KubeletCompat: f.cli, UnversionedVersion: f.unversioned, Jobs: f.jobs}
	var err error
	switch f.set {
	case "", layout.SetKubernetes:
		if o.Versions, err = matrix.Releases(strings.FieldsFunc(f.versions, func(r rune) bool { return r == ',' || r == ' ' })); err != nil {
			return o, err
		}
		if err := upstreamOnly(o.Versions); err != nil {
			return o, err
		}
	case layout.SetRuntime:
		o.Set = layout.SetRuntime
		if o.Versions, err = RuntimeVersions(f.versions); err != nil {
			return o, err
		}
	default:
		return o, fmt.Errorf("-set %q: want %s or %s", f.set, layout.SetKubernetes, layout.SetRuntime)
	}
	if f.epoch == "" {
		return o, errors.New("set -source-date-epoch or SOURCE_DATE_EPOCH")
	}
	if o.SourceDateEpoch, err = strconv.ParseInt(f.epoch, 10, 64); err != nil {
		return o, fmt.Errorf("source date epoch %q: %w", f.epoch, err)
	}
	if f.verbose {
		o.Log = os.Stderr
	}
	return o, nil
}

// FormatOutput is the output directory of format p in a build of formats
// formats: -output itself for one format, <-output>/<format>s for more;
// unset, the format's default (_output/rpms, _output/debs; for the
// runtime set _output/runtime-rpms, _output/runtime-debs).
func (f *Flags) FormatOutput(p Packager, formats int) string {
	switch {
	case f.output == "" && f.set == layout.SetRuntime:
		return strings.Replace(p.DefaultOutput(), "_output/", "_output/runtime-", 1)
	case f.output == "":
		return p.DefaultOutput()
	case formats == 1:
		return f.output
	default:
		return f.output + "/" + p.Format() + "s"
	}
}

// upstreamOnly refuses a version whose matrix row builds binaries that are
// not upstream's (shim.NotUpstream: 1.38.0-beta.0's iptables shim); a
// version the matrix has no row for was not built from one.
func upstreamOnly(versions []string) error {
	for _, v := range versions {
		row, err := matrix.Lookup(v)
		if err != nil || row.Kubernetes != v {
			continue
		}
		if err := shim.NotUpstream(row); err != nil {
			return err
		}
	}
	return nil
}
