package harness

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
	"github.com/kubelet-compat/kubelet-compat/pkg/toolchain"
)

// openAPIBinaries import k8s.io/kubernetes/pkg/generated/openapi, which
// upstream generates at build time (`make generated_files`) and the module
// zip therefore lacks.
var openAPIBinaries = map[string]bool{
	"kube-apiserver":          true,
	"kube-controller-manager": true,
	"kube-scheduler":          true,
}

const (
	openAPIPackage = "k8s.io/kubernetes/pkg/generated/openapi"
	openAPIBase    = "zz_generated.openapi"
	// openAPIViolations is what upstream's Makefile diffs the API rule
	// report against: the same report means the same input packages.
	openAPIViolations = "api/api-rules/violation_exceptions.list"
)

// tagLine is the file filter of build/root/Makefile.generated_files
// (ALL_K8S_TAG_FILES); a file of it that mentions +k8s:openapi-gen= puts its
// directory on openapi-gen's input list.
var tagLine = regexp.MustCompile(`(?m)^// *\+k8s:`)

// openAPIGenArgs are openapi-gen's arguments for inputs, writing its
// report to report and its file under out (the gengo v2 flags from 1.30),
// and the file it writes.
func openAPIGenArgs(gengoV2 bool, inputs []string, boilerplate, report, out string) ([]string, string) {
	if gengoV2 {
		return append([]string{"--go-header-file", boilerplate,
			"--output-file", openAPIBase + ".go",
			"--output-dir", out,
			"--output-pkg", openAPIPackage,
			"--report-filename", report}, inputs...), filepath.Join(out, openAPIBase+".go")
	}
	return []string{"--logtostderr",
		"-i", strings.Join(inputs, ","),
		"-p", openAPIPackage,
		"-O", openAPIBase,
		"-h", boilerplate,
		"-r", report,
		"-o", out}, filepath.Join(out, filepath.FromSlash(openAPIPackage), openAPIBase+".go")
}

// installOpenAPI checks the API rule report against the tree's known
// violations (the input packages are upstream's), then puts the generated
// file in place (a temporary file renamed over it) and the stamp beside.
func (t *Tree) installOpenAPI(report, generated, dst, stamp, logPath string) error {
	got, err := os.ReadFile(report)
	if err != nil {
		return err
	}
	known, err := os.ReadFile(filepath.Join(t.Dir, openAPIViolations))
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	if !bytes.Equal(got, known) {
		os.WriteFile(logPath+".report", got, 0o644)
		return fmt.Errorf("the API rule report (%s.report) differs from the tree's %s: the input packages differ from upstream's", logPath, openAPIViolations)
	}
	data, err := os.ReadFile(generated)
	if err != nil {
		return err
	}
	if err := os.WriteFile(dst+".tmp", data, 0o644); err != nil {
		return err
	}
	if err := os.Rename(dst+".tmp", dst); err != nil {
		return err
	}
	return os.WriteFile(stamp, []byte(t.Fingerprint), 0o644)
}

// GenerateOpenAPI writes pkg/generated/openapi/zz_generated.openapi.go into
// the work tree as build/root/Makefile.generated_files does (KUBE target):
// the openapi-gen of the tree's own k8s.io/kube-openapi, run with the row's
// Go, over every directory of the tree and of the staging modules that
// carries a +k8s:openapi-gen= tag, except code-generator and
// sample-apiserver. The staging modules are read from the module cache (the
// module zip has no staging/). openapi-gen runs in module mode; its API rule
// report must equal the tree's known violations, as upstream requires.
// Skipped when the output was made for the same tree fingerprint.
func (t *Tree) GenerateOpenAPI(ctx context.Context) error {
	dst := filepath.Join(t.Dir, filepath.FromSlash(strings.TrimPrefix(openAPIPackage, "k8s.io/kubernetes/")), openAPIBase+".go")
	stamp := filepath.Join(t.Dir, ".kc-openapi")
	if got, err := os.ReadFile(stamp); err == nil && string(got) == t.Fingerprint {
		if _, err := os.Stat(dst); err == nil {
			t.h.logf(t.Row, "openapi up to date: %s", dst)
			return nil
		}
	}
	start := time.Now()
	t.h.logf(t.Row, "generating %s with the tree's openapi-gen...", openAPIPackage)
	os.Remove(stamp)
	logPath := filepath.Join(t.logDir, "openapi-gen.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	fail := func(err error) error {
		fmt.Fprintf(logFile, "ERROR: %v\n", err)
		return fmt.Errorf("[%s] step openapi-gen failed: %v: see %s", t.Row.Kubernetes, err, logPath)
	}
	tmp, err := os.MkdirTemp("", "kc-openapi-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	env := append(toolchain.Env(t.GOROOT, t.Row.Go, t.h.opts.CacheDir), "CGO_ENABLED=0")
	run := func(log bool, name string, args ...string) ([]byte, error) {
		cmd := &exec.Cmd{Name: name, Args: args, Dir: t.Dir, Env: env}
		if log {
			cmd.Log = logFile
		} else {
			fmt.Fprintf(logFile, "+ %s\n", cmd)
		}
		return cmd.Output(ctx)
	}

	gen := filepath.Join(tmp, "openapi-gen")
	if _, err := run(true, t.goBin(), "build", "-o", gen, "k8s.io/kube-openapi/cmd/openapi-gen"); err != nil {
		return fail(fmt.Errorf("building the tree's openapi-gen: %w", err))
	}
	listMods := func() ([]byte, error) {
		return run(false, t.goBin(), "list", "-m", "-f", "{{.Path}} {{with .Replace}}{{.Path}} {{.Version}} {{.Dir}}{{end}}", "all")
	}
	mods, err := listMods()
	if err != nil {
		return fail(fmt.Errorf("listing the tree's modules: %w", err))
	}
	// go list -m names no directory for a module it has not downloaded:
	// its tags would be missed (seen on 1.31.14, whose
	// k8s.io/kube-controller-manager no earlier build had fetched).
	if missing := t.undownloadedStaging(mods); len(missing) > 0 {
		if _, err := run(true, t.goBin(), append([]string{"mod", "download"}, missing...)...); err != nil {
			return fail(fmt.Errorf("downloading %s: %w", strings.Join(missing, " "), err))
		}
		if mods, err = listMods(); err != nil {
			return fail(fmt.Errorf("listing the tree's modules: %w", err))
		}
	}
	codegen, _ := os.ReadFile(filepath.Join(t.Dir, "hack", "update-codegen.sh"))
	// From 1.30 openapi-gen is built on gengo v2: packages as arguments,
	// one output file in an output directory, the tree's own header.
	gengoV2 := bytes.Contains(codegen, []byte("--output-pkg"))
	roots, codegenHeader := t.openAPIRoots(mods)
	boilerplate := openAPIHeader(codegen, t.Dir, codegenHeader)
	if boilerplate == "" {
		return fail(fmt.Errorf("k8s.io/code-generator %s is not in the module graph (its hack/boilerplate.go.txt heads the file)", t.Row.ModuleVersion("k8s.io/code-generator")))
	}
	inputs, err := taggedPackages(roots)
	if err != nil {
		return fail(fmt.Errorf("finding +k8s:openapi-gen tags: %w", err))
	}
	fmt.Fprintf(logFile, "%d input packages from %d roots:\n%s\n", len(inputs), len(roots), strings.Join(inputs, "\n"))

	report := filepath.Join(tmp, "violations.report")
	args, generated := openAPIGenArgs(gengoV2, inputs, boilerplate, report, filepath.Join(tmp, "out"))
	if _, err := run(true, gen, args...); err != nil {
		return fail(err)
	}
	if err := t.installOpenAPI(report, generated, dst, stamp, logPath); err != nil {
		return fail(err)
	}
	t.h.logf(t.Row, "generated openapi from %d packages in %s", len(inputs), time.Since(start).Round(time.Second))
	return nil
}

// openAPIHeader is the header file upstream's openapi-gen run used: until
// 1.25 build/root/Makefile.generated_files passed code-generator's
// hack/boilerplate.go.txt (codegenHeader); from 1.26 hack/update-codegen.sh
// runs openapi-gen with the tree's own boilerplate.generatego.txt (and the
// proxy's code-generator modules of those minors carry no hack/ directory).
func openAPIHeader(updateCodegen []byte, treeDir, codegenHeader string) string {
	if bytes.Contains(updateCodegen, []byte("openapi-gen")) {
		return filepath.Join(treeDir, "hack", "boilerplate", "boilerplate.generatego.txt")
	}
	return codegenHeader
}

// openAPIRoots parses `go list -m -f '{{.Path}} {{with .Replace}}{{.Path}}
// {{.Version}} {{.Dir}}{{end}}' all` into the directories to scan, by import
// path prefix: the tree itself and every staging module (replaced by the
// published module at the row's staging version or override), minus
// code-generator and sample-apiserver as upstream's KUBE target. It also
// returns code-generator's hack/boilerplate.go.txt, upstream's header file.
func (t *Tree) openAPIRoots(mods []byte) (map[string]string, string) {
	roots := map[string]string{"k8s.io/kubernetes": t.Dir}
	boilerplate := ""
	sc := bufio.NewScanner(bytes.NewReader(mods))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 4 || f[0] != f[1] || !strings.HasPrefix(f[0], "k8s.io/") || f[2] != t.Row.ModuleVersion(f[0]) {
			continue
		}
		switch f[0] {
		case "k8s.io/code-generator":
			boilerplate = filepath.Join(f[3], "hack", "boilerplate.go.txt")
		case "k8s.io/sample-apiserver":
		default:
			roots[f[0]] = f[3]
		}
	}
	return roots, boilerplate
}

// undownloadedStaging lists, as path@version, the staging modules of the
// `go list -m` output (see openAPIRoots) that have no directory yet.
func (t *Tree) undownloadedStaging(mods []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(mods))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == f[1] && strings.HasPrefix(f[0], "k8s.io/") && f[2] == t.Row.ModuleVersion(f[0]) {
			out = append(out, f[0]+"@"+f[2])
		}
	}
	return out
}

// taggedPackages lists, sorted, the import paths of the directories under
// roots holding a Go file with a `// +k8s:` tag line and +k8s:openapi-gen=.
// In the tree, top-level entries starting with _ or . and vendor/ are
// skipped, as hack/make-rules/helpers/cache_go_dirs.sh does.
func taggedPackages(roots map[string]string) ([]string, error) {
	seen := map[string]bool{}
	for prefix, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			if d.IsDir() {
				if prefix == "k8s.io/kubernetes" && rel != "." && !strings.Contains(rel, string(filepath.Separator)) &&
					(strings.HasPrefix(rel, "_") || strings.HasPrefix(rel, ".") || rel == "vendor") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || seen[prefix+"/"+filepath.Dir(rel)] {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if tagLine.Match(data) && bytes.Contains(data, []byte("+k8s:openapi-gen=")) {
				seen[prefix+"/"+filepath.Dir(rel)] = true
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	var out []string
	for p := range seen {
		out = append(out, strings.TrimSuffix(filepath.ToSlash(p), "/."))
	}
	sort.Strings(out)
	return out, nil
}
