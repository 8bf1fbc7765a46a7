package cleanup

import (
	"context"
	"os/signal"
	"syscall"
	"time"
)

// Guard runs body with a context that SIGINT or SIGTERM cancels, then
// undoes everything on the stack (at most 5 minutes, 2 per action).
func Guard(s *Stack, body func(ctx context.Context) error) (runErr, cleanErr error) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	runErr = body(ctx)
	// Undo everything, even after a failure or a signal: a fresh context,
	// bounded.
	stop()
	cctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	cleanErr = s.Run(cctx, 2*time.Minute)
	cancel()
	return runErr, cleanErr
}
