// Command new-minor adds a Kubernetes release to kubelet-compat, or brings
// an existing row up to date, and does every generated part:
//
//   - the row in pkg/matrix/matrix.json: the k8s.io/kubernetes module's sum
//     and the Go of its .go-version, and that toolchain's sum, from the Go
//     module proxy; the "ci" set follows the newest row;
//   - kubelet-compat/zz_generated.schemas.go (hack/gen-schemas);
//   - pkg/upstream/zz_generated.podtypes.go (hack/gen-pod-types): the
//     internal Pod types each minor changed;
//   - the minor's lines of kubelet-compat/testdata/hashes.golden
//     (hack/gen-hash-goldens, in the real tree with its Go);
//   - lastKnownMinor (kubelet-compat/schema.go), when the golden shows the
//     new minor hashes every corpus container as the previous one does;
//   - every patch series (hack/update-patches), the library having changed.
//
// It then prints what it could not do: hooks whose newest variant does not
// apply (with the rejected hunks), the upstream facts to measure, and the
// hand-written tables and prose that name the previous newest minor
// (file:line). Every file is written whole through a rename, and only when
// it changes: running it again changes nothing.
//
// A pre-release (1.38.0-rc.1, 1.38.0-beta.0) gets the row of its minor
// until the final release, which replaces it the same way a newer patch
// replaces a row.
//
//	hack/new-minor [-note TEXT] [-go 1.26.10 -go-note TEXT] [-skip-hashes] 1.38.0
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/hack/gen-hash-goldens/golden"
	"github.com/kubelet-compat/kubelet-compat/hack/internal/atomicfile"
	"github.com/kubelet-compat/kubelet-compat/pkg/cachedir"
	"github.com/kubelet-compat/kubelet-compat/pkg/matrix"
	"github.com/kubelet-compat/kubelet-compat/pkg/modfetch"
)

const (
	matrixFile = "pkg/matrix/matrix.json"
	schemaGo   = "kubelet-compat/schema.go"
	goldenFile = "kubelet-compat/testdata/hashes.golden"
	schemasGo  = "kubelet-compat/zz_generated.schemas.go"
	podTypesGo = "pkg/upstream/zz_generated.podtypes.go"
)

type options struct {
	release    string
	note       string
	goVersion  string
	goNote     string
	skipHashes bool
	cacheDir   string
}

func main() {
	var o options
	flag.StringVar(&o.note, "note", "", "the row's note: why this patch release and not a later one (which later patches the proxy refuses, stubs); default: the existing row's")
	flag.StringVar(&o.goVersion, "go", "", "build with this Go instead of the release's .go-version (when upstream's toolchain answers 403); needs -go-note")
	flag.StringVar(&o.goNote, "go-note", "", "why -go differs from upstream's")
	flag.BoolVar(&o.skipHashes, "skip-hashes", false, "do not compute the minor's hash goldens (slow: compiles the tree with its Go); lastKnownMinor is then left alone unless the golden already has the minor")
	flag.StringVar(&o.cacheDir, "cache", cachedir.Resolve(os.Getenv(cachedir.Env)), "cache root; default $KC_CACHE")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: hack/new-minor [flags] <release, e.g. 1.38.0 or 1.38.0-rc.1>\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	o.release = strings.TrimPrefix(flag.Arg(0), "v")
	if (o.goVersion == "") != (o.goNote == "") {
		fmt.Fprintln(os.Stderr, "new-minor: -go and -go-note go together")
		os.Exit(2)
	}
	r := &report{}
	err := run(context.Background(), o, r)
	r.print(os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "new-minor:", err)
		os.Exit(1)
	}
	if len(r.hooks) > 0 {
		os.Exit(3)
	}
}

// report is what the command did and what it leaves to a human.
type report struct {
	done      []string
	hooks     []string // failing hooks, patchgen's words
	facts     []string // upstream facts to measure
	findings  []finding
	reviewAll []finding
}

func (r *report) did(format string, a ...any) {
	s := fmt.Sprintf(format, a...)
	r.done = append(r.done, s)
	fmt.Fprintln(os.Stderr, "new-minor:", s)
}

func (r *report) print(w io.Writer) {
	section := func(title, mark string, items []string) {
		if len(items) == 0 {
			return
		}
		fmt.Fprintln(w, "== "+title)
		for _, s := range items {
			fmt.Fprintln(w, "  "+mark+strings.ReplaceAll(s, "\n", "\n  "))
		}
	}
	var findings, review []string
	for _, f := range r.findings {
		findings = append(findings, f.String())
	}
	for _, f := range r.reviewAll {
		review = append(review, fmt.Sprintf("%s:%d: %s", f.file, f.line, strings.TrimSpace(f.text)))
	}
	section("generated", "- ", r.done)
	section("hook variants that need a human (newest variant does not apply)", "", r.hooks)
	section("upstream facts to measure", "[ ] ", r.facts)
	section("hand-written tables this command does not update", "[ ] ", findings)
	section("prose that ends a range at the previous newest minor (review)", "", review)
}

// preReleaseNote is the note of a pre-release row without -note.
func preReleaseNote(release string) string {
	final := release[:strings.IndexByte(release, '-')]
	return fmt.Sprintf("Pre-release: the newest %s the proxy serves until %s; hack/new-minor %s replaces this row when the proxy serves it.", final[:strings.LastIndexByte(final, '.')], final, final)
}

func run(ctx context.Context, o options, r *report) error {
	if !matrix.IsRelease(o.release) {
		return fmt.Errorf("release %q must look like 1.38.0, or a pre-release such as 1.38.0-rc.1", o.release)
	}
	if _, err := os.Stat(matrixFile); err != nil {
		return fmt.Errorf("run from the repository's root: %w", err)
	}
	start := time.Now()
	data, err := os.ReadFile(matrixFile)
	if err != nil {
		return err
	}
	rows, err := matrix.Parse(data)
	if err != nil {
		return err
	}
	next := minorOf(o.release)
	prevRow, existing := previousRow(rows, next), matrix.Row{}
	for _, row := range rows {
		if row.Kubernetes == o.release {
			existing = row
		}
	}
	prev := minorOf(prevRow.Kubernetes)

	// 1. The matrix row.
	row, err := fetchRow(ctx, o, existing)
	if err != nil {
		return err
	}
	edited, replaced, err := setRow(data, row)
	if err != nil {
		return err
	}
	changed, err := atomicfile.WriteIfChanged(matrixFile, edited)
	if err != nil {
		return err
	}
	switch {
	case !changed:
		r.did("%s: row %s unchanged (go%s)", matrixFile, row.Kubernetes, row.Go)
	case replaced.Kubernetes != "":
		r.did("%s: row %s replaces %s (go%s)", matrixFile, row.Kubernetes, replaced.Kubernetes, row.Go)
	default:
		r.did("%s: row %s added (go%s)", matrixFile, row.Kubernetes, row.Go)
	}
	if row.Note == "" {
		r.facts = append(r.facts, fmt.Sprintf("%s row %s has no note: why this patch release (which later ones the proxy refuses, stubs); rerun with -note", matrixFile, row.Kubernetes))
	}

	// 2. Schemas: every row's v1.Container layout, one file.
	what, err := changes(schemasGo, func() error { return goRun(ctx, "./hack/gen-schemas") })
	if err != nil {
		return fmt.Errorf("gen-schemas: %w", err)
	}
	r.did("%s %s (hack/gen-schemas)", schemasGo, what)
	what, err = changes(podTypesGo, func() error { return goRun(ctx, "./hack/gen-pod-types") })
	if err != nil {
		return fmt.Errorf("gen-pod-types: %w", err)
	}
	r.did("%s %s (hack/gen-pod-types)", podTypesGo, what)

	// 3. Hash goldens for the new minor, in its real tree.
	if o.skipHashes {
		r.did("hash goldens skipped (-skip-hashes): run go run ./hack/gen-hash-goldens -versions 1.%d", next)
	} else {
		what, err := changes(goldenFile, func() error { return goRun(ctx, "./hack/gen-hash-goldens", "-versions", row.Minor()) })
		if err != nil {
			return fmt.Errorf("gen-hash-goldens: %w", err)
		}
		r.did("%s %s: minor %s computed in the v%s tree with go%s", goldenFile, what, row.Minor(), row.Kubernetes, row.Go)
	}

	// 4. lastKnownMinor, when the golden shows the era goes on.
	if err := bumpKnownMinor(next, r); err != nil {
		return err
	}

	// 5. Every series: the library (schemas, constants) is in each.
	if err := updateSeries(ctx, rows, row, r); err != nil {
		return err
	}

	// 6. What a human does.
	r.facts = append(r.facts,
		fmt.Sprintf("container hash of 1.%d: %s shows whether 1.%d hashes like 1.%d (this run's verdict is above); a new era needs the library's hash code and the eras in %s", next, goldenFile, next, prev, schemaGo),
		fmt.Sprintf("static-pod UID: run the e2e's unpatched control 1.%d -> 1.%d (make e2e, e2e/README.md); whether it recreated the corpus's static pods without metadata.uid goes into pkg/upstream (staticPodUIDChanges, then raise Last; e2e/pkg/corpus's test holds %s to it)", prev, next, podTypesGo),
		fmt.Sprintf("re-admission: whether kubelet 1.%d re-admits the pods 1.%d started (the e2e's admission scenarios, e2e/pkg/local/scenario/admission.go); the CLI's tables below", next, prev),
		fmt.Sprintf("verify-trees on 1.%d (make verify-trees VERSIONS=%s) and the patched and unpatched kind steps 1.%d -> 1.%d; README's tables", next, row.Kubernetes, prev, next),
	)
	if err := findKnowledge(prev, next, r); err != nil {
		return err
	}
	r.did("done in %s", time.Since(start).Round(time.Second))
	return nil
}

// previousRow is the newest build row of a minor older than next.
func previousRow(rows []matrix.Row, next int) matrix.Row {
	var p matrix.Row
	for _, r := range rows {
		if r.Build && minorOf(r.Kubernetes) < next {
			p = r
		}
	}
	return p
}

// fetchRow builds the row from the proxy: the module's sum, its
// .go-version, the toolchain's sum. What the proxy cannot say (the note, a
// Go other than upstream's, stubs, overrides) comes from the flags or the
// existing row of the same release.
func fetchRow(ctx context.Context, o options, existing matrix.Row) (matrix.Row, error) {
	mod, err := modfetch.Download(ctx, o.cacheDir, "k8s.io/kubernetes", "v"+o.release, "")
	if err != nil {
		return matrix.Row{}, err
	}
	row := matrix.Row{Kubernetes: o.release, SourceSum: mod.Sum, Build: true,
		Note: existing.Note, GoNote: existing.GoNote, Stubs: existing.Stubs, Overrides: existing.Overrides}
	switch {
	case o.note != "":
		row.Note = o.note
	case row.Note == "" && row.PreRelease() != "":
		row.Note = preReleaseNote(o.release)
	}
	gv, err := os.ReadFile(filepath.Join(mod.Dir, ".go-version"))
	if err != nil {
		return matrix.Row{}, fmt.Errorf("k8s.io/kubernetes@v%s has no .go-version (before 1.25?): pass -go and -go-note: %w", o.release, err)
	}
	row.Go = strings.TrimPrefix(strings.TrimSpace(string(gv)), "go")
	switch {
	case o.goVersion != "":
		row.Go, row.GoNote = o.goVersion, o.goNote
	case existing.GoNote != "":
		row.Go = existing.Go
	}
	tc, err := modfetch.Download(ctx, o.cacheDir, "golang.org/toolchain", "v0.0.1-go"+row.Go+".linux-amd64", "")
	if err != nil {
		return matrix.Row{}, fmt.Errorf("toolchain go%s (upstream's .go-version of %s): %w; if the proxy refuses it, pass the nearest served patch of the same Go minor with -go and say why with -go-note", row.Go, o.release, err)
	}
	row.ToolchainSum = tc.Sum
	return row, row.Validate()
}

// bumpKnownMinor raises lastKnownMinor to next when the golden holds next's
// hashes and they equal those of lastKnownMinor (the era goes on).
func bumpKnownMinor(next int, r *report) error {
	src, err := os.ReadFile(schemaGo)
	if err != nil {
		return err
	}
	_, known, err := bumpConst(src, "lastKnownMinor", 0)
	if err != nil {
		return fmt.Errorf("%s: %w", schemaGo, err)
	}
	if next <= known {
		r.did("%s: lastKnownMinor is %d already", schemaGo, known)
		return nil
	}
	data, err := os.ReadFile(goldenFile)
	if err != nil {
		return err
	}
	g, err := golden.Parse(data)
	if err != nil {
		return fmt.Errorf("%s: %w", goldenFile, err)
	}
	verdict := sameHashes(g, fmt.Sprintf("1.%d", known), fmt.Sprintf("1.%d", next))
	if verdict != "" {
		r.facts = append(r.facts, fmt.Sprintf("lastKnownMinor stays %d in %s: %s", known, schemaGo, verdict))
		return nil
	}
	if next != known+1 {
		r.facts = append(r.facts, fmt.Sprintf("lastKnownMinor stays %d in %s: 1.%d is not the next minor", known, schemaGo, next))
		return nil
	}
	out, _, err := bumpConst(src, "lastKnownMinor", next)
	if err != nil {
		return err
	}
	if _, err := atomicfile.WriteIfChanged(schemaGo, out); err != nil {
		return err
	}
	r.did("%s: lastKnownMinor %d -> %d (the golden shows 1.%d hashes every corpus container as 1.%d)", schemaGo, known, next, next, known)
	return nil
}

// sameHashes is "" when the golden has minor b's hashes and they equal
// minor a's, item by item; else why not.
func sameHashes(g *golden.File, a, b string) string {
	ha, hb := g.Hashes(a), g.Hashes(b)
	if len(hb) == 0 {
		return "the hash golden has no line of " + b + " (run without -skip-hashes)"
	}
	if len(ha) != len(hb) {
		return fmt.Sprintf("%d golden lines of %s, %d of %s", len(ha), a, len(hb), b)
	}
	var differ []string
	for i := range ha {
		if ha[i].Item != hb[i].Item || ha[i].Hash != hb[i].Hash {
			differ = append(differ, hb[i].Item)
		}
	}
	if len(differ) > 0 {
		return fmt.Sprintf("%s hashes %d corpus containers unlike %s (%s): a new hash era, the library's code must learn it", b, len(differ), a, strings.Join(differ, ", "))
	}
	return ""
}

// updateSeries regenerates every build row's series; the new row's failing
// hooks are reported, not fatal.
func updateSeries(ctx context.Context, rows []matrix.Row, row matrix.Row, r *report) error {
	var others []string
	for _, x := range rows {
		if x.Build && x.Minor() != row.Minor() {
			others = append(others, x.Minor())
		}
	}
	if len(others) > 0 {
		if err := goRun(ctx, append([]string{"./hack/patchgen"}, others...)...); err != nil {
			return fmt.Errorf("patchgen (the other series): %w", err)
		}
		r.did("patches/v1.*: %d other series regenerated (the library is in each)", len(others))
	}
	var stderr strings.Builder
	cmd := exec.CommandContext(ctx, "go", "run", "./hack/patchgen", row.Minor())
	cmd.Stdout, cmd.Stderr = os.Stderr, io.MultiWriter(os.Stderr, &stderr)
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return err
		}
		r.hooks = append(r.hooks, patchgenFailure(stderr.String()))
		r.did("patches/v%s: NOT written (hooks fail, below); the previous series, if any, is left as it was", row.Minor())
		return nil
	}
	r.did("patches/v%s: series regenerated", row.Minor())
	return nil
}

// patchgenFailure is patchgen's error without the prefix and go run's
// "exit status" line.
func patchgenFailure(stderr string) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if strings.HasPrefix(l, "exit status ") {
			continue
		}
		lines = append(lines, strings.TrimPrefix(l, "patchgen: "))
	}
	return strings.Join(lines, "\n")
}

// findKnowledge names the hand-written tables and the prose that say the
// previous newest minor is the newest.
func findKnowledge(prev, next int, r *report) error {
	for _, a := range knowledge {
		src, err := os.ReadFile(a.file)
		if err != nil {
			return err
		}
		r.findings = append(r.findings, findAnchor(a, string(src), prev, next)...)
	}
	out, err := exec.Command("git", "ls-files", "*.go", "*.md").Output()
	if err != nil {
		return fmt.Errorf("git ls-files: %w", err)
	}
	for _, f := range strings.Fields(string(out)) {
		if strings.HasPrefix(f, "patches/v1.") || strings.Contains(f, "zz_generated") || strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			continue // deleted in the work tree
		}
		r.reviewAll = append(r.reviewAll, findRangeEnds(f, string(src), prev)...)
	}
	return nil
}

// changes runs gen and says whether it changed path.
func changes(path string, gen func() error) (string, error) {
	before, _ := os.ReadFile(path)
	if err := gen(); err != nil {
		return "", err
	}
	after, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	if string(before) == string(after) {
		return "unchanged", nil
	}
	return "rewritten", nil
}

// goRun runs `go run args...` in the repository, its output on stderr.
func goRun(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", append([]string{"run"}, args...)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}
