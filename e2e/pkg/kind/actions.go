package kind

import (
	"context"
	"fmt"
	"time"
)

// Action is one small step of a kind scenario, as kind's own create
// actions: a name for the progress output and the report, and a function
// on the shared run state.
type Action struct {
	Name string
	Do   func(r *ClusterRun, ctx context.Context) error
}

// runActions runs the actions in order, logging each with its duration;
// the first failure stops the list.
func runActions(ctx context.Context, r *ClusterRun, actions []Action) error {
	for i, a := range actions {
		start := time.Now()
		r.Logf("[%d/%d] %s ...", i+1, len(actions), a.Name)
		if err := a.Do(r, ctx); err != nil {
			r.Logf("[%d/%d] %s FAILED after %.0fs: %v", i+1, len(actions), a.Name, time.Since(start).Seconds(), err)
			return fmt.Errorf("%s: %w", a.Name, err)
		}
		r.Logf("[%d/%d] %s done in %.1fs", i+1, len(actions), a.Name, time.Since(start).Seconds())
	}
	return nil
}
