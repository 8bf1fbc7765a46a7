package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// boilerplateYear is the year in the license header of the library files:
// fixed, so that regenerating gives the same bytes.
const boilerplateYear = "2026"

// boilerplate holds what a tree's hack/verify-boilerplate.sh
// (hack/boilerplate/boilerplate.py) expects at the top of Go files.
type boilerplate struct {
	// header is boilerplate.go.txt with YEAR replaced (trees from 1.35 write
	// no year: "Copyright The Kubernetes Authors.").
	header []byte
	// generated is boilerplate.generatego.txt, for files that say DO NOT EDIT.
	generated []byte
	// knowsGoBuild is whether the checker strips //go:build lines; when it
	// does not, they are dropped (the trees' gofmt, go1.13-1.16, does not
	// require them next to // +build).
	knowsGoBuild bool
}

// readBoilerplate reads the headers of the pristine tree.
func readBoilerplate(tree string) (boilerplate, error) {
	dir := filepath.Join(tree, "hack", "boilerplate")
	goTxt, err := os.ReadFile(filepath.Join(dir, "boilerplate.go.txt"))
	if err != nil {
		return boilerplate{}, err
	}
	genTxt, err := os.ReadFile(filepath.Join(dir, "boilerplate.generatego.txt"))
	if err != nil {
		return boilerplate{}, err
	}
	checker, err := os.ReadFile(filepath.Join(dir, "boilerplate.py"))
	if err != nil {
		return boilerplate{}, err
	}
	if !bytes.Contains(goTxt, []byte("Copyright")) {
		return boilerplate{}, fmt.Errorf("%s/boilerplate.go.txt has no Copyright line", dir)
	}
	return boilerplate{
		header:       bytes.Replace(goTxt, []byte("YEAR"), []byte(boilerplateYear), 1),
		generated:    genTxt,
		knowsGoBuild: bytes.Contains(checker, []byte("go:build")),
	}, nil
}

// generatedMarker is how boilerplate.py tells generated files: anywhere in
// the file.
var generatedMarker = []byte("DO NOT EDIT")

// apply returns a Go file with the tree's license header: after its leading
// build constraints and their blank line, as upstream files of the era have
// them and the checker strips them, and before everything else.
//
// A //go:build line without // +build lines fails: the trees' Go (1.13-1.16)
// reads only the latter.
func (b boilerplate) apply(src []byte) ([]byte, error) {
	header := b.header
	if bytes.Contains(src, generatedMarker) {
		header = b.generated
	}
	constraints, rest := splitConstraints(src)
	var out bytes.Buffer
	if len(constraints) > 0 {
		plusBuild := false
		for _, line := range constraints {
			plusBuild = plusBuild || strings.HasPrefix(line, "// +build")
		}
		if !plusBuild {
			return nil, fmt.Errorf("%q has no // +build line, which the trees' Go needs (run gofmt with a go.mod saying go 1.16, or add it)", constraints[0])
		}
		for _, line := range constraints {
			if strings.HasPrefix(line, "//go:build") && !b.knowsGoBuild {
				continue
			}
			out.WriteString(line + "\n")
		}
		out.WriteString("\n")
	}
	out.Write(bytes.TrimRight(header, "\n"))
	out.WriteString("\n\n")
	out.Write(rest)
	return out.Bytes(), nil
}

var constraintLine = regexp.MustCompile(`^(//go:build|// \+build)( .*)?$`)

// splitConstraints splits off the leading build-constraint lines of a Go
// file and the blank lines after them.
func splitConstraints(src []byte) ([]string, []byte) {
	var lines []string
	rest := src
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 || !constraintLine.Match(rest[:i]) {
			break
		}
		lines = append(lines, string(rest[:i]))
		rest = rest[i+1:]
	}
	if len(lines) == 0 {
		return nil, src
	}
	return lines, bytes.TrimLeft(rest, "\n")
}

// addTo rewrites every Go file in dir with the header.
func (b boilerplate) addTo(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		data, err = b.apply(data)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
