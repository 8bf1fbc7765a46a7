package roll

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestStateFormat(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		change   func(*State)
		want     string
	}{
		{name: "read and written back unchanged",
			in:   "target=1.31.14\nprevious=1.30.14\nstage1=1.30.14\njobpods=\nphase=begun\nbegan_at=2026-12-03T10:00:00Z\n",
			want: "target=1.31.14\nprevious=1.30.14\nstage1=1.30.14\njobpods=\nphase=begun\nbegan_at=2026-12-03T10:00:00Z\n"},
		{name: "a key set in place, a new one after the others",
			in:     "target=1.31.14\nphase=begun\n",
			change: func(s *State) { s.Phase, s.SwappedAt = PhaseSwapping, "2026-12-03T10:01:00Z" },
			want:   "target=1.31.14\nphase=swapping\nswapped_at=2026-12-03T10:01:00Z\n"},
		{name: "keys this engine does not know are kept",
			in:     "target=1.31.14\nruntime_syncs=12\nphase=runtime-swapping\n",
			change: func(s *State) { s.Phase = PhaseRuntimePassed },
			want:   "target=1.31.14\nruntime_syncs=12\nphase=runtime-passed\n"},
		{name: "a key written twice (by hand): the first counts, once written",
			in:   "phase=begun\nphase=swapping\n",
			want: "phase=begun\n"},
		{name: "a new state, in stateKeys' order",
			in: "",
			change: func(s *State) {
				*s = State{Phase: PhaseRuntimeSwapping, Target: "1.31.14", Runtime: "containerd@1.7.35", RuntimePrevious: "system", Previous: "1.30.14"}
			},
			want: "target=1.31.14\nprevious=1.30.14\nruntime=containerd@1.7.35\nruntime_previous=system\nphase=runtime-swapping\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ParseState(tc.in)
			if tc.change != nil {
				tc.change(&s)
			}
			assert.Check(t, is.Equal(s.Format(), tc.want))
		})
	}
}

func TestStateFields(t *testing.T) {
	s := ParseState("target=1.31.14\nprevious=1.30.14\nstage1=1.30.13\njobpods= uid-1 uid-2\nkubeadm=apply\netcd_bridge=done\n" +
		"runtime=containerd@1.7.35\nruntime_previous=system\nruntime_rejections=3\nruntime_swapped_at=A\nruntime_back_at=B\n" +
		"runtime_passed_at=C\nphase=rolling-back\nreason=the health gate failed\nbegan_at=D\nswapped_at=E\npassed_at=F\nrolled_back_at=G\n")
	s.lines = nil
	assert.Check(t, reflect.DeepEqual(s, State{Target: "1.31.14", Previous: "1.30.14", Stage1: "1.30.13", JobPods: " uid-1 uid-2", Kubeadm: "apply",
		EtcdBridge: "done", Runtime: "containerd@1.7.35", RuntimePrevious: "system", RuntimeRejections: "3", RuntimeSwappedAt: "A",
		RuntimeBackAt: "B", RuntimePassedAt: "C", Phase: PhaseRollingBack, Reason: "the health gate failed", BeganAt: "D",
		SwappedAt: "E", PassedAt: "F", RolledBackAt: "G"}), "%+v", s)
	assert.Check(t, is.DeepEqual(s.JobPodUIDs(), []string{"uid-1", "uid-2"}))
	assert.Check(t, s.Phase.Known() && !s.Phase.Verdict())
	assert.Check(t, PhasePassed.Verdict() && PhaseRolledBack.Verdict() && !Phase("swapped").Known())
}

// shellState runs upgrade.sh's own st and st_set on the roll's state in
// root (as the Job sees the node), script after them.
func shellState(t *testing.T, root, script string) string {
	t.Helper()
	src, err := os.ReadFile("../upgrade.sh")
	assert.NilError(t, err)
	var fns []string
	for _, name := range []string{"st", "st_set"} {
		fn := regexp.MustCompile(`(?ms)^` + name + `\(\) \{\n.*?^\}\n`).Find(src)
		assert.Assert(t, fn != nil, "upgrade.sh has no %s function", name)
		fns = append(fns, string(fn))
	}
	cmd := exec.Command("sh", "-c", "set -eu\n"+strings.Join(fns, "")+script)
	cmd.Env = append(os.Environ(), "R="+filepath.Join(root, RollDir))
	out, err := cmd.CombinedOutput()
	assert.NilError(t, err, "%s", out)
	return string(out)
}

// TestStateWithUpgradeSh checks that a state upgrade.sh writes is the
// engine's, and the other way round, with upgrade.sh's own st and st_set.
func TestStateWithUpgradeSh(t *testing.T) {
	root := t.TempDir()
	assert.NilError(t, os.MkdirAll(filepath.Join(root, RollDir), 0o755))
	files := RootFS{Root: root}
	st := store{files}

	shellState(t, root, `st_set target=1.31.14 previous=1.30.14 stage1=1.30.14 jobpods= phase=begun began_at=2026-12-03T10:00:00Z
st_set kubeadm=apply etcd_bridge=begun
st_set etcd_bridge=done
`)
	got, err := st.load()
	assert.NilError(t, err)
	assert.Check(t, is.Equal(got.Phase, PhaseBegun))
	assert.Check(t, is.Equal(got.Target, "1.31.14"))
	assert.Check(t, is.Equal(got.Kubeadm, "apply"))
	assert.Check(t, is.Equal(got.EtcdBridge, "done"))

	got.Phase, got.SwappedAt, got.JobPods = PhaseSwapping, "2026-12-03T10:05:00Z", got.JobPods+" uid-2"
	assert.NilError(t, st.save(got))
	_, err = os.Stat(files.Path(StateFile + ".new"))
	assert.Check(t, os.IsNotExist(err), "the new state is renamed over the old one")
	assert.Check(t, is.Equal(shellState(t, root, `echo "$(st phase) $(st swapped_at) [$(st jobpods)] $(st etcd_bridge) $(st target)"`),
		"swapping 2026-12-03T10:05:00Z [ uid-2] done 1.31.14\n"))

	shellState(t, root, `st_set phase=rolling-back "reason=the health gate failed"`)
	got, err = st.load()
	assert.NilError(t, err)
	assert.Check(t, is.Equal(got.Phase, PhaseRollingBack))
	assert.Check(t, is.Equal(got.Reason, "the health gate failed"))
	assert.Check(t, is.Equal(got.SwappedAt, "2026-12-03T10:05:00Z"))
}

// TestStateLeftOverNew: a Job killed in the middle of upgrade.sh's
// st_set leaves state.new (and state.new2); the state is the old one,
// and the engine's next write replaces the leftover.
func TestStateLeftOverNew(t *testing.T) {
	root := t.TempDir()
	files := RootFS{Root: root}
	assert.NilError(t, os.MkdirAll(files.Path(RollDir), 0o755))
	assert.NilError(t, os.WriteFile(files.Path(StateFile), []byte("target=1.31.14\nphase=begun\n"), 0o644))
	assert.NilError(t, os.WriteFile(files.Path(StateFile+".new"), []byte("target=1.31.14\nphase=swa"), 0o644))
	st := store{files}
	got, err := st.load()
	assert.NilError(t, err)
	assert.Check(t, is.Equal(got.Phase, PhaseBegun))
	got.Phase = PhaseSwapping
	assert.NilError(t, st.save(got))
	data, err := os.ReadFile(files.Path(StateFile))
	assert.NilError(t, err)
	assert.Check(t, is.Equal(string(data), "target=1.31.14\nphase=swapping\n"))
}
