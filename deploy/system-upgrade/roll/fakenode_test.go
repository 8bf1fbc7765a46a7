package roll

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// fakeNode is the node a test rolls: its programs as Go functions that
// mirror upgrade_test.go's shell fakes (the same answers from the same
// knobs), its root a temporary directory, a virtual clock. It records
// every call ("NAME ARGS", kubectl's too, the lock's as the flock calls
// of the previous release's Job), and can kill the engine right after
// a call (a panic, as a node losing the Job's pod) or end its context.
type fakeNode struct {
	root  string
	env   map[string]string
	now   time.Time
	calls []string

	stage1, stage2                                  string
	containerd, containerdRuns, containerdInitial   string
	runtimeInstalled, unversioned                   string
	nodeReady                                       string
	recorded                                        bool
	preflight                                       string
	statusBefore, statusAfter, statusRuntime        string
	probesBefore, probesAfter                       string
	crictl, events, apiPods, kubeletMetrics         string
	plan                                            string
	gate                                            []string
	gateCalls, cgroupsCalls, probeReads, probeFails int

	// locked: another Job holds the roll's lock, until unlockAfter (when
	// set) has passed on the clock.
	locked      bool
	unlockAfter time.Duration

	// die kills the engine right after the dieNth call that begins with
	// it (upgrade_test.go's die); dieCall after the dieCallN-th call of
	// any kind. A kill panics with errKilled, or, with cancel set, ends
	// the engine's context instead.
	die              string
	dieNth, dieCount int
	dieCallN, callN  int
	cancel           context.CancelFunc
	cancelled        bool
	callsAfterCancel []string
	// stateAtCancel is the roll's state when the context ended.
	stateAtCancel string

	// gateLog are kubelet-compat gate's verdicts: the index of its call in
	// calls, and its exit status.
	gateLog []gateVerdict
}

type gateVerdict struct{ call, code int }

// killed is the panic of a Job killed by the fake, after a call or an action.
type killed struct{ after string }

const prevVersion, targetVersion = "1.30.14", "1.31.14"

func (f *fakeNode) getenv(name string) string { return f.env[name] }

func (f *fakeNode) hostFile(name string) string {
	return filepath.Join(f.root, filepath.FromSlash(name))
}

// record notes a call and says whether the Job dies right after it.
func (f *fakeNode) record(call string) (dies bool) {
	if f.cancelled {
		f.callsAfterCancel = append(f.callsAfterCancel, call)
	}
	f.calls = append(f.calls, call)
	f.callN++
	if f.dieCallN > 0 && f.callN == f.dieCallN {
		return true
	}
	if f.die != "" && strings.HasPrefix(call, f.die) {
		f.dieCount++
		return f.dieCount == max(f.dieNth, 1)
	}
	return false
}

// kill ends the engine right after a call: a panic, or its context.
func (f *fakeNode) kill(after string) {
	if f.cancel != nil {
		state, _ := os.ReadFile(f.hostFile(StateFile))
		f.cancelled, f.stateAtCancel = true, string(state)
		f.cancel()
		return
	}
	panic(killed{after})
}

func (f *fakeNode) Files() Files     { return RootFS{Root: f.root, NoSync: true} }
func (f *fakeNode) Now() time.Time   { return f.now }
func (f *fakeNode) Hostname() string { return "" }

func (f *fakeNode) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.now = f.now.Add(d)
	return nil
}

func (f *fakeNode) TryLock(name string) (bool, error) {
	dies := f.record("flock -n 9")
	defer func() {
		if dies {
			f.kill("flock -n 9")
		}
	}()
	if f.getenv("FLOCK_MISSING") != "" {
		return false, fmt.Errorf("open %s: permission denied", name)
	}
	return !f.locked, nil
}

func (f *fakeNode) WaitLock(ctx context.Context, name string, wait time.Duration) (bool, error) {
	call := fmt.Sprintf("flock -w %d 9", int(wait/time.Second))
	if f.record(call) {
		defer f.kill(call)
	}
	if f.unlockAfter > 0 && f.unlockAfter <= wait {
		f.now = f.now.Add(f.unlockAfter)
		f.locked = false
		return true, nil
	}
	f.now = f.now.Add(wait)
	return false, nil
}

func (f *fakeNode) Kubectl(ctx context.Context, args ...string) Result {
	call := "kubectl " + strings.Join(args, " ")
	res := f.kubectl(args)
	if f.record(call) {
		f.kill(call)
	}
	return res
}

func (f *fakeNode) Run(ctx context.Context, c Cmd) Result {
	call := strings.Join(c.Argv, " ")
	res := f.program(c.Argv)
	if c.Stdout != nil {
		c.Stdout.Write(res.Stdout)
		res.Stdout = nil
	}
	if c.Stderr != nil {
		c.Stderr.Write(res.Stderr)
		res.Stderr = nil
	}
	if f.record(call) {
		f.kill(call)
	}
	return res
}
