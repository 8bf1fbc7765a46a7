package toolchain

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/pkg/modfetch"
)

const (
	sumA = "h1:0YIfmYlhMe0yUYdbupupU89br9R11dmf/VOP2nfew9s="
	sumB = "h1:zSuClbXsSWt8oRPg/6wyWz0FiR0UXatTSnWoyAKhvE0="
)

// fakeGOROOT makes a directory whose bin/go prints `go version go<v> linux/amd64`.
func fakeGOROOT(t *testing.T, reports string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\necho go version go" + reports + " linux/amd64\n"
	if err := os.WriteFile(filepath.Join(dir, "bin", "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func envMap(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

func TestEnv(t *testing.T) {
	t.Setenv("GOPROXY", "https://proxy.example")
	t.Setenv("GONOSUMDB", "")
	tests := []struct {
		goVersion      string
		wantGOFLAGS    string
		wantGOMODCACHE bool
	}{
		{"1.13.15", "", false},
		{"1.15.15", "-mod=mod", true},
		{"1.16.15", "-mod=mod", true},
		{"1.24.9", "-mod=mod", true},
	}
	for _, tt := range tests {
		t.Run(tt.goVersion, func(t *testing.T) {
			env := envMap(Env("/g/go"+tt.goVersion, tt.goVersion, "/c"))
			want := map[string]string{
				"GOENV":       "off",
				"GOTOOLCHAIN": "local",
				"GO111MODULE": "on",
				"GOROOT":      "/g/go" + tt.goVersion,
				"GOCACHE":     "/c/gocache/go" + tt.goVersion,
				"GOPATH":      "/c/gopath",
				"GOFLAGS":     tt.wantGOFLAGS,
				"GOPROXY":     "https://proxy.example",
				"GONOSUMDB":   "",
			}
			for k, v := range want {
				if got, ok := env[k]; !ok || got != v {
					t.Errorf("%s = %q (set: %v), want %q", k, got, ok, v)
				}
			}
			if !strings.HasPrefix(env["PATH"], "/g/go"+tt.goVersion+"/bin:") {
				t.Errorf("PATH = %q, want the toolchain's bin first", env["PATH"])
			}
			got, ok := env["GOMODCACHE"]
			if ok != tt.wantGOMODCACHE || (ok && got != "/c/gopath/pkg/mod") {
				t.Errorf("GOMODCACHE = %q (set: %v), want set: %v", got, ok, tt.wantGOMODCACHE)
			}
			if _, ok := env["CGO_ENABLED"]; ok {
				t.Error("CGO_ENABLED is the caller's to set")
			}
		})
	}
}

func TestEnsureUserGOROOT(t *testing.T) {
	noDownload(t)
	tests := []struct {
		name    string
		goroot  func(t *testing.T) string
		wantErr string
	}{
		{"matching", func(t *testing.T) string { return fakeGOROOT(t, "1.13.15") }, ""},
		{"wrong version", func(t *testing.T) string { return fakeGOROOT(t, "1.13.14") }, "want go1.13.15"},
		{"no go command", func(t *testing.T) string { return t.TempDir() }, "no go command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			goroot := tt.goroot(t)
			got, err := Ensure(context.Background(), t.TempDir(), "1.13.15", sumA, goroot, nil)
			if tt.wantErr == "" {
				if err != nil || got != goroot {
					t.Fatalf("Ensure = %q, %v; want %q", got, err, goroot)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "KC_GOROOT_1_13_15") {
				t.Fatalf("Ensure error = %v, want it to mention %q and the variable", err, tt.wantErr)
			}
		})
	}
}

func TestEnsureReusesInstalledToolchain(t *testing.T) {
	noDownload(t)
	cache := t.TempDir()
	dst := Dir(cache, "1.16.15")
	installFake(t, dst, "1.16.15", sumA)
	got, err := Ensure(context.Background(), cache, "1.16.15", sumA, "", nil)
	if err != nil || got != dst {
		t.Fatalf("Ensure = %q, %v; want %q without a download", got, err, dst)
	}
}

func TestEnsureDownloadsAndInstalls(t *testing.T) {
	src := fakeGOROOT(t, "1.15.15")
	if err := os.MkdirAll(filepath.Join(src, "pkg", "tool", "linux_amd64"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "pkg", "tool", "linux_amd64", "compile"), nil, 0o444); err != nil {
		t.Fatal(err)
	}
	fakeDownload(t, modfetch.Module{Path: "golang.org/toolchain", Version: "v0.0.1-go1.15.15.linux-amd64", Dir: src, Sum: sumB}, nil)

	cache := t.TempDir()
	// A stale install (other sum) is replaced.
	installFake(t, Dir(cache, "1.15.15"), "1.15.15", sumA)
	got, err := Ensure(context.Background(), cache, "1.15.15", sumB, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got != Dir(cache, "1.15.15") {
		t.Errorf("goroot = %s", got)
	}
	if s := installedSum(got); s != sumB {
		t.Errorf("marker = %q, want %q", s, sumB)
	}
	fi, err := os.Stat(filepath.Join(got, "pkg", "tool", "linux_amd64", "compile"))
	if err != nil || fi.Mode().Perm()&0o111 == 0 {
		t.Errorf("tool not executable: %v %v", fi, err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(cache, "toolchains", ".go*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary dirs left behind: %v", leftovers)
	}
}

func TestEnsureErrors(t *testing.T) {
	tests := []struct {
		name    string
		mod     modfetch.Module
		dlErr   error
		wantErr []string
	}{
		{
			name:    "checksum mismatch",
			mod:     modfetch.Module{Path: "golang.org/toolchain", Version: "v0.0.1-go1.13.15.linux-amd64", Sum: sumB},
			wantErr: []string{sumB, sumA, "matrix.json"},
		},
		{
			name:    "missing toolchain",
			dlErr:   errors.New("403 Forbidden"),
			wantErr: []string{"403", "nearest served go1.13.x", "KC_GOROOT_1_13_15"},
		},
		{
			name:    "wrong version in module",
			mod:     modfetch.Module{Path: "golang.org/toolchain", Version: "v0.0.1-go1.13.15.linux-amd64", Sum: sumA, Dir: fakeGOROOT(t, "1.13.14")},
			wantErr: []string{"want go1.13.15"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fakeDownload(t, tt.mod, tt.dlErr)
			cache := t.TempDir()
			_, err := Ensure(context.Background(), cache, "1.13.15", sumA, "", nil)
			if err == nil {
				t.Fatal("Ensure succeeded")
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if _, err := os.Stat(Dir(cache, "1.13.15")); !os.IsNotExist(err) {
				t.Errorf("a failed Ensure left %s behind", Dir(cache, "1.13.15"))
			}
		})
	}
}

func TestEnsureRealToolchain(t *testing.T) {
	if os.Getenv("KC_SLOW") == "" {
		t.Skip("downloads go1.13.15 through the proxy; set KC_SLOW=1")
	}
	cache := os.Getenv("KC_CACHE")
	if cache == "" {
		cache = t.TempDir()
	}
	goroot, err := Ensure(context.Background(), cache, "1.13.15", sumA, "", os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckVersion(context.Background(), goroot, "1.13.15"); err != nil {
		t.Fatal(err)
	}
}

func installFake(t *testing.T, dst, goVersion, sum string) {
	t.Helper()
	src := fakeGOROOT(t, goVersion)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(src, dst); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, markerFile), []byte(sum+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func fakeDownload(t *testing.T, m modfetch.Module, err error) {
	t.Helper()
	old := download
	download = func(context.Context, string, string) (modfetch.Module, error) { return m, err }
	t.Cleanup(func() { download = old })
}

func noDownload(t *testing.T) {
	t.Helper()
	old := download
	download = func(context.Context, string, string) (modfetch.Module, error) {
		t.Fatal("unexpected download")
		return modfetch.Module{}, nil
	}
	t.Cleanup(func() { download = old })
}
