// Package ctxtime waits for a duration unless a context ends first.
package ctxtime

import (
	"context"
	"time"
)

// Sleep waits for d (not at all if d <= 0) and returns nil, or returns
// ctx.Err() as soon as ctx is done.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
