package main

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestBazelLabel(t *testing.T) {
	staging := map[string]bool{"k8s.io/api": true, "k8s.io/apimachinery": true}
	for imp, want := range map[string]string{
		"fmt":                               "",
		"crypto/sha256":                     "",
		"k8s.io/api/core/v1":                "//staging/src/k8s.io/api/core/v1:go_default_library",
		"k8s.io/utils/pointer":              "//vendor/k8s.io/utils/pointer:go_default_library",
		"github.com/davecgh/go-spew/spew":   "//vendor/github.com/davecgh/go-spew/spew:go_default_library",
		"k8s.io/kubernetes/pkg/kubelet/cm":  "//pkg/kubelet/cm:go_default_library",
		"k8s.io/apimachinery/pkg/util/sets": "//staging/src/k8s.io/apimachinery/pkg/util/sets:go_default_library",
	} {
		if got := bazelLabel(imp, staging); got != want {
			t.Errorf("bazelLabel(%q) = %q, want %q", imp, got, want)
		}
	}
}

func TestLibraryBUILD(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.go"), "package x\n\nimport (\n\t\"fmt\"\n\n\t\"github.com/davecgh/go-spew/spew\"\n\tv1 \"k8s.io/api/core/v1\"\n)\n")
	write(t, filepath.Join(dir, "b_linux.go"), "// +build linux\n\npackage x\n\nimport \"syscall\"\n")
	write(t, filepath.Join(dir, "a_test.go"), "package x\n\nimport \"testing\"\n")
	got, err := libraryBUILD(dir, map[string]bool{"k8s.io/api": true})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"load(\"@io_bazel_rules_go//go:def.bzl\", \"go_library\")\n\ngo_library(\n    name = \"go_default_library\",\n    srcs = [\n        \"a.go\",\n        \"b_linux.go\",\n    ],\n",
		"    importpath = \"k8s.io/kubernetes/pkg/kubelet/kubeletcompat\",\n",
		"    deps = [\n        \"//staging/src/k8s.io/api/core/v1:go_default_library\",\n        \"//vendor/github.com/davecgh/go-spew/spew:go_default_library\",\n    ],\n)\n",
		"name = \"all-srcs\",\n    srcs = [\":package-srcs\"],\n",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("BUILD lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(string(got), "a_test.go") {
		t.Errorf("BUILD lists the test file:\n%s", got)
	}

	// gazelle would write a select(): not done by hand.
	for name, src := range map[string]string{
		"c_windows.go": "package x\n\nimport \"golang.org/x/sys/windows\"\n",
		"c.go":         "// +build !linux\n\npackage x\n\nimport \"golang.org/x/sys/unix\"\n",
	} {
		dir := t.TempDir()
		write(t, filepath.Join(dir, name), src)
		if _, err := libraryBUILD(dir, nil); err == nil {
			t.Errorf("%s: a platform-specific non-standard import was accepted", name)
		}
	}
}

func TestAddAllSrcs(t *testing.T) {
	parent := `filegroup(
    name = "all-srcs",
    srcs = [
        ":package-srcs",
        "//pkg/kubelet/images:all-srcs",
        "//pkg/kubelet/kubeletconfig:all-srcs",
    ],
)
`
	got, err := addAllSrcs([]byte(parent))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(parent, "        \"//pkg/kubelet/kubeletconfig", "        \"//pkg/kubelet/kubeletcompat:all-srcs\",\n        \"//pkg/kubelet/kubeletconfig", 1)
	if string(got) != want {
		t.Errorf("addAllSrcs:\n%s\nwant:\n%s", got, want)
	}
	again, err := addAllSrcs(got)
	if err != nil || string(again) != want {
		t.Errorf("addAllSrcs is not idempotent: %v\n%s", err, again)
	}
	// Last in the list.
	last := "    name = \"all-srcs\",\n    srcs = [\n        \":package-srcs\",\n        \"//pkg/kubelet/images:all-srcs\",\n    ],\n"
	if got, err := addAllSrcs([]byte(last)); err != nil || !strings.Contains(string(got), "images:all-srcs\",\n        \"//pkg/kubelet/kubeletcompat:all-srcs\",\n    ],") {
		t.Errorf("addAllSrcs at the end: %v\n%s", err, got)
	}
	if _, err := addAllSrcs([]byte("go_library()\n")); err == nil {
		t.Error("addAllSrcs without an all-srcs filegroup succeeded")
	}
}
