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
		// Rollback steps: a newer kubelet swapped back to an older one.
		{steps: "1.31.14:1.30.14", want: []string{"1.31.14 -> 1.30.14 (rollback)"}},
		{steps: "1.21.14:1.20.15", want: []string{"1.21.14 -> 1.20.15 (rollback)"}},
		{versions: "1.22.17,1.21.14", want: []string{"1.22.17 -> 1.21.14 (rollback)"}},
		{versions: "1.30.14,1.31.14,1.30.14", want: []string{"1.30.14 -> 1.31.14", "1.31.14 -> 1.30.14 (rollback)"}},
		{steps: "1.31.14:1.28.15", want: []string{"1.31.14 -> 1.28.15 (rollback)"}}, // skip-level
		{steps: "1.30.14:1.30.10", want: []string{"1.30.14 -> 1.30.10 (rollback)"}}, // patch release
		{steps: "1.30.9:1.30.10", want: []string{"1.30.9 -> 1.30.10"}},              // numbers, not strings
		{steps: "1.30.10:1.30.9", want: []string{"1.30.10 -> 1.30.9 (rollback)"}},
		// Equal versions stay refused.
		{steps: "1.21.14:1.21.14", err: "same version"},
		{versions: "1.31.14,1.31.14", err: "same version"},
		{steps: "1.30.14:1.31.14,1.31.14:1.31.14", err: "same version"},
		{versions: "1.21,1.22", err: "1.<minor>.<patch>"},
		{steps: "1.31.14:1.30", err: "1.<minor>.<patch>"},
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

// TestVersionsOfRollbackSteps: a rollback step needs both kubelets patched
// (the baseline on the newer, the swap to the older) and the older, its
// target, as released for the control.
func TestVersionsOfRollbackSteps(t *testing.T) {
	tests := []struct {
		name               string
		steps              []Step
		controls           bool
		patched, unpatched []string
	}{
		{name: "1.31 -> 1.30", steps: []Step{{"1.31.14", "1.30.14"}}, controls: true,
			patched: []string{"1.31.14", "1.30.14"}, unpatched: []string{"1.30.14"}},
		{name: "1.21 -> 1.20", steps: []Step{{"1.21.14", "1.20.15"}}, controls: true,
			patched: []string{"1.21.14", "1.20.15"}, unpatched: []string{"1.20.15"}},
		{name: "up then back down", steps: []Step{{"1.30.14", "1.31.14"}, {"1.31.14", "1.30.14"}}, controls: true,
			patched: []string{"1.30.14", "1.31.14"}, unpatched: []string{"1.31.14", "1.30.14"}},
		{name: "patched alone", steps: []Step{{"1.31.14", "1.30.14"}},
			patched: []string{"1.31.14", "1.30.14"}},
	}
	for _, tt := range tests {
		patched, unpatched := Versions(tt.steps, tt.controls)
		assert.DeepEqual(t, patched, tt.patched)
		assert.DeepEqual(t, unpatched, tt.unpatched)
	}
}

func TestRollback(t *testing.T) {
	tests := []struct {
		step Step
		want bool
	}{
		{Step{"1.31.14", "1.30.14"}, true},
		{Step{"1.30.14", "1.31.14"}, false},
		{Step{"1.30.10", "1.30.9"}, true},
		{Step{"2.0.0", "1.99.99"}, true},
		{Step{"1.30.14", "1.30.14"}, false},
		{Step{"1.31", "1.30.14"}, false}, // unparsable: ParseSteps refuses it
		{Step{"1.37.2", "1.38.0-beta.0"}, false},
		{Step{"1.38.0-beta.0", "1.37.2"}, true},
		{Step{"1.38.0", "1.38.0-rc.1"}, true},
		{Step{"1.38.0-beta.0", "1.38.0-rc.1"}, false},
		{Step{"1.38.0-rc.1", "1.38.0-alpha.3"}, true},
		{Step{"1.37.2", "1.38.0-gamma.1"}, false}, // unparsable
	}
	for _, tt := range tests {
		assert.Equal(t, tt.step.Rollback(), tt.want, "%+v", tt.step)
	}
	assert.Assert(t, HasRollback([]Step{{"1.30.14", "1.31.14"}, {"1.31.14", "1.30.14"}}))
	assert.Assert(t, !HasRollback([]Step{{"1.30.14", "1.31.14"}}))
}

func TestParseRecordAfterSwap(t *testing.T) {
	upDownUp, _ := ParseSteps("1.30.14,1.31.14,1.30.14,1.31.14", "")
	up, _ := ParseSteps("1.30.14,1.31.14", "")
	tests := []struct {
		value string
		steps []Step
		api   bool
		want  bool
		err   string
	}{
		{value: "", steps: upDownUp, want: true},
		{value: "auto", steps: upDownUp, api: true, want: false},
		{value: "auto", steps: upDownUp, want: true},
		{value: "auto", steps: []Step{{"1.31.14", "1.30.14"}}, want: true},
		{value: "", steps: up, want: false},
		{value: "auto", steps: up, want: false},
		{value: "true", steps: up, want: true},
		{value: "false", steps: upDownUp, want: false},
		{value: "yes", steps: up, err: "auto, true or false"},
		{value: "True", steps: up, err: "auto, true or false"},
	}
	for _, tt := range tests {
		got, err := ParseRecordAfterSwap(tt.value, tt.steps, !tt.api)
		if tt.err != "" {
			assert.ErrorContains(t, err, tt.err)
			continue
		}
		assert.NilError(t, err)
		assert.Equal(t, got, tt.want, "%q %v", tt.value, tt.steps)
	}
}

func TestControlPlanePath(t *testing.T) {
	tests := []struct {
		step      Step
		skipLevel bool
		want      []string
	}{
		{Step{"1.30.14", "1.31.14"}, false, []string{"1.31.14"}},
		{Step{"1.28.15", "1.31.14"}, true, []string{"1.29.15", "1.30.14", "1.31.14"}},
		{Step{"1.31.14", "1.34.12"}, true, []string{"1.32.13", "1.33.13", "1.34.12"}},
		{Step{"1.18.19", "1.20.15"}, true, []string{"1.19.16", "1.20.15"}},
		{Step{"1.30.9", "1.30.14"}, false, []string{"1.30.14"}},
		// A rollback is no skip-level step: the kubelet goes down alone.
		{Step{"1.31.14", "1.28.15"}, false, []string{"1.28.15"}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.step.SkipLevel(), tt.skipLevel, tt.step.String())
		got, err := ControlPlanePath(tt.step)
		assert.NilError(t, err)
		assert.DeepEqual(t, got, tt.want)
	}
	_, err := ControlPlanePath(Step{"1.10.1", "1.12.1"})
	assert.ErrorContains(t, err, "not in pkg/matrix")
}

func TestControlPlaneVersions(t *testing.T) {
	got, err := ControlPlaneVersions([]Step{{"1.28.15", "1.31.14"}, {"1.31.14", "1.34.12"}, {"1.30.14", "1.31.14"}})
	assert.NilError(t, err)
	// 1.30.14 is named by a step (built anyway).
	assert.DeepEqual(t, got, []string{"1.29.15", "1.32.13", "1.33.13"})
	got, err = ControlPlaneVersions([]Step{{"1.30.14", "1.31.14"}})
	assert.NilError(t, err)
	assert.Assert(t, got == nil)
}

// TestRuns: the controls, one per step, then the patched chain, as every
// provider runs them.
func TestRuns(t *testing.T) {
	a, b := Step{From: "1.20.15", To: "1.21.14"}, Step{From: "1.21.14", To: "1.22.17"}
	for _, tc := range []struct {
		name                  string
		controls, skipPatched bool
		want                  []Run
	}{
		{"controls then the chain", true, false, []Run{{Steps: []Step{a}}, {Steps: []Step{b}}, {Steps: []Step{a, b}, Patched: true}}},
		{"the chain alone", false, false, []Run{{Steps: []Step{a, b}, Patched: true}}},
		{"the controls alone", true, true, []Run{{Steps: []Step{a}}, {Steps: []Step{b}}}},
		{"nothing", false, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.DeepEqual(t, Runs([]Step{a, b}, tc.controls, tc.skipPatched), tc.want)
		})
	}
}
