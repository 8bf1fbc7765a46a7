package runtimecompat

import (
	"os"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
)

const (
	docPath     = "../../docs/runtime.md"
	beginMarker = "<!-- matrix:begin (go test ./pkg/runtimecompat -update) -->\n"
	endMarker   = "<!-- matrix:end -->\n"
)

// TestDocsMatrix keeps docs/runtime.md's table the one Matrix renders.
func TestDocsMatrix(t *testing.T) {
	b, err := os.ReadFile(docPath)
	assert.NilError(t, err)
	doc := string(b)
	i, j := strings.Index(doc, beginMarker), strings.Index(doc, endMarker)
	assert.Assert(t, i >= 0 && j > i, "docs/runtime.md has no matrix markers")
	want := doc[:i+len(beginMarker)] + Markdown() + doc[j:]
	if golden.FlagUpdate() {
		assert.NilError(t, os.WriteFile(docPath, []byte(want), 0o644))
		return
	}
	assert.Check(t, is.Equal(doc, want), "docs/runtime.md's matrix is stale: go test ./pkg/runtimecompat -update")
}

func TestMatrixCells(t *testing.T) {
	cells := map[int][]string{}
	for _, r := range Matrix() {
		cells[r.Minor] = r.Cells
	}
	for _, tc := range []struct {
		minor int
		want  []string
	}{
		{18, []string{"yes, measured", "yes, measured", "no: no CRI v1alpha2"}},
		{21, []string{"yes, measured", "yes, measured", "no: no CRI v1alpha2"}},
		{22, []string{"yes, measured", "yes, measured", "no: no CRI v1alpha2"}},
		{23, []string{"yes, measured", "yes, measured", "yes, measured"}},
		{26, []string{"yes, measured", "yes, measured", "yes, measured"}},
		{27, []string{"yes, measured", "yes, measured", "yes, measured"}},
		{30, []string{"yes, measured", "yes, measured", "yes, measured"}},
		{32, []string{"yes, measured (not in containerd's list)", "yes, measured", "yes, measured"}},
		{34, []string{"yes, measured (not in containerd's list)", "yes, measured", "yes, measured"}},
		{35, []string{"yes, measured (not in containerd's list)", "yes, measured", "yes, measured"}},
		{36, []string{"yes, measured (not in containerd's list)", "yes, measured (not in containerd's list)", "yes, measured"}},
		{37, []string{"yes, measured (not in containerd's list)", "yes, measured (not in containerd's list)", "yes, measured"}},
		{38, []string{"yes, measured", "yes, measured", "yes, measured"}},
	} {
		assert.Check(t, is.DeepEqual(cells[tc.minor], tc.want), "1.%d", tc.minor)
	}
}

// TestMeasuredPairsAreServed: a pair measured on a node is one the matrix
// says the runtime serves (the e2e refuses the others), on a runtime of
// the matrix's columns; a "yes, measured" never hides a "no".
func TestMeasuredPairsAreServed(t *testing.T) {
	for minor, lines := range measured {
		for _, v := range lines {
			assert.Check(t, is.Contains(matrixLines, v), "1.%d on %s", minor, v)
			l, ok := LineOf("containerd", v)
			assert.Assert(t, ok, v)
			served, why := l.Serves(minor)
			assert.Check(t, served, "1.%d on %s: %s", minor, v, why)
		}
	}
}
