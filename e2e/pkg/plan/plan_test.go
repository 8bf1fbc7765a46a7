package plan

import (
	"testing"

	"gotest.tools/v3/assert"
)

func TestParseSteps(t *testing.T) {
	tests := []struct {
		versions, steps string
		want            []string
		err             string
	}{
		{versions: "1.21.14,1.22.17,1.23.17", want: []string{"1.21.14 -> 1.22.17", "1.22.17 -> 1.23.17"}},
		{steps: "1.28.15:1.31.14", want: []string{"1.28.15 -> 1.31.14"}},
		{versions: "1.21.14,1.22.17", steps: "1.18.19:1.21.14", want: []string{"1.21.14 -> 1.22.17", "1.18.19 -> 1.21.14"}},
		{versions: "1.21.14", err: "at least two versions"},
		{steps: "1.22.17", err: "want from:to"},
		{versions: "1.22.17,1.21.14", err: "does not go up"},
		{steps: "1.21.14:1.21.14", err: "does not go up"},
		{versions: "1.21,1.22", err: "1.<minor>.<patch>"},
	}
	for _, tt := range tests {
		got, err := ParseSteps(tt.versions, tt.steps)
		if tt.err != "" {
			assert.ErrorContains(t, err, tt.err)
			continue
		}
		assert.NilError(t, err)
		var s []string
		for _, st := range got {
			s = append(s, st.String())
		}
		assert.DeepEqual(t, s, tt.want)
	}
}

func TestVersions(t *testing.T) {
	steps := []Step{{"1.30.14", "1.31.14"}, {"1.31.14", "1.32.13"}, {"1.28.15", "1.31.14"}}
	patched, unpatched := Versions(steps, true)
	assert.DeepEqual(t, patched, []string{"1.30.14", "1.31.14", "1.32.13", "1.28.15"})
	assert.DeepEqual(t, unpatched, []string{"1.31.14", "1.32.13"})
	_, unpatched = Versions(steps, false)
	assert.Assert(t, unpatched == nil)
}
