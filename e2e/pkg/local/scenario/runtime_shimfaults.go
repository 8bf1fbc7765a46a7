package scenario

// The negative controls of this project's containerd patch series
// (runtime/patches/containerd, docs/runtime.md): per fault of
// plan.ShimFaults and per containerd of -shim-fault-runtimes, a baseline
// of the corpus on that containerd under the patched RuntimeKubelet, the
// fault made on one pod, then containerd restarted in place under the
// running kubelet. A containerd that carries the fix must keep every pod
// (the runtime swap's zero-restart assertion); one without it must lose
// the faulted pod. Each run first proves the fault was made (containerd's
// own words in its log, or the pod's socket taken by another shim), so a
// pod kept because the fault missed is never counted for the fix.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/corpus"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/crio"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/ctxtime"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/local"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/swap"
	"github.com/kubelet-compat/kubelet-compat/pkg/kubelet"
	"github.com/kubelet-compat/kubelet-compat/pkg/runcstate"
	"github.com/kubelet-compat/kubelet-compat/pkg/shimgroups"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
)

// What containerd logs when a fault meets its code (containerd.log).
const (
	// The shim start of fix 2, refusing to take a live shim's socket.
	logShimKept = "did not accept a connection within"
	// containerd's start keeping a task whose Pids call failed (fix 1).
	logPidsKept = "failed to query shim pids, keeping shim registered"
	// containerd's start dropping a task as leaked (as released).
	logLeaked = "cleaning leaked shim process"
)

// shimFaultRuns makes every fault of the plan on every runtime; a run that
// fails is reported and the others go on.
func (s *Scenario) shimFaultRuns(ctx context.Context) error {
	k := s.opts.RuntimeKubelet
	if p := s.Binary(k, true); !fileExists(p) {
		return fmt.Errorf("missing kubelet %s (make build VERSIONS=%s, or copy it there)", p, k)
	}
	var failed []error
	for _, r := range s.opts.ShimFaults {
		run, err := s.shimFaultRun(ctx, r)
		if err != nil {
			return fmt.Errorf("shim fault %s: %w", r, err)
		}
		failed = append(failed, s.reportRuns("shim fault ", []*report.Run{run})...)
	}
	return errors.Join(failed...)
}

// shimFaultVariant is a shim-fault run's variant in the report.
func shimFaultVariant(r plan.ShimFaultRun) string {
	if r.Keeps {
		return fmt.Sprintf("%s, %s (carries the fix)", report.Patched, r.Fault)
	}
	return fmt.Sprintf("%s, %s (negative control)", report.Patched, r.Fault)
}

// shimFaultRun is one run: the baseline on r's containerd, the fault on
// one pod, containerd restarted in place, judged.
func (s *Scenario) shimFaultRun(ctx context.Context, r plan.ShimFaultRun) (*report.Run, error) {
	k := s.opts.RuntimeKubelet
	variant := shimFaultVariant(r)
	dist, _, err := s.startRuntimeRun(ctx, "shim fault "+r.String(), r.Runtime, k, true)
	if err != nil {
		return nil, err
	}
	snap, err := s.rt.Take(ctx, corpus.Namespace)
	if err != nil {
		return nil, err
	}
	victim, ok := splitVictim(snap)
	if !ok {
		return nil, errors.New("no pod runs exactly one container")
	}
	var made report.Check
	if r.Fault == plan.FrozenShimGroup {
		if made, err = s.freezeAtNextStart(ctx, victim); err != nil {
			return nil, err
		}
		// The fault changed the pod's container: its picture before the
		// restart is taken once it runs again.
		if err := s.waitStable(ctx, "after the fault"); err != nil {
			return nil, err
		}
	}
	st := plan.RuntimeStep{From: r.Runtime, To: r.Runtime}
	run := &report.Run{Step: fmt.Sprintf("%s restarted in place (kubelet %s)", r.Runtime, k), From: r.Runtime.String(), To: r.Runtime.String(), Variant: variant}
	res, shims, pids, err := s.restartWithFault(ctx, r, st, dist, victim, run)
	if err != nil {
		return nil, err
	}
	if r.Fault == plan.PidsError {
		made = pids
	}
	fill(run, res)
	s.logf("shim fault %s: %d pods, %d restarts, %d pods recreated; %s: %s", r, run.Pods, run.Restarts, run.RecreatedPods, made.Name, made.Detail)
	judgeShimFault(run, r, made)
	checks := []report.Check{made, shims.Check}
	if r.Keeps {
		for _, c := range checks {
			s.check(c)
		}
	} else {
		run.Verdict += "; " + controlOutcomes(checks)
	}
	s.finishRuntimeRun(ctx, fmt.Sprintf("shim fault %s: ", r), run, r.Keeps, nil)
	return run, nil
}

// judgeShimFault: a run whose fault was not made proves nothing and
// fails; otherwise a containerd with the fix passes as a patched runtime
// step does (nothing restarted, recreated or changed), one without it only
// when that assertion fails on it.
func judgeShimFault(run *report.Run, r plan.ShimFaultRun, made report.Check) {
	prefix := "shim fault " + string(r.Fault) + ": "
	lost := fmt.Sprintf("%d restarts (%s), %d pods recreated, %d pod UIDs changed",
		run.Restarts, strings.Join(run.Diff.RestartedPods, " "), run.RecreatedPods, run.Diff.UIDChanges)
	probe := *run
	report.AssertPatched(&probe)
	switch {
	case !made.Passed:
		run.Passed = false
		run.Verdict = prefix + "the fault was not made, so the run shows nothing: " + made.Detail
	case run.Pods == 0:
		run.Passed = false
		run.Verdict = prefix + "no pods"
	case r.Keeps:
		run.Passed, run.Verdict = probe.Passed, prefix+"the containerd with the fix kept every pod: "+probe.Verdict
		if !probe.Passed {
			run.Verdict = prefix + "the containerd with the fix lost pods: " + probe.Verdict
		}
	case !probe.Passed:
		run.Passed = true
		run.Verdict = prefix + "negative control: the containerd without the fix lost the pod, as it must: " + lost
	default:
		run.Passed = false
		run.Verdict = prefix + "negative control: the containerd without the fix lost nothing, so the fault cannot tell the fix: " + lost
	}
}

// restartWithFault restarts containerd in place under the running kubelet
// (the runtime swap's sequence, the shim-group check before the stop).
// With the pids-error fault, victim's runc state is moved aside from
// before the stop until the restarted containerd answers, and the
// returned check says what containerd's start did with the task.
func (s *Scenario) restartWithFault(ctx context.Context, r plan.ShimFaultRun, st plan.RuntimeStep, dist local.RuntimeDist, victim snapshot.Container, run *report.Run) (*swap.Result, shimGroupResult, report.Check, error) {
	var (
		shims   shimGroupResult
		offset  int64
		kOffset int64
		restore = func() error { return nil }
	)
	defer func() {
		if err := restore(); err != nil {
			s.logf("shim fault %s: %v", r, err)
		}
	}()
	logPath := s.containerdLog()
	h := swap.Hooks{
		Prepare: func(ctx context.Context, _ *snapshot.Snapshot) error {
			shims = s.shimGroupCheck(ctx, fmt.Sprintf("shim fault %s: ", r))
			var err error
			if offset, err = fileSize(logPath); err != nil {
				return err
			}
			if r.Fault == plan.PidsError {
				if restore, err = hideRuncState(filepath.Join(s.node.RuncRoot(), "k8s.io"), victim.ID); err != nil {
					return err
				}
				s.logf("shim fault %s: %s's runc state moved aside: its shim's runc ps fails until containerd answers again", r, victim.Pod)
			}
			s.logf("shim fault %s: restarting containerd %s; kubelet pid %d keeps running", r, dist.Version, s.kubelet.PID)
			return nil
		},
		Started: func(context.Context, time.Time) error {
			// containerd answers once its shims are loaded.
			if err := restore(); err != nil {
				return err
			}
			restore = func() error { return nil }
			var err error
			kOffset, err = s.kubelet.LogSize()
			return err
		},
		Wait: func(ctx context.Context, _ *snapshot.Snapshot, _ time.Time) (time.Time, error) {
			return s.waitRuntimeBack(ctx, 4*time.Minute, kOffset)
		},
		WaitFailed: swap.FailPatched(r.Keeps, s.logf, fmt.Sprintf("after containerd %s restarted with the fault %s: ", dist.Version, r.Fault)),
		Settle: func(ctx context.Context, window time.Duration) error {
			settle := 3*s.opts.SyncFrequency + 3*time.Second
			s.logf("shim fault %s: back %.1fs after containerd started; waiting %s (three sync periods)", r, window.Seconds(), settle)
			return ctxtime.Sleep(ctx, settle)
		},
		Alive: func(context.Context) error { return s.kubelet.Alive() },
	}
	swapper := func(ctx context.Context) (time.Time, error) {
		started, down, err := s.node.SwapRuntime(ctx, dist, false)
		run.RuntimeDownSeconds = down.Seconds()
		return started, err
	}
	res, err := swap.Run(ctx, s.swapNode(), swapper, h)
	if err != nil {
		return nil, shims, report.Check{}, err
	}
	var pids report.Check
	if r.Fault == plan.PidsError {
		lines, err := kubelet.LinesSince(logPath, offset, victim.ID)
		if err != nil {
			return nil, shims, report.Check{}, err
		}
		pids = pidsFaultMade(victim, lines)
	}
	return res, shims, pids, nil
}

// pidsFaultMade says whether containerd's start met the pids-error fault
// on victim: it logged keeping the task whose Pids call failed (with the
// fix) or dropping it as leaked (without), for victim's container.
func pidsFaultMade(victim snapshot.Container, lines []string) report.Check {
	c := report.Check{Name: fmt.Sprintf("the fault: containerd's start could not list the processes of %s/%s (%.13s)", victim.Pod, victim.Name, victim.ID)}
	for _, l := range lines {
		switch {
		case strings.Contains(l, logPidsKept):
			c.Passed, c.Detail = true, "containerd kept the task: "+l
			return c
		case strings.Contains(l, logLeaked):
			c.Passed, c.Detail = true, "containerd dropped the task as leaked: "+l
			return c
		}
	}
	c.Detail = fmt.Sprintf("containerd's log says neither %q nor %q for the container", logPidsKept, logLeaked)
	return c
}

// freezeAtNextStart makes the frozen-shim-group fault on victim's pod:
// the kubelet restarts victim once (at once), then, stopped again, it
// waits its back-off before the next start; in that window the pod's shim
// is stopped (SIGSTOP) and its socket's accept queue filled, so the next
// start's shim cannot connect to it, until that start has either taken the
// socket (the group split: containerd as released) or given up and kept it
// (containerd logs logShimKept: ours). Then the shim goes on (SIGCONT). It
// returns whether the fault was made, with what happened.
func (s *Scenario) freezeAtNextStart(ctx context.Context, victim snapshot.Container) (report.Check, error) {
	made := report.Check{Name: fmt.Sprintf("the fault: the shim of %s stopped, its socket's accept queue full, while the kubelet started %s", victim.Pod, victim.Name)}
	h := s.shimHost()
	sock, err := sandboxSocket(h, victim.SandboxID)
	if err != nil {
		return made, err
	}
	shim, err := shimOf(h, victim.SandboxID)
	if err != nil {
		return made, err
	}
	c, err := crio.Dial(s.node.ContainerdSocket())
	if err != nil {
		return made, err
	}
	defer c.Close()
	id, err := s.restartContainer(ctx, c, victim, victim.ID)
	if err != nil {
		return made, err
	}
	offset, err := fileSize(s.containerdLog())
	if err != nil {
		return made, err
	}
	before, err := inodeOf(sock)
	if err != nil {
		return made, err
	}
	if err := c.Stop(ctx, id, 2*time.Second); err != nil {
		return made, fmt.Errorf("stopping %s/%s: %w", victim.Pod, victim.Name, err)
	}
	thaw, err := freezeShim(shim, sock)
	if err != nil {
		return made, err
	}
	s.logf("shim fault: %s's shim (pid %d) stopped, %s's accept queue full; the kubelet starts %s after its back-off", victim.Pod, shim, sock, victim.Name)
	made.Detail = "neither happened within 3m: the kubelet did not start the container while the shim was stopped"
	// look says whether the next start's shim has split the group (a new
	// socket at the pod's address) or kept the live shim's.
	look := func() (bool, error) {
		switch now, err := inodeOf(sock); {
		case err == nil && now != before:
			made.Passed, made.Detail = true, fmt.Sprintf("the group split: another shim listens at %s (inode %d, was %d)", sock, now, before)
			return true, nil
		case errors.Is(err, fs.ErrNotExist):
			// The next start's shim removed the live shim's socket and
			// did not keep its own (its start failed after the bind).
			made.Passed, made.Detail = true, fmt.Sprintf("the group split: the live shim's socket %s was removed", sock)
			return true, nil
		}
		lines, err := kubelet.LinesSince(s.containerdLog(), offset, logShimKept)
		if err != nil {
			return false, err
		}
		if len(lines) > 0 {
			made.Passed, made.Detail = true, "the next container's shim kept the live shim's socket: "+lines[0]
			return true, nil
		}
		return false, nil
	}
	if err := s.watchFault(ctx, 3*time.Minute, look); err != nil {
		thaw()
		return made, err
	}
	thaw()
	if !made.Passed {
		// A start the kubelet began while the shim was stopped may end
		// only once it goes on: its shim still meets the full accept
		// queue, which the shim works through (seen on containerd
		// 1.7.35: the group split right after the shim went on).
		if err := s.watchFault(ctx, afterThaw, look); err != nil {
			return made, err
		}
		if made.Passed {
			made.Detail += " (right after the shim went on)"
		}
	}
	s.logf("shim fault: %s's shim goes on: %s", victim.Pod, made.Detail)
	if !made.Passed {
		return made, nil
	}
	if _, err := s.waitRunning(ctx, victim, id, 3*time.Minute); err != nil {
		return made, err
	}
	return made, nil
}

// afterThaw is how long freezeAtNextStart still looks for the fault once
// the shim went on.
const afterThaw = 30 * time.Second

// watchFault calls look every half second until it says done or d passed.
func (s *Scenario) watchFault(ctx context.Context, d time.Duration, look func() (bool, error)) error {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		done, err := look()
		if err != nil || done {
			return err
		}
		if err := ctxtime.Sleep(ctx, 500*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// restartContainer stops container id of victim's through the CRI and
// returns the container the kubelet runs in its place.
func (s *Scenario) restartContainer(ctx context.Context, c *crio.Client, victim snapshot.Container, id string) (string, error) {
	if err := c.Stop(ctx, id, 2*time.Second); err != nil {
		return "", fmt.Errorf("stopping %s/%s: %w", victim.Pod, victim.Name, err)
	}
	return s.waitRunning(ctx, victim, id, 90*time.Second)
}

// waitRunning waits until the kubelet runs victim's container in the place
// of old, and returns the new container's ID.
func (s *Scenario) waitRunning(ctx context.Context, victim snapshot.Container, old string, timeout time.Duration) (string, error) {
	for deadline := time.Now().Add(timeout); ; {
		now, err := s.rt.Take(ctx, corpus.Namespace)
		if err == nil {
			if c, ok := now.Running(victim.Pod)[victim.Name]; ok && c.ID != old {
				return c.ID, nil
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("the kubelet ran no container in %s/%s's place within %s", victim.Pod, victim.Name, timeout)
		}
		if err := ctxtime.Sleep(ctx, 500*time.Millisecond); err != nil {
			return "", err
		}
	}
}

// containerdLog is where the run's containerd logs, every start appended.
func (s *Scenario) containerdLog() string { return filepath.Join(s.logDir(), "containerd.log") }

// sandboxSocket is the path of the socket the sandbox's bundle names.
func sandboxSocket(h shimgroups.Host, sandboxID string) (string, error) {
	data, err := os.ReadFile(filepath.Join(h.FSRoot, h.TaskState, sandboxID, "address"))
	if err != nil {
		return "", fmt.Errorf("the sandbox's address: %w", err)
	}
	sock, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "unix://")
	if !ok {
		return "", fmt.Errorf("the sandbox's address %q is not a unix socket", data)
	}
	return filepath.Join(h.FSRoot, sock), nil
}

// shimOf is the shim running container id: its init's parent (runc's
// state and /proc, as package shimgroups reads them).
func shimOf(h shimgroups.Host, id string) (int, error) {
	rh := runcstate.Host{FSRoot: h.FSRoot}
	st, ok, err := rh.Read(h.RuncRoot, id)
	if err != nil {
		return 0, err
	}
	init, running := rh.Init(st.Pid, st.Start)
	if !ok || !running || init.PPID <= 1 {
		return 0, fmt.Errorf("container %.13s does not run under a shim", id)
	}
	return init.PPID, nil
}

func inodeOf(path string) (uint64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, fmt.Errorf("%s: no inode", path)
	}
	return st.Ino, nil
}

// maxQueued bounds the connections fillAcceptQueue opens: more than any
// net.core.somaxconn (65535) allows queued.
const maxQueued = 1 << 17

// freezeShim stops the shim (SIGSTOP) and fills the accept queue of its
// socket, as a shim that is not scheduled on a loaded node leaves it: a
// stopped process's listening socket still completes connections (the
// kernel queues them) until the queue is full; from then a connect fails
// at once with EAGAIN. thaw closes the connections and continues the
// shim; it must be called.
func freezeShim(pid int, sock string) (thaw func(), err error) {
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return nil, fmt.Errorf("stopping shim %d: %w", pid, err)
	}
	conns, err := fillAcceptQueue(sock, maxQueued)
	thaw = func() {
		for _, c := range conns {
			c.Close()
		}
		conns = nil
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
	if err != nil {
		thaw()
		return nil, err
	}
	return thaw, nil
}

// fillAcceptQueue connects to sock until a connect fails with EAGAIN (the
// listener's accept queue is full) and returns the connections it holds.
func fillAcceptQueue(sock string, max int) ([]net.Conn, error) {
	var conns []net.Conn
	for len(conns) < max {
		c, err := net.DialTimeout("unix", sock, time.Second)
		if errors.Is(err, syscall.EAGAIN) {
			return conns, nil
		}
		if err != nil {
			for _, c := range conns {
				c.Close()
			}
			return nil, fmt.Errorf("filling the accept queue of %s: %w (after %d connections)", sock, err, len(conns))
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Close()
	}
	return nil, fmt.Errorf("the accept queue of %s never filled (%d connections): does its shim still accept?", sock, max)
}

// hideRuncState moves container id's runc state aside under root (runc's
// root for the namespace), so that `runc ps` of it fails; restore moves it
// back (once).
func hideRuncState(root, id string) (restore func() error, err error) {
	state, hidden := filepath.Join(root, id), filepath.Join(root, ".kc-e2e-hidden-"+id)
	if err := os.Rename(state, hidden); err != nil {
		return nil, fmt.Errorf("moving the runc state of %.13s aside: %w", id, err)
	}
	done := false
	return func() error {
		if done {
			return nil
		}
		done = true
		if err := os.Rename(hidden, state); err != nil {
			return fmt.Errorf("moving the runc state of %.13s back: %w", id, err)
		}
		return nil
	}, nil
}

func fileSize(path string) (int64, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
