// Package swap is the e2e's one swap sequence: record, the runtime's
// picture before, the swap, the node back, a settle, the picture after and
// the diff. It runs on any node (the local host, a kind node) through
// Node; what is swapped (the kubelet today) is the Swapper it is given, and
// what differs between the e2e's cases (the admission cases, the device
// plugin, the readiness watchers, faults, the control plane first) are its
// Hooks.
package swap

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/ctxtime"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
)

// Node is where the sequence runs.
type Node interface {
	// Record runs kubelet-compat record against the running kubelet, as
	// an operator does before a swap.
	Record(ctx context.Context) error
	// Snapshot is the runtime's view of the pods the e2e judges.
	Snapshot(ctx context.Context) (*snapshot.Snapshot, error)
}

// Swapper swaps what the sequence swaps and says when the new one
// started.
type Swapper func(ctx context.Context) (started time.Time, err error)

// Hooks are what differs between the sequence's uses; all but Wait may be
// nil.
type Hooks struct {
	// Prepare runs once the picture before is taken, before the swap
	// (the control plane upgraded first, watchers, a pending resize, the
	// device plugin stopped, faults between the kubelets).
	Prepare func(ctx context.Context, before *snapshot.Snapshot) error
	// Started runs right after the swap (a fault in the first sync, the
	// device plugin back after a gap).
	Started func(ctx context.Context, started time.Time) error
	// Wait waits until the node is back after the swap and says when.
	Wait func(ctx context.Context, before *snapshot.Snapshot, started time.Time) (time.Time, error)
	// WaitFailed decides what a failed Wait does: its error ends the
	// sequence, nil goes on and reports what is there (the control). Nil:
	// every failed Wait ends it.
	WaitFailed func(err error) error
	// Settle runs after Wait, before the picture after: anything the new
	// kubelet restarts, it has by its end. Window is from the start to the
	// node back (to the end of Wait when it failed).
	Settle func(ctx context.Context, window time.Duration) error
	// Alive checks, right before the picture after, that what must still
	// run does (the new kubelet, the device plugin), and ends what watched
	// the swap.
	Alive func(ctx context.Context) error
	// Cleanup runs when the sequence ends, whatever ended it (pollers,
	// informers).
	Cleanup func()
}

// SettleFor is a Settle of a fixed time.
func SettleFor(d time.Duration) func(context.Context, time.Duration) error {
	return func(ctx context.Context, _ time.Duration) error { return ctxtime.Sleep(ctx, d) }
}

// Result is what the sequence saw.
type Result struct {
	Before, After *snapshot.Snapshot
	// Started: the swapped-in part started; Window: from then until the
	// node was back (until Wait gave up, when it failed and went on).
	Started time.Time
	Window  time.Duration
	// WaitErr is a failed Wait that WaitFailed let go on.
	WaitErr error
	Diff    snapshot.Diff
}

// Run runs the sequence on n.
func Run(ctx context.Context, n Node, swap Swapper, h Hooks) (*Result, error) {
	if h.Wait == nil {
		return nil, errors.New("swap: no Wait")
	}
	if h.Cleanup != nil {
		defer h.Cleanup()
	}
	if err := n.Record(ctx); err != nil {
		return nil, err
	}
	res := &Result{}
	var err error
	if res.Before, err = n.Snapshot(ctx); err != nil {
		return nil, err
	}
	if h.Prepare != nil {
		if err := h.Prepare(ctx, res.Before); err != nil {
			return nil, err
		}
	}
	if res.Started, err = swap(ctx); err != nil {
		return nil, err
	}
	if h.Started != nil {
		if err := h.Started(ctx, res.Started); err != nil {
			return nil, err
		}
	}
	back, err := h.Wait(ctx, res.Before, res.Started)
	if err != nil {
		if h.WaitFailed == nil {
			return nil, err
		}
		if err := h.WaitFailed(err); err != nil {
			return nil, err
		}
		res.WaitErr, back = err, time.Now()
	}
	res.Window = back.Sub(res.Started)
	if h.Settle != nil {
		if err := h.Settle(ctx, res.Window); err != nil {
			return nil, err
		}
	}
	if h.Alive != nil {
		if err := h.Alive(ctx); err != nil {
			return nil, err
		}
	}
	if res.After, err = n.Snapshot(ctx); err != nil {
		return nil, err
	}
	res.Diff = snapshot.Compare(res.Before, res.After)
	return res, nil
}

// FailPatched is the WaitFailed of the e2e's variants: a patched run's
// failed wait ends it (prefixed by what), a control's is logged and the
// run reports what is there.
func FailPatched(patched bool, logf func(string, ...interface{}), what string) func(error) error {
	return func(err error) error {
		if patched {
			return fmt.Errorf("%s%w", what, err)
		}
		logf("control: %v; reporting what is there", err)
		return nil
	}
}
