package swap

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// fakeNode logs the sequence's calls; its second snapshot has the pod
// under another container ID (a restart).
type fakeNode struct {
	calls *[]string
	snaps int
}

func (n *fakeNode) Record(context.Context) error { *n.calls = append(*n.calls, "record"); return nil }

func (n *fakeNode) Snapshot(context.Context) (*snapshot.Snapshot, error) {
	*n.calls = append(*n.calls, "snapshot")
	n.snaps++
	id := "c1"
	if n.snaps > 1 {
		id = "c2"
	}
	t0 := time.Date(2026, 12, 3, 17, 0, 0, 0, time.UTC)
	return &snapshot.Snapshot{
		Sandboxes:  []snapshot.Sandbox{{Pod: "ns/p", ID: "s", UID: "u", Ready: true, CreatedAt: t0}},
		Containers: []snapshot.Container{{Pod: "ns/p", Name: "app", ID: id, SandboxID: "s", State: "RUNNING", RestartCount: "0", CreatedAt: t0}},
	}, nil
}

func hooks(calls *[]string, wait error) Hooks {
	add := func(s string) { *calls = append(*calls, s) }
	return Hooks{
		Prepare: func(_ context.Context, before *snapshot.Snapshot) error {
			add("prepare")
			if before == nil {
				return errors.New("no picture")
			}
			return nil
		},
		Started: func(context.Context, time.Time) error { add("started"); return nil },
		Wait: func(_ context.Context, _ *snapshot.Snapshot, started time.Time) (time.Time, error) {
			add("wait")
			return started.Add(3 * time.Second), wait
		},
		Settle:  func(context.Context, time.Duration) error { add("settle"); return nil },
		Alive:   func(context.Context) error { add("alive"); return nil },
		Cleanup: func() { add("cleanup") },
	}
}

func TestRunOrder(t *testing.T) {
	var calls []string
	start := time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)
	swapper := func(context.Context) (time.Time, error) { calls = append(calls, "swap"); return start, nil }
	res, err := Run(context.Background(), &fakeNode{calls: &calls}, swapper, hooks(&calls, nil))
	assert.NilError(t, err)
	assert.DeepEqual(t, calls, []string{"record", "snapshot", "prepare", "swap", "started", "wait", "settle", "alive", "snapshot", "cleanup"})
	assert.Check(t, is.Equal(res.Window, 3*time.Second))
	assert.Check(t, is.Equal(res.Started, start))
	assert.Check(t, res.WaitErr == nil)
	assert.Check(t, is.Equal(res.Diff.Restarts, 1), "the diff of the two pictures")
}

func TestRunWaitFailed(t *testing.T) {
	boom := errors.New("pods not back")
	swapper := func(context.Context) (time.Time, error) { return time.Now(), nil }
	for _, tc := range []struct {
		name    string
		patched bool
		wantErr string
		want    []string
	}{
		{name: "patched: the run ends", patched: true, wantErr: "after the swap: pods not back",
			want: []string{"record", "snapshot", "prepare", "started", "wait", "cleanup"}},
		{name: "control: reported, the sequence goes on", patched: false,
			want: []string{"record", "snapshot", "prepare", "started", "wait", "settle", "alive", "snapshot", "cleanup"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls, logged []string
			h := hooks(&calls, boom)
			h.WaitFailed = FailPatched(tc.patched, func(f string, a ...interface{}) { logged = append(logged, f) }, "after the swap: ")
			res, err := Run(context.Background(), &fakeNode{calls: &calls}, swapper, h)
			assert.DeepEqual(t, calls, tc.want)
			if tc.wantErr != "" {
				assert.Error(t, err, tc.wantErr)
				assert.Check(t, errors.Is(err, boom))
				return
			}
			assert.NilError(t, err)
			assert.Check(t, errors.Is(res.WaitErr, boom))
			assert.Check(t, is.Len(logged, 1))
		})
	}
	// Without WaitFailed, a failed wait ends the sequence.
	var calls []string
	_, err := Run(context.Background(), &fakeNode{calls: &calls}, swapper, hooks(&calls, boom))
	assert.Check(t, errors.Is(err, boom))
}

func TestRunNeedsWait(t *testing.T) {
	_, err := Run(context.Background(), &fakeNode{calls: new([]string)}, nil, Hooks{})
	assert.Error(t, err, "swap: no Wait")
}
