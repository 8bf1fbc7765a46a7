package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
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

// TestRejectedHunks runs the failure path in a real git repository: git am
// fails, and the hunk that does not apply is named.
func TestRejectedHunks(t *testing.T) {
	ctx := context.Background()
	repo := t.TempDir()
	git := gitIn(repo)
	file := filepath.Join(repo, "f.go")
	orig := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\n"
	assert.NilError(t, git(ctx, nil, "init", "-q"))
	write(t, file, orig)
	assert.NilError(t, git(ctx, nil, "add", "-A"))
	assert.NilError(t, git(ctx, nil, "commit", "-q", "-m", "pristine"))
	// The variant: change b and k.
	write(t, file, strings.Replace(strings.Replace(orig, "b\n", "B\n", 1), "k\n", "K\n", 1))
	assert.NilError(t, git(ctx, nil, "commit", "-q", "-am", "hook"))
	patchDir := t.TempDir()
	assert.NilError(t, git(ctx, nil, "format-patch", "-q", "-o", patchDir, "-1"))
	patch := filepath.Join(patchDir, "0001-hook.patch")
	// The new minor changed the lines around b.
	assert.NilError(t, git(ctx, nil, "reset", "-q", "--hard", "HEAD~"))
	write(t, file, strings.Replace(orig, "a\n", "A\n", 1))
	assert.NilError(t, git(ctx, nil, "commit", "-q", "-am", "upstream"))

	assert.Assert(t, git(ctx, nil, "am", "-q", patch) != nil)
	rejects, err := rejectedHunks(ctx, git, patch)
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(rejects, []string{"patch failed at f.go:1", "f.go: hunk #1 rejected"}))
	// The work tree is back as it was, ready for the next hook.
	data, err := os.ReadFile(file)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(string(data), strings.Replace(orig, "a\n", "A\n", 1)))
	assert.NilError(t, git(ctx, nil, "diff", "--quiet", "HEAD"))
}
