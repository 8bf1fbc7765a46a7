package hostdeps

import (
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
)

// A header a cgo build reads is found without an execute bit; an absolute
// program still needs one.
func TestFoundDataFile(t *testing.T) {
	dir := t.TempDir()
	header := filepath.Join(dir, "seccomp.h")
	program := filepath.Join(dir, "bridge")
	assert.NilError(t, os.WriteFile(header, []byte("/* */\n"), 0o644))
	assert.NilError(t, os.WriteFile(program, []byte("#!/bin/sh\n"), 0o644))
	for _, tc := range []struct {
		name string
		want bool
	}{
		{header, true},
		{program, false},
		{filepath.Join(dir, "missing.h"), false},
		{dir, false},
	} {
		assert.Check(t, found(tc.name) == tc.want, "%s", tc.name)
	}
}
