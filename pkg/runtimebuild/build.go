package runtimebuild

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/cachelock"
	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
	"github.com/kubelet-compat/kubelet-compat/pkg/modfetch"
	"github.com/kubelet-compat/kubelet-compat/pkg/toolchain"
)

// InfoFile is written last into a component's directory: a directory
// without it is not a finished build.
const InfoFile = "BUILDINFO.json"

// Options say where to cache and where to put the results.
type Options struct {
	// CacheDir is $KC_CACHE: toolchains, the module cache, and the built
	// components under runtime/<name>-<version>.
	CacheDir string
	// OutputDir gets a copy of each component, <OutputDir>/<name>-<version>.
	OutputDir string
	// Rebuild ignores a cached build.
	Rebuild bool
	// PatchesDir holds the patch series of patched components (default
	// PatchesDir, relative to the repository's root).
	PatchesDir string
	Log        io.Writer
}

// Info is what BUILDINFO.json records about a component's build.
type Info struct {
	Component string `json:"component"`
	Module    string `json:"module"`
	Sum       string `json:"sum"`
	Go        string `json:"go"`
	LDFlags   string `json:"ldflags"`
	Note      string `json:"note,omitempty"`
	// Patches is the series applied to the module's source, in order.
	Patches  []Patch      `json:"patches,omitempty"`
	BuiltAt  time.Time    `json:"builtAt"`
	Binaries []BinaryInfo `json:"binaries"`
}

// BinaryInfo is one built program.
type BinaryInfo struct {
	Name    string  `json:"name"`
	Package string  `json:"package"`
	CGO     bool    `json:"cgo"`
	Tags    string  `json:"tags,omitempty"`
	Seconds float64 `json:"buildSeconds"`
	Size    int64   `json:"size"`
	SHA256  string  `json:"sha256"`
	Version string  `json:"versionOutput"`
}

// CachedDir is where a component's build is cached.
func CachedDir(cacheDir string, c Component) string {
	return filepath.Join(cacheDir, "runtime", c.ID())
}

// Build builds c unless its cache holds a finished build, then copies it
// to <OutputDir>/<name>-<version>. Nothing is left half-written: builds go
// to a temporary directory renamed into place when complete.
//
// A patched component's cached build is used only if it applied the
// series as it is now: the series can change without its build number.
func Build(ctx context.Context, c Component, o Options) (Info, error) {
	o = o.withDefaults()
	unlock, err := cachelock.Lock(ctx, filepath.Join(o.CacheDir, "locks", "runtime-"+c.ID()+".lock"))
	if err != nil {
		return Info{}, fmt.Errorf("%s: %w", c, err)
	}
	defer unlock()
	patches, err := Series(o.PatchesDir, c)
	if err != nil {
		return Info{}, err
	}
	dst := CachedDir(o.CacheDir, c)
	info, err := ReadInfo(dst)
	if err == nil && !SamePatches(info.Patches, patches) {
		fmt.Fprintf(o.Log, "[%s] the cached build applied another patch series: building again\n", c)
		err = errors.New("another patch series")
	}
	if err != nil || o.Rebuild {
		fmt.Fprintf(o.Log, "[%s] building from %s@%s with go%s\n", c, c.Module, c.Version, c.Go)
		tmp, err := buildInto(ctx, c, o, filepath.Join(o.CacheDir, "gocache", "go"+c.Go))
		if tmp != "" {
			defer os.RemoveAll(tmp)
		}
		if err != nil {
			return Info{}, fmt.Errorf("%s: %w", c, err)
		}
		if err := replaceDir(tmp, dst); err != nil {
			return Info{}, fmt.Errorf("%s: %w", c, err)
		}
		if info, err = ReadInfo(dst); err != nil {
			return Info{}, fmt.Errorf("%s: %w", c, err)
		}
	} else {
		fmt.Fprintf(o.Log, "[%s] cached in %s\n", c, dst)
	}
	if o.OutputDir != "" {
		if err := copyOut(ctx, dst, filepath.Join(o.OutputDir, c.ID())); err != nil {
			return Info{}, fmt.Errorf("%s: %w", c, err)
		}
	}
	return info, nil
}

// Verify builds c again with an empty build cache and compares each
// binary's sha256 with the cached build's; it returns the binaries that
// differ (none: the build is reproducible).
func Verify(ctx context.Context, c Component, o Options) (cached, again Info, differ []string, err error) {
	o = o.withDefaults()
	if cached, err = ReadInfo(CachedDir(o.CacheDir, c)); err != nil {
		return Info{}, Info{}, nil, fmt.Errorf("%s: no cached build to compare with (build it first): %w", c, err)
	}
	gocache, err := os.MkdirTemp(filepath.Join(o.CacheDir, "gocache"), ".verify-"+c.ID()+"-")
	if err != nil {
		return Info{}, Info{}, nil, err
	}
	defer os.RemoveAll(gocache)
	fmt.Fprintf(o.Log, "[%s] rebuilding with an empty build cache %s\n", c, gocache)
	tmp, err := buildInto(ctx, c, o, gocache)
	if tmp != "" {
		defer os.RemoveAll(tmp)
	}
	if err != nil {
		return Info{}, Info{}, nil, fmt.Errorf("%s: %w", c, err)
	}
	if again, err = ReadInfo(tmp); err != nil {
		return Info{}, Info{}, nil, err
	}
	return cached, again, Differ(cached, again), nil
}

func (o Options) withDefaults() Options {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.PatchesDir == "" {
		o.PatchesDir = PatchesDir
	}
	return o
}

// Differ names the binaries whose sha256 differs between two builds (or
// that only one has).
func Differ(a, b Info) []string {
	sums := map[string]string{}
	for _, x := range a.Binaries {
		sums[x.Name] = x.SHA256
	}
	var out []string
	for _, x := range b.Binaries {
		if s, ok := sums[x.Name]; !ok || s != x.SHA256 {
			out = append(out, x.Name)
		}
		delete(sums, x.Name)
	}
	for n := range sums {
		out = append(out, n)
	}
	return out
}

// ReadInfo reads a finished build's BUILDINFO.json.
func ReadInfo(dir string) (Info, error) {
	var info Info
	b, err := os.ReadFile(filepath.Join(dir, InfoFile))
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return info, fmt.Errorf("%s: %w", filepath.Join(dir, InfoFile), err)
	}
	return info, nil
}

// buildInto downloads the module and the toolchain and builds every binary
// into a new temporary directory under the cache, which it returns (the
// caller removes it) with BUILDINFO.json written last. A patched
// component is built from a copy of its module's source with its series
// applied.
func buildInto(ctx context.Context, c Component, o Options, gocache string) (string, error) {
	m, err := modfetch.Download(ctx, o.CacheDir, c.Module, c.Version, c.Sum)
	if err != nil {
		return "", err
	}
	gomod, err := os.ReadFile(m.GoMod)
	if err != nil {
		return "", err
	}
	want, err := GoToolchain(gomod)
	if err != nil {
		return "", fmt.Errorf("%s@%s: %w", c.Module, c.Version, err)
	}
	if want != c.Go {
		return "", fmt.Errorf("%s@%s's go.mod asks for go%s, pkg/runtimebuild records go%s: update the spec", c.Module, c.Version, want, c.Go)
	}
	goroot, err := toolchain.Ensure(ctx, o.CacheDir, c.Go, c.GoSum, os.Getenv(toolchain.UserGOROOTEnv(c.Go)), o.Log)
	if err != nil {
		return "", err
	}
	parent := filepath.Join(o.CacheDir, "runtime")
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(parent, "."+c.ID()+".tmp-")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp makes 0700
		return tmp, err
	}
	if err := writeScratchModule(filepath.Join(tmp, "src"), c); err != nil {
		return tmp, err
	}
	info := Info{Component: c.String(), Module: c.Module + "@" + c.Version, Sum: c.Sum, Go: c.Go, LDFlags: c.LDFlags(), Note: c.Note, BuiltAt: time.Now().UTC()}
	if c.Patches != "" {
		if info.Patches, err = PatchedSource(ctx, o.CacheDir, o.PatchesDir, c, filepath.Join(tmp, "src", patchedModuleDir)); err != nil {
			return tmp, err
		}
		fmt.Fprintf(o.Log, "[%s] applied %d patches of %s\n", c, len(info.Patches), filepath.Join(o.PatchesDir, c.Patches))
	}
	for _, b := range c.Binaries {
		bi, err := buildBinary(ctx, c, b, o, goroot, gocache, tmp)
		if err != nil {
			return tmp, err
		}
		info.Binaries = append(info.Binaries, bi)
	}
	if err := os.RemoveAll(filepath.Join(tmp, "src")); err != nil {
		return tmp, err
	}
	data, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return tmp, err
	}
	return tmp, os.WriteFile(filepath.Join(tmp, InfoFile), append(data, '\n'), 0o644)
}

// ScratchGoMod is the main module a component is built in (as
// deploy/system-upgrade builds its controller): the component required at
// its version, the go line of its toolchain. The component's own go.mod
// has no replace directives (checked when a spec is added), so the module
// graph is the component's own. A patched component's module is replaced
// by its patched copy beside go.mod (the same go.mod, so the same graph).
func ScratchGoMod(c Component) string {
	s := fmt.Sprintf("module kubelet-compat.local/runtime-build\n\ngo %s\n\nrequire %s %s\n", c.Go, c.Module, c.Version)
	if c.Patches != "" {
		s += fmt.Sprintf("\nreplace %s => ./%s\n", c.Module, patchedModuleDir)
	}
	return s
}

func writeScratchModule(dir string, c Component) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "go.mod"), []byte(ScratchGoMod(c)), 0o644)
}

// BuildEnv is the environment of `go build` for b beyond the toolchain's.
func BuildEnv(b Binary) []string {
	cgo := "0"
	if b.CGO {
		cgo = "1"
	}
	return []string{"CGO_ENABLED=" + cgo, "GOOS=linux", "GOARCH=amd64"}
}

func buildBinary(ctx context.Context, c Component, b Binary, o Options, goroot, gocache, dir string) (BinaryInfo, error) {
	out := filepath.Join(dir, b.BinaryName())
	cmd := exec.Command(filepath.Join(goroot, "bin", "go"), c.BuildArgs(b, out)...)
	cmd.Dir = filepath.Join(dir, "src")
	cmd.Env = append(append(toolchain.Env(goroot, c.Go, o.CacheDir), BuildEnv(b)...), "GOCACHE="+gocache)
	cmd.Log = o.Log
	start := time.Now()
	if err := cmd.Run(ctx); err != nil {
		return BinaryInfo{}, fmt.Errorf("building %s: %w", b.BinaryName(), err)
	}
	bi := BinaryInfo{Name: b.BinaryName(), Package: c.ImportPath(b), CGO: b.CGO, Tags: strings.Join(b.Tags, " "), Seconds: time.Since(start).Seconds()}
	var err error
	if bi.Size, bi.SHA256, err = fileSum(out); err != nil {
		return bi, err
	}
	if bi.Version, err = versionOutput(ctx, out, b); err != nil {
		return bi, err
	}
	if !strings.Contains(bi.Version, c.Release()) {
		return bi, fmt.Errorf("%s says %q, which does not name %s", b.BinaryName(), bi.Version, c.Release())
	}
	fmt.Fprintf(o.Log, "[%s] %s: %.0fs, %d bytes, sha256 %s, %q\n", c, bi.Name, bi.Seconds, bi.Size, bi.SHA256, bi.Version)
	return bi, nil
}

// versionOutput runs the built binary to print its version (stdout and
// stderr: the CNI plugins write it to stderr).
func versionOutput(ctx context.Context, bin string, b Binary) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := osexec.CommandContext(ctx, bin, b.VersionArgs...)
	cmd.Env = append([]string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}, b.VersionEnv...)
	out, err := cmd.CombinedOutput()
	s := strings.TrimSpace(string(out))
	var exitErr *osexec.ExitError
	if err != nil && !(errors.As(err, &exitErr) && s != "") {
		return s, fmt.Errorf("%s %s: %w", bin, strings.Join(b.VersionArgs, " "), err)
	}
	return s, nil
}

func fileSum(path string) (int64, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return 0, "", err
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// replaceDir puts the finished tmp at dst.
func replaceDir(tmp, dst string) error {
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// copyOut copies the cached build to dst through a temporary sibling.
func copyOut(ctx context.Context, src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := exec.Command("cp", "-a", src+"/.", tmp+"/").Run(ctx); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	return replaceDir(tmp, dst)
}
