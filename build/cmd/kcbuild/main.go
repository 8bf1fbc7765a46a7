// Command kcbuild is the build harness behind `make`: it builds the matrix's
// Kubernetes versions with their own Go toolchains, with or without the
// kubelet-compat patch series.
//
//	kcbuild build [-versions 1.21.14,1.20] [-patched=false] [-binaries kubelet,kubeadm,kubectl]
//	kcbuild verify-trees [-checks-only] [-versions ...]   # patch, run the tree's verify-boilerplate/verify-bazel on the series, build the kubelet, run the patched packages' tests
//	kcbuild bench-trees [-count 5] [-versions ...]        # the sync loop's cost of kubeletcompat per tree (BenchmarkSyncPodCompat, off and on)
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/build/harness"
	"github.com/kubelet-compat/kubelet-compat/pkg/cachedir"
	"github.com/kubelet-compat/kubelet-compat/pkg/matrix"
	"github.com/kubelet-compat/kubelet-compat/pkg/source"
	"github.com/kubelet-compat/kubelet-compat/pkg/toolchain"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "kcbuild:", err)
		os.Exit(1)
	}
}

func usage() error {
	return fmt.Errorf("usage: kcbuild build|verify-trees|bench-trees [-versions V,...] [-patched=true|false] [-binaries B,...] [-checks-only] [-count N]")
}

func run(args []string) error {
	if len(args) == 0 || (args[0] != "build" && args[0] != "verify-trees" && args[0] != "bench-trees") {
		return usage()
	}
	cmd := args[0]
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	versions := fs.String("versions", "", "comma- or space-separated releases or minors of the matrix's build rows, or sets: default (the mission's four versions), ci, all (every row with a patch series); empty: default")
	patched := fs.Bool("patched", true, "apply the kubelet-compat patch series (false: upstream as released)")
	binaries := fs.String("binaries", strings.Join(harness.DefaultBinaries, ","), "binaries to build")
	output := fs.String("output", "_output", "output directory")
	checksOnly := fs.Bool("checks-only", false, "verify-trees: run only the upstream checks (boilerplate, Bazel) on the patched trees, without building or testing")
	count := fs.Int("count", 5, "bench-trees: runs of the sync loop's benchmark, kubeletcompat off and on (the medians are compared)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	rows, err := matrix.Build()
	if err != nil {
		return err
	}
	names := splitList(*versions)
	if len(names) == 0 {
		names = []string{"default"}
	}
	if names, err = matrix.ExpandSets(names); err != nil {
		return err
	}
	if rows, err = selectBuildRows(rows, names); err != nil {
		return err
	}
	var epoch int64
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if epoch, err = strconv.ParseInt(s, 10, 64); err != nil {
			return fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a number of seconds", s)
		}
	}
	userGOROOTs, userSources := map[string]string{}, map[string]string{}
	for _, row := range rows {
		if goroot := os.Getenv(toolchain.UserGOROOTEnv(row.Go)); goroot != "" {
			userGOROOTs[row.Go] = goroot
		}
		if src := source.UserSource(row, os.Getenv); src != "" {
			userSources[row.Kubernetes] = src
		}
	}
	h := harness.New(harness.Options{
		CacheDir:        cachedir.Resolve(os.Getenv(cachedir.Env)),
		OutputDir:       *output,
		PatchesDir:      "patches",
		Patched:         *patched,
		SourceDateEpoch: epoch,
		GitCommit:       os.Getenv("KUBE_GIT_COMMIT"),
		UserGOROOTs:     userGOROOTs,
		UserSources:     userSources,
		Progress:        os.Stdout,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Hour)
	defer cancel()
	start := time.Now()
	for _, row := range rows {
		rowStart := time.Now()
		if cmd == "bench-trees" && (!*patched || *count < 1) {
			return fmt.Errorf("bench-trees benchmarks the patched trees, at least once (-count %d)", *count)
		}
		if err := buildRow(ctx, h, row, cmd, splitList(*binaries), *checksOnly, *count); err != nil {
			return err
		}
		fmt.Printf("[%s] done in %s: %s\n", row.Kubernetes, time.Since(rowStart).Round(time.Second), h.OutputDir(row))
	}
	fmt.Printf("kcbuild %s: %d versions in %s\n", cmd, len(rows), time.Since(start).Round(time.Second))
	return nil
}

// buildRow runs one command on one row, holding the row's work tree lock so
// that concurrent harness runs wait for each other.
func buildRow(ctx context.Context, h *harness.Harness, row matrix.Row, cmd string, bins []string, checksOnly bool, count int) error {
	unlock, err := h.Lock(ctx, row)
	if err != nil {
		return err
	}
	defer unlock()
	tree, err := h.Prepare(ctx, row)
	if err != nil {
		return err
	}
	switch cmd {
	case "build":
		if err := tree.Build(ctx, bins); err != nil {
			return err
		}
		return tree.CheckBinaries(ctx, bins)
	case "verify-trees":
		if err := tree.CheckUpstream(ctx); err != nil || checksOnly {
			return err
		}
		if err := tree.Build(ctx, []string{"kubelet"}); err != nil {
			return err
		}
		return tree.Test(ctx)
	case "bench-trees":
		cost, err := tree.Bench(ctx, count)
		if err != nil {
			return err
		}
		fmt.Printf("[%s] %s\n", row.Kubernetes, cost)
		return nil
	}
	return usage()
}

func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
}

// selectBuildRows picks the named build rows, telling an unknown version
// from a reference row that has no patch series.
func selectBuildRows(buildRows []matrix.Row, names []string) ([]matrix.Row, error) {
	var known []string
	for _, r := range buildRows {
		known = append(known, r.Kubernetes)
	}
	for _, name := range names {
		if _, err := matrix.Select(buildRows, []string{name}); err == nil {
			continue
		}
		if row, err := matrix.Lookup(name); err == nil {
			return nil, fmt.Errorf("kubernetes %s is a reference row of the matrix without a patch series; buildable: %s", row.Kubernetes, strings.Join(known, ", "))
		}
		return nil, fmt.Errorf("kubernetes %q is not in pkg/matrix/matrix.json; buildable: %s (adding a version is adding a matrix row and a patches/v<minor> series)", name, strings.Join(known, ", "))
	}
	return matrix.Select(buildRows, names)
}
