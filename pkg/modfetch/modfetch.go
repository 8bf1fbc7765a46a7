// Package modfetch downloads single modules through the Go module proxy with
// the machine's modern go command, which verifies every download against the
// checksum database. The module cache it fills (<cacheDir>/gopath/pkg/mod) is
// the one the old toolchains share later.
package modfetch

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
)

// goCommand is the modern go command: the one first on PATH.
const goCommand = "go"

// Module is what `go mod download -json` reports for one module.
type Module struct {
	Path    string
	Version string
	Error   string
	Info    string
	GoMod   string
	Zip     string
	Dir     string
	Sum     string
}

// ModCache is the module cache shared by every toolchain of the harness.
func ModCache(cacheDir string) string {
	return filepath.Join(cacheDir, "gopath", "pkg", "mod")
}

// Env is the environment for the modern go: module mode, never switching
// toolchains on its own, and caches inside cacheDir.
func Env(cacheDir string) []string {
	return []string{
		"GO111MODULE=on",
		"GOTOOLCHAIN=local",
		"GOFLAGS=-mod=mod",
		"GOWORK=off",
		"GOPATH=" + filepath.Join(cacheDir, "gopath"),
		"GOMODCACHE=" + ModCache(cacheDir),
		"GOCACHE=" + filepath.Join(cacheDir, "gocache", "modern"),
	}
}

// Download fetches path@version and checks its h1: sum against wantSum (skip
// the check with an empty wantSum).
func Download(ctx context.Context, cacheDir, path, version, wantSum string) (Module, error) {
	what := path + "@" + version
	// Run outside any module so the repository's own go.mod is never touched.
	tmp, err := os.MkdirTemp("", "kc-modfetch-")
	if err != nil {
		return Module{}, fmt.Errorf("downloading %s: %w", what, err)
	}
	defer os.RemoveAll(tmp)

	cmd := exec.Command(goCommand, "mod", "download", "-json", what)
	cmd.Dir = tmp
	cmd.Env = Env(cacheDir)
	out, runErr := cmd.Output(ctx)
	var m Module
	if err := json.Unmarshal(out, &m); err != nil {
		if runErr != nil {
			return Module{}, fmt.Errorf("downloading %s: %w", what, runErr)
		}
		return Module{}, fmt.Errorf("downloading %s: decoding go mod download output: %w", what, err)
	}
	if m.Error != "" {
		return m, fmt.Errorf("downloading %s: %s", what, firstLine(m.Error))
	}
	if runErr != nil {
		return m, fmt.Errorf("downloading %s: %w", what, runErr)
	}
	if wantSum != "" && m.Sum != wantSum {
		return m, &SumMismatchError{Module: what, Got: m.Sum, Want: wantSum}
	}
	return m, nil
}

// SumMismatchError means the proxy served (and the checksum database vouched
// for) other bytes than pkg/matrix/matrix.json records.
type SumMismatchError struct {
	Module    string
	Got, Want string
}

func (e *SumMismatchError) Error() string {
	return fmt.Sprintf("%s has sum %s but pkg/matrix/matrix.json records %s: "+
		"if the matrix row is new or wrong, put %s in it; otherwise the module cache is corrupt: "+
		"clean it with `go clean -modcache` (GOMODCACHE=<KC_CACHE>/gopath/pkg/mod) and retry",
		e.Module, e.Got, e.Want, e.Got)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
