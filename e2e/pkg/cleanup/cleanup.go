// Package cleanup is a stack of undo actions: whatever the e2e starts or
// changes on the machine pushes its undo, and Run undoes everything in
// reverse order, also after a failure or a signal.
package cleanup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// Stack holds undo actions; it is safe for concurrent use.
type Stack struct {
	mu    sync.Mutex
	items []item
	log   io.Writer
}

type item struct {
	name string
	fn   func(context.Context) error
}

// New returns an empty stack that reports each undo on log (may be nil).
func New(log io.Writer) *Stack { return &Stack{log: log} }

// Push adds an undo action; the last pushed runs first.
func (s *Stack) Push(name string, fn func(context.Context) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items = append(s.items, item{name: name, fn: fn})
}

// Len is the number of pending undo actions.
func (s *Stack) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.items)
}

// Run runs and removes every pending action, last pushed first. An action's
// failure does not stop the others; all failures are returned joined.
// Each action gets at most perAction (0: no limit of its own).
func (s *Stack) Run(ctx context.Context, perAction time.Duration) error {
	var errs []error
	for {
		s.mu.Lock()
		if len(s.items) == 0 {
			s.mu.Unlock()
			break
		}
		it := s.items[len(s.items)-1]
		s.items = s.items[:len(s.items)-1]
		s.mu.Unlock()

		actx, cancel := ctx, context.CancelFunc(func() {})
		if perAction > 0 {
			actx, cancel = context.WithTimeout(ctx, perAction)
		}
		start := time.Now()
		err := runOne(actx, it)
		cancel()
		if s.log != nil {
			status := "ok"
			if err != nil {
				status = "FAILED: " + err.Error()
			}
			fmt.Fprintf(s.log, "cleanup: %s (%.1fs) %s\n", it.name, time.Since(start).Seconds(), status)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("cleanup %s: %w", it.name, err))
		}
	}
	return errors.Join(errs...)
}

// runOne turns a panic in an undo action into an error so that the
// remaining actions still run.
func runOne(ctx context.Context, it item) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return it.fn(ctx)
}
