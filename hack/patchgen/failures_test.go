package main

import (
	"errors"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestParseRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stderr string
		want   []string
	}{
		{
			name: "one hunk of two rejected",
			stderr: "Checking patch pkg/kubelet/kubelet.go...\nerror: while searching for:\na\nb\n\nerror: patch failed: pkg/kubelet/kubelet.go:120\n" +
				"Applying patch pkg/kubelet/kubelet.go with 1 reject...\nRejected hunk #1.\nHunk #2 applied cleanly.\n",
			want: []string{"patch failed at pkg/kubelet/kubelet.go:120", "pkg/kubelet/kubelet.go: hunk #1 rejected"},
		},
		{
			name:   "file gone",
			stderr: "Checking patch pkg/kubelet/config/file.go...\nerror: pkg/kubelet/config/file.go: No such file or directory\n",
			want:   []string{"pkg/kubelet/config/file.go: No such file or directory"},
		},
		{name: "nothing to point at", stderr: "", want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.DeepEqual(t, parseRejects(tc.stderr), tc.want)
		})
	}
}

func TestHooksError(t *testing.T) {
	err := &hooksError{tag: "v1.38.0", failed: []hookFailure{
		{hook: "1-keep", variant: "patches/hooks/1-keep/v1.37.patch", rejects: []string{"a.go: hunk #2 rejected"}},
		{hook: "3-admit", variant: "patches/hooks/3-admit/v1.36.patch", err: errors.New("git am: exit 128")},
	}}
	assert.Check(t, is.Equal(err.Error(), "2 hook(s) do not apply on top of the library patch to v1.38.0: write a variant v1.<minor>.patch for each (patches/hooks/README.md)\n"+
		"  hook 1-keep (from patches/hooks/1-keep/v1.37.patch):\n    a.go: hunk #2 rejected\n"+
		"  hook 3-admit (from patches/hooks/3-admit/v1.36.patch):\n    git am: exit 128"))
}
