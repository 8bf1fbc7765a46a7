package exec

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

func TestEnvironment(t *testing.T) {
	t.Setenv("KC_EXEC_TEST_PARENT", "from-parent")
	for _, tc := range []struct {
		name       string
		replace    bool
		wantParent bool
	}{
		{name: "appended to the parent's", wantParent: true},
		{name: "replacing the parent's", replace: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := Command("/usr/bin/env")
			cmd.Env = []string{"KC_EXEC_TEST_OWN=own"}
			cmd.ReplaceEnv = tc.replace
			out, err := cmd.Output(context.Background())
			assert.NilError(t, err)
			assert.Assert(t, strings.Contains(string(out), "KC_EXEC_TEST_OWN=own\n"))
			assert.Equal(t, strings.Contains(string(out), "KC_EXEC_TEST_PARENT="), tc.wantParent)
		})
	}
}

func TestExitCode(t *testing.T) {
	ctx := context.Background()
	assert.Equal(t, ExitCode(nil), 0)
	err := Command("sh", "-c", "exit 2").Run(ctx)
	assert.Equal(t, ExitCode(err), 2)
	err = Command("/nonexistent/program").Run(ctx)
	assert.Equal(t, ExitCode(err), -1)
}

// TestInterruptGrace: with InterruptGrace a cancelled command is
// interrupted first, so it can stop what it started (its trap runs);
// without, it is killed outright.
func TestInterruptGrace(t *testing.T) {
	for _, tc := range []struct {
		name            string
		grace           time.Duration
		wantInterrupted bool
	}{
		{name: "killed", grace: 0},
		{name: "interrupted", grace: 5 * time.Second, wantInterrupted: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "interrupted")
			ready := filepath.Join(t.TempDir(), "ready")
			cmd := Command("/bin/sh", "-c", `trap 'echo yes > "$1"; exit 3' INT; touch "$2"; while :; do sleep 0.05; done`, "sh", marker, ready)
			cmd.InterruptGrace = tc.grace
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				for ctx.Err() == nil {
					if _, err := os.Stat(ready); err == nil {
						cancel()
						return
					}
					time.Sleep(10 * time.Millisecond)
				}
			}()
			err := cmd.Run(ctx)
			assert.Assert(t, err != nil)
			_, statErr := os.Stat(marker)
			assert.Equal(t, statErr == nil, tc.wantInterrupted)
		})
	}
}
