// Package source provides Kubernetes source trees for the harness.
//
// By default a tree is assembled from the Go module proxy: the
// k8s.io/kubernetes module zip (sum checked against the matrix) lacks
// staging/ and vendor/, so its go.mod is rewritten to use the published
// k8s.io/* staging modules, stub modules stand in for modules the proxy does
// not serve, and vendor/ (only a modules.txt, which would switch new go
// commands to vendor mode) and go.work are removed. The result is a pristine,
// read-only-by-convention tree under <cacheDir>/src/<version>.
//
// A real tree can be supplied instead with KUBE_SRC_<version with dots as
// underscores> (e.g. KUBE_SRC_1_18_19) or KUBE_SRC, naming a git checkout or
// a tarball; it is copied as is (staging/ and vendor/ are real) to
// <cacheDir>/src/<version>+user. KUBE_SRC applies to every version asked for,
// so use it with a single version.
package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/cachelock"
	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
	"github.com/kubelet-compat/kubelet-compat/pkg/matrix"
	"github.com/kubelet-compat/kubelet-compat/pkg/modfetch"
	"github.com/kubelet-compat/kubelet-compat/pkg/source/shim"
	"github.com/kubelet-compat/kubelet-compat/pkg/toolchain"
)

// markerFile, written last into a pristine tree, says what it was made from.
const markerFile = ".kc-source.json"

// assemblyVersion changes whenever Ensure starts assembling trees differently,
// so older cached trees are rebuilt.
const assemblyVersion = 2

// download is replaced in tests.
var download = func(ctx context.Context, cacheDir string, row matrix.Row) (modfetch.Module, error) {
	return modfetch.Download(ctx, cacheDir, "k8s.io/kubernetes", row.Tag(), row.SourceSum)
}

// UserSourceEnv is the per-version variable naming a user-supplied tree.
func UserSourceEnv(row matrix.Row) string {
	return "KUBE_SRC_" + strings.ReplaceAll(row.Kubernetes, ".", "_")
}

// UserSource returns the user-supplied tree for row named by the
// environment (getenv is os.Getenv in main packages): KUBE_SRC_<ver>, else
// KUBE_SRC, else "".
func UserSource(row matrix.Row, getenv func(string) string) string {
	if s := getenv(UserSourceEnv(row)); s != "" {
		return s
	}
	return getenv("KUBE_SRC")
}

// Ensure returns the pristine tree of row, assembling it if needed; userSrc
// (see UserSource), when set, is a git checkout or tarball to use instead.
func Ensure(ctx context.Context, cacheDir string, row matrix.Row, userSrc string, progress io.Writer) (string, error) {
	if progress == nil {
		progress = io.Discard
	}
	if src := userSrc; src != "" {
		dir, err := fromUser(ctx, cacheDir, row, src, progress)
		if err != nil {
			return "", fmt.Errorf("[%s] source from %s: %w", row.Kubernetes, src, err)
		}
		return dir, nil
	}

	// Other harness processes may be assembling the same tree.
	unlock, err := cachelock.Lock(ctx, filepath.Join(cacheDir, "locks", "src-"+row.Kubernetes+".lock"))
	if err != nil {
		return "", fmt.Errorf("[%s] source: %w", row.Kubernetes, err)
	}
	defer unlock()

	dst := filepath.Join(cacheDir, "src", row.Kubernetes)
	want := fingerprint(row)
	if got, err := os.ReadFile(filepath.Join(dst, markerFile)); err == nil && string(got) == want {
		return dst, nil
	}
	start := time.Now()
	fmt.Fprintf(progress, "[%s] fetching k8s.io/kubernetes@%s...\n", row.Kubernetes, row.Tag())
	m, err := download(ctx, cacheDir, row)
	if err != nil {
		return "", fmt.Errorf("[%s] source: %w", row.Kubernetes, err)
	}
	err = intoPlace(ctx, dst, func(tmp string) error {
		if err := copyTree(ctx, m.Dir, tmp); err != nil {
			return err
		}
		if err := Assemble(tmp, row); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(tmp, markerFile), []byte(want), 0o644)
	})
	if err != nil {
		return "", fmt.Errorf("[%s] assembling source tree: %w", row.Kubernetes, err)
	}
	fmt.Fprintf(progress, "[%s] source tree ready in %s: %s\n", row.Kubernetes, time.Since(start).Round(time.Second), dst)
	return dst, nil
}

// Assemble turns an extracted k8s.io/kubernetes module zip in dir into a
// buildable module tree (see the package comment).
func Assemble(dir string, row matrix.Row) error {
	for _, name := range []string{"vendor", "go.work", "go.work.sum"} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	gomodPath := filepath.Join(dir, "go.mod")
	gomod, err := os.ReadFile(gomodPath)
	if err != nil {
		return err
	}
	rewritten, err := RewriteGoMod(gomod, row)
	if err != nil {
		return fmt.Errorf("rewriting go.mod: %w", err)
	}
	if err := os.WriteFile(gomodPath, rewritten, 0o644); err != nil {
		return err
	}
	for _, stub := range row.Stubs {
		stubDir := filepath.Join(dir, filepath.FromSlash(StubPath(stub)))
		if err := os.MkdirAll(stubDir, 0o755); err != nil {
			return err
		}
		files := map[string][]byte{"go.mod": StubGoMod(stub)}
		if shimFiles, ok := shim.Files(stub); ok {
			files = shimFiles
		}
		for name, data := range files {
			path := filepath.Join(stubDir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

func fingerprint(row matrix.Row) string {
	stubs := append([]string(nil), row.Stubs...)
	sort.Strings(stubs)
	b, _ := json.Marshal(struct {
		Assembly  int               `json:"assembly"`
		Sum       string            `json:"sum"`
		Stubs     []string          `json:"stubs"`
		Overrides map[string]string `json:"overrides"`
	}{assemblyVersion, row.SourceSum, stubs, row.Overrides})
	return string(b) + "\n"
}

// fromUser copies a user-supplied checkout or tarball; it is never cached
// because its content is not pinned by a sum.
func fromUser(ctx context.Context, cacheDir string, row matrix.Row, src string, progress io.Writer) (string, error) {
	fi, err := os.Stat(src)
	if err != nil {
		return "", err
	}
	start := time.Now()
	fmt.Fprintf(progress, "[%s] copying user source %s (not checked against the matrix sum)...\n", row.Kubernetes, src)
	unlock, err := cachelock.Lock(ctx, filepath.Join(cacheDir, "locks", "src-"+row.Kubernetes+"+user.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	dst := filepath.Join(cacheDir, "src", row.Kubernetes+"+user")
	err = intoPlace(ctx, dst, func(tmp string) error {
		if fi.IsDir() {
			if err := copyTree(ctx, src, tmp); err != nil {
				return err
			}
			return os.RemoveAll(filepath.Join(tmp, ".git"))
		}
		if err := exec.Command("tar", "-xf", src, "-C", tmp).Run(ctx); err != nil {
			return err
		}
		return hoistSingleDir(tmp)
	})
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dst, "staging", "src", "k8s.io", "api")); err != nil {
		return "", fmt.Errorf("%s does not look like a Kubernetes tree (no staging/src/k8s.io/api)", src)
	}
	fmt.Fprintf(progress, "[%s] user source ready in %s: %s\n", row.Kubernetes, time.Since(start).Round(time.Second), dst)
	return dst, nil
}

// hoistSingleDir moves the content of a tarball's single top directory
// (kubernetes-1.18.19/) up into dir.
func hoistSingleDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) != 1 || !entries[0].IsDir() {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
		return nil
	}
	top := filepath.Join(dir, entries[0].Name())
	inner, err := os.ReadDir(top)
	if err != nil {
		return err
	}
	for _, e := range inner {
		if err := os.Rename(filepath.Join(top, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return os.Remove(top)
}

// WorkTree makes dst a writable copy of the pristine tree.
func WorkTree(ctx context.Context, pristine, dst string) error {
	if err := os.RemoveAll(dst); err != nil {
		return fmt.Errorf("work tree %s: %w", dst, err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("work tree %s: %w", dst, err)
	}
	if err := exec.Command("cp", "-a", pristine, dst).Run(ctx); err != nil {
		return fmt.Errorf("work tree %s: %w", dst, err)
	}
	return nil
}

// DownloadModules runs `go mod download` in tree with the row's toolchain so
// later builds need no network. The tree's go.sum lacks the replaced modules;
// the go command adds them (go1.13 by default, later ones under -mod=mod).
func DownloadModules(ctx context.Context, cacheDir string, row matrix.Row, goroot, tree string, progress io.Writer) error {
	if progress == nil {
		progress = io.Discard
	}
	start := time.Now()
	fmt.Fprintf(progress, "[%s] downloading modules with go%s...\n", row.Kubernetes, row.Go)
	cmd := exec.Command(filepath.Join(goroot, "bin", "go"), "mod", "download")
	cmd.Dir = tree
	cmd.Env = toolchain.Env(goroot, row.Go, cacheDir)
	if err := cmd.Run(ctx); err != nil {
		var ee *exec.Error
		if errors.As(err, &ee) {
			if m := refusedModule(ee.Stderr); m != "" {
				return fmt.Errorf("[%s] downloading modules: the module proxy does not serve %s: if nothing built from the tree imports it, add it to the row's stubs in pkg/matrix/matrix.json, else a served version to its overrides", row.Kubernetes, m)
			}
		}
		return fmt.Errorf("[%s] downloading modules: %w", row.Kubernetes, err)
	}
	fmt.Fprintf(progress, "[%s] downloading modules... done in %s\n", row.Kubernetes, time.Since(start).Round(time.Second))
	return nil
}

// refusedRE is the go command's line for a module the proxy refuses.
var refusedRE = regexp.MustCompile(`(?m)^go: (\S+@\S+): reading \S+: (403|404|410) `)

// refusedModule is the path@version the go command's stderr says the proxy
// refused, or "".
func refusedModule(stderr string) string {
	if m := refusedRE.FindStringSubmatch(stderr); m != nil {
		return m[1]
	}
	return ""
}

// intoPlace fills a temporary sibling of dst with fill and renames it to dst,
// so an interrupted run never leaves a tree that looks complete.
func intoPlace(ctx context.Context, dst string, fill func(tmp string) error) error {
	parent := filepath.Dir(dst)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dst)+".tmp-")
	if err != nil {
		return err
	}
	defer func() {
		// Module cache files are read-only; make them removable first.
		_ = exec.Command("chmod", "-R", "u+w", tmp).Run(context.Background())
		os.RemoveAll(tmp)
	}()
	if err := fill(tmp); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// copyTree copies src's content into the existing dir dst, writable.
func copyTree(ctx context.Context, src, dst string) error {
	if err := exec.Command("cp", "-a", src+"/.", dst+"/").Run(ctx); err != nil {
		return err
	}
	return exec.Command("chmod", "-R", "u+w", dst).Run(ctx)
}
