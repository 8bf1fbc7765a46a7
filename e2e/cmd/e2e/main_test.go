package main

import (
	"bytes"
	"encoding/json"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind/fleet"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/rootdir"
	"github.com/kubelet-compat/kubelet-compat/pkg/procfs"
	"gotest.tools/v3/assert"
)

// sleeper starts a child process the test owns; it is killed when the
// test ends, whatever happened.
func sleeper(t *testing.T) (*osexec.Cmd, procfs.ID, <-chan error) {
	t.Helper()
	cmd := osexec.Command("sleep", "300")
	assert.NilError(t, cmd.Start())
	id, err := procfs.Host.Identify(cmd.Process.Pid)
	assert.NilError(t, err)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd, id, done
}

func exited(done <-chan error) bool {
	select {
	case <-done:
		return true
	case <-time.After(5 * time.Second):
		return false
	}
}

// TestCleanupModeUndoesAKilledRun plays a run that was SIGKILLed: its
// journal under -root lists a process it started. `e2e -mode cleanup` must
// stop that process (by PID and start time), leave alone a process that
// is not listed and one whose PID is listed with another start time (a
// recycled PID), and remove the root.
func TestCleanupModeUndoesAKilledRun(t *testing.T) {
	root := filepath.Join(t.TempDir(), "e2e-root")
	assert.NilError(t, os.MkdirAll(filepath.Join(root, "containerd", "state"), 0o755))
	assert.NilError(t, os.WriteFile(filepath.Join(root, ".kubelet-compat-e2e-root"), []byte("kubelet-compat e2e state directory\n"), 0o644))

	_, ours, oursDone := sleeper(t)
	_, stranger, strangerDone := sleeper(t)
	_, recycled, recycledDone := sleeper(t)
	self, err := procfs.Host.Self()
	assert.NilError(t, err)
	boot, err := procfs.Host.BootID()
	assert.NilError(t, err)
	journal := map[string]interface{}{
		"format": 1, "root": root, "bootID": boot, "sinceTicks": self.StartTicks,
		"processes": []map[string]interface{}{
			{"name": "containerd", "binary": "sleep", "pid": ours.PID, "startTicks": ours.StartTicks},
			{"name": "kubelet", "binary": "sleep", "pid": recycled.PID, "startTicks": recycled.StartTicks + 1},
		},
	}
	b, err := json.Marshal(journal)
	assert.NilError(t, err)
	assert.NilError(t, os.WriteFile(filepath.Join(root, "journal.json"), b, 0o644))

	var stdout, stderr bytes.Buffer
	code := run([]string{"-mode", "cleanup", "-root", root + "/"}, &stdout, &stderr)
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	assert.Equal(t, code, 0)
	assert.Assert(t, exited(oursDone), "the recorded process %v still runs", ours)
	select {
	case <-strangerDone:
		t.Errorf("a process the journal does not list (%v) was stopped", stranger)
	case <-recycledDone:
		t.Errorf("a process whose PID the journal lists with another start time (%v) was stopped", recycled)
	default:
	}
	_, err = os.Stat(root)
	assert.Assert(t, os.IsNotExist(err), "the root is still there")
	assert.Assert(t, strings.Contains(stdout.String(), "containerd"), "the cleanup does not say what it stopped")
}

func TestCleanupModeRefuses(t *testing.T) {
	tests := []struct {
		name     string
		setup    func(t *testing.T, root string)
		wantCode int
		wantOut  string
		wantKept bool
	}{
		{name: "no root: nothing to do", setup: func(*testing.T, string) {}, wantCode: 0, wantOut: "nothing to undo"},
		{name: "a directory without the marker", setup: func(t *testing.T, root string) {
			assert.NilError(t, os.MkdirAll(root, 0o755))
			assert.NilError(t, os.WriteFile(filepath.Join(root, "precious"), nil, 0o644))
		}, wantCode: 1, wantOut: "not an e2e root", wantKept: true},
		{name: "a run still holds it", setup: func(t *testing.T, root string) {
			_, err := rootdir.Claim(root)
			assert.NilError(t, err)
			release, err := rootdir.Lock(root)
			assert.NilError(t, err)
			t.Cleanup(release)
		}, wantCode: 1, wantOut: "still running", wantKept: true},
		{name: "a journal naming another root", setup: func(t *testing.T, root string) {
			_, err := rootdir.Claim(root)
			assert.NilError(t, err)
			assert.NilError(t, os.WriteFile(filepath.Join(root, "journal.json"), []byte(`{"format":1,"root":"/var/lib/elsewhere"}`), 0o644))
		}, wantCode: 1, wantOut: "names root", wantKept: true},
		{name: "a marked root without journal is removed", setup: func(t *testing.T, root string) {
			_, err := rootdir.Claim(root)
			assert.NilError(t, err)
		}, wantCode: 0, wantOut: "has no journal"},
		{name: "a system directory", setup: nil, wantCode: 2, wantOut: "system directory", wantKept: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "e2e-root")
			if tt.setup == nil {
				root = "/var/lib"
			} else {
				tt.setup(t, root)
			}
			var stdout, stderr bytes.Buffer
			code := run([]string{"-mode", "cleanup", "-root", root}, &stdout, &stderr)
			out := stdout.String() + stderr.String()
			assert.Equal(t, code, tt.wantCode, out)
			assert.Assert(t, strings.Contains(out, tt.wantOut), out)
			_, err := os.Stat(root)
			if tt.wantKept {
				assert.NilError(t, err)
			} else {
				assert.Assert(t, os.IsNotExist(err), "%s is still there", root)
			}
		})
	}
}

func TestStepsModeNeedsVersions(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"-mode", "steps", "-root", filepath.Join(t.TempDir(), "a", "root")}, &stdout, &stderr)
	assert.Equal(t, code, 2)
	assert.Assert(t, strings.Contains(stderr.String(), "needs -versions"), stderr.String())
}

func TestNothingToRun(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"-mode", "steps", "-versions", "1.21.14,1.22.17", "-patched=false", "-controls=false", "-root", filepath.Join(t.TempDir(), "a", "root")}, &stdout, &stderr)
	assert.Equal(t, code, 2)
	assert.Assert(t, strings.Contains(stderr.String(), "nothing to run"), stderr.String())
}

// TestResizeGateNeedsAPIMode: the gate only matters to the API server's
// pods (static pods are never resized in place).
func TestResizeGateNeedsAPIMode(t *testing.T) {
	for _, args := range [][]string{{"-mode", "ci"}, {"-mode", "api", "-provider", "kind"}} {
		var stdout, stderr bytes.Buffer
		code := run(append(args, "-resize-gate", "-root", filepath.Join(t.TempDir(), "a", "root")), &stdout, &stderr)
		assert.Equal(t, code, 2, args)
		assert.Assert(t, strings.Contains(stderr.String(), "-resize-gate needs API mode"), stderr.String())
	}
}

// TestRollbackStepsRefusedWhereTheyCannotRun: rollback steps are accepted on the local
// provider (static pods, and API mode, whose API server stays at the newer
// version), and refused, before anything is made, by the kind provider
// and in the admission mode; equal versions are refused everywhere.
func TestRollbackStepsRefusedWhereTheyCannotRun(t *testing.T) {
	root := filepath.Join(t.TempDir(), "e2e-root")
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "kind", args: []string{"-mode", "steps", "-steps", "1.31.14:1.30.14", "-provider", "kind"}, wantErr: "not with -provider kind nor in the admission or device modes"},
		{name: "admission", args: []string{"-mode", "admission", "-steps", "1.21.14:1.20.15"}, wantErr: "not with -provider kind nor in the admission or device modes"},
		// API mode takes rollback steps; -record-after-swap (auto: on with a
		// rollback of static pods) is refused there when asked for.
		{name: "API mode, record after swap", args: []string{"-mode", "api", "-steps", "1.31.14:1.30.14", "-record-after-swap", "true"}, wantErr: "-record-after-swap runs with static pods on the local provider only"},
		{name: "equal versions", args: []string{"-mode", "steps", "-steps", "1.30.14:1.30.14"}, wantErr: "same version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append(tt.args, "-root", root), &stdout, &stderr)
			assert.Equal(t, code, 2, "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
			assert.Assert(t, strings.Contains(stderr.String(), tt.wantErr), stderr.String())
			_, err := os.Stat(root)
			assert.Assert(t, os.IsNotExist(err), "the refused run made its root")
		})
	}
}

// TestRecordAfterSwapOptions: -record-after-swap is auto, true or false;
// with static pods on the local provider only, refused before anything is
// made elsewhere; -cli is the local provider's.
func TestRecordAfterSwapOptions(t *testing.T) {
	root := filepath.Join(t.TempDir(), "e2e-root")
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "bad value", args: []string{"-mode", "steps", "-versions", "1.30.14,1.31.14", "-record-after-swap", "yes"}, wantErr: "auto, true or false"},
		{name: "kind", args: []string{"-mode", "steps", "-versions", "1.30.14,1.31.14", "-provider", "kind", "-record-after-swap", "true"}, wantErr: "-record-after-swap runs with static pods on the local provider only"},
		{name: "API mode", args: []string{"-mode", "api", "-record-after-swap", "true"}, wantErr: "-record-after-swap runs with static pods on the local provider only"},
		{name: "-to-feature-gates: not a gate", args: []string{"-mode", "steps", "-steps", "1.37.2:1.36.5", "-to-feature-gates", "RestartAllContainersOnContainerExits"}, wantErr: "want Name=true or Name=false"},
		{name: "-to-feature-gates on kind", args: []string{"-mode", "steps", "-steps", "1.36.5:1.37.2", "-provider", "kind", "-to-feature-gates", "RestartAllContainersOnContainerExits=false"}, wantErr: "-to-feature-gates is the local provider's"},
		{name: "-cli on kind", args: []string{"-mode", "steps", "-versions", "1.30.14,1.31.14", "-provider", "kind", "-cli", "/tmp/kubelet-compat"}, wantErr: "-cli is the local provider's"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append(tt.args, "-root", root), &stdout, &stderr)
			assert.Equal(t, code, 2, "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
			assert.Assert(t, strings.Contains(stderr.String(), tt.wantErr), stderr.String())
			_, err := os.Stat(root)
			assert.Assert(t, os.IsNotExist(err), "the refused run made its root")
		})
	}
}

// TestPlanControls: -mode images builds the controls' packages and node
// images for every plan unless -controls=false.
func TestPlanControls(t *testing.T) {
	tests := []struct {
		mode                      string
		modeControls, controlRuns bool
		want                      bool
	}{
		{mode: "steps", modeControls: true, controlRuns: true, want: true},
		{mode: "steps", modeControls: false, controlRuns: false, want: false},
		{mode: "images", modeControls: false, controlRuns: true, want: true},
		{mode: "images", modeControls: true, controlRuns: true, want: true},
		{mode: "images", modeControls: false, controlRuns: false, want: false},
	}
	for _, tt := range tests {
		got := planControls(tt.mode, tt.modeControls, tt.controlRuns)
		assert.Equal(t, got, tt.want, "mode %s, the mode's controls %v, -controls=%v", tt.mode, tt.modeControls, tt.controlRuns)
	}
}

// TestKindVersions: -mode versions prints what make e2e-binaries-kind
// builds, the skip-level control plane's minors too; a skip beyond
// upstream's skew policy is refused before anything is made.
func TestKindVersions(t *testing.T) {
	root := filepath.Join(t.TempDir(), "e2e-root")
	tests := []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{args: []string{"-images-of", "ci"}, stdout: "1.20.15,1.21.14\n"},
		{args: []string{"-images-of", "fleet"}, stdout: "1.30.14,1.31.14\n"},
		{args: []string{"-images-of", "steps", "-steps", "1.31.14:1.34.12"}, stdout: "1.31.14,1.34.12,1.32.13,1.33.13\n"},
		{args: []string{"-images-of", "steps", "-steps", "1.18.19:1.20.15", "-controls=false"}, stdout: "1.18.19,1.20.15,1.19.16\n"},
		{args: []string{"-images-of", "steps", "-steps", "1.18.19:1.21.14"}, code: 2, stderr: "outside upstream's version skew policy"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"-mode", "versions", "-provider", "kind", "-root", root}, tt.args...), &stdout, &stderr)
		assert.Equal(t, code, tt.code, stderr.String())
		assert.Equal(t, stdout.String(), tt.stdout)
		assert.Assert(t, strings.Contains(stderr.String(), tt.stderr), stderr.String())
		_, err := os.Stat(root)
		assert.Assert(t, os.IsNotExist(err), "made its root")
	}
}

// TestFleetModeRefusesBadInput: -mode fleet runs on kind only, rolls the
// known rolls, one step of one minor; anything else is refused in one line
// before anything is made.
func TestFleetModeRefusesBadInput(t *testing.T) {
	root := filepath.Join(t.TempDir(), "e2e-root")
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "local provider", args: []string{"-provider", "local"}, wantErr: "-mode fleet runs on the kind provider only"},
		{name: "unknown roll", args: []string{"-fleet-runs", "concurrency-3"}, wantErr: `unknown roll "concurrency-3"`},
		{name: "a roll twice", args: []string{"-fleet-runs", "drain,drain"}, wantErr: "drain given twice"},
		{name: "two steps", args: []string{"-versions", "1.30.14,1.31.14,1.32.13"}, wantErr: "the fleet rolls one step, not 2"},
		{name: "skip-level", args: []string{"-steps", "1.30.14:1.32.13"}, wantErr: "the fleet rolls one minor up"},
		{name: "minors with another roll", args: []string{"-fleet-runs", "minors,drain", "-versions", "1.33.13,1.34.12"}, wantErr: "run it alone"},
		{name: "minors, a gap in the chain", args: []string{"-fleet-runs", "minors", "-steps", "1.33.13:1.34.12,1.35.8:1.36.5"}, wantErr: "does not start where"},
		{name: "minors, skip-level", args: []string{"-fleet-runs", "minors", "-steps", "1.33.13:1.35.8"}, wantErr: "one minor up"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"-mode", "fleet", "-provider", "kind", "-root", root}, tt.args...)
			code := run(args, &stdout, &stderr)
			assert.Equal(t, code, 2, "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
			assert.Assert(t, strings.Contains(stderr.String(), tt.wantErr), stderr.String())
			assert.Equal(t, strings.Count(strings.TrimSpace(stderr.String()), "\n"), 0, "one line: %s", stderr.String())
			_, err := os.Stat(root)
			assert.Assert(t, os.IsNotExist(err), "the refused run made its root")
		})
	}
}

// TestFleetMinorsPlan: the minors roll takes the chain of -versions and
// runs no controls (nothing as released to build).
func TestFleetMinorsPlan(t *testing.T) {
	o, err := parseFlags([]string{"-mode", "fleet", "-provider", "kind", "-fleet-runs", "minors", "-versions", "1.33.13,1.34.12,1.35.8"}, &bytes.Buffer{})
	assert.NilError(t, err)
	pl, rolls, err := o.modePlan()
	assert.NilError(t, err)
	assert.DeepEqual(t, rolls, []string{fleet.Minors})
	assert.Equal(t, len(pl.steps), 2)
	assert.Equal(t, pl.controls, false)
	p, _, err := o.planAndRunner(pl, rolls, filepath.Join(t.TempDir(), "e2e-root"), t.TempDir(), &bytes.Buffer{})
	assert.NilError(t, err)
	assert.Equal(t, p.Controls, false)
}

// TestRuntimeModePlan: -mode runtime is the default road under the default
// kubelet; -mode steps takes -runtime-steps instead of kubelet steps; both
// are refused where they cannot run, before anything is made.
func TestRuntimeModePlan(t *testing.T) {
	root := filepath.Join(t.TempDir(), "e2e-root")
	o, err := parseFlags([]string{"-mode", "runtime"}, &bytes.Buffer{})
	assert.NilError(t, err)
	pl, _, err := o.modePlan()
	assert.NilError(t, err)
	assert.Equal(t, len(pl.runtimeSteps), 2)
	assert.Equal(t, pl.runtimeSteps[1].String(), "containerd@1.7.35 -> containerd@2.4.2")
	p, runner, err := o.planAndRunner(pl, nil, root, t.TempDir(), &bytes.Buffer{})
	assert.NilError(t, err)
	assert.Equal(t, p.RuntimeKubelet, "1.37.2")
	assert.Assert(t, p.Controls && len(p.Steps) == 0 && !p.Extras)
	patched, unpatched, err := runner.Versions(p)
	assert.NilError(t, err)
	assert.DeepEqual(t, patched, []string{"1.37.2"})
	assert.DeepEqual(t, unpatched, []string{"1.37.2"})

	o, err = parseFlags([]string{"-mode", "steps", "-runtime-steps", "containerd@1.6.20:containerd@1.7.35", "-runtime-kubelet", "1.36.5"}, &bytes.Buffer{})
	assert.NilError(t, err)
	pl, _, err = o.modePlan()
	assert.NilError(t, err)
	assert.Equal(t, len(pl.runtimeSteps), 1)

	for _, tt := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "kind", args: []string{"-mode", "runtime", "-provider", "kind"}, wantErr: "local provider only"},
		{name: "with kubelet steps", args: []string{"-mode", "steps", "-steps", "1.36.5:1.37.2", "-runtime-steps", "containerd@1.6.20:containerd@1.7.35"}, wantErr: "not with -steps or -versions"},
		{name: "API mode", args: []string{"-mode", "runtime", "-api"}, wantErr: "static pods alone"},
		{name: "down", args: []string{"-mode", "runtime", "-runtime-steps", "containerd@2.4.2:containerd@1.7.35"}, wantErr: "is not a step back of the road"},
		{name: "kubelet 2.x cannot serve", args: []string{"-mode", "runtime", "-runtime-kubelet", "1.21.14"}, wantErr: "kubelet 1.21 speaks only CRI v1alpha2"},
		{name: "chain with a gap", args: []string{"-mode", "runtime", "-runtime-chain", "-runtime-steps", "containerd@1.6.20:containerd@1.7.35,containerd@1.6.20:containerd@2.4.2"}, wantErr: "does not start where"},
		{name: "other mode", args: []string{"-mode", "ci", "-runtime-steps", "containerd@1.6.20:containerd@1.7.35"}, wantErr: "go with -mode runtime or steps"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append(tt.args, "-root", root), &stdout, &stderr)
			assert.Equal(t, code, 2, "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
			assert.Assert(t, strings.Contains(stderr.String(), tt.wantErr), stderr.String())
			_, err := os.Stat(root)
			assert.Assert(t, os.IsNotExist(err), "the refused run made its root")
		})
	}
}

// TestShimFaultPlan: -shim-faults replace the runtime steps with each fault
// on each containerd (restarted in place), under the patched kubelet
// alone; refused, in one line and before anything is made, where they
// cannot run.
func TestShimFaultPlan(t *testing.T) {
	root := filepath.Join(t.TempDir(), "e2e-root")
	o, err := parseFlags([]string{"-mode", "runtime", "-shim-faults", "pids-error"}, &bytes.Buffer{})
	assert.NilError(t, err)
	pl, _, err := o.modePlan()
	assert.NilError(t, err)
	assert.Equal(t, len(pl.shimFaults), 2)
	assert.Equal(t, pl.shimFaults[1].String(), "pids-error on containerd@1.7.36+compat.1")
	assert.Equal(t, pl.runtimeSteps[0].String(), "containerd@1.7.35 -> containerd@1.7.35")
	p, runner, err := o.planAndRunner(pl, nil, root, t.TempDir(), &bytes.Buffer{})
	assert.NilError(t, err)
	assert.Equal(t, len(p.ShimFaults), 2)
	assert.Assert(t, !p.ShimFaults[0].Keeps && p.ShimFaults[1].Keeps)
	patched, unpatched, err := runner.Versions(p)
	assert.NilError(t, err)
	assert.DeepEqual(t, patched, []string{"1.37.2"})
	assert.Equal(t, len(unpatched), 0)
	assert.Assert(t, strings.Contains(runner.Describe(p), "2 shim faults, each made under kubelet 1.37.2 and containerd restarted in place"))

	for _, tt := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "kind", args: []string{"-mode", "runtime", "-provider", "kind", "-shim-faults", "all"}, wantErr: "-shim-faults run on the local provider only"},
		{name: "other mode", args: []string{"-mode", "steps", "-shim-faults", "all"}, wantErr: "-shim-faults go with -mode runtime, not steps"},
		{name: "with runtime steps", args: []string{"-mode", "runtime", "-shim-faults", "all", "-runtime-steps", "containerd@1.6.20:containerd@1.7.35"}, wantErr: "not with -runtime-steps"},
		{name: "unknown fault", args: []string{"-mode", "runtime", "-shim-faults", "split"}, wantErr: `unknown shim fault "split"`},
		{name: "containerd 1.6", args: []string{"-mode", "runtime", "-shim-faults", "all", "-shim-fault-runtimes", "containerd@1.6.20"}, wantErr: "-shim-fault-runtimes: runtime containerd@1.6.20: a shim fault costs a pod only on containerd 1.7 and later"},
		{name: "a kubelet a runtime cannot serve", args: []string{"-mode", "runtime", "-shim-faults", "all", "-shim-fault-runtimes", "containerd@2.4.2", "-runtime-kubelet", "1.21.14"}, wantErr: "kubelet 1.21 speaks only CRI v1alpha2"},
		{name: "API mode", args: []string{"-mode", "runtime", "-shim-faults", "all", "-api"}, wantErr: "static pods alone"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append(tt.args, "-root", root), &stdout, &stderr)
			assert.Equal(t, code, 2, "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
			assert.Assert(t, strings.Contains(stderr.String(), tt.wantErr), stderr.String())
			_, err := os.Stat(root)
			assert.Assert(t, os.IsNotExist(err), "the refused run made its root")
		})
	}
}

// TestTryAndRuntimeOrderRefused: -mode try holds a kind cluster; on the local
// provider it is refused in one line before anything is made, and so is
// -runtime-order with a chain or with two runtime steps.
func TestTryAndRuntimeOrderRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{args: []string{"-mode", "try"}, want: `unknown mode "try"`},
		{args: []string{"-mode", "runtime", "-runtime-order", "1.36.5:1.37.2", "-runtime-chain"}, want: "-runtime-order runs each order from one start: not with -runtime-chain"},
		{args: []string{"-mode", "runtime", "-runtime-order", "1.36.5:1.37.2"}, want: "-runtime-order measures one runtime step against the kubelet step, not 2"},
	} {
		root := filepath.Join(t.TempDir(), "a", "root")
		var stdout, stderr bytes.Buffer
		code := run(append(tc.args, "-root", root), &stdout, &stderr)
		assert.Equal(t, code, 2, stderr.String())
		assert.Assert(t, strings.Contains(stderr.String(), tc.want), stderr.String())
		_, err := os.Stat(root)
		assert.Assert(t, os.IsNotExist(err), "made its root")
	}
}

// TestRoadPlan: -road is the kind plan's kubelet chain with the runtime
// moves between its steps; refused, in one line and before anything is
// made, where it cannot run.
func TestRoadPlan(t *testing.T) {
	o, err := parseFlags([]string{"-mode", "steps", "-provider", "kind", "-road", "1.30.14,1.31.14,containerd@1.7.35,1.32.13,containerd@2.4.2"}, &bytes.Buffer{})
	assert.NilError(t, err)
	pl, _, err := o.modePlan()
	assert.NilError(t, err)
	p, runner, err := o.planAndRunner(pl, nil, filepath.Join(t.TempDir(), "e2e-root"), t.TempDir(), &bytes.Buffer{})
	assert.NilError(t, err)
	assert.DeepEqual(t, p.Steps, []plan.Step{{From: "1.30.14", To: "1.31.14"}, {From: "1.31.14", To: "1.32.13"}})
	assert.Equal(t, len(p.RuntimeMoves), 2)
	assert.Equal(t, p.RuntimeMoves[1].String(), "containerd@1.7.35 -> containerd@2.4.2 under kubelet 1.32.13")
	assert.Assert(t, p.Controls)
	patched, unpatched, err := runner.Versions(p)
	assert.NilError(t, err)
	assert.DeepEqual(t, patched, []string{"1.30.14", "1.31.14", "1.32.13"})
	assert.DeepEqual(t, unpatched, []string{"1.31.14", "1.32.13"})
	// One control cluster over the road: one node image, the first's.
	assert.DeepEqual(t, kind.NodeVersions(p), []string{"1.30.14"})

	root := filepath.Join(t.TempDir(), "e2e-root")
	for _, tt := range []struct {
		name, wantErr string
		args          []string
	}{
		{name: "local provider", args: []string{"-mode", "steps", "-road", "1.30.14,1.31.14,containerd@1.7.35"}, wantErr: "-road runs with -mode steps on the kind provider"},
		{name: "another mode", args: []string{"-mode", "ci", "-provider", "kind", "-road", "1.30.14,1.31.14,containerd@1.7.35"}, wantErr: "-road runs with -mode steps"},
		{name: "with -versions", args: []string{"-mode", "steps", "-provider", "kind", "-versions", "1.30.14,1.31.14", "-road", "1.30.14,1.31.14,containerd@1.7.35"}, wantErr: "-road is the whole plan"},
		{name: "a kubelet its runtime cannot serve", args: []string{"-mode", "steps", "-provider", "kind", "-road", "1.21.14,1.22.17,containerd@2.4.2"}, wantErr: "kubelet 1.22 speaks only CRI v1alpha2"},
		{name: "a move at birth with controls", args: []string{"-mode", "steps", "-provider", "kind", "-road", "1.30.14,containerd@1.7.35,1.31.14"}, wantErr: "comes before the first kubelet step"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"-root", root}, tt.args...), &stdout, &stderr)
			assert.Equal(t, code, 2, "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
			assert.Assert(t, strings.Contains(stderr.String(), tt.wantErr), stderr.String())
			assert.Equal(t, strings.Count(strings.TrimSpace(stderr.String()), "\n"), 0, "one line: %s", stderr.String())
			_, err := os.Stat(root)
			assert.Assert(t, os.IsNotExist(err), "the refused run made its root")
		})
	}
}
