package roll

import (
	"bytes"
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// steppedClock is a Host whose clock moves only when an action moves it.
type steppedClock struct {
	Host
	now time.Time
}

func (c *steppedClock) Now() time.Time { return c.now }

// TestDoLogsSlowActions: an action of slowAction or more says in the log
// how long it took (where a node's minutes go); a quicker one says
// nothing.
func TestDoLogsSlowActions(t *testing.T) {
	clock := &steppedClock{now: time.Date(2026, 12, 7, 19, 10, 0, 0, time.UTC)}
	var out bytes.Buffer
	r := &run{Engine: &Engine{Host: clock, Out: &out}}
	step := func(name string, d time.Duration) action {
		return action{name, func(context.Context) error { clock.now = clock.now.Add(d); return nil }}
	}
	assert.NilError(t, r.do(context.Background(), step("packages: install", 3*time.Second), step("kubeadm: upgrade", 165*time.Second),
		step("record", 9999*time.Millisecond), step("gate", 10*time.Second)))
	assert.Check(t, is.Equal(out.String(), Prog+": kubeadm: upgrade: took 165s\n"+Prog+": gate: took 10s\n"))
}
