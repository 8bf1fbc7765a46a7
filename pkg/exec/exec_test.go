package exec

import (
	"context"
	"strings"
	"testing"

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
