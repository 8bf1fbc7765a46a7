package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
	"github.com/kubelet-compat/kubelet-compat/pkg/series"
	"github.com/kubelet-compat/kubelet-compat/pkg/source"
	"github.com/kubelet-compat/kubelet-compat/pkg/toolchain"
)

// CheckUpstream runs the tree's own checks on what the series adds or
// changes, as upstream CI would on a cherry-pick:
//
//   - hack/verify-boilerplate.sh: the tree's hack/boilerplate/boilerplate.py
//     on the changed files (python3; the whole-tree walk adds nothing);
//   - hack/verify-bazel.sh, in the Bazel-managed trees (1.18-1.20): the
//     tree's gazelle and kazel on a copy of the patched tree, which must not
//     change any BUILD file of the series' packages (nor add one).
//
// Both run offline once the tools are in the cache.
func (t *Tree) CheckUpstream(ctx context.Context) error {
	if len(t.patches) == 0 {
		return nil
	}
	start := time.Now()
	changed, err := series.TouchedFiles(t.patches)
	if err != nil {
		return err
	}
	// Both run, so that one run reports every problem.
	errs := []error{t.checkBoilerplate(ctx, changed)}
	checks := "verify-boilerplate"
	if t.bazelManaged() {
		errs = append(errs, t.checkBazel(ctx, changed))
		checks += ", verify-bazel"
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	t.h.logf(t.Row, "upstream checks (%s) passed for the series in %s", checks, time.Since(start).Round(time.Millisecond))
	return nil
}

// checkBoilerplate runs the tree's boilerplate.py on the changed files; it
// prints the files whose header is wrong.
func (t *Tree) checkBoilerplate(ctx context.Context, changed []string) error {
	checker := filepath.Join(t.Dir, "hack", "boilerplate", "boilerplate.py")
	if _, err := os.Stat(checker); err != nil {
		return fmt.Errorf("[%s] the tree has no boilerplate checker: %w", t.Row.Kubernetes, err)
	}
	var files []string
	for _, f := range changed {
		if _, err := os.Stat(filepath.Join(t.Dir, f)); err == nil {
			files = append(files, filepath.Join(t.Dir, f))
		}
	}
	logPath := filepath.Join(t.logDir, "verify-boilerplate.log")
	log, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := &exec.Cmd{Name: "python3", Args: append([]string{checker, "--rootdir", t.Dir, "-v"}, files...), Dir: t.Dir, Log: log}
	out, err := cmd.Output(ctx)
	if err != nil {
		return fmt.Errorf("[%s] step verify-boilerplate failed: see %s", t.Row.Kubernetes, logPath)
	}
	if bad := strings.Fields(string(out)); len(bad) > 0 {
		for i := range bad {
			bad[i] = strings.TrimPrefix(bad[i], t.Dir+"/")
		}
		return fmt.Errorf("[%s] verify-boilerplate: the header of %s does not match hack/boilerplate (run hack/update-patches; details in %s)", t.Row.Kubernetes, strings.Join(bad, ", "), logPath)
	}
	return nil
}

// bazelManaged tells a tree that maintains BUILD files (hack/verify-bazel.sh
// runs gazelle and kazel) from one that removed Bazel (1.21 on).
func (t *Tree) bazelManaged() bool {
	for _, f := range []string{"hack/verify-bazel.sh", "build/root/BUILD.root", "pkg/kubelet/BUILD"} {
		if _, err := os.Stat(filepath.Join(t.Dir, f)); err != nil {
			return false
		}
	}
	return true
}

// Bazel tool versions of the oldest Bazel-managed tree (1.18's go.mod), for
// trees that pin them in hack/tools/go.mod, which their source module lacks.
var defaultBazelTools = map[string]string{
	"github.com/bazelbuild/bazel-gazelle": "v0.19.1-0.20191105222053-70208cbdc798",
	"github.com/bazelbuild/buildtools":    "v0.0.0-20190917191645-69366ca98f89",
	"k8s.io/repo-infra":                   "v0.0.1-alpha.1",
}

// bazelTools installs gazelle and kazel at the versions the tree pins, with
// the tree's Go, into the cache, and returns their directory.
func (t *Tree) bazelTools(ctx context.Context) (string, error) {
	gomod, err := os.ReadFile(filepath.Join(t.Dir, "go.mod"))
	if err != nil {
		return "", err
	}
	var require strings.Builder
	var key []string
	for _, mod := range []string{"github.com/bazelbuild/bazel-gazelle", "github.com/bazelbuild/buildtools", "k8s.io/repo-infra"} {
		v := defaultBazelTools[mod]
		if m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(mod) + ` (v\S+)`).FindSubmatch(gomod); m != nil {
			v = string(m[1])
		}
		fmt.Fprintf(&require, "\t%s %s\n", mod, v)
		key = append(key, path.Base(mod)+"@"+v)
	}
	dir := filepath.Join(t.h.opts.CacheDir, "tools", "bazel", "go"+t.Row.Go+"-"+strings.Join(key, "-"))
	bin := filepath.Join(dir, "bin")
	if _, err := os.Stat(filepath.Join(bin, "kazel")); err == nil {
		return bin, nil
	}
	t.h.logf(t.Row, "installing gazelle and kazel (%s) with go%s...", strings.Join(key, ", "), t.Row.Go)
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module kc-bazel-tools\n\ngo 1.13\n\nrequire (\n"+require.String()+")\n"), 0o644); err != nil {
		return "", err
	}
	logPath := filepath.Join(t.logDir, "install-bazel-tools.log")
	log, err := os.Create(logPath)
	if err != nil {
		return "", err
	}
	defer log.Close()
	tmp := bin + ".tmp"
	os.RemoveAll(tmp)
	cmd := &exec.Cmd{Name: t.goBin(), Dir: src, Log: log,
		Args: []string{"install", "github.com/bazelbuild/bazel-gazelle/cmd/gazelle", "k8s.io/repo-infra/cmd/kazel"},
		Env:  append(toolchain.Env(t.GOROOT, t.Row.Go, t.h.opts.CacheDir), "GOBIN="+tmp, "CGO_ENABLED=0")}
	if err := cmd.Run(ctx); err != nil {
		return "", fmt.Errorf("[%s] installing gazelle and kazel failed: see %s", t.Row.Kubernetes, logPath)
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", err
	}
	return bin, nil
}

// checkBazel runs what hack/update-bazel.sh runs (gazelle, then kazel) on a
// copy of the patched tree, limited to the series' packages and their
// parents, and fails when it would change or add a BUILD file there.
//
// The tree is a source module: it has neither vendor/ nor staging/src, so
// gazelle is told that the staging repositories' packages live under
// //staging/src (what it finds by indexing a git checkout), and runs on the
// series' directories only. update-bazel.sh's buildozer steps touch vendor/
// and test/integration only.
func (t *Tree) checkBazel(ctx context.Context, changed []string) error {
	bin, err := t.bazelTools(ctx)
	if err != nil {
		return err
	}
	dirs, compare := bazelDirs(changed)
	scratch, err := os.MkdirTemp("", "kc-verify-bazel-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	root := filepath.Join(scratch, "kubernetes")
	if err := exec.Command("cp", "-a", t.Dir, root).Run(ctx); err != nil {
		return err
	}
	// Upstream's checkout has these as symlinks into build/root.
	for dst, src := range map[string]string{"BUILD.bazel": "BUILD.root", ".kazelcfg.json": ".kazelcfg.json", "WORKSPACE": "WORKSPACE"} {
		data, err := os.ReadFile(filepath.Join(root, "build", "root", src))
		if err != nil {
			return err
		}
		if dst == "BUILD.bazel" {
			resolves, err := stagingResolves(root, dirs)
			if err != nil {
				return err
			}
			data = append(data, resolves...)
		}
		if err := os.WriteFile(filepath.Join(root, dst), data, 0o644); err != nil {
			return err
		}
	}
	logPath := filepath.Join(t.logDir, "verify-bazel.log")
	log, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer log.Close()
	gazelle := &exec.Cmd{Name: filepath.Join(bin, "gazelle"), Dir: root, Log: log,
		Args: append([]string{"fix", "-external=vendored", "-mode=fix", "-repo_root", root, "-r=false"}, dirs...)}
	kazel := &exec.Cmd{Name: filepath.Join(bin, "kazel"), Dir: root, Log: log, Args: []string{"-root", root}}
	for _, c := range []*exec.Cmd{gazelle, kazel} {
		if err := c.Run(ctx); err != nil {
			return fmt.Errorf("[%s] step verify-bazel failed: see %s", t.Row.Kubernetes, logPath)
		}
	}
	var stale []string
	for _, d := range compare {
		rel := filepath.Join(d, "BUILD")
		have, herr := os.ReadFile(filepath.Join(t.Dir, rel))
		want, werr := os.ReadFile(filepath.Join(root, rel))
		if os.IsNotExist(herr) && os.IsNotExist(werr) {
			continue
		}
		if herr != nil && !os.IsNotExist(herr) {
			return herr
		}
		if !bytes.Equal(have, want) {
			stale = append(stale, rel)
			diff, _ := exec.Command("diff", "-uN", filepath.Join(t.Dir, rel), filepath.Join(root, rel)).Output(ctx)
			fmt.Fprintf(log, "%s differs from what hack/update-bazel.sh writes:\n%s\n", rel, diff)
		}
	}
	if len(stale) > 0 {
		return fmt.Errorf("[%s] verify-bazel: hack/update-bazel.sh would change %s (diff in %s)", t.Row.Kubernetes, strings.Join(stale, ", "), logPath)
	}
	return nil
}

// bazelDirs returns the directories gazelle visits (those holding a Go or
// BUILD file of the series) and those whose BUILD files are compared (these
// and their parents, whose all-srcs kazel maintains).
func bazelDirs(changed []string) (visit, compare []string) {
	seen := map[string]bool{}
	for _, f := range changed {
		base := path.Base(f)
		if !strings.HasSuffix(base, ".go") && base != "BUILD" && base != "BUILD.bazel" {
			continue
		}
		if d := path.Dir(f); !seen[d] {
			seen[d] = true
			visit = append(visit, d)
		}
	}
	sort.Strings(visit)
	all := map[string]bool{}
	for _, d := range visit {
		all[d] = true
		if p := path.Dir(d); p != "." {
			all[p] = true
		}
	}
	for d := range all {
		compare = append(compare, d)
	}
	sort.Strings(compare)
	return visit, compare
}

var importLine = regexp.MustCompile(`"(k8s\.io/[^"]+)"`)

// stagingResolves returns gazelle resolve directives mapping the staging
// packages that the Go files in dirs import to their //staging/src labels.
func stagingResolves(root string, dirs []string) ([]byte, error) {
	staging, err := source.StagingRepos(root)
	if err != nil {
		return nil, err
	}
	imports := map[string]bool{}
	for _, d := range dirs {
		files, _ := filepath.Glob(filepath.Join(root, d, "*.go"))
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			for _, m := range importLine.FindAllSubmatch(data, -1) {
				imp := string(m[1])
				if staging[strings.Join(strings.SplitN(imp, "/", 3)[:2], "/")] {
					imports[imp] = true
				}
			}
		}
	}
	var sorted []string
	for imp := range imports {
		sorted = append(sorted, imp)
	}
	sort.Strings(sorted)
	var b bytes.Buffer
	b.WriteString("\n# Added by kubelet-compat's verify-trees: staging is not part of the source module.\n")
	for _, imp := range sorted {
		fmt.Fprintf(&b, "# gazelle:resolve go %s //staging/src/%s:go_default_library\n", imp, imp)
	}
	return b.Bytes(), nil
}
