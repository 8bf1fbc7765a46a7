package cleanup

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"sync"
	"syscall"
	"time"
)

// Signals cancel the run and start the undo: Ctrl-C, kill, and the
// terminal or session going away.
var Signals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// PanicError is a panic of the run, caught so that the undo still runs.
type PanicError struct {
	Value interface{}
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v\n%s", e.Value, e.Stack) }

// Guard runs body with a context that Signals cancel, then undoes
// everything on the stack (at most 5 minutes, 2 per action), whichever way
// body ends: it returns, fails, panics (the panic comes back as a
// *PanicError) or is cancelled by a signal. Signals that arrive during the
// undo are reported and ignored: a second Ctrl-C or a closing terminal
// must not leave the node half undone.
//
// Nothing in-process survives SIGKILL or a panic in another goroutine:
// for those the run keeps a journal, and `e2e -mode cleanup` undoes it.
func Guard(s *Stack, body func(ctx context.Context) error) (runErr, cleanErr error) {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, Signals...)
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var mu sync.Mutex
	cleaning := false
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case sig := <-sigs:
				mu.Lock()
				during := cleaning
				mu.Unlock()
				if during {
					s.logf("cleanup: %v received during the undo: ignored, the undo goes on", sig)
				} else {
					s.logf("cleanup: %v received: stopping the run, then undoing it", sig)
					cancel()
				}
			case <-done:
				return
			}
		}
	}()

	defer func() {
		if r := recover(); r != nil {
			runErr = &PanicError{Value: r, Stack: debug.Stack()}
		}
		mu.Lock()
		cleaning = true
		mu.Unlock()
		// A fresh context: the run's may be cancelled.
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer ccancel()
		cleanErr = s.Run(cctx, 2*time.Minute)
	}()
	return body(ctx), nil
}

func (s *Stack) logf(format string, args ...interface{}) {
	if s.log != nil {
		fmt.Fprintf(s.log, format+"\n", args...)
	}
}
