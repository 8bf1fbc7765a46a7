package main

import (
	"os"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubelet-compat/kubelet-compat/pkg/matrix"
)

const sumA = "h1:A2VDEiObzkYqFTKhSsn0ZEb0RlLEXpHWj93gi2HqEwE="
const sumB = "h1:5VAGHlY8yl8pTPVSNIez3SNMy6fWabs+QMR25f3oMT0="

const small = `{
  "comment": "c",
  "sets": {
    "default": ["1.18.19"],
    "ci": ["1.18.19", "1.36.5"]
  },
  "rows": [
    {
      "kubernetes": "1.18.19",
      "go": "1.13.15",
      "sourceSum": "` + sumA + `",
      "toolchainSum": "` + sumB + `",
      "stubs": ["vbom.ml/util"],
      "build": true
    },
    {
      "kubernetes": "1.36.5",
      "go": "1.26.8",
      "sourceSum": "` + sumA + `",
      "toolchainSum": "` + sumB + `",
      "build": true
    }
  ]
}
`

func TestMatrixRoundTrip(t *testing.T) {
	data, err := os.ReadFile("../../" + matrixFile)
	assert.NilError(t, err)
	m, err := splitMatrix(data)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(string(m.bytes()), string(data)))
	// Putting back the newest row as it is changes no byte: it is
	// written in the field order of the newest rows.
	rows, err := matrix.Parse(data)
	assert.NilError(t, err)
	out, replaced, err := setRow(data, rows[len(rows)-1])
	assert.NilError(t, err)
	assert.Check(t, is.Equal(replaced.Kubernetes, rows[len(rows)-1].Kubernetes))
	assert.Check(t, is.Equal(string(out), string(data)))
}

func TestSetRow(t *testing.T) {
	newRow := func(v string) matrix.Row {
		return matrix.Row{Kubernetes: v, Go: "1.26.10", SourceSum: sumA, ToolchainSum: sumB, Build: true}
	}
	for _, tc := range []struct {
		name         string
		row          matrix.Row
		wantReplaced string
		wantCI       string
		wantRows     []string
	}{
		{name: "new newest minor: appended, ci follows", row: newRow("1.37.2"),
			wantCI: `"ci": ["1.18.19", "1.37.2"]`, wantRows: []string{"1.18.19", "1.36.5", "1.37.2"}},
		{name: "newer patch of a minor: replaced in rows and sets", row: newRow("1.36.9"), wantReplaced: "1.36.5",
			wantCI: `"ci": ["1.18.19", "1.36.9"]`, wantRows: []string{"1.18.19", "1.36.9"}},
		{name: "a minor in between: inserted, ci kept", row: newRow("1.20.15"),
			wantCI: `"ci": ["1.18.19", "1.36.5"]`, wantRows: []string{"1.18.19", "1.20.15", "1.36.5"}},
		{name: "a pre-release of a new minor: appended, ci follows", row: newRow("1.37.0-beta.0"),
			wantCI: `"ci": ["1.18.19", "1.37.0-beta.0"]`, wantRows: []string{"1.18.19", "1.36.5", "1.37.0-beta.0"}},
		{name: "a reference row is not the newest build row", row: func() matrix.Row { r := newRow("1.37.2"); r.Build = false; return r }(),
			wantCI: `"ci": ["1.18.19", "1.36.5"]`, wantRows: []string{"1.18.19", "1.36.5", "1.37.2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, replaced, err := setRow([]byte(small), tc.row)
			assert.NilError(t, err)
			assert.Check(t, is.Equal(replaced.Kubernetes, tc.wantReplaced))
			assert.Check(t, is.Contains(string(out), tc.wantCI))
			rows, err := matrix.Parse(out)
			assert.NilError(t, err)
			var got []string
			for _, r := range rows {
				got = append(got, r.Kubernetes)
			}
			assert.Check(t, is.DeepEqual(got, tc.wantRows))
			// Idempotent: the same row again changes nothing.
			again, _, err := setRow(out, tc.row)
			assert.NilError(t, err)
			assert.Check(t, is.Equal(string(again), string(out)))
			// The untouched row keeps its bytes.
			assert.Check(t, strings.Contains(string(out), `"stubs": ["vbom.ml/util"],`))
		})
	}
	_, _, err := setRow([]byte(small), matrix.Row{Kubernetes: "1.38"})
	assert.Check(t, is.ErrorContains(err, "must look like"))
}

// The final release takes the pre-release's row and its place in the sets.
func TestSetRowFinalReplacesPreRelease(t *testing.T) {
	pre := matrix.Row{Kubernetes: "1.37.0-rc.1", Note: "pre", Go: "1.26.10", SourceSum: sumA, ToolchainSum: sumB, Build: true}
	withPre, _, err := setRow([]byte(small), pre)
	assert.NilError(t, err)
	final := pre
	final.Kubernetes, final.Note = "1.37.0", "final"
	out, replaced, err := setRow(withPre, final)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(replaced.Kubernetes, "1.37.0-rc.1"))
	assert.Check(t, is.Contains(string(out), `"ci": ["1.18.19", "1.37.0"]`))
	assert.Check(t, !strings.Contains(string(out), "rc.1"))
}

func TestRenderRow(t *testing.T) {
	r := matrix.Row{Kubernetes: "1.25.16", Note: "a -> b <c>", Go: "1.20.14", GoNote: "g", SourceSum: sumA, ToolchainSum: sumB,
		Stubs: []string{"x/y", "z"}, Overrides: map[string]string{"k8s.io/b": "v0.25.9", "k8s.io/a": "v0.25.9"}, Build: true}
	assert.Check(t, is.Equal(renderRow(r), `    {
      "kubernetes": "1.25.16",
      "note": "a -> b <c>",
      "go": "1.20.14",
      "goNote": "g",
      "sourceSum": "`+sumA+`",
      "toolchainSum": "`+sumB+`",
      "stubs": ["x/y", "z"],
      "overrides": {"k8s.io/a": "v0.25.9", "k8s.io/b": "v0.25.9"},
      "build": true
    }`))
}

func readRepoFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile("../../" + path)
	assert.NilError(t, err)
	return string(data)
}
