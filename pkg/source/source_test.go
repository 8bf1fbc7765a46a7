package source

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/pkg/matrix"
	"github.com/kubelet-compat/kubelet-compat/pkg/modfetch"
)

// fixtureGoMod is a trimmed Kubernetes go.mod in the shape of 1.16-1.31.
const fixtureGoMod = `module k8s.io/kubernetes

go 1.13

require (
	k8s.io/api v0.0.0
	k8s.io/kube-scheduler v0.0.0
	vbom.ml/util v0.0.0-20160121211510-db5cfe13f5cc
)

replace (
	github.com/google/gofuzz => github.com/google/gofuzz v1.1.0
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/kube-scheduler => ./staging/src/k8s.io/kube-scheduler
	k8s.io/sample-apiserver => ./staging/src/k8s.io/sample-apiserver // keep me out
	vbom.ml/util => vbom.ml/util v0.0.0-20160121211510-db5cfe13f5cc
)

replace k8s.io/apimachinery => ./staging/src/k8s.io/apimachinery
`

func TestRewriteGoMod(t *testing.T) {
	tests := []struct {
		name    string
		row     matrix.Row
		want    []string // lines that must be present
		notWant []string // substrings that must be absent
	}{
		{
			name: "staging to published",
			row:  matrix.Row{Kubernetes: "1.21.14"},
			want: []string{
				"\tk8s.io/api => k8s.io/api v0.21.14",
				"\tk8s.io/kube-scheduler => k8s.io/kube-scheduler v0.21.14",
				"\tk8s.io/sample-apiserver => k8s.io/sample-apiserver v0.21.14",
				"replace k8s.io/apimachinery => k8s.io/apimachinery v0.21.14",
				"\tgithub.com/google/gofuzz => github.com/google/gofuzz v1.1.0",
				"\tvbom.ml/util => vbom.ml/util v0.0.0-20160121211510-db5cfe13f5cc",
				"\tk8s.io/api v0.0.0",
			},
			notWant: []string{"./staging/", "_kc_stubs"},
		},
		{
			name: "stubs replace existing lines",
			row:  matrix.Row{Kubernetes: "1.18.19", Stubs: []string{"vbom.ml/util", "k8s.io/sample-apiserver"}},
			want: []string{
				"\tvbom.ml/util => ./_kc_stubs/vbom.ml/util",
				"\tk8s.io/sample-apiserver => ./_kc_stubs/k8s.io/sample-apiserver",
				"\tk8s.io/api => k8s.io/api v0.18.19",
			},
			notWant: []string{"./staging/", "keep me out", "vbom.ml/util v0.0.0-20160121211510-db5cfe13f5cc =>"},
		},
		{
			name: "new stub is appended",
			row:  matrix.Row{Kubernetes: "1.31.14", Stubs: []string{"k8s.io/endpointslice"}},
			want: []string{"replace k8s.io/endpointslice => ./_kc_stubs/k8s.io/endpointslice"},
		},
		{
			name: "overrides of staging and other modules",
			row: matrix.Row{Kubernetes: "1.31.14", Overrides: map[string]string{
				"k8s.io/kube-scheduler":    "v0.31.13",
				"github.com/google/gofuzz": "v1.2.0",
				"k8s.io/utils":             "v0.0.1",
			}},
			want: []string{
				"\tk8s.io/kube-scheduler => k8s.io/kube-scheduler v0.31.13",
				"\tk8s.io/api => k8s.io/api v0.31.14",
				"\tgithub.com/google/gofuzz => github.com/google/gofuzz v1.2.0",
				"replace k8s.io/utils => k8s.io/utils v0.0.1",
			},
			notWant: []string{"kube-scheduler v0.31.14", "gofuzz v1.1.0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := RewriteGoMod([]byte(fixtureGoMod), tt.row)
			if err != nil {
				t.Fatal(err)
			}
			got := string(out)
			lines := map[string]bool{}
			for _, l := range strings.Split(got, "\n") {
				lines[l] = true
			}
			for _, w := range tt.want {
				if !lines[w] {
					t.Errorf("missing line %q in\n%s", w, got)
				}
			}
			for _, nw := range tt.notWant {
				if strings.Contains(got, nw) {
					t.Errorf("unexpected %q in\n%s", nw, got)
				}
			}
		})
	}
}

func TestRewriteGoModRejectsMalformed(t *testing.T) {
	tests := map[string]string{
		"no arrow":     "module m\n\nreplace (\n\tk8s.io/api ./staging/src/k8s.io/api\n)\n",
		"unterminated": "module m\n\nreplace (\n\tk8s.io/api => ./staging/src/k8s.io/api\n",
		"too many":     "module m\n\nreplace a b c => d\n",
	}
	for name, gomod := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := RewriteGoMod([]byte(gomod), matrix.Row{Kubernetes: "1.18.19"}); err == nil {
				t.Error("no error")
			}
		})
	}
}

func TestStubGoMod(t *testing.T) {
	got := string(StubGoMod("vbom.ml/util"))
	if !strings.HasSuffix(got, "\nmodule vbom.ml/util\n") {
		t.Errorf("stub go.mod = %q", got)
	}
}

// fakeModuleZip lays out what an extracted k8s.io/kubernetes zip holds.
func fakeModuleZip(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":                           fixtureGoMod,
		"go.sum":                           "",
		"go.work":                          "go 1.22\nuse ./staging/src/k8s.io/api\n",
		"go.work.sum":                      "",
		"vendor/modules.txt":               "# k8s.io/api v0.0.0 => ./staging/src/k8s.io/api\n",
		"pkg/kubelet/container/helpers.go": "package container\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestEnsureAssemblesTree(t *testing.T) {
	zip := fakeModuleZip(t)
	calls := 0
	old := download
	download = func(context.Context, string, matrix.Row) (modfetch.Module, error) {
		calls++
		return modfetch.Module{Dir: zip}, nil
	}
	t.Cleanup(func() { download = old })

	cache := t.TempDir()
	row := matrix.Row{Kubernetes: "1.18.19", SourceSum: "h1:x", Stubs: []string{"vbom.ml/util"}}
	dir, err := Ensure(context.Background(), cache, row, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(cache, "src", "1.18.19"); dir != want {
		t.Errorf("dir = %s, want %s", dir, want)
	}
	for _, gone := range []string{"vendor", "go.work", "go.work.sum"} {
		if _, err := os.Stat(filepath.Join(dir, gone)); !os.IsNotExist(err) {
			t.Errorf("%s still present", gone)
		}
	}
	stub, err := os.ReadFile(filepath.Join(dir, "_kc_stubs", "vbom.ml", "util", "go.mod"))
	if err != nil || !strings.Contains(string(stub), "module vbom.ml/util") {
		t.Errorf("stub go.mod: %q, %v", stub, err)
	}
	gomod, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
	if strings.Contains(string(gomod), "./staging/") {
		t.Errorf("go.mod still uses staging:\n%s", gomod)
	}

	// Second call: cached, no download. A changed row (new stub) rebuilds.
	if _, err := Ensure(context.Background(), cache, row, "", nil); err != nil || calls != 1 {
		t.Errorf("second Ensure: err %v, downloads %d, want 1", err, calls)
	}
	row.Stubs = append(row.Stubs, "k8s.io/sample-apiserver")
	if _, err := Ensure(context.Background(), cache, row, "", nil); err != nil || calls != 2 {
		t.Errorf("Ensure after a row change: err %v, downloads %d, want 2", err, calls)
	}
	if _, err := os.Stat(filepath.Join(dir, "_kc_stubs", "k8s.io", "sample-apiserver", "go.mod")); err != nil {
		t.Errorf("new stub missing: %v", err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(cache, "src", ".*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary dirs left behind: %v", leftovers)
	}

	work := filepath.Join(t.TempDir(), "work")
	if err := WorkTree(context.Background(), dir, work); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "go.mod"), []byte("changed"), 0o644); err != nil {
		t.Errorf("work tree not writable: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "go.mod")); string(b) == "changed" {
		t.Error("work tree shares files with the pristine tree")
	}
}

func TestEnsureUserSource(t *testing.T) {
	noDownload := func(context.Context, string, matrix.Row) (modfetch.Module, error) {
		t.Fatal("unexpected download")
		return modfetch.Module{}, nil
	}
	old := download
	download = noDownload
	t.Cleanup(func() { download = old })

	checkout := t.TempDir()
	for _, d := range []string{".git", "staging/src/k8s.io/api", "vendor/k8s.io"} {
		if err := os.MkdirAll(filepath.Join(checkout, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	row := matrix.Row{Kubernetes: "1.18.19"}
	cache := t.TempDir()
	dir, err := Ensure(context.Background(), cache, row, checkout, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "vendor", "k8s.io")); err != nil {
		t.Errorf("user vendor/ not kept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); !os.IsNotExist(err) {
		t.Errorf(".git copied")
	}

	notKubernetes := t.TempDir()
	if _, err := Ensure(context.Background(), cache, row, notKubernetes, nil); err == nil || !strings.Contains(err.Error(), "staging") {
		t.Errorf("Ensure of a non-Kubernetes dir: %v", err)
	}
}

func TestEnsureRealSource(t *testing.T) {
	if os.Getenv("KC_SLOW") == "" {
		t.Skip("downloads k8s.io/kubernetes through the proxy; set KC_SLOW=1")
	}
	row, err := matrix.Lookup("1.18.19")
	if err != nil {
		t.Fatal(err)
	}
	cache := os.Getenv("KC_CACHE")
	if cache == "" {
		cache = t.TempDir()
	}
	dir, err := Ensure(context.Background(), cache, row, "", os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"k8s.io/api => k8s.io/api v0.18.19", "vbom.ml/util => ./_kc_stubs/vbom.ml/util"} {
		if !strings.Contains(string(gomod), want) {
			t.Errorf("go.mod lacks %q", want)
		}
	}
}

// TestAssembleWritesShim: kubectl 1.16-1.19 imports vbom.ml/util/sortorder,
// which the proxy does not serve; the stub must carry a forwarding package.
func TestAssembleWritesShim(t *testing.T) {
	dir := t.TempDir()
	gomod := "module k8s.io/kubernetes\n\ngo 1.13\n\nreplace vbom.ml/util => vbom.ml/util v0.0.0-20160121211510-db5cfe13f5cc\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	row := matrix.Row{Kubernetes: "1.18.19", Stubs: []string{"vbom.ml/util"}}
	if err := Assemble(dir, row); err != nil {
		t.Fatal(err)
	}
	stub := filepath.Join(dir, filepath.FromSlash(StubPath("vbom.ml/util")))
	mod, err := os.ReadFile(filepath.Join(stub, "go.mod"))
	if err != nil || !strings.Contains(string(mod), "require github.com/fvbommel/sortorder v1.0.1") {
		t.Errorf("shim go.mod = %q, %v", mod, err)
	}
	if src, err := os.ReadFile(filepath.Join(stub, "sortorder", "sortorder.go")); err != nil || !strings.Contains(string(src), "type Natural = upstream.Natural") {
		t.Errorf("shim package = %q, %v", src, err)
	}
}

func TestUserSource(t *testing.T) {
	row := matrix.Row{Kubernetes: "1.18.19"}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{name: "none"},
		{name: "every version", env: map[string]string{"KUBE_SRC": "/src/any"}, want: "/src/any"},
		{name: "this version wins", env: map[string]string{"KUBE_SRC": "/src/any", "KUBE_SRC_1_18_19": "/src/118"}, want: "/src/118"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := UserSource(row, func(k string) string { return tc.env[k] }); got != tc.want {
				t.Errorf("UserSource = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRefusedModule(t *testing.T) {
	for _, tt := range []struct {
		name, stderr, want string
	}{
		{"a zip the proxy refuses",
			"go: sigs.k8s.io/iptables-wrappers@v1.0.0: reading https://proxy.golang.org/sigs.k8s.io/iptables-wrappers/@v/v1.0.0.zip: 403 Forbidden\n\tserver response: This module version is not available.\n",
			"sigs.k8s.io/iptables-wrappers@v1.0.0"},
		{"another failure", "go: updates to go.mod needed\n", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := refusedModule(tt.stderr); got != tt.want {
				t.Errorf("refusedModule = %q, want %q", got, tt.want)
			}
		})
	}
}
