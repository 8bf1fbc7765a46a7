package scenario

import (
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
)

// output makes an _output with the given binaries (dir/kubelet) and the CLI.
func output(t *testing.T, dirs ...string) string {
	t.Helper()
	out := t.TempDir()
	assert.NilError(t, os.WriteFile(filepath.Join(out, "kubelet-compat"), nil, 0o755))
	for _, d := range dirs {
		assert.NilError(t, os.MkdirAll(filepath.Join(out, d), 0o755))
		assert.NilError(t, os.WriteFile(filepath.Join(out, d, "kubelet"), nil, 0o755))
	}
	return out
}

// TestPreflightPerVariant: what each kind of run needs built. A control's
// baseline falls back to the release build of its from-version while the
// patched one is missing. A rollback step needs the newer kubelet patched
// (the baselines), the older one patched (the patched swap) and as released
// (the control).
func TestPreflightPerVariant(t *testing.T) {
	chain := []Step{{From: "1.21.14", To: "1.22.17"}, {From: "1.22.17", To: "1.23.17"}}
	rollback := []Step{{From: "1.31.14", To: "1.30.14"}}
	tests := []struct {
		name    string
		steps   []Step // chain when nil
		dirs    []string
		opts    Options
		missing string // "" when nothing is missing
	}{
		{name: "controls alone, patched 1.22 not built yet: its release build is the baseline",
			dirs: []string{"1.21.14", "1.22.17-unpatched", "1.23.17-unpatched"}, opts: Options{Plan: plan.Plan{Controls: true, SkipPatched: true}}},
		{name: "controls alone without any 1.22 build",
			dirs: []string{"1.21.14", "1.23.17-unpatched"}, opts: Options{Plan: plan.Plan{Controls: true, SkipPatched: true}}, missing: "1.22.17-unpatched/kubelet"},
		{name: "controls and the patched chain need every patched build",
			dirs: []string{"1.21.14", "1.22.17-unpatched", "1.23.17-unpatched"}, opts: Options{Plan: plan.Plan{Controls: true}}, missing: "1.22.17/kubelet"},
		{name: "patched chain alone needs no release build",
			dirs: []string{"1.21.14", "1.22.17", "1.23.17"}, opts: Options{}},
		{name: "everything",
			dirs: []string{"1.21.14", "1.22.17", "1.23.17", "1.22.17-unpatched", "1.23.17-unpatched"}, opts: Options{Plan: plan.Plan{Controls: true}}},
		{name: "rollback: everything", steps: rollback, dirs: []string{"1.31.14", "1.30.14", "1.30.14-unpatched"}, opts: Options{Plan: plan.Plan{Controls: true}}},
		{name: "rollback: the older kubelet as released", steps: rollback, dirs: []string{"1.31.14", "1.30.14"}, opts: Options{Plan: plan.Plan{Controls: true}}, missing: "1.30.14-unpatched/kubelet"},
		{name: "rollback: the older kubelet patched", steps: rollback, dirs: []string{"1.31.14", "1.30.14-unpatched"}, opts: Options{Plan: plan.Plan{Controls: true}}, missing: "1.30.14/kubelet"},
		{name: "rollback: the control alone needs no patched older kubelet", steps: rollback, dirs: []string{"1.31.14", "1.30.14-unpatched"}, opts: Options{Plan: plan.Plan{Controls: true, SkipPatched: true}}},
		{name: "rollback: the patched run alone needs no release build", steps: rollback, dirs: []string{"1.31.14", "1.30.14"}, opts: Options{}},
		{name: "rollback: the newer kubelet", steps: rollback, dirs: []string{"1.30.14", "1.30.14-unpatched"}, opts: Options{}, missing: "1.31.14/kubelet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.opts
			o.Steps, o.Output = tt.steps, output(t, tt.dirs...)
			if o.Steps == nil {
				o.Steps = chain
			}
			err := Preflight(o)
			if tt.missing == "" {
				assert.NilError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.missing)
		})
	}
}

func TestControlBaselineBinary(t *testing.T) {
	s := &Scenario{opts: Options{Plan: plan.Plan{Output: output(t, "1.21.14", "1.21.14-unpatched", "1.22.17-unpatched")}}}
	assert.Equal(t, s.ControlBaselineBinary("1.21.14"), s.Binary("1.21.14", true))
	assert.Equal(t, s.ControlBaselineBinary("1.22.17"), s.Binary("1.22.17", false))
	// Neither built: the patched path, which Preflight reports missing.
	assert.Equal(t, s.ControlBaselineBinary("1.23.17"), s.Binary("1.23.17", true))
}
