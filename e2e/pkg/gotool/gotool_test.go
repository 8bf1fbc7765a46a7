package gotool

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
)

func TestEnsureFindsABuiltTool(t *testing.T) {
	cache := t.TempDir()
	tool := Tool{Name: "kind", Package: "sigs.k8s.io/kind", Version: "v0.33.0"}
	assert.Equal(t, tool.Path(cache), filepath.Join(cache, "tools", "kind-v0.33.0", "kind"))
	assert.Equal(t, tool.String(), "sigs.k8s.io/kind@v0.33.0")

	assert.NilError(t, os.MkdirAll(filepath.Dir(tool.Path(cache)), 0o755))
	assert.NilError(t, os.WriteFile(tool.Path(cache), []byte("#!/bin/sh\n"), 0o755))
	// In place: nothing is built (no go command runs for it).
	got, err := Ensure(context.Background(), cache, tool, io.Discard)
	assert.NilError(t, err)
	assert.Equal(t, got, tool.Path(cache))
}

func TestEnsureLeavesNothingWhenItFails(t *testing.T) {
	cache := t.TempDir()
	tool := Tool{Name: "nope", Package: "example.invalid/nope", Version: "v0.0.0"}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Ensure fails (lock or build) and must leave nothing behind
	_, err := Ensure(ctx, cache, tool, io.Discard)
	assert.Assert(t, err != nil)
	_, statErr := os.Stat(tool.Path(cache))
	assert.Assert(t, os.IsNotExist(statErr), "a failed build left %s", tool.Path(cache))
	entries, _ := os.ReadDir(filepath.Dir(tool.Path(cache)))
	for _, e := range entries {
		assert.Assert(t, e.Name() == "" || e.Name()[0] != '.', "temporary build dir %s left", e.Name())
	}
}
