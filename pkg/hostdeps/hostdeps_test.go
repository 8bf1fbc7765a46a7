package hostdeps

import (
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

const module = "github.com/kubelet-compat/kubelet-compat"

// entryPoints are the project's paths: the code each runs (Go packages
// and everything of this module they import) and the ensure lists that
// path installs before it runs anything.
var entryPoints = []struct {
	name string
	// roots are package patterns relative to the module root; a command a
	// path runs with `go run` must be among them.
	roots   []string
	ensured []Path
	// notRun are programs the path's code names but never runs on this
	// path, each with the reason.
	notRun map[string]string
}{
	// One command builds both formats; each format's build ensures its
	// own path first (packaging.Packager.Host), so a path that builds one
	// format never runs the other's programs.
	{name: "make rpm (build-packages -format rpm)", roots: []string{"./cmd/build-packages"}, ensured: []Path{RPM},
		notRun: map[string]string{DpkgDeb.Name: onlyDeb, Patch.Name: onlyRuntimeBuild}},
	{name: "make deb (build-packages -format deb)", roots: []string{"./cmd/build-packages"}, ensured: []Path{Deb},
		notRun: map[string]string{Rpmbuild.Name: onlyRPM, Patch.Name: onlyRuntimeBuild}},
	{name: "build-packages -format all", roots: []string{"./cmd/build-packages"}, ensured: []Path{RPM, Deb},
		notRun: map[string]string{Patch.Name: onlyRuntimeBuild}},
	{name: "the harness and hack/", roots: []string{"./build/...", "./hack/..."}, ensured: []Path{Build}},
	{name: "the local e2e", roots: []string{"./e2e/pkg/local/scenario", "./e2e/pkg/local", "./pkg/controlplane"}, ensured: []Path{Local, LocalAPI},
		notRun: map[string]string{"docker": "leftovers removes a docker network only for a journal that has one: a kind run's"}},
	{name: "deploy/system-upgrade", roots: []string{"./deploy/system-upgrade/cmd/system-upgrade"}, ensured: []Path{SystemUpgrade}},
	{name: "make runtime (build-runtime)", roots: []string{"./runtime/cmd/build-runtime"}, ensured: []Path{Runtime}},
	{name: "the kind e2e and its images", roots: []string{"./e2e/pkg/kind", "./e2e/pkg/kind/fleet", "./e2e/pkg/kind/nodeimage", "./e2e/cmd/e2e-oci-runtime", "./cmd/build-packages"}, ensured: []Path{Kind, KindPrivateEngine},
		notRun: map[string]string{Rpmbuild.Name: "the image builder runs build-packages -format deb: " + onlyRPM, Patch.Name: onlyRuntimeBuild}},
}

// The reasons a path that builds one format does not run the other's
// programs.
const (
	onlyDeb = "the Debian packager's: only -format deb and all run it, after ensuring the deb path"
	onlyRPM = "the RPM packager's: only -format rpm and all run it, after ensuring the rpm path"
	// build-packages reads pkg/runtimebuild's components, never builds one.
	onlyRuntimeBuild = "pkg/runtimebuild's: only make runtime's build applies a patch series, after ensuring the runtime path"
)

// TestEveryProgramIsEnsured reads the code of each path and fails for a
// program it executes that its ensure lists do not name, and for a
// command it runs with `go run` that is not among its roots.
func TestEveryProgramIsEnsured(t *testing.T) {
	for _, ep := range entryPoints {
		t.Run(ep.name, func(t *testing.T) {
			runs := map[string][]string{}
			goRuns := map[string][]string{}
			for _, dir := range packageDirs(t, ep.roots) {
				scanDir(t, dir, runs, goRuns)
			}
			assert.Assert(t, len(runs) > 0, "found no program the path runs: the scanner is broken")
			var missing []string
			for prog, where := range runs {
				if _, ok := ep.notRun[prog]; !ok && !anyHas(ep.ensured, prog) {
					missing = append(missing, fmt.Sprintf("%s (%s)", prog, strings.Join(where, ", ")))
				}
			}
			sort.Strings(missing)
			assert.Check(t, is.Len(missing, 0), "%s runs programs its ensure lists (%s) do not install: %s",
				ep.name, pathNames(ep.ensured), strings.Join(missing, "; "))
			for pkg, where := range goRuns {
				assert.Check(t, hasRoot(ep.roots, pkg), "%s runs `go run %s` (%s), which is not among its roots: add it and its programs",
					ep.name, pkg, strings.Join(where, ", "))
			}
		})
	}
}

// TestKindRunsThePackageBuilder pins the bug that made this package (the
// kind image builder ran build-rpms and nothing installed rpmbuild): the
// builder now runs build-packages -format deb, so the kind path must
// install dpkg-deb.
func TestKindRunsThePackageBuilder(t *testing.T) {
	runs, goRuns := map[string][]string{}, map[string][]string{}
	for _, dir := range packageDirs(t, []string{"./e2e/pkg/kind/nodeimage"}) {
		scanDir(t, dir, runs, goRuns)
	}
	assert.Check(t, is.Contains(goRuns, "./cmd/build-packages"))
	runs = map[string][]string{}
	for _, dir := range packageDirs(t, []string{"./cmd/build-packages"}) {
		scanDir(t, dir, runs, goRuns)
	}
	assert.Check(t, is.Contains(runs, "dpkg-deb"))
	assert.Check(t, Kind.Has("dpkg-deb"))
}

func TestEnsure(t *testing.T) {
	for _, tc := range []struct {
		name        string
		present     []string
		paths       []Path
		wantInstall []string
		wantErr     string
	}{
		{name: "nothing missing", present: []string{"go", "git", "cp", "chmod", "rpmbuild", "rpm"}, paths: []Path{RPM}},
		{name: "one package for two programs", present: []string{"go", "git", "cp", "chmod"}, paths: []Path{RPM}, wantInstall: []string{"rpm"}},
		{name: "packages of several paths, once each", present: []string{"go", "git", "cp", "chmod"},
			paths: []Path{RPM, {Name: "x", Programs: []Program{Docker, Dockerd, Rpmbuild}}}, wantInstall: []string{"docker.io", "rpm"}},
		{name: "a missing precondition is an error, nothing installed", present: []string{"git"}, paths: []Path{RPM},
			wantErr: "go: not found in PATH"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			present := map[string]bool{}
			for _, p := range tc.present {
				present[p] = true
			}
			var installed []string
			h := Host{
				Found: func(name string) bool { return present[name] },
				Install: func(_ context.Context, _ io.Writer, pkgs []string) error {
					installed = append(installed, pkgs...)
					for _, p := range tc.paths {
						for _, prog := range p.Programs {
							if contains(pkgs, prog.Package) {
								present[prog.Name] = true
							}
						}
					}
					return nil
				},
			}
			err := h.Ensure(context.Background(), io.Discard, tc.paths...)
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				assert.Check(t, is.Len(installed, 0))
				return
			}
			assert.NilError(t, err)
			assert.DeepEqual(t, installed, tc.wantInstall)
		})
	}
}

func TestEnsureInstallThatLeavesAProgramMissingFails(t *testing.T) {
	h := Host{
		Found:   func(name string) bool { return name != "rpmbuild" },
		Install: func(context.Context, io.Writer, []string) error { return nil },
	}
	err := h.Ensure(context.Background(), io.Discard, RPM)
	assert.ErrorContains(t, err, "installed rpm, yet their programs are still missing")
}

func TestPathNamesAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range Paths {
		assert.Check(t, !seen[p.Name], "path %s twice", p.Name)
		seen[p.Name] = true
		got, ok := ByName(p.Name)
		assert.Check(t, ok)
		assert.Check(t, is.Equal(got.Name, p.Name))
	}
}

// packageDirs lists the directories of the module's packages that the
// roots are or import.
func packageDirs(t *testing.T, roots []string) []string {
	t.Helper()
	args := append([]string{"list", "-deps", "-json=ImportPath,Dir,Module"}, roots...)
	cmd := exec.Command("go", args...)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	assert.NilError(t, err, "go list %s", strings.Join(roots, " "))
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var dirs []string
	for dec.More() {
		var p struct {
			ImportPath, Dir string
			Module          *struct{ Path string }
		}
		assert.NilError(t, dec.Decode(&p))
		if p.Module != nil && p.Module.Path == module {
			dirs = append(dirs, p.Dir)
		}
	}
	return dirs
}

// scanDir records, from the non-test Go files in dir, the programs they
// use (an absolute path that is a Program's name, anywhere; a string
// literal where a program is named: exec.Command,
// CommandContext, LookPath, exec.Cmd{Name: ...}, proc.Start, a Conntrack
// runner, and every hostdeps.<Program> the code refers to) and the
// packages they `go run` or build and run (buildTool).
func scanDir(t *testing.T, dir string, runs, goRuns map[string][]string) {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	assert.NilError(t, err)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || filepath.Base(dir) == "hostdeps" {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		assert.NilError(t, err)
		where := func(n ast.Node) string {
			p := fset.Position(n.Pos())
			rel, _ := filepath.Rel(filepath.Join(dir, "..", ".."), p.Filename)
			return fmt.Sprintf("%s:%d", filepath.Join(filepath.Base(dir), filepath.Base(rel)), p.Line)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				pkg, _ := sel.X.(*ast.Ident)
				arg := -1
				switch {
				case pkg != nil && (pkg.Name == "exec" || pkg.Name == "osexec") && (sel.Sel.Name == "Command" || sel.Sel.Name == "LookPath"):
					arg = 0
				case pkg != nil && (pkg.Name == "exec" || pkg.Name == "osexec") && sel.Sel.Name == "CommandContext":
					arg = 1
				case pkg != nil && pkg.Name == "proc" && sel.Sel.Name == "Start":
					arg = 2
				case sel.Sel.Name == "Conntrack":
					arg = 1
				}
				if sel.Sel.Name == "buildTool" && len(n.Args) == 3 {
					// The kind image builder's commands it builds, then runs:
					// followed as a `go run` is.
					if target, ok := stringLit(n.Args[2]); ok {
						goRuns[target] = append(goRuns[target], where(n))
					}
					return true
				}
				if arg < 0 || len(n.Args) <= arg {
					return true
				}
				if name, ok := stringLit(n.Args[arg]); ok {
					runs[name] = append(runs[name], where(n))
					if name == "go" && len(n.Args) > arg+2 {
						if sub, _ := stringLit(n.Args[arg+1]); sub == "run" {
							if target, ok := stringLit(n.Args[arg+2]); ok {
								goRuns[target] = append(goRuns[target], where(n))
							}
						}
					}
				}
			case *ast.CompositeLit:
				typ, ok := n.Type.(*ast.SelectorExpr)
				if !ok || typ.Sel.Name != "Cmd" {
					return true
				}
				for _, e := range n.Elts {
					kv, ok := e.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					if key, _ := kv.Key.(*ast.Ident); key != nil && key.Name == "Name" {
						if name, ok := stringLit(kv.Value); ok {
							runs[name] = append(runs[name], where(n))
						}
					}
				}
			case *ast.BasicLit:
				// A program outside PATH named by its absolute path (read or
				// executed, e.g. busybox copied into an image).
				if name, ok := stringLit(n); ok && filepath.IsAbs(name) {
					for _, prog := range programVars {
						if prog.Name == name {
							runs[name] = append(runs[name], where(n))
						}
					}
				}
			case *ast.SelectorExpr:
				// hostdeps.Rpmbuild, hostdeps.Rpmbuild.Name: the typed way to
				// name a program the code runs.
				if pkg, ok := n.X.(*ast.Ident); ok && pkg.Name == "hostdeps" {
					if prog, ok := programVars[n.Sel.Name]; ok {
						runs[prog.Name] = append(runs[prog.Name], where(n))
					}
				}
			}
			return true
		})
	}
}

// programVars are the package's Program variables by identifier.
var programVars = map[string]Program{
	"Go": Go, "Git": Git, "Tar": Tar, "Cp": Cp, "Chmod": Chmod, "Diff": Diff, "DpkgDeb": DpkgDeb, "AptGet": AptGet, "DpkgQ": DpkgQ, "Dpkg": Dpkg,
	"Rpmbuild": Rpmbuild, "Rpm": Rpm, "Patch": Patch, "Python3": Python3, "Debootstrap": Debootstrap, "Docker": Docker,
	"Dockerd": Dockerd, "Containerd": Containerd, "Runc": Runc, "Iptables": Iptables, "Ip6tables": Ip6tables,
	"Conntrack": Conntrack, "IP": IP, "Mount": Mount, "Umount": Umount, "Busybox": Busybox, "CNIBridge": CNIBridge, "Etcd": Etcd, "Lintian": Lintian,
	"Gcc": Gcc, "PkgConfig": PkgConfig, "LibseccompH": LibseccompH,
}

// TestProgramVars keeps programVars in step with the package's variables.
func TestProgramVars(t *testing.T) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "hostdeps.go", nil, 0)
	assert.NilError(t, err)
	var names []string
	for _, d := range file.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.VAR {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			if len(vs.Values) != 1 {
				continue
			}
			if cl, ok := vs.Values[0].(*ast.CompositeLit); ok {
				if id, ok := cl.Type.(*ast.Ident); ok && id.Name == "Program" {
					names = append(names, vs.Names[0].Name)
				}
			}
		}
	}
	sort.Strings(names)
	var have []string
	for n := range programVars {
		have = append(have, n)
	}
	sort.Strings(have)
	assert.DeepEqual(t, have, names)
}

func stringLit(e ast.Expr) (string, bool) {
	bl, ok := e.(*ast.BasicLit)
	if !ok || bl.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(bl.Value)
	return s, err == nil
}

func anyHas(paths []Path, prog string) bool {
	for _, p := range paths {
		if p.Has(prog) {
			return true
		}
	}
	return false
}

func hasRoot(roots []string, pkg string) bool {
	for _, r := range roots {
		if r == pkg || (strings.HasSuffix(r, "/...") && strings.HasPrefix(pkg, strings.TrimSuffix(r, "..."))) {
			return true
		}
	}
	return false
}

func pathNames(paths []Path) string {
	var n []string
	for _, p := range paths {
		n = append(n, p.Name)
	}
	return strings.Join(n, ", ")
}
