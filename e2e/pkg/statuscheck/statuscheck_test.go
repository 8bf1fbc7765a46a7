package statuscheck

import (
	"errors"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestCheck(t *testing.T) {
	kept := `{"legacyContainers":[{"pod":"kc-e2e/a","container":"c","decision":"keep: stored hash is 1.30's","keep":true},{"pod":"kc-e2e/b","container":"init","decision":"init container: not hash-checked","keep":false}]}`
	notKept := `{"legacyContainers":[{"pod":"kc-e2e/a","container":"c","decision":"restart: spec changed","keep":false}]}`
	none := `{"legacyContainers":[]}`
	for _, tc := range []struct {
		name       string
		out        string
		err        error
		wantLegacy bool
		passed     bool
		detail     string
	}{
		{"every legacy container kept", kept, nil, true, true, "2 legacy containers, status keeps 2"},
		{"one not kept", notKept, nil, true, false, "not kept by status although the kubelet kept them: kc-e2e/a/c: restart: spec changed"},
		{"none where the step needs some", none, nil, true, false, "0 legacy containers"},
		{"none where the hash stays", none, nil, false, true, "0 legacy containers"},
		{"status failed", "x\nkubelet-compat: no file", errors.New("exit status 1"), false, false, "kubelet-compat: no file"},
		{"not JSON", "table", nil, false, false, "status -o json"},
	} {
		c := Check("status", []byte(tc.out), tc.err, tc.wantLegacy)
		assert.Check(t, is.Equal(c.Passed, tc.passed), tc.name)
		assert.Check(t, is.Contains(c.Detail, tc.detail), tc.name)
	}
}
