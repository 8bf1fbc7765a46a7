// Package systemupgrade rolls a fleet with Rancher's system-upgrade-controller
// (SUC): the controller built from the Go module proxy, its image and the
// upgrade Job's image as OCI layouts without a registry, and the Plans that
// run kc-roll on every node, control plane first. See README.md.
package systemupgrade

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/deploy/system-upgrade/manifest"
	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
	"github.com/kubelet-compat/kubelet-compat/pkg/modfetch"
)

// The controller release and what it takes to build it from the proxy.
const (
	// SUCModule is the controller's main module (main.go at its root).
	SUCModule = "github.com/rancher/system-upgrade-controller"
	// SUCVersion is the release built and named in the manifests.
	SUCVersion = manifest.SUCVersion
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

// SUC is the controller as a GoProgram, stamped as SUC's Dockerfile stamps it.
var SUC = GoProgram{Name: "system-upgrade-controller", Module: SUCModule, Version: SUCVersion, Package: SUCModule, GoMod: sucGoMod,
	LDFlags: "-X " + SUCModule + "/pkg/version.Version=" + SUCVersion + " -X " + SUCModule + "/pkg/version.GitCommit=" + SUCCommit,
	Says:    "version " + SUCVersion + " (" + SUCCommit + ")"}

// ControllerPath is where the controller binary is cached:
// <cacheDir>/system-upgrade/system-upgrade-controller-<version>/system-upgrade-controller.
func ControllerPath(cacheDir string) string { return SUC.Path(cacheDir) }

// BuildController builds the controller unless it is cached (SUC.Build).
func BuildController(ctx context.Context, cacheDir string, log io.Writer) (string, error) {
	return SUC.Build(ctx, cacheDir, log)
}

// GoProgram is a program built from the Go module proxy as a dependency of
// a scratch main module (GoMod), static, cached in
// <cache>/system-upgrade/<name>-<version>/<name>: the controller, and the
// simulation's kwok and etcd (sim), whose go.mod replaces keep `go install
// pkg@version` from building them.
type GoProgram struct {
	Name, Module, Version string
	// Package is the main package to build.
	Package string
	// GoMod is the scratch main module's go.mod.
	GoMod string
	// LDFlags are added to -s -w (version stamps).
	LDFlags string
	// Says is what --version must print.
	Says string
	// Download runs go mod download Module first, to fill go.sum.
	Download bool
}

// Path is where p is cached.
func (p GoProgram) Path(cacheDir string) string {
	return filepath.Join(cacheDir, "system-upgrade", p.Name+"-"+p.Version, p.Name)
}

// Build builds p unless it is cached, checks its --version, and returns its
// path. A failed build caches nothing and leaves no scratch directory.
func (p GoProgram) Build(ctx context.Context, cacheDir string, log io.Writer) (string, error) {
	bin := p.Path(cacheDir)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	fmt.Fprintf(log, "building %s %s from the Go module proxy\n", p.Module, p.Version)
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", err
	}
	work, err := os.MkdirTemp(filepath.Dir(bin), ".build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	if err := os.WriteFile(filepath.Join(work, "go.mod"), []byte(p.GoMod), 0o644); err != nil {
		return "", err
	}
	out := filepath.Join(work, p.Name)
	steps := [][]string{{"build", "-trimpath", strings.TrimSpace("-ldflags=-s -w " + p.LDFlags), "-o", out, p.Package}}
	if p.Download {
		steps = append([][]string{{"mod", "download", p.Module}}, steps...)
	}
	env := append([]string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64"}, modfetch.Env(cacheDir)...)
	for _, args := range steps {
		c := exec.Command("go", args...)
		c.Dir, c.Log, c.Env = work, log, env
		if err := c.Run(ctx); err != nil {
			return "", fmt.Errorf("building %s %s: %w", p.Module, p.Version, err)
		}
	}
	said, err := exec.Command(out, "--version").Output(ctx)
	if err != nil {
		return "", err
	}
	if !strings.Contains(string(said), p.Says) {
		return "", fmt.Errorf("the built %s says %q, want %q", p.Name, strings.TrimSpace(string(said)), p.Says)
	}
	if err := os.Rename(out, bin); err != nil {
		return "", err
	}
	return bin, nil
}
