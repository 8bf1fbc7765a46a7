// Command build-runtime builds the container runtime of a node from the Go
// module proxy (containerd with its runc shim and ctr, runc, crictl, the CNI
// plugins; see pkg/runtimebuild) into $KC_CACHE/runtime/<name>-<version>/
// and copies each to _output/runtime/<name>-<version>/. A patched
// component (containerd@1.7.36+compat.1) is built with its patch series
// from runtime/patches applied.
//
//	go run ./runtime/cmd/build-runtime build -components containerd@1.7.35,runc@1.5.3
//	go run ./runtime/cmd/build-runtime build -components containerd@1.7.36+compat.1
//	go run ./runtime/cmd/build-runtime verify -components runc@1.5.3
//	go run ./runtime/cmd/build-runtime list
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

	"github.com/kubelet-compat/kubelet-compat/pkg/cachedir"
	"github.com/kubelet-compat/kubelet-compat/pkg/hostdeps"
	"github.com/kubelet-compat/kubelet-compat/pkg/runtimebuild"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "build-runtime: %v\n", err)
		os.Exit(1)
	}
}

const usage = "usage: build-runtime build|verify|list [-components NAME@VERSION,...|all] [-output DIR] [-patches DIR] [-rebuild]"

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%s", usage)
	}
	sub := args[0]
	fs := flag.NewFlagSet("build-runtime "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are one line, below
	components := fs.String("components", "", "comma-separated NAME@VERSION, or all (build-runtime list names them)")
	output := fs.String("output", "_output/runtime", "where each component is copied, as <name>-<version>/")
	rebuild := fs.Bool("rebuild", false, "build again even when the cache holds a build")
	patches := fs.String("patches", runtimebuild.PatchesDir, "the patch series of the patched components, as <dir>/<component's series>/series")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, usage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return nil
		}
		return fmt.Errorf("%v; %s", err, usage)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q; %s", fs.Arg(0), usage)
	}
	if sub == "list" {
		return list(stdout)
	}
	if sub != "build" && sub != "verify" {
		return fmt.Errorf("unknown command %q; %s", sub, usage)
	}
	comps, err := runtimebuild.ParseRequests(*components)
	if err != nil {
		return err
	}
	if err := hostdeps.Ensure(ctx, stderr, hostdeps.Runtime); err != nil {
		return err
	}
	o := runtimebuild.Options{CacheDir: cachedir.Resolve(os.Getenv(cachedir.Env)), OutputDir: *output, Rebuild: *rebuild, PatchesDir: *patches, Log: stderr}
	for _, c := range comps {
		if sub == "verify" {
			if err := verify(ctx, c, o, stdout); err != nil {
				return err
			}
			continue
		}
		info, err := runtimebuild.Build(ctx, c, o)
		if err != nil {
			return err
		}
		for _, b := range info.Binaries {
			fmt.Fprintf(stdout, "%s\t%s/%s/%s\t%.0fs\t%d bytes\tsha256:%s\t%s\n", c, *output, c.ID(), b.Name, b.Seconds, b.Size, b.SHA256, firstLine(b.Version))
		}
	}
	return nil
}

func verify(ctx context.Context, c runtimebuild.Component, o runtimebuild.Options, stdout io.Writer) error {
	cached, again, differ, err := runtimebuild.Verify(ctx, c, o)
	if err != nil {
		return err
	}
	for _, b := range again.Binaries {
		fmt.Fprintf(stdout, "%s\t%s\trebuild sha256:%s\n", c, b.Name, b.SHA256)
	}
	if len(differ) > 0 {
		return fmt.Errorf("%s is not reproducible: %s differ from the build of %s", c, strings.Join(differ, ", "), cached.BuiltAt.Format("2006-01-02T15:04:05Z"))
	}
	fmt.Fprintf(stdout, "%s: reproducible (%d binaries, same sha256 as the build of %s)\n", c, len(again.Binaries), cached.BuiltAt.Format("2006-01-02T15:04:05Z"))
	return nil
}

func list(w io.Writer) error {
	for _, c := range runtimebuild.Components {
		var bins []string
		for _, b := range c.Binaries {
			bins = append(bins, b.BinaryName())
		}
		patched := ""
		if c.Patches != "" {
			patched = "\tpatched: " + runtimebuild.PatchesDir + "/" + c.Patches
		}
		fmt.Fprintf(w, "%s\t%s@%s\tgo%s\t%s%s\n", c, c.Module, c.Version, c.Go, strings.Join(bins, " "), patched)
	}
	for minor := 18; minor <= 38; minor++ {
		c, note := runtimebuild.CrictlFor(minor)
		if note != "" {
			note = "\t" + note
		}
		fmt.Fprintf(w, "kubernetes 1.%d\tcrictl %s%s\n", minor, c.Version, note)
	}
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
