// Package harness builds Kubernetes binaries for one matrix row: with the
// row's Go toolchain, from its pristine source with (or without) the
// kubelet-compat patch series, version-stamped as upstream's
// hack/lib/version.sh does. Every step prints progress, logs to a file named
// in its error, and is skipped when its inputs did not change.
package harness

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/cachelock"
	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
	"github.com/kubelet-compat/kubelet-compat/pkg/matrix"
	"github.com/kubelet-compat/kubelet-compat/pkg/series"
	"github.com/kubelet-compat/kubelet-compat/pkg/source"
	"github.com/kubelet-compat/kubelet-compat/pkg/toolchain"
)

// CompatBuild is the semver build metadata of patched builds, e.g.
// v1.21.14+compat.1. Bump it when the series changes what the kubelet does.
const CompatBuild = "compat.1"

// Binaries maps a binary name to its main package in the tree.
var Binaries = map[string]string{
	"kubelet":                 "./cmd/kubelet",
	"kubeadm":                 "./cmd/kubeadm",
	"kubectl":                 "./cmd/kubectl",
	"kube-apiserver":          "./cmd/kube-apiserver",
	"kube-controller-manager": "./cmd/kube-controller-manager",
	"kube-scheduler":          "./cmd/kube-scheduler",
	"kube-proxy":              "./cmd/kube-proxy",
}

// DefaultBinaries are what `make` builds.
var DefaultBinaries = []string{"kubelet", "kubeadm", "kubectl"}

// Options configure a Harness.
type Options struct {
	// CacheDir holds toolchains, sources, module and build caches, work trees.
	CacheDir string
	// OutputDir receives <version>/ (patched) and <version>-unpatched/.
	OutputDir string
	// PatchesDir holds v<minor>/series and the patches.
	PatchesDir string
	// Patched applies the patch series; false builds upstream as released.
	Patched bool
	// SourceDateEpoch stamps buildDate; 0 derives it from the inputs.
	SourceDateEpoch int64
	// GitCommit stamps gitCommit ($KUBE_GIT_COMMIT; module zips carry no
	// commit, so empty by default).
	GitCommit string
	// UserGOROOTs maps a Go version to a local GOROOT to use instead of
	// downloading it ($KC_GOROOT_<X>).
	UserGOROOTs map[string]string
	// UserSources maps a Kubernetes version to a user-supplied tree
	// ($KUBE_SRC_<X>, $KUBE_SRC).
	UserSources map[string]string
	// Progress receives one line per step.
	Progress io.Writer
}

// Harness builds and tests matrix rows.
type Harness struct {
	opts Options
}

// New returns a Harness.
func New(opts Options) *Harness {
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	// Steps run inside the work tree: every path handed to them is absolute.
	for _, p := range []*string{&opts.OutputDir, &opts.PatchesDir, &opts.CacheDir} {
		if abs, err := filepath.Abs(*p); err == nil && *p != "" {
			*p = abs
		}
	}
	return &Harness{opts: opts}
}

// Tree is a prepared work tree of one row.
type Tree struct {
	Row matrix.Row
	// Dir is the writable work tree.
	Dir string
	// GOROOT of the row's toolchain.
	GOROOT string
	// Fingerprint identifies the tree's inputs: source and patches.
	Fingerprint string
	// Version is what the binaries report, e.g. v1.21.14+compat.1.
	Version string
	h       *Harness
	logDir  string
	patches []string
}

func (h *Harness) flavor() string {
	if h.opts.Patched {
		return "patched"
	}
	return "unpatched"
}

// OutputDir is where the binaries of row go.
func (h *Harness) OutputDir(row matrix.Row) string {
	if h.opts.Patched {
		return filepath.Join(h.opts.OutputDir, row.Kubernetes)
	}
	return filepath.Join(h.opts.OutputDir, row.Kubernetes+"-unpatched")
}

func (h *Harness) logf(row matrix.Row, format string, args ...interface{}) {
	fmt.Fprintf(h.opts.Progress, "[%s] "+format+"\n", append([]interface{}{row.Kubernetes}, args...)...)
}

// Lock serialises harness runs on the same row and flavor (work tree and
// output dir), across processes. Call the returned func when done.
func (h *Harness) Lock(ctx context.Context, row matrix.Row) (func(), error) {
	path := filepath.Join(h.opts.CacheDir, "locks", "work-"+row.Kubernetes+"-"+h.flavor()+".lock")
	unlock, err := cachelock.Lock(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("[%s] locking the %s work tree: %w", row.Kubernetes, h.flavor(), err)
	}
	return unlock, nil
}

// Prepare makes the row's work tree: toolchain, pristine source, a writable
// copy with the series applied, modules downloaded. An unchanged tree is
// reused as it is.
func (h *Harness) Prepare(ctx context.Context, row matrix.Row) (*Tree, error) {
	goroot, err := toolchain.Ensure(ctx, h.opts.CacheDir, row.Go, row.ToolchainSum, h.opts.UserGOROOTs[row.Go], h.opts.Progress)
	if err != nil {
		return nil, err
	}
	pristine, err := source.Ensure(ctx, h.opts.CacheDir, row, h.opts.UserSources[row.Kubernetes], h.opts.Progress)
	if err != nil {
		return nil, err
	}
	t := &Tree{
		Row:     row,
		GOROOT:  goroot,
		Dir:     filepath.Join(h.opts.CacheDir, "work", row.Kubernetes, h.flavor()),
		Version: row.Tag(),
		h:       h,
		logDir:  filepath.Join(h.opts.OutputDir, "logs", row.Kubernetes+"-"+h.flavor()),
	}
	fp := sha256.New()
	fmt.Fprintf(fp, "source %s\n", pristineIdentity(pristine, row))
	if h.opts.Patched {
		t.Version += "+" + CompatBuild
		if t.patches, err = h.series(row); err != nil {
			return nil, err
		}
		for _, p := range t.patches {
			data, err := os.ReadFile(p)
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(fp, "patch %s %x\n", filepath.Base(p), sha256.Sum256(data))
		}
	}
	t.Fingerprint = hex.EncodeToString(fp.Sum(nil))
	if err := os.MkdirAll(t.logDir, 0o755); err != nil {
		return nil, err
	}

	marker := filepath.Join(t.Dir, ".kc-worktree")
	if got, err := os.ReadFile(marker); err == nil && string(got) == t.Fingerprint {
		h.logf(row, "work tree up to date: %s", t.Dir)
		return t, nil
	}
	start := time.Now()
	h.logf(row, "preparing %s work tree...", h.flavor())
	os.Remove(marker)
	if err := source.WorkTree(ctx, pristine, t.Dir); err != nil {
		return nil, err
	}
	for _, p := range t.patches {
		if err := t.run(ctx, "patch-"+strings.TrimSuffix(filepath.Base(p), ".patch"), "patch", "-p1", "--forward", "--batch", "--no-backup-if-mismatch", "-i", p); err != nil {
			return nil, fmt.Errorf("%w (the series in %s does not apply to this source: run hack/verify-patches, or check KUBE_SRC)", err, filepath.Dir(p))
		}
	}
	if len(t.patches) > 0 {
		h.logf(row, "applied %d patches", len(t.patches))
	}
	if err := source.DownloadModules(ctx, h.opts.CacheDir, row, goroot, t.Dir, h.opts.Progress); err != nil {
		return nil, err
	}
	// Written last: a tree without it is rebuilt from scratch.
	if err := os.WriteFile(marker, []byte(t.Fingerprint), 0o644); err != nil {
		return nil, err
	}
	h.logf(row, "work tree ready in %s: %s", time.Since(start).Round(time.Second), t.Dir)
	return t, nil
}

// pristineIdentity names the source: the module sum, or a user tree's path.
func pristineIdentity(pristine string, row matrix.Row) string {
	if data, err := os.ReadFile(filepath.Join(pristine, ".kc-source.json")); err == nil {
		return strings.TrimSpace(string(data))
	}
	return row.SourceSum + " " + pristine
}

// series returns the absolute paths of the row's patches, in order.
func (h *Harness) series(row matrix.Row) ([]string, error) {
	dir, err := filepath.Abs(filepath.Join(h.opts.PatchesDir, "v"+row.Minor()))
	if err != nil {
		return nil, err
	}
	names, err := series.Read(dir)
	if err != nil {
		return nil, fmt.Errorf("[%s] no patch series for %s: %w", row.Kubernetes, row.Minor(), err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("[%s] %s/%s lists no patches", row.Kubernetes, dir, series.File)
	}
	out := make([]string, len(names))
	for i, name := range names {
		out[i] = filepath.Join(dir, name)
	}
	return out, nil
}

// run runs one step in the tree with the row's toolchain, logging to a file
// that the error names.
func (t *Tree) run(ctx context.Context, step string, name string, args ...string) error {
	logPath := filepath.Join(t.logDir, step+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := &exec.Cmd{Name: name, Args: args, Dir: t.Dir, Log: logFile,
		Env: append(toolchain.Env(t.GOROOT, t.Row.Go, t.h.opts.CacheDir), "CGO_ENABLED=0")}
	if err := cmd.Run(ctx); err != nil {
		return fmt.Errorf("[%s] step %s failed: see %s", t.Row.Kubernetes, step, logPath)
	}
	return nil
}

func (t *Tree) goBin() string { return filepath.Join(t.GOROOT, "bin", "go") }

// Build builds the named binaries into the row's output dir, skipping those
// whose inputs did not change.
func (t *Tree) Build(ctx context.Context, binaries []string) error {
	out := t.h.OutputDir(t.Row)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, bin := range binaries {
		if openAPIBinaries[bin] {
			if err := t.GenerateOpenAPI(ctx); err != nil {
				return err
			}
			break
		}
	}
	ldflags := t.ldflags()
	for _, bin := range binaries {
		pkg, ok := Binaries[bin]
		if !ok {
			return fmt.Errorf("unknown binary %q (known: %s)", bin, strings.Join(knownBinaries(), ", "))
		}
		dst := filepath.Join(out, bin)
		inputs := fmt.Sprintf("tree %s\ngo %s\nldflags %s\npackage %s\n", t.Fingerprint, t.Row.Go, ldflags, pkg)
		stamp := filepath.Join(out, "."+bin+".inputs")
		if got, err := os.ReadFile(stamp); err == nil && string(got) == inputs {
			if _, err := os.Stat(dst); err == nil {
				t.h.logf(t.Row, "%s up to date: %s", bin, dst)
				continue
			}
		}
		start := time.Now()
		t.h.logf(t.Row, "building %s with go%s...", bin, t.Row.Go)
		os.Remove(stamp)
		tmp := dst + ".tmp"
		if err := t.run(ctx, "build-"+bin, t.goBin(), "build", "-trimpath", "-o", tmp, "-ldflags", ldflags, pkg); err != nil {
			os.Remove(tmp)
			return err
		}
		if err := os.Rename(tmp, dst); err != nil {
			return err
		}
		if err := os.WriteFile(stamp, []byte(inputs), 0o644); err != nil {
			return err
		}
		t.h.logf(t.Row, "built %s in %s", bin, time.Since(start).Round(time.Second))
	}
	return nil
}

func knownBinaries() []string {
	var names []string
	for n := range Binaries {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ldflags stamps versions as hack/lib/version.sh does, for both version
// packages, and strips symbols as upstream's release builds do.
func (t *Tree) ldflags() string {
	parts := strings.SplitN(t.Row.Kubernetes, ".", 3)
	date := time.Unix(t.h.sourceDateEpoch(t), 0).UTC().Format("2006-01-02T15:04:05Z")
	vars := []struct{ key, value string }{
		{"gitVersion", t.Version},
		{"gitMajor", parts[0]},
		{"gitMinor", parts[1]},
		{"gitCommit", t.h.opts.GitCommit},
		{"gitTreeState", "clean"},
		{"buildDate", date},
	}
	var flags []string
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		for _, v := range vars {
			flags = append(flags, fmt.Sprintf("-X '%s.%s=%s'", pkg, v.key, v.value))
		}
	}
	return strings.Join(append(flags, "-s", "-w"), " ")
}

// sourceDateEpoch is SOURCE_DATE_EPOCH when given; otherwise a date that
// moves only with the inputs, so that unchanged inputs are not rebuilt and
// two clones build the same bytes: the time of the last commit that changed
// the series (patched) or the matrix (unpatched).
func (h *Harness) sourceDateEpoch(t *Tree) int64 {
	if h.opts.SourceDateEpoch > 0 {
		return h.opts.SourceDateEpoch
	}
	path := filepath.Join(h.opts.PatchesDir, "v"+t.Row.Minor())
	if !h.opts.Patched {
		path = filepath.Join("pkg", "matrix", "matrix.json")
	}
	out, err := exec.Command("git", "log", "-1", "--format=%ct", "--", path).Output(context.Background())
	if n, perr := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64); err == nil && perr == nil && n > 0 {
		return n
	}
	return fallbackSourceDateEpoch
}

// fallbackSourceDateEpoch (2020-01-01) is used outside a git checkout.
const fallbackSourceDateEpoch = 1577836800
