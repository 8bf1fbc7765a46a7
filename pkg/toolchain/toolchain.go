// Package toolchain provides the old Go toolchains the Kubernetes trees were
// released with. They come from the Go module proxy as
// golang.org/toolchain@v0.0.1-go<X>.linux-amd64 (a full GOROOT, verified
// against the checksum database) and are copied out of the read-only module
// cache to <cacheDir>/toolchains/go<X>.
//
// A locally installed GOROOT can be used instead: set KC_GOROOT_<X with dots
// as underscores>, e.g. KC_GOROOT_1_13_15=/opt/go1.13.15. It is accepted when
// its `go version` reports exactly go<X>.
package toolchain

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/cachelock"
	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
	"github.com/kubelet-compat/kubelet-compat/pkg/modfetch"
)

// markerFile records, inside an installed toolchain, the module sum it was
// copied from. It is written last, so a toolchain without it is incomplete.
const markerFile = ".kc-toolchain-sum"

// download is replaced in tests.
var download = func(ctx context.Context, cacheDir, goVersion string) (modfetch.Module, error) {
	// The sum is checked by Ensure, which knows what to tell the user.
	return modfetch.Download(ctx, cacheDir, "golang.org/toolchain", "v0.0.1-go"+goVersion+".linux-amd64", "")
}

// UserGOROOTEnv is the variable that points at a user-supplied GOROOT for goVersion.
func UserGOROOTEnv(goVersion string) string {
	return "KC_GOROOT_" + strings.ReplaceAll(goVersion, ".", "_")
}

// Dir is where Ensure installs goVersion.
func Dir(cacheDir, goVersion string) string {
	return filepath.Join(cacheDir, "toolchains", "go"+goVersion)
}

// Ensure returns a GOROOT of goVersion, installing it into cacheDir if needed.
// wantSum is the h1: sum of the toolchain module recorded in the matrix.
// userGOROOT, the value of $KC_GOROOT_<X> (see UserGOROOTEnv) that the main
// package read, is used instead when set, once its go reports goVersion.
func Ensure(ctx context.Context, cacheDir, goVersion, wantSum, userGOROOT string, progress io.Writer) (string, error) {
	if progress == nil {
		progress = io.Discard
	}
	if userGOROOT != "" {
		if err := CheckVersion(ctx, userGOROOT, goVersion); err != nil {
			return "", fmt.Errorf("toolchain go%s from %s=%s: %w", goVersion, UserGOROOTEnv(goVersion), userGOROOT, err)
		}
		return userGOROOT, nil
	}

	// Other harness processes may be installing the same toolchain.
	unlock, err := cachelock.Lock(ctx, filepath.Join(cacheDir, "locks", "toolchain-go"+goVersion+".lock"))
	if err != nil {
		return "", fmt.Errorf("toolchain go%s: %w", goVersion, err)
	}
	defer unlock()

	dst := Dir(cacheDir, goVersion)
	if installedSum(dst) == wantSum {
		if err := CheckVersion(ctx, dst, goVersion); err == nil {
			return dst, nil
		}
	}

	start := time.Now()
	fmt.Fprintf(progress, "[go%s] downloading toolchain...\n", goVersion)
	m, err := download(ctx, cacheDir, goVersion)
	if err != nil {
		return "", fmt.Errorf("toolchain go%s: %w (the proxy may not serve this patch: pick the nearest served go%s.x for the matrix row, or set %s to a local GOROOT)",
			goVersion, err, minorOf(goVersion), UserGOROOTEnv(goVersion))
	}
	if m.Sum != wantSum {
		return "", fmt.Errorf("toolchain go%s: %w", goVersion, &modfetch.SumMismatchError{Module: m.Path + "@" + m.Version, Got: m.Sum, Want: wantSum})
	}
	if err := install(ctx, m.Dir, dst, goVersion, wantSum); err != nil {
		return "", fmt.Errorf("toolchain go%s: %w", goVersion, err)
	}
	fmt.Fprintf(progress, "[go%s] toolchain ready in %s: %s\n", goVersion, time.Since(start).Round(time.Second), dst)
	return dst, nil
}

// install copies the module's GOROOT to a temporary sibling of dst and renames
// it into place, so an interrupted copy never looks like a toolchain.
func install(ctx context.Context, src, dst, goVersion, sum string) error {
	parent := filepath.Dir(dst)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, ".go"+goVersion+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // a no-op after the rename

	if err := exec.Command("cp", "-a", src+"/.", tmp+"/").Run(ctx); err != nil {
		return fmt.Errorf("copying GOROOT out of the module cache: %w", err)
	}
	// The module cache is read-only and zip extraction drops the executable bits.
	if err := exec.Command("chmod", "-R", "u+w", tmp).Run(ctx); err != nil {
		return err
	}
	for _, pattern := range []string{"bin/*", "pkg/tool/linux_amd64/*"} {
		files, _ := filepath.Glob(filepath.Join(tmp, pattern))
		for _, f := range files {
			if err := os.Chmod(f, 0o755); err != nil {
				return err
			}
		}
	}
	if err := CheckVersion(ctx, tmp, goVersion); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, markerFile), []byte(sum+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.RemoveAll(dst); err != nil { // a stale or partial install
		return err
	}
	return os.Rename(tmp, dst)
}

func installedSum(goroot string) string {
	b, err := os.ReadFile(filepath.Join(goroot, markerFile))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// CheckVersion runs goroot/bin/go version and wants go<goVersion>.
func CheckVersion(ctx context.Context, goroot, goVersion string) error {
	goBin := filepath.Join(goroot, "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		return fmt.Errorf("no go command in GOROOT %s: %w", goroot, err)
	}
	cmd := exec.Command(goBin, "version")
	cmd.Env = []string{"GOROOT=" + goroot, "GOENV=off", "GOFLAGS=", "GOTOOLCHAIN=local"}
	out, err := cmd.Output(ctx)
	if err != nil {
		return err
	}
	// "go version go1.13.15 linux/amd64"
	fields := strings.Fields(string(out))
	if len(fields) < 3 || fields[2] != "go"+goVersion {
		return fmt.Errorf("%s reports %q, want go%s", goBin, strings.TrimSpace(string(out)), goVersion)
	}
	return nil
}

// Env is the environment to run the toolchain at goroot (of goVersion) with:
// no go env file (the machine's sets flags go1.13 rejects), no automatic
// toolchain switching, its own build cache and the module cache shared by all
// toolchains. Proxy settings come from the caller's environment. CGO_ENABLED
// is left to the caller.
func Env(goroot, goVersion, cacheDir string) []string {
	minor := minorNumber(goVersion)
	env := []string{
		"GOENV=off",
		"GOTOOLCHAIN=local",
		"GO111MODULE=on",
		"GOWORK=off",
		"GOROOT=" + goroot,
		"PATH=" + filepath.Join(goroot, "bin") + string(os.PathListSeparator) + os.Getenv("PATH"),
		"GOCACHE=" + filepath.Join(cacheDir, "gocache", "go"+goVersion),
		"GOPATH=" + filepath.Join(cacheDir, "gopath"),
	}
	// go1.13 has no -mod=mod and updates go.mod/go.sum by default; from 1.14
	// on it must be asked for (the trees' go.sum lacks the replaced modules).
	if minor >= 14 {
		env = append(env, "GOFLAGS=-mod=mod")
	} else {
		env = append(env, "GOFLAGS=")
	}
	if minor >= 15 {
		env = append(env, "GOMODCACHE="+modfetch.ModCache(cacheDir))
	}
	for _, k := range []string{"GOPROXY", "GONOPROXY", "GOSUMDB", "GONOSUMDB", "GOPRIVATE", "GOINSECURE"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// minorNumber is 13 for "1.13.15".
func minorNumber(goVersion string) int {
	parts := strings.Split(goVersion, ".")
	if len(parts) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(parts[1])
	return n
}

func minorOf(goVersion string) string {
	parts := strings.Split(goVersion, ".")
	if len(parts) < 2 {
		return goVersion
	}
	return parts[0] + "." + parts[1]
}
