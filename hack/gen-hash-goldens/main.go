// Command gen-hash-goldens computes kubelet-compat/testdata/hashes.golden:
// for every row of pkg/matrix (or those named with -versions) it fetches
// the row's Go toolchain and Kubernetes source, writes a tiny program into a
// work copy of the tree and runs it over the container corpus, so every hash
// comes from that minor's real kubecontainer.HashContainer.
//
// It is slow the first time (toolchains, module downloads, compiling
// pkg/kubelet/container with old compilers) and builds one tree at a time.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/hack/gen-hash-goldens/golden"
	"github.com/kubelet-compat/kubelet-compat/hack/internal/atomicfile"
	"github.com/kubelet-compat/kubelet-compat/pkg/cachedir"
	"github.com/kubelet-compat/kubelet-compat/pkg/cachelock"
	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
	"github.com/kubelet-compat/kubelet-compat/pkg/matrix"
	"github.com/kubelet-compat/kubelet-compat/pkg/source"
	"github.com/kubelet-compat/kubelet-compat/pkg/toolchain"
)

func main() {
	var (
		versions   = flag.String("versions", "", "comma-separated releases or minors to regenerate (e.g. 1.18.19,1.21); the other lines are kept. Empty: all")
		corpusPath = flag.String("corpus", "kubelet-compat/testdata/containers.json", "container corpus")
		outPath    = flag.String("out", "kubelet-compat/testdata/hashes.golden", "golden file to write")
		cacheDir   = flag.String("cache", cachedir.Resolve(os.Getenv(cachedir.Env)), "cache root (toolchains, module cache, sources, work trees); default $KC_CACHE")
		treeTime   = flag.Duration("tree-timeout", 60*time.Minute, "time limit per tree")
	)
	flag.Parse()
	if err := run(*versions, *corpusPath, *outPath, *cacheDir, *treeTime, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gen-hash-goldens:", err)
		os.Exit(1)
	}
}

func run(versions, corpusPath, outPath, cacheDir string, treeTimeout time.Duration, progress io.Writer) error {
	cacheDir, err := filepath.Abs(cacheDir)
	if err != nil {
		return err
	}
	corpusPath, err = filepath.Abs(corpusPath)
	if err != nil {
		return err
	}
	corpus, err := os.ReadFile(corpusPath)
	if err != nil {
		return err
	}
	items, err := golden.ParseCorpus(corpus)
	if err != nil {
		return err
	}
	rows, err := matrix.Load()
	if err != nil {
		return err
	}
	var selected []matrix.Row
	if versions == "" {
		selected = rows
	} else {
		if selected, err = matrix.Select(rows, strings.Split(versions, ",")); err != nil {
			return err
		}
	}

	// A partial run keeps the other minors' lines, which is only right if
	// they were computed from this corpus by the trees the matrix names.
	var previous *golden.File
	if len(selected) < len(rows) {
		previous, err = reusable(outPath, corpus, rows, selected)
		if err != nil {
			return fmt.Errorf("%w; run without -versions to regenerate everything", err)
		}
	}

	fresh := map[string][]golden.Line{}
	total := time.Now()
	for i, row := range selected {
		fmt.Fprintf(progress, "[%s] tree %d/%d with go%s\n", row.Kubernetes, i+1, len(selected), row.Go)
		ctx, cancel := context.WithTimeout(context.Background(), treeTimeout)
		lines, err := hashTree(ctx, cacheDir, row, corpusPath, items, progress)
		cancel()
		if err != nil {
			return err
		}
		fresh[row.Minor()] = lines
	}

	out := &golden.File{CorpusSHA256: golden.CorpusSHA256(corpus)}
	for _, row := range rows {
		out.Trees = append(out.Trees, golden.TreeOf(row))
		if lines, ok := fresh[row.Minor()]; ok {
			out.Lines = append(out.Lines, lines...)
		} else {
			out.Lines = append(out.Lines, previous.Hashes(row.Minor())...)
		}
	}
	if err := golden.Check(out, corpus, rows); err != nil {
		return fmt.Errorf("internal error, refusing to write: %w", err)
	}
	if err := atomicfile.Write(outPath, out.Format()); err != nil {
		return err
	}
	fmt.Fprintf(progress, "wrote %s (%d trees regenerated) in %s\n", outPath, len(selected), time.Since(total).Round(time.Second))
	return nil
}

// reusable returns the existing golden if its lines for the rows not being
// regenerated are still valid.
func reusable(outPath string, corpus []byte, rows, selected []matrix.Row) (*golden.File, error) {
	data, err := os.ReadFile(outPath)
	if err != nil {
		return nil, fmt.Errorf("partial run needs the existing golden: %w", err)
	}
	f, err := golden.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", outPath, err)
	}
	if f.CorpusSHA256 != golden.CorpusSHA256(corpus) {
		return nil, fmt.Errorf("%s was made from another corpus", outPath)
	}
	have := map[string]golden.Tree{}
	for _, t := range f.Trees {
		have[t.Minor] = t
	}
	regenerating := map[string]bool{}
	for _, r := range selected {
		regenerating[r.Minor()] = true
	}
	for _, r := range rows {
		if regenerating[r.Minor()] {
			continue
		}
		if have[r.Minor()] != golden.TreeOf(r) {
			return nil, fmt.Errorf("%s: minor %s was computed by %q but the matrix now says %q", outPath, r.Minor(), have[r.Minor()], golden.TreeOf(r))
		}
	}
	return f, nil
}

// hashTree computes the corpus hashes inside the real tree of one row.
func hashTree(ctx context.Context, cacheDir string, row matrix.Row, corpusPath string, items []golden.CorpusItem, progress io.Writer) ([]golden.Line, error) {
	start := time.Now()
	goroot, err := toolchain.Ensure(ctx, cacheDir, row.Go, row.ToolchainSum, os.Getenv(toolchain.UserGOROOTEnv(row.Go)), progress)
	if err != nil {
		return nil, err
	}
	pristine, err := source.Ensure(ctx, cacheDir, row, source.UserSource(row, os.Getenv), progress)
	if err != nil {
		return nil, err
	}
	work := filepath.Join(cacheDir, "work", "hash-goldens", row.Kubernetes)
	unlock, err := cachelock.Lock(ctx, filepath.Join(cacheDir, "locks", "work-hash-goldens-"+row.Kubernetes+".lock"))
	if err != nil {
		return nil, fmt.Errorf("[%s] %w", row.Kubernetes, err)
	}
	defer unlock()
	if err := source.WorkTree(ctx, pristine, work); err != nil {
		return nil, fmt.Errorf("[%s] %w", row.Kubernetes, err)
	}
	if err := source.DownloadModules(ctx, cacheDir, row, goroot, work, progress); err != nil {
		return nil, err
	}

	mainDir := filepath.Join(work, "cmd", "kc-hashgolden")
	if err := os.MkdirAll(mainDir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(mainDir, "main.go"), program(row.Tag()), 0o644); err != nil {
		return nil, err
	}
	bin := filepath.Join(work, "_output", "kc-hashgolden")
	buildStart := time.Now()
	fmt.Fprintf(progress, "[%s] building kc-hashgolden with go%s...\n", row.Kubernetes, row.Go)
	build := exec.Command(filepath.Join(goroot, "bin", "go"), "build", "-o", bin, "./cmd/kc-hashgolden")
	build.Dir = work
	build.Env = append(toolchain.Env(goroot, row.Go, cacheDir), "CGO_ENABLED=0")
	if err := build.Run(ctx); err != nil {
		return nil, fmt.Errorf("[%s] building kc-hashgolden: %w", row.Kubernetes, err)
	}
	fmt.Fprintf(progress, "[%s] building kc-hashgolden... done in %s\n", row.Kubernetes, time.Since(buildStart).Round(time.Second))

	out, err := exec.Command(bin, corpusPath).Output(ctx)
	if err != nil {
		return nil, fmt.Errorf("[%s] running kc-hashgolden: %w", row.Kubernetes, err)
	}
	lines, err := parseOutput(row, out, items)
	if err != nil {
		return nil, fmt.Errorf("[%s] kc-hashgolden output: %w", row.Kubernetes, err)
	}
	fmt.Fprintf(progress, "[%s] %d hashes in %s\n", row.Kubernetes, len(lines), time.Since(start).Round(time.Second))
	return lines, nil
}

// parseOutput checks the program printed one "<item> <hex>" per corpus item
// in corpus order.
func parseOutput(row matrix.Row, out []byte, items []golden.CorpusItem) ([]golden.Line, error) {
	var lines []golden.Line
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 {
			return nil, fmt.Errorf("unexpected line %q", sc.Text())
		}
		i := len(lines)
		if i >= len(items) || fields[0] != items[i].Name {
			return nil, fmt.Errorf("line %d is %q, not corpus item %d", i+1, fields[0], i+1)
		}
		lines = append(lines, golden.Line{Minor: row.Minor(), Item: fields[0], Hash: fields[1]})
	}
	if len(lines) != len(items) {
		return nil, fmt.Errorf("%d hashes for %d corpus items", len(lines), len(items))
	}
	return lines, nil
}
