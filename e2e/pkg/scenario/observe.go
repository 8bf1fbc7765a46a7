package scenario

import (
	"context"
	"fmt"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/corpus"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/ctxtime"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/readiness"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/snapshot"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
)

// afterSwap is how a case (devices, admission) observes the new kubelet:
// what it waits for and what its log lines and errors say.
type afterSwap struct {
	// what begins the log line of the settle wait ("devices").
	what string
	// back says what the window measured ("every pod back").
	back string
	// errPrefix begins the error of a patched run whose wait failed.
	errPrefix string
	// wait waits until the pods are back after the swap and returns when.
	wait func(ctx context.Context) (time.Time, error)
	// waited, if set, runs right after wait; its error ends the run.
	waited func() error
	// alive, if set, runs after the kubelet's liveness check; its error
	// ends the run.
	alive func() error
}

// swapObservation is what observeAfterSwap saw after the settle wait.
type swapObservation struct {
	windows  map[string]readiness.Window
	after    *snapshot.Snapshot
	pods     map[string]*v1.Pod
	lines    []string          // the kubelet's AdmitMessage lines
	admitted map[string]string // admittedDespite(lines)
}

// observeAfterSwap observes the pods once the new kubelet started at
// started: it waits for them (a.wait; a patched run fails if that fails,
// the control logs it and reports what is there), sets run's window, waits
// 3 sync periods and 3 s more, stops poller for the Ready windows, checks
// that the kubelet (and a.alive) still runs, takes the runtime's snapshot,
// lists the pods in the API, reads the kubelet's AdmitMessage lines and
// sets run's diff against before. It stops poller on every error.
func (s *Scenario) observeAfterSwap(ctx context.Context, cs kubernetes.Interface, st Step, run *report.Run, before *snapshot.Snapshot, poller *readyPoller, started time.Time, a afterSwap) (*swapObservation, error) {
	window, err := a.wait(ctx)
	if a.waited != nil {
		if perr := a.waited(); perr != nil {
			poller.stop()
			return nil, perr
		}
	}
	run.WindowSeconds = time.Since(started).Seconds()
	switch {
	case err == nil:
		run.WindowSeconds = window.Sub(started).Seconds()
	case run.Variant == report.Patched:
		poller.stop()
		return nil, fmt.Errorf("%safter the swap to %s %s: %w", a.errPrefix, st.To, run.Variant, err)
	default:
		s.logf("control: %v; reporting what is there", err)
	}
	settle := 3*s.opts.SyncFrequency + 3*time.Second
	s.logf("%s %s (%s): %s %.1fs after the kubelet started; waiting %s", a.what, st, run.Variant, a.back, run.WindowSeconds, settle)
	if err := ctxtime.Sleep(ctx, settle); err != nil {
		poller.stop()
		return nil, err
	}
	obs := &swapObservation{windows: readiness.Windows(poller.stop())}
	if err := s.kubelet.Alive(); err != nil {
		return nil, err
	}
	if a.alive != nil {
		if err := a.alive(); err != nil {
			return nil, err
		}
	}
	if obs.after, err = s.rt.Take(ctx, corpus.Namespace); err != nil {
		return nil, err
	}
	if obs.pods, err = podsByName(ctx, cs); err != nil {
		return nil, err
	}
	if obs.lines, err = s.kubelet.Lines(AdmitMessage); err != nil {
		return nil, err
	}
	obs.admitted = admittedDespite(obs.lines)
	run.Diff = snapshot.Compare(before, obs.after)
	run.Pods, run.Containers, run.Restarts, run.RecreatedPods = run.Diff.Pods, run.Diff.Containers, run.Diff.Restarts, run.Diff.RecreatedPods
	return obs, nil
}
