// Command gen-pod-types writes pkg/upstream/zz_generated.podtypes.go: for
// every row of pkg/matrix (build and reference rows, in order), the named
// types reachable from the internal api.Pod (pkg/apis/core of the
// k8s.io/kubernetes module, apimachinery's meta/v1, resource, intstr,
// types of the row's k8s.io/apimachinery) whose definition differs from
// the previous row's. A static pod without metadata.uid gets a new UID from
// a kubelet whose minor changed a type the pod instantiates (pkg/upstream).
//
// It reads the pristine module zips from the Go module proxy (sum checked
// against the matrix for k8s.io/kubernetes, against the checksum database
// for apimachinery), about 13 MB per row, into $KC_CACHE's module cache.
//
//	go run ./hack/gen-pod-types            # write the file (hack/update-all)
//	go run ./hack/gen-pod-types -verify    # fail if it is stale (hack/verify-all)
//	go run ./hack/gen-pod-types -tree 1.38.0-beta.0=<kubernetes dir>,<apimachinery dir>
//	                                       # print the file with one more tree after the matrix's
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"go/format"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/hack/internal/atomicfile"
	"github.com/kubelet-compat/kubelet-compat/pkg/cachedir"
	"github.com/kubelet-compat/kubelet-compat/pkg/matrix"
	"github.com/kubelet-compat/kubelet-compat/pkg/modfetch"
)

const outputFile = "pkg/upstream/zz_generated.podtypes.go"

// extraTrees are -tree flags: releases outside the matrix read from
// directories, to check a release before its row exists.
type extraTrees []extraTree

type extraTree struct {
	release string
	tree    tree
}

func (e *extraTrees) String() string { return fmt.Sprint(*e) }

func (e *extraTrees) Set(s string) error {
	release, dirs, ok := strings.Cut(s, "=")
	k, am, ok2 := strings.Cut(dirs, ",")
	if !ok || !ok2 {
		return fmt.Errorf("want RELEASE=KUBERNETES_DIR,APIMACHINERY_DIR, got %q", s)
	}
	*e = append(*e, extraTree{release, tree{kubernetes: k, apimachinery: am}})
	return nil
}

func main() {
	var extra extraTrees
	out := flag.String("o", outputFile, "file to write")
	check := flag.Bool("verify", false, "compare with the existing file instead of writing it")
	cacheDir := flag.String("cache", cachedir.Resolve(os.Getenv(cachedir.Env)), "cache root (module cache); default $KC_CACHE")
	flag.Var(&extra, "tree", "RELEASE=KUBERNETES_DIR,APIMACHINERY_DIR: one more tree after the matrix's rows; prints the file instead of writing it (repeatable)")
	flag.Parse()
	if err := run(*out, *check, *cacheDir, extra); err != nil {
		fmt.Fprintln(os.Stderr, "gen-pod-types:", err)
		os.Exit(1)
	}
}

// release is one tree the table is read from.
type release struct {
	minor   int
	source  string // what the tree is, for the generated comment
	typeDef map[string]string
}

func run(out string, check bool, cacheDir string, extra extraTrees) error {
	rows, err := matrix.Load()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	var releases []release
	for _, row := range rows {
		t, source, err := fetchTree(ctx, cacheDir, row)
		if err != nil {
			return err
		}
		r, err := readRelease(row.Kubernetes, source, t)
		if err != nil {
			return err
		}
		releases = append(releases, r)
	}
	for _, e := range extra {
		r, err := readRelease(e.release, "v"+e.release+" read from "+e.tree.kubernetes+" and "+e.tree.apimachinery, e.tree)
		if err != nil {
			return err
		}
		releases = append(releases, r)
	}
	src, err := render(releases)
	if err != nil {
		return err
	}
	switch {
	case len(extra) > 0:
		_, err := os.Stdout.Write(src)
		return err
	case check:
		have, err := os.ReadFile(out)
		if err != nil {
			return err
		}
		if !bytes.Equal(have, src) {
			return fmt.Errorf("%s is stale: run 'go run ./hack/gen-pod-types' (hack/update-all)", out)
		}
		return nil
	}
	return atomicfile.Write(out, src)
}

// fetchTree downloads a row's k8s.io/kubernetes and k8s.io/apimachinery
// modules (the module zips, not an assembled tree: only their sources are
// read).
func fetchTree(ctx context.Context, cacheDir string, row matrix.Row) (tree, string, error) {
	k, err := modfetch.Download(ctx, cacheDir, "k8s.io/kubernetes", row.Tag(), row.SourceSum)
	if err != nil {
		return tree{}, "", err
	}
	amVersion := row.ModuleVersion("k8s.io/apimachinery")
	am, err := modfetch.Download(ctx, cacheDir, "k8s.io/apimachinery", amVersion, "")
	if err != nil {
		return tree{}, "", err
	}
	return tree{kubernetes: k.Dir, apimachinery: am.Dir}, "k8s.io/kubernetes@" + row.Tag() + ", k8s.io/apimachinery@" + amVersion, nil
}

func readRelease(kubernetes, source string, t tree) (release, error) {
	parts := strings.Split(kubernetes, ".")
	minor, err := strconv.Atoi(parts[1])
	if err != nil || len(parts) < 3 {
		return release{}, fmt.Errorf("release %q: not 1.MINOR.PATCH", kubernetes)
	}
	defs, err := podTypes(t)
	if err != nil {
		return release{}, fmt.Errorf("%s: %w", kubernetes, err)
	}
	fmt.Fprintf(os.Stderr, "[%s] %d types reachable from the internal Pod\n", kubernetes, len(defs))
	return release{minor: minor, source: source, typeDef: defs}, nil
}

// render writes the Go file: per release, its tree, and per release after
// the first, the types that changed.
func render(releases []release) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("// Code generated by hack/gen-pod-types (go run ./hack/gen-pod-types). DO NOT EDIT.\n\npackage upstream\n\n")
	b.WriteString("// podTypeTrees are the trees podTypeChanges was read from, per minor: the\n")
	b.WriteString("// rows of pkg/matrix.\n")
	b.WriteString("var podTypeTrees = map[int]string{\n")
	for _, r := range releases {
		fmt.Fprintf(&b, "\t%d: %q,\n", r.minor, r.source)
	}
	b.WriteString("}\n\n")
	b.WriteString("// podTypeChanges lists, per minor, the named types reachable from the\n")
	b.WriteString("// internal api.Pod whose definition differs from the previous minor's\n")
	b.WriteString("// (a struct's fields, names and types in order; another type's underlying\n")
	b.WriteString("// type), or that only one of the two minors has. Core types are\n")
	b.WriteString("// unqualified, apimachinery's are qualified (metav1., resource., ...).\n")
	b.WriteString("var podTypeChanges = map[int][]string{\n")
	for i := 1; i < len(releases); i++ {
		if releases[i].minor != releases[i-1].minor+1 {
			return nil, fmt.Errorf("release of minor %d follows minor %d: the table needs consecutive minors", releases[i].minor, releases[i-1].minor)
		}
		changed := changedTypes(releases[i-1].typeDef, releases[i].typeDef)
		quoted := make([]string, len(changed))
		for j, c := range changed {
			quoted[j] = strconv.Quote(c)
		}
		fmt.Fprintf(&b, "\t%d: {%s},\n", releases[i].minor, strings.Join(quoted, ", "))
	}
	b.WriteString("}\n")
	return format.Source(b.Bytes())
}
