// Package gotool builds a Go command at a pinned version from the Go
// module proxy into the cache (kind and crictl for the e2e's kind
// provider), once: later calls find the binary in place.
package gotool

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kubelet-compat/kubelet-compat/pkg/cachelock"
	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
)

// Tool is a main package at a module version.
type Tool struct {
	Name    string // the binary's name
	Package string // e.g. sigs.k8s.io/kind
	Version string // e.g. v0.33.0
}

func (t Tool) String() string { return t.Package + "@" + t.Version }

// Path is where Ensure puts the binary under cacheDir.
func (t Tool) Path(cacheDir string) string {
	return filepath.Join(cacheDir, "tools", t.Name+"-"+t.Version, t.Name)
}

// Ensure builds the tool (static, CGO_ENABLED=0, with the go on PATH)
// unless it is in the cache already, and returns its path. A failed build
// leaves nothing at Path.
func Ensure(ctx context.Context, cacheDir string, t Tool, log io.Writer) (string, error) {
	dst := t.Path(cacheDir)
	if st, err := os.Stat(dst); err == nil && st.Mode().IsRegular() {
		return dst, nil
	}
	dir := filepath.Dir(dst)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	unlock, err := cachelock.Lock(ctx, dir+".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(dst); err == nil {
		return dst, nil // built by another process while we waited
	}
	tmp, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	fmt.Fprintf(log, "building %s from the Go module proxy...\n", t)
	cmd := exec.Command("go", "install", "-trimpath", "-ldflags=-s -w", t.String())
	// Outside any module: go install pkg@version ignores the caller's
	// go.mod; GOFLAGS=-mod=mod would be refused there.
	cmd.Dir = tmp
	cmd.Env = []string{"GOBIN=" + tmp, "CGO_ENABLED=0", "GOFLAGS=", "GOTOOLCHAIN=local"}
	if err := cmd.Run(ctx); err != nil {
		return "", fmt.Errorf("building %s: %w", t, err)
	}
	if err := os.Rename(filepath.Join(tmp, t.Name), dst); err != nil {
		return "", err
	}
	return dst, nil
}
