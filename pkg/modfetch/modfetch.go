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
	"regexp"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
	"github.com/kubelet-compat/kubelet-compat/pkg/versions"
)

// goCommand is the modern go command: the one first on PATH.
const goCommand = "go"

// NewerGo is the one Go newer than the machine's that the project may run
// (GOTOOLCHAIN=go1.27.3): a module whose go.mod needs a newer Go than the
// machine's (k8s.io/kubernetes 1.38 says go 1.27.0) is downloaded with it.
// The go command fetches that toolchain from the module proxy and checks
// it against the checksum database like any module.
const NewerGo = "1.27.3"

// needsGoRE is the go command's refusal to download a module whose go.mod
// needs a newer Go than the local one.
var needsGoRE = regexp.MustCompile(`requires go >= ([0-9][0-9.]*) \(running go [^;]*; GOTOOLCHAIN=local\)`)

// NewerToolchainFor is the GOTOOLCHAIN to run the go command again with after
// its error msg, or "" when msg is another error or NewerGo is too
// old for the module.
func NewerToolchainFor(msg string) string {
	m := needsGoRE.FindStringSubmatch(msg)
	if m == nil {
		return ""
	}
	need, errNeed := goRelease(m[1])
	have, errHave := goRelease(NewerGo)
	if errNeed != nil || errHave != nil || need.Compare(have) > 0 {
		return ""
	}
	return "go" + NewerGo
}

// goRelease reads a Go version as a go.mod's go line writes it: 1.27 is
// 1.27.0.
func goRelease(s string) (versions.Version, error) {
	if strings.Count(s, ".") == 1 {
		s += ".0"
	}
	return versions.ParseRelease(s)
}

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

	m, runErr, err := download(ctx, tmp, what, Env(cacheDir))
	if err != nil {
		return Module{}, err
	}
	if toolchain := NewerToolchainFor(m.Error); toolchain != "" {
		m, runErr, err = download(ctx, tmp, what, append(Env(cacheDir), "GOTOOLCHAIN="+toolchain))
		if err != nil {
			return Module{}, err
		}
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

// download runs go mod download -json once; err is set when its output
// does not decode, runErr is the command's own error.
func download(ctx context.Context, dir, what string, env []string) (m Module, runErr, err error) {
	cmd := exec.Command(goCommand, "mod", "download", "-json", what)
	cmd.Dir = dir
	cmd.Env = env // the last GOTOOLCHAIN wins
	out, runErr := cmd.Output(ctx)
	if err := json.Unmarshal(out, &m); err != nil {
		if runErr != nil {
			return Module{}, nil, fmt.Errorf("downloading %s: %w", what, runErr)
		}
		return Module{}, nil, fmt.Errorf("downloading %s: decoding go mod download output: %w", what, err)
	}
	return m, runErr, nil
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
