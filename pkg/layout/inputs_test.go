package layout

import (
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
)

func TestCheckBuild(t *testing.T) {
	cli := filepath.Join(t.TempDir(), "kubelet-compat")
	assert.NilError(t, os.WriteFile(cli, []byte("#!/bin/sh\n"), 0o755))
	ok := BuildRequest{What: "RPMs", OutputDir: "out", InputDir: "in", KubeletCompat: cli, SourceDateEpoch: 1, Versions: []string{"1.21.14"}, NeedsCLI: true}
	for _, tc := range []struct {
		name   string
		change func(r *BuildRequest)
		err    string
	}{
		{"complete", func(*BuildRequest) {}, ""},
		{"unversioned only needs no input", func(r *BuildRequest) { r.Versions, r.InputDir, r.KubeletCompat = nil, "", "" }, ""},
		{"no output", func(r *BuildRequest) { r.OutputDir = "" }, "no output directory"},
		{"no epoch", func(r *BuildRequest) { r.SourceDateEpoch = 0 }, "for reproducible RPMs"},
		{"bad version", func(r *BuildRequest) { r.Versions = []string{"v1.21.14"} }, "invalid Kubernetes version"},
		{"twice", func(r *BuildRequest) { r.Versions = []string{"1.21.14", "1.21.14"} }, "given twice"},
		{"no input", func(r *BuildRequest) { r.InputDir = "" }, "no input directory"},
		{"no CLI", func(r *BuildRequest) { r.KubeletCompat = filepath.Join(t.TempDir(), "missing") }, "kubelet-compat CLI"},
		{"runtime needs no CLI", func(r *BuildRequest) {
			r.Versions, r.KubeletCompat, r.NeedsCLI = []string{"containerd@1.7.35", "cni-plugins@1.10.0"}, "", false
		}, ""},
		{"runtime patched build", func(r *BuildRequest) {
			r.Versions, r.KubeletCompat, r.NeedsCLI = []string{"containerd@1.7.35", "containerd@1.7.36+compat.1"}, "", false
		}, ""},
		{"runtime bad version", func(r *BuildRequest) { r.Versions, r.NeedsCLI = []string{"containerd@v1.7.35"}, false }, "invalid runtime component"},
		{"runtime bad build metadata", func(r *BuildRequest) { r.Versions, r.NeedsCLI = []string{"containerd@1.7.36+"}, false }, "invalid runtime component"},
		{"runtime no name", func(r *BuildRequest) { r.Versions, r.NeedsCLI = []string{"@1.7.35"}, false }, "invalid runtime component"},
	} {
		r := ok
		tc.change(&r)
		err := CheckBuild(r)
		if tc.err == "" {
			assert.NilError(t, err, tc.name)
		} else {
			assert.ErrorContains(t, err, tc.err, tc.name)
		}
	}
}
