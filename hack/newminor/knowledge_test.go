package main

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubelet-compat/kubelet-compat/hack/gen-hash-goldens/golden"
)

func TestBumpConst(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
		n, wantOld      int
		wantErr         string
	}{
		{name: "in a const block", src: "const (\n\t// x\n\tlastKnownMinor = 37\n)\n", n: 38, want: "const (\n\t// x\n\tlastKnownMinor = 38\n)\n", wantOld: 37},
		{name: "single const", src: "const TypesMinor = 37\n", n: 38, want: "const TypesMinor = 38\n", wantOld: 37},
		{name: "same value", src: "\tlastKnownMinor = 37\n", n: 37, want: "\tlastKnownMinor = 37\n", wantOld: 37},
		{name: "a longer name is another constant", src: "\tlastKnownMinorX = 37\n", n: 38, wantErr: "no \"lastKnownMinor\""},
		{name: "missing", src: "package x\n", n: 38, wantErr: "no \"lastKnownMinor\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "lastKnownMinor"
			if tc.name == "single const" {
				name = "TypesMinor"
			}
			out, old, err := bumpConst([]byte(tc.src), name, tc.n)
			if tc.wantErr != "" {
				assert.Check(t, is.ErrorContains(err, tc.wantErr))
				return
			}
			assert.NilError(t, err)
			assert.Check(t, is.Equal(string(out), tc.want))
			assert.Check(t, is.Equal(old, tc.wantOld))
		})
	}
}

func TestFindAnchor(t *testing.T) {
	src := "var Recommended = map[int][]string{\n\t36: {\"2.3.0\"},\n\t37: {\"2.4.0\"},\n}\n"
	a := anchor{file: "pkg/runtimecompat/check.go", pattern: `^\s*{prev}: \{`, what: "containerd for 1.{new}"}
	got := findAnchor(a, src, 37, 38)
	assert.Assert(t, is.Len(got, 1))
	assert.Check(t, is.Equal(got[0].line, 3))
	assert.Check(t, is.Equal(got[0].what, "containerd for 1.38"))
	assert.Check(t, is.Equal(got[0].String(), "pkg/runtimecompat/check.go:3: containerd for 1.38\n      37: {\"2.4.0\"},"))
}

func TestFindRangeEnds(t *testing.T) {
	src := "// 1.31 .. 1.37 hash\n// every minor 1.18-1.37\n// up to 1.37)\n// 1.37.2 is a release\n// 1.370\n// 1.36 -> 1.37\n"
	var lines []int
	for _, f := range findRangeEnds("x.go", src, 37) {
		lines = append(lines, f.line)
	}
	assert.Check(t, is.DeepEqual(lines, []int{1, 2, 3}))
}

func TestKnowledgeAnchorsMatch(t *testing.T) {
	// Every anchor names a line in today's tree (newest minor 1.37): an
	// anchor that matches nothing would silently drop its checklist item.
	for _, a := range knowledge {
		t.Run(a.file, func(t *testing.T) {
			src := readRepoFile(t, a.file)
			assert.Check(t, len(findAnchor(a, src, 37, 38)) > 0, "anchor %q matches no line of %s", a.pattern, a.file)
		})
	}
}

func TestSameHashes(t *testing.T) {
	g := &golden.File{Lines: []golden.Line{
		{Minor: "1.36", Item: "minimal", Hash: "aa"}, {Minor: "1.36", Item: "ports", Hash: "bb"},
		{Minor: "1.37", Item: "minimal", Hash: "aa"}, {Minor: "1.37", Item: "ports", Hash: "bb"},
		{Minor: "1.38", Item: "minimal", Hash: "aa"}, {Minor: "1.38", Item: "ports", Hash: "cc"},
	}}
	for _, tc := range []struct{ a, b, want string }{
		{"1.36", "1.37", ""},
		{"1.37", "1.38", "1.38 hashes 1 corpus containers unlike 1.37 (ports): a new hash era, the library's code must learn it"},
		{"1.37", "1.39", "the hash golden has no line of 1.39 (run without -skip-hashes)"},
	} {
		assert.Check(t, is.Equal(sameHashes(g, tc.a, tc.b), tc.want), "%s vs %s", tc.a, tc.b)
	}
}

func TestReportPrint(t *testing.T) {
	r := &report{
		done:     []string{"row added"},
		hooks:    []string{"1 hook(s) do not apply\n  hook 1-keep (from v1.37.patch):\n    a.go: hunk #1 rejected"},
		facts:    []string{"static-pod UID"},
		findings: []finding{{file: "pkg/upstream/upstream.go", line: 20, text: "\tLast  = 37", what: "raise Last"}},
	}
	var b strings.Builder
	r.print(&b)
	assert.Check(t, is.Equal(b.String(), `== generated
  - row added
== hook variants that need a human (newest variant does not apply)
  1 hook(s) do not apply
    hook 1-keep (from v1.37.patch):
      a.go: hunk #1 rejected
== upstream facts to measure
  [ ] static-pod UID
== hand-written tables this command does not update
  [ ] pkg/upstream/upstream.go:20: raise Last
        Last  = 37
`))
}

func TestPatchgenFailure(t *testing.T) {
	stderr := "[1.37.2] wrote nothing\npatchgen: [1.37.2] 1 hook(s) do not apply to v1.37.2\n  hook 3-admit (from v1.36.patch):\n    pkg/kubelet/kubelet.go: hunk #1 rejected\nexit status 1\n"
	assert.Check(t, is.Equal(patchgenFailure(stderr), "[1.37.2] wrote nothing\n[1.37.2] 1 hook(s) do not apply to v1.37.2\n  hook 3-admit (from v1.36.patch):\n    pkg/kubelet/kubelet.go: hunk #1 rejected"))
}

func TestPreReleaseNote(t *testing.T) {
	assert.Check(t, is.Equal(preReleaseNote("1.38.0-rc.1"),
		"Pre-release: the newest 1.38 the proxy serves until 1.38.0; hack/new-minor 1.38.0 replaces this row when the proxy serves it."))
}
