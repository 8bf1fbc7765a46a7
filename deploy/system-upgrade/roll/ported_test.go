package roll

import (
	"os"
	"regexp"
	"testing"

	"gotest.tools/v3/assert"
)

// renamed are upgrade_test.go's cases whose Go port has another name,
// and why.
var renamed = map[string]string{
	// The engine takes the lock with flock(2) itself; upgrade.sh needs the
	// node's util-linux flock, the image's busybox has none.
	"no flock on the node: fails, nothing done": "the roll's lock cannot be taken: fails, nothing done",
}

// TestEveryShellCaseIsPorted checks that every case of upgrade_test.go's
// table has its Go port in rollCases, under its name (or renamed's).
func TestEveryShellCaseIsPorted(t *testing.T) {
	src, err := os.ReadFile("../upgrade_test.go")
	assert.NilError(t, err)
	ported := map[string]bool{}
	for _, tc := range rollCases() {
		assert.Assert(t, !ported[tc.name], "two Go cases named %q", tc.name)
		ported[tc.name] = true
	}
	names := regexp.MustCompile(`(?m)^\t\t\{name: "((?:[^"\\]|\\.)*)"`).FindAllSubmatch(src, -1)
	assert.Assert(t, len(names) > 100, "upgrade_test.go's cases not found")
	for _, m := range names {
		name := string(m[1])
		if r, ok := renamed[name]; ok {
			name = r
		}
		assert.Check(t, ported[name], "upgrade_test.go's case %q has no Go port", name)
	}
	t.Logf("%d of upgrade_test.go's cases ported", len(names))
}
