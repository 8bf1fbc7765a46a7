// Command patchgen writes and checks the patch series in patches/v<minor>/.
//
// Each series starts with a patch generated from the library (kubelet-compat/
// as the package pkg/kubelet/kubeletcompat) followed by the hand-written hook
// patches. Both are replayed through git on top of the pristine upstream
// files and exported with git format-patch, so that the checked-in series is
// exactly what a maintainer would cherry-pick, byte for byte reproducible.
//
//	hack/update-patches              # rewrite every series
//	hack/verify-patches              # fail if a series is stale or does not apply to pristine source
//	hack/update-patches 1.21         # only some versions
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/cachedir"
	"github.com/kubelet-compat/kubelet-compat/pkg/matrix"
	"github.com/kubelet-compat/kubelet-compat/pkg/source"
)

func main() {
	verify := flag.Bool("verify", false, "check the series instead of writing them")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: patchgen [-verify] [version ...]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := run(*verify, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "patchgen:", err)
		os.Exit(1)
	}
}

func run(verify bool, versions []string) error {
	rows, err := matrix.Build()
	if err != nil {
		return err
	}
	if rows, err = matrix.Select(rows, versions); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	g := generator{cacheDir: cachedir.Resolve(os.Getenv(cachedir.Env)), libDir: "kubelet-compat", patchesDir: "patches",
		userSource: func(row matrix.Row) string { return source.UserSource(row, os.Getenv) }}
	var stale []string
	for _, row := range rows {
		start := time.Now()
		if verify {
			err := g.verify(ctx, row)
			var se *staleError
			if errors.As(err, &se) {
				stale = append(stale, se.Error())
				continue
			}
			if err != nil {
				return fmt.Errorf("[%s] %w", row.Kubernetes, err)
			}
			fmt.Printf("[%s] %s is up to date and applies to pristine source (%s)\n", row.Kubernetes, g.seriesDir(row), time.Since(start).Round(time.Millisecond))
			continue
		}
		names, err := g.update(ctx, row)
		if err != nil {
			return fmt.Errorf("[%s] %w", row.Kubernetes, err)
		}
		fmt.Printf("[%s] wrote %s: %d patches (%s)\n", row.Kubernetes, g.seriesDir(row), len(names), time.Since(start).Round(time.Millisecond))
	}
	if len(stale) > 0 {
		for _, s := range stale {
			fmt.Fprintln(os.Stderr, s)
		}
		return fmt.Errorf("%d patch series are stale: run hack/update-patches and commit the result", len(stale))
	}
	return nil
}
