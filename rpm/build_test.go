package rpm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/pkg/packaging"
	"github.com/kubelet-compat/kubelet-compat/pkg/packaging/packagingtest"
)

// TestBuildRefusesBadInputs: the build must stop with a clear error rather
// than package something wrong.
func TestBuildRefusesBadInputs(t *testing.T) {
	requireRPMTools(t)
	for _, tc := range []struct {
		name    string
		mangle  func(t *testing.T, cfg *Config)
		wantErr string
	}{
		{name: "missing binary", wantErr: "is the harness output there?", mangle: func(t *testing.T, cfg *Config) {
			os.Remove(filepath.Join(cfg.InputDir, "1.21.14", "kubeadm"))
		}},
		{name: "binary of another version", wantErr: "reports another version", mangle: func(t *testing.T, cfg *Config) {
			writeExecutable(t, filepath.Join(cfg.InputDir, "1.21.14", "kubelet"), "#!/bin/sh\necho Kubernetes v1.20.15\n")
		}},
		{name: "not executable", wantErr: "not an executable file", mangle: func(t *testing.T, cfg *Config) {
			os.Chmod(filepath.Join(cfg.InputDir, "1.21.14", "kubectl"), 0o644)
		}},
		{name: "no CLI", wantErr: "kubelet-compat CLI", mangle: func(t *testing.T, cfg *Config) { cfg.KubeletCompat = "" }},
		{name: "no SOURCE_DATE_EPOCH", wantErr: "SOURCE_DATE_EPOCH", mangle: func(t *testing.T, cfg *Config) { cfg.SourceDateEpoch = 0 }},
		{name: "leading v", wantErr: "without a leading v", mangle: func(t *testing.T, cfg *Config) { cfg.Versions = []string{"v1.21.14"} }},
		{name: "duplicate", wantErr: "given twice", mangle: func(t *testing.T, cfg *Config) { cfg.Versions = []string{"1.21.14", "1.21.14"} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work := t.TempDir()
			cfg := Config{Options: packaging.Options{
				InputDir:        filepath.Join(work, "harness"),
				OutputDir:       filepath.Join(work, "rpms"),
				Versions:        []string{"1.21.14"},
				SourceDateEpoch: testEpoch,
			}}
			cfg.KubeletCompat = packagingtest.FakeHarness(t, cfg.InputDir, cfg.Versions)
			tc.mangle(t, &cfg)
			_, err := Build(context.Background(), cfg)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			if leftovers, _ := filepath.Glob(filepath.Join(cfg.OutputDir, ".rpmbuild-*")); len(leftovers) > 0 {
				t.Errorf("left rpmbuild trees behind: %v", leftovers)
			}
		})
	}
}

// TestBuildWithRelativePaths builds as `make rpm` does by default: input,
// output and CLI given relative to the working directory (once
// rpmbuild got a relative _topdir and could not find its SOURCES).
func TestBuildWithRelativePaths(t *testing.T) {
	requireRPMTools(t)
	work := t.TempDir()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(work); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.Chdir(wd); err != nil {
			t.Fatal(err)
		}
	})
	packagingtest.FakeHarness(t, "_output", []string{"1.21.14"})
	cfg := Config{Options: packaging.Options{
		InputDir:        "_output",
		OutputDir:       "_output/rpms",
		Versions:        []string{"1.21.14"},
		KubeletCompat:   "_output/kubelet-compat",
		SourceDateEpoch: testEpoch,
	}}
	built, err := Build(context.Background(), cfg)
	if err != nil {
		t.Fatalf("relative paths: %v", err)
	}
	if len(built) != 4 {
		t.Errorf("built %d RPMs, want 4: %v", len(built), built)
	}
	for _, p := range built {
		if _, err := os.Stat(filepath.Join(work, "_output/rpms", filepath.Base(p))); err != nil {
			t.Errorf("%s is not in the output directory: %v", filepath.Base(p), err)
		}
	}
	if _, err := os.Stat(filepath.Join(work, "_output/rpms/SHA256SUMS")); err != nil {
		t.Error(err)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(work, "_output/rpms/.rpmbuild-*")); len(leftovers) > 0 {
		t.Errorf("left rpmbuild trees behind: %v", leftovers)
	}
}
