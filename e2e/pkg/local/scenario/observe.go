package scenario

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/ctxtime"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/readiness"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/swap"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
)

// afterSwap is how a case (devices, admission) runs the swap sequence and
// observes the new kubelet: what it does before and at the swap, what it
// waits for and what its log lines and errors say.
type afterSwap struct {
	// what begins the log line of the settle wait ("devices").
	what string
	// back says what the window measured ("every pod back").
	back string
	// errPrefix begins the error of a patched run whose wait failed.
	errPrefix string
	// prepare, if set, runs once the picture before is taken and the
	// readiness poller runs, before the swap.
	prepare func(ctx context.Context, before *snapshot.Snapshot) error
	// swap swaps the kubelet and says when the new one started.
	swap swap.Swapper
	// started, if set, runs right after the swap.
	started func(ctx context.Context, started time.Time) error
	// wait waits until the pods are back after the swap and returns when.
	wait func(ctx context.Context) (time.Time, error)
	// waited, if set, runs right after wait; its error ends the run.
	waited func() error
	// alive, if set, runs after the kubelet's liveness check; its error
	// ends the run.
	alive func() error
}

// swapObservation is what observedSwap saw after the settle wait.
type swapObservation struct {
	started       time.Time
	windows       map[string]readiness.Window
	before, after *snapshot.Snapshot
	pods          map[string]*v1.Pod
	lines         []string          // the kubelet's AdmitMessage lines
	admitted      map[string]string // admittedDespite(lines)
}

// endRun is an error that ends the run whatever the variant.
type endRun struct{ error }

func (e endRun) Unwrap() error { return e.error }

// observedSwap runs the swap sequence (pkg/swap) with the API's Ready
// conditions polled every 250 ms from the picture before: it waits for the
// pods (a.wait; a patched run fails if that fails, the control logs it and
// reports what is there), sets run's window, waits 3 sync periods and 3 s
// more, stops the poller for the Ready windows, checks that the kubelet
// (and a.alive) still runs, takes the runtime's snapshot, lists the pods
// in the API, reads the kubelet's AdmitMessage lines and sets run's diff.
func (s *Scenario) observedSwap(ctx context.Context, cs kubernetes.Interface, st Step, run *report.Run, a afterSwap) (*swapObservation, error) {
	var poller *readyPoller
	obs := &swapObservation{}
	failed := swap.FailPatched(run.Variant == report.Patched, s.logf, fmt.Sprintf("%safter the swap to %s %s: ", a.errPrefix, st.To, run.Variant))
	h := swap.Hooks{
		Prepare: func(ctx context.Context, before *snapshot.Snapshot) error {
			poller = startReadyPoller(ctx, cs, 250*time.Millisecond)
			if a.prepare != nil {
				return a.prepare(ctx, before)
			}
			return nil
		},
		Started: a.started,
		Wait: func(ctx context.Context, _ *snapshot.Snapshot, _ time.Time) (time.Time, error) {
			back, err := a.wait(ctx)
			if a.waited != nil {
				if perr := a.waited(); perr != nil {
					return back, endRun{perr}
				}
			}
			return back, err
		},
		WaitFailed: func(err error) error {
			var end endRun
			if errors.As(err, &end) {
				return end.error
			}
			return failed(err)
		},
		Settle: func(ctx context.Context, window time.Duration) error {
			settle := 3*s.opts.SyncFrequency + 3*time.Second
			s.logf("%s %s (%s): %s %.1fs after the kubelet started; waiting %s", a.what, st, run.Variant, a.back, window.Seconds(), settle)
			return ctxtime.Sleep(ctx, settle)
		},
		Alive: func(ctx context.Context) error {
			obs.windows = readiness.Windows(poller.stop())
			poller = nil
			if err := s.kubelet.Alive(); err != nil {
				return err
			}
			if a.alive != nil {
				return a.alive()
			}
			return nil
		},
		Cleanup: func() {
			if poller != nil {
				poller.stop()
			}
		},
	}
	res, err := swap.Run(ctx, s.swapNode(), a.swap, h)
	if err != nil {
		return nil, err
	}
	fill(run, res)
	obs.started, obs.before, obs.after = res.Started, res.Before, res.After
	if obs.pods, err = podsByName(ctx, cs); err != nil {
		return nil, err
	}
	if obs.lines, err = s.kubelet.Lines(AdmitMessage); err != nil {
		return nil, err
	}
	obs.admitted = admittedDespite(obs.lines)
	return obs, nil
}
