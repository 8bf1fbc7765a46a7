package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

// TestVersionExits pins what kubeadm upgrade apply's health-check Job
// needs: `pause -v` completes at once (it used to sleep: the Job never
// completed and kubeadm upgrade apply 1.31 failed its preflight).
func TestVersionExits(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "pause")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	assert.NilError(t, err, string(out))
	for _, arg := range []string{"-v", "-V"} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		out, err := exec.CommandContext(ctx, bin, arg).Output()
		cancel()
		assert.NilError(t, err, arg)
		assert.Assert(t, strings.HasPrefix(string(out), "kubelet-compat e2e-pause"), "%s: %q", arg, out)
	}
}
