// Command runtimepatchgen writes and checks the patch series of the
// runtime's patched components (pkg/runtimebuild: a component with
// Patches, e.g. containerd@1.7.36+compat.1 with runtime/patches/containerd/v1.7).
//
// A series is generated from the component's fix set,
// runtime/patches/<name>/fixes/<n-fix>/v<major>.<minor>.patch (git
// format-patch mails, one fix each): the variants that apply to the
// component's release are replayed with git am on the pristine files of
// its module, as the Go module proxy serves it at the recorded h1: sum,
// and exported with git format-patch, so the series is byte for byte
// reproducible. The check also applies the series to the whole module
// source as `make runtime` does before it compiles.
//
//	hack/update-runtime-patches                             # rewrite every series
//	hack/verify-runtime-patches                             # fail if a series is stale or does not apply
//	hack/update-runtime-patches containerd@1.7.36+compat.1  # only some components
//
// The module zips come through the go command (checked against the
// checksum database and the recorded sum) into $KC_CACHE/gopath/pkg/mod:
// downloaded once, read from there afterwards.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/cachedir"
	"github.com/kubelet-compat/kubelet-compat/pkg/modfetch"
	"github.com/kubelet-compat/kubelet-compat/pkg/runtimebuild"
)

func main() {
	verify := flag.Bool("verify", false, "check the series instead of writing them")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: runtimepatchgen [-verify] [NAME@VERSION ...]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := run(ctx, *verify, flag.Args(), os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "runtimepatchgen:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, verify bool, args []string, stdout, stderr io.Writer) error {
	comps, err := patchedComponents(args)
	if err != nil {
		return err
	}
	cacheDir := cachedir.Resolve(os.Getenv(cachedir.Env))
	g := generator{patchesDir: runtimebuild.PatchesDir, source: proxySource(cacheDir, stderr)}
	var stale []string
	if verify && len(args) == 0 {
		strays, err := g.strays(comps)
		if err != nil {
			return err
		}
		for _, s := range strays {
			stale = append(stale, s+" is the series of no component of pkg/runtimebuild")
		}
	}
	for _, c := range comps {
		start := time.Now()
		if verify {
			err := g.verify(ctx, c)
			var se *staleError
			if errors.As(err, &se) {
				stale = append(stale, se.Error())
				continue
			}
			if err != nil {
				return fmt.Errorf("[%s] %w", c, err)
			}
			fmt.Fprintf(stdout, "[%s] %s is up to date and applies to %s@%s (%s)\n", c, g.seriesDir(c), c.Module, c.Version, time.Since(start).Round(time.Millisecond))
			continue
		}
		names, err := g.update(ctx, c)
		if err != nil {
			return fmt.Errorf("[%s] %w", c, err)
		}
		fmt.Fprintf(stdout, "[%s] wrote %s: %d patches (%s)\n", c, g.seriesDir(c), len(names), time.Since(start).Round(time.Millisecond))
	}
	if len(stale) > 0 {
		for _, s := range stale {
			fmt.Fprintln(stderr, s)
		}
		return fmt.Errorf("%d runtime patch series are stale: run hack/update-runtime-patches and commit the result", len(stale))
	}
	return nil
}

// patchedComponents are the components with a series, all or those args
// name.
func patchedComponents(args []string) ([]runtimebuild.Component, error) {
	var out []runtimebuild.Component
	if len(args) == 0 {
		for _, c := range runtimebuild.Components {
			if c.Patches != "" {
				out = append(out, c)
			}
		}
		return out, nil
	}
	for _, a := range args {
		c, err := runtimebuild.ParseRequest(a)
		if err != nil {
			return nil, err
		}
		if c.Patches == "" {
			return nil, fmt.Errorf("%s is built as released: it has no patch series", c)
		}
		out = append(out, c)
	}
	return out, nil
}

// proxySource downloads a component's module (a no-op once it is in the
// module cache) and says what it reads.
func proxySource(cacheDir string, log io.Writer) func(context.Context, runtimebuild.Component) (string, error) {
	said := map[string]bool{}
	return func(ctx context.Context, c runtimebuild.Component) (string, error) {
		m, err := modfetch.Download(ctx, cacheDir, c.Module, c.Version, c.Sum)
		if err != nil {
			return "", err
		}
		if what := c.Module + "@" + c.Version; !said[what] {
			said[what] = true
			size := ""
			if fi, err := os.Stat(m.Zip); err == nil {
				size = fmt.Sprintf(", a %.1f MB zip", float64(fi.Size())/1e6)
			}
			fmt.Fprintf(log, "[%s] the source of %s (%s%s) from the Go module proxy, cached in %s\n", c, what, c.Sum, size, modfetch.ModCache(cacheDir))
		}
		return m.Dir, nil
	}
}
