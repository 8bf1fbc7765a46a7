package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The 1.18-1.20 trees build with Bazel too: every package has a BUILD file
// that hack/update-bazel.sh maintains (gazelle writes the go rules, kazel the
// package-srcs/all-srcs filegroups and the parent's all-srcs entry) and
// hack/verify-bazel.sh checks. The library patch adds what those tools would:
// the package's BUILD and its entry in pkg/kubelet/BUILD. `make verify-trees`
// runs the tree's gazelle and kazel on the patched tree to prove it.

const (
	bazelFile       = "BUILD"
	parentBazelFile = "pkg/kubelet/BUILD"
	kubernetesPath  = "k8s.io/kubernetes"
)

// bazelManaged tells whether the pristine tree maintains BUILD files.
func bazelManaged(pristine string) bool {
	_, err := os.Stat(filepath.Join(pristine, parentBazelFile))
	return err == nil
}

// bazelLabel is the label gazelle (-external=vendored) resolves an import to
// in a Kubernetes tree, or "" for the standard library.
func bazelLabel(imp string, staging map[string]bool) string {
	first := strings.SplitN(imp, "/", 2)[0]
	if !strings.Contains(first, ".") {
		return ""
	}
	switch {
	case strings.HasPrefix(imp, kubernetesPath+"/"):
		return "//" + strings.TrimPrefix(imp, kubernetesPath+"/") + ":go_default_library"
	case staging[strings.Join(strings.SplitN(imp, "/", 3)[:2], "/")]:
		return "//staging/src/" + imp + ":go_default_library"
	}
	return "//vendor/" + imp + ":go_default_library"
}

// libraryBUILD is the BUILD file gazelle and kazel write for the library
// package (dir holds its files as copied into the tree): its tests are not
// part of the tree, so it has a go_library only.
func libraryBUILD(dir string, staging map[string]bool) ([]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var srcs []string
	deps := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		srcs = append(srcs, e.Name())
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return nil, err
		}
		specific := platformSpecific(e.Name(), f.Comments)
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return nil, err
			}
			if l := bazelLabel(path, staging); l != "" {
				if specific {
					// gazelle would write a select() per platform.
					return nil, fmt.Errorf("%s is platform-specific and imports %s: patchgen writes no select(); extend libraryBUILD", e.Name(), path)
				}
				deps[l] = true
			}
		}
	}
	sort.Strings(srcs)
	var b strings.Builder
	b.WriteString("load(\"@io_bazel_rules_go//go:def.bzl\", \"go_library\")\n\n")
	b.WriteString("go_library(\n    name = \"go_default_library\",\n")
	writeList(&b, "srcs", srcs)
	fmt.Fprintf(&b, "    importpath = %q,\n", kubernetesPath+"/"+libraryPackage)
	b.WriteString("    visibility = [\"//visibility:public\"],\n")
	writeList(&b, "deps", sortedKeys(deps))
	b.WriteString(")\n\n")
	b.WriteString(`filegroup(
    name = "package-srcs",
    srcs = glob(["**"]),
    tags = ["automanaged"],
    visibility = ["//visibility:private"],
)

filegroup(
    name = "all-srcs",
    srcs = [":package-srcs"],
    tags = ["automanaged"],
    visibility = ["//visibility:public"],
)
`)
	return []byte(b.String()), nil
}

var goosSuffix = regexp.MustCompile(`_(linux|windows|darwin|freebsd|netbsd|openbsd|solaris|android|aix|dragonfly|illumos|js|plan9)(_[a-z0-9]+)?\.go$`)

// platformSpecific tells a file built on some platforms only: by its name or
// a build constraint.
func platformSpecific(name string, comments []*ast.CommentGroup) bool {
	if goosSuffix.MatchString(name) {
		return true
	}
	for _, g := range comments {
		for _, c := range g.List {
			if strings.HasPrefix(c.Text, "// +build") || strings.HasPrefix(c.Text, "//go:build") {
				return true
			}
		}
	}
	return false
}

// writeList writes a string list attribute as buildifier formats it: one
// element inline, more one per line.
func writeList(b *strings.Builder, name string, items []string) {
	switch len(items) {
	case 0:
		return
	case 1:
		fmt.Fprintf(b, "    %s = [%q],\n", name, items[0])
		return
	}
	fmt.Fprintf(b, "    %s = [\n", name)
	for _, it := range items {
		fmt.Fprintf(b, "        %q,\n", it)
	}
	b.WriteString("    ],\n")
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// addAllSrcs adds the library's all-srcs to the all-srcs filegroup of the
// parent BUILD file, in kazel's (sorted) order.
func addAllSrcs(parent []byte) ([]byte, error) {
	lines := strings.SplitAfter(string(parent), "\n")
	entry := fmt.Sprintf("        %q,\n", "//"+libraryPackage+":all-srcs")
	start := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == `name = "all-srcs",` {
			start = i
			break
		}
	}
	if start < 0 || start+1 >= len(lines) || strings.TrimSpace(lines[start+1]) != "srcs = [" {
		return nil, fmt.Errorf("%s has no all-srcs filegroup with a srcs list", parentBazelFile)
	}
	for i := start + 2; i < len(lines); i++ {
		l := lines[i]
		if l == entry {
			return parent, nil
		}
		trimmed := strings.TrimSpace(l)
		if trimmed == "]," || (strings.HasPrefix(trimmed, `"//`) && l > entry) {
			out := append(append(append([]string{}, lines[:i]...), entry), lines[i:]...)
			return []byte(strings.Join(out, "")), nil
		}
	}
	return nil, fmt.Errorf("%s: unterminated all-srcs list", parentBazelFile)
}
