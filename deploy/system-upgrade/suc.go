// Package systemupgrade rolls a fleet with Rancher's system-upgrade-controller
// (SUC): the controller built from the Go module proxy, its image and the
// upgrade Job's image as OCI layouts without a registry, and the Plans that
// run upgrade.sh on every node, control plane first. See README.md.
package systemupgrade

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
	"github.com/kubelet-compat/kubelet-compat/pkg/modfetch"
)

// The controller release and what it takes to build it from the proxy.
const (
	// SUCModule is the controller's main module (main.go at its root).
	SUCModule = "github.com/rancher/system-upgrade-controller"
	// SUCVersion is the release built and named in the manifests.
	SUCVersion = "v0.20.1"
	// SUCCommit is the commit SUCVersion tags.
	SUCCommit = "f1362a3fe1a8"
	// SUCAPIs is the API module, which SUC's go.mod replaces with ./pkg/apis
	// (absent from the module zip) and which has no tag: it is pinned to the
	// pseudo-version of SUCCommit.
	SUCAPIs        = SUCModule + "/pkg/apis"
	SUCAPIsVersion = "v0.0.0-20260519183600-" + SUCCommit
)

// sucGoMod is the main module the controller is built in: SUC's go.mod
// requires pkg/apis at v0.0.0 (its replace to ./pkg/apis does not apply to
// a dependency), which the proxy does not serve, so every version of it is
// replaced with the pseudo-version; and SUC's own replace of
// distribution/reference, which a dependency's go.mod cannot impose either.
var sucGoMod = fmt.Sprintf(`module kubelet-compat.local/system-upgrade-controller

go 1.26.0

require (
	%[1]s %[2]s
	%[3]s %[4]s
)

replace (
	github.com/distribution/reference => github.com/distribution/reference v0.5.0
	%[3]s => %[3]s %[4]s
)
`, SUCModule, SUCVersion, SUCAPIs, SUCAPIsVersion)

// ControllerPath is where the controller binary is cached:
// <cacheDir>/system-upgrade/system-upgrade-controller-<version>/system-upgrade-controller.
func ControllerPath(cacheDir string) string {
	return filepath.Join(cacheDir, "system-upgrade", "system-upgrade-controller-"+SUCVersion, "system-upgrade-controller")
}

// BuildController builds the controller (static, version-stamped as SUC's
// Dockerfile stamps it) in a scratch main module under cacheDir unless the
// cached binary exists, checks that it reports SUCVersion, and returns its
// path. A failed build caches nothing and leaves no scratch directory.
func BuildController(ctx context.Context, cacheDir string, log io.Writer) (string, error) {
	bin := ControllerPath(cacheDir)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	fmt.Fprintf(log, "building %s %s from the Go module proxy\n", SUCModule, SUCVersion)
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", err
	}
	work, err := os.MkdirTemp(filepath.Dir(bin), ".build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	if err := os.WriteFile(filepath.Join(work, "go.mod"), []byte(sucGoMod), 0o644); err != nil {
		return "", err
	}
	out := filepath.Join(work, "system-upgrade-controller")
	stamp := SUCModule + "/pkg/version."
	c := exec.Command("go", "build", "-trimpath",
		"-ldflags=-s -w -X "+stamp+"Version="+SUCVersion+" -X "+stamp+"GitCommit="+SUCCommit,
		"-o", out, SUCModule)
	c.Dir, c.Log = work, log
	c.Env = append([]string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64"}, modfetch.Env(cacheDir)...)
	if err := c.Run(ctx); err != nil {
		return "", fmt.Errorf("building %s %s: %w", SUCModule, SUCVersion, err)
	}
	said, err := exec.Command(out, "--version").Output(ctx)
	if err != nil {
		return "", err
	}
	if want := "version " + SUCVersion + " (" + SUCCommit + ")"; !strings.Contains(string(said), want) {
		return "", fmt.Errorf("the built controller says %q, want %q", strings.TrimSpace(string(said)), want)
	}
	if err := os.Rename(out, bin); err != nil {
		return "", err
	}
	return bin, nil
}
