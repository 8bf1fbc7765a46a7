package roll

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp/cmpopts"
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

// TestStateLeftByUpgradeSh reads the states the previous release's Job
// (upgrade.sh, with its own st_set) left on nodes where it was killed
// (../testdata/left-by-upgrade.sh, taken from its runs on the fakes), and
// reads them again once the engine has written them.
func TestStateLeftByUpgradeSh(t *testing.T) {
	for _, tc := range []struct {
		left string
		want State
	}{
		{left: "after-kubeadm", want: State{Target: "1.31.14", Previous: "1.30.14", Stage1: "1.30.14", Phase: PhaseBegun, BeganAt: "2026-12-07T18:41:10Z"}},
		{left: "after-swap", want: State{Target: "1.31.14", Previous: "1.30.14", Stage1: "1.30.14", Phase: PhaseSwapping,
			BeganAt: "2026-12-07T18:41:10Z", SwappedAt: "2026-12-07T18:41:10Z"}},
		{left: "in-rollback", want: State{Target: "1.31.14", Previous: "1.30.14", Stage1: "1.30.14", Phase: PhaseRollingBack,
			Reason: "the health gate failed", BeganAt: "2026-12-07T18:41:10Z", SwappedAt: "2026-12-07T18:41:11Z"}},
		{left: "after-runtime", want: State{Target: "1.31.14", Previous: "1.30.14", Stage1: "1.30.14", Runtime: "containerd@1.7.35",
			RuntimePrevious: "system", Phase: PhaseRuntimeSwapping, BeganAt: "2026-12-07T18:41:09Z", RuntimeRejections: "0",
			RuntimeSwappedAt: "2026-12-07T18:41:09Z"}},
	} {
		t.Run(tc.left, func(t *testing.T) {
			root := filepath.Join("..", "testdata", "left-by-upgrade.sh", tc.left, "host")
			st, err := store{RootFS{Root: root}}.load()
			assert.NilError(t, err)
			assert.Check(t, is.DeepEqual(st, tc.want, cmpopts.IgnoreUnexported(State{})))

			// Written back, the file is upgrade.sh's to the byte: its
			// lines, in its order.
			again := t.TempDir()
			assert.NilError(t, os.MkdirAll(filepath.Join(again, RollDir), 0o755))
			assert.NilError(t, store{RootFS{Root: again}}.save(st))
			left, err := os.ReadFile(filepath.Join(root, StateFile))
			assert.NilError(t, err)
			written, err := os.ReadFile(filepath.Join(again, StateFile))
			assert.NilError(t, err)
			assert.Check(t, is.Equal(string(written), string(left)))
		})
	}
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
