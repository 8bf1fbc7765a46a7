package deb

import (
	"context"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"

	"github.com/kubelet-compat/kubelet-compat/pkg/layout"
	"github.com/kubelet-compat/kubelet-compat/pkg/packaging"
)

// TestRebuildIsByteIdentical builds everything twice, from inputs with
// other mtimes and an unrelated file touched, into another directory, at
// another second, with other parallelism, and wants the same bytes; and
// another SOURCE_DATE_EPOCH must change them.
func TestRebuildIsByteIdentical(t *testing.T) {
	requireTools(t, "dpkg-deb")
	input := filepath.Join(t.TempDir(), "harness")
	cli := writeFakeHarness(t, input)
	first, built := buildDebs(t, Config{Options: packaging.Options{InputDir: input, KubeletCompat: cli, Jobs: 1}})
	assert.Equal(t, len(built), 1+3*len(testVersions)+1)

	later := time.Now().Add(time.Hour)
	filepath.Walk(input, func(p string, _ os.FileInfo, _ error) error { return os.Chtimes(p, later, later) })
	writeExecutable(t, filepath.Join(input, "1.21.14", "unrelated"), "#!/bin/sh\n")
	time.Sleep(1100 * time.Millisecond)
	second, _ := buildDebs(t, Config{Options: packaging.Options{InputDir: input, KubeletCompat: cli, Jobs: 4}})
	a, err := os.ReadFile(filepath.Join(first, "SHA256SUMS"))
	assert.NilError(t, err)
	b, err := os.ReadFile(filepath.Join(second, "SHA256SUMS"))
	assert.NilError(t, err)
	assert.Check(t, is.Equal(strings.Count(string(a), "\n"), len(built)))
	assert.Check(t, is.Equal(string(b), string(a)), "rebuild differs")

	third, _ := buildDebs(t, Config{Options: packaging.Options{InputDir: input, KubeletCompat: cli, Versions: []string{}, SourceDateEpoch: testEpoch + 1}})
	c, err := os.ReadFile(filepath.Join(third, "SHA256SUMS"))
	assert.NilError(t, err)
	assert.Check(t, !strings.Contains(string(a), strings.SplitN(string(c), "  ", 2)[0]), "another SOURCE_DATE_EPOCH gave the same .deb: is it used at all?")
}

// TestLintian: lintian reports no error and no warning on any package;
// the tags the layout raises by design are overridden in the package,
// each with its reason (deb/control.go, overrides; testdata/golden).
func TestLintian(t *testing.T) {
	requireTools(t, "dpkg-deb", "lintian")
	_, debs := buildDebs(t, Config{})
	// Overridden tags do not count (--show-overrides would make them).
	out, err := exec.Command("lintian", append([]string{"--fail-on", "error,warning"}, debs...)...).CombinedOutput()
	var reported []string
	for _, line := range strings.Split(string(out), "\n") {
		if len(line) > 2 && line[1] == ':' && line[0] != 'N' {
			reported = append(reported, line)
		}
	}
	assert.Check(t, err, "lintian:\n%s", out)
	assert.Check(t, is.Len(reported, 0), "lintian:\n%s", strings.Join(reported, "\n"))
}

// TestControlGolden: the control files and maintainer scripts of one
// version's packages and of kubernetes-unversioned, as testdata/golden
// has them (go test ./deb -run TestControlGolden -update rewrites them).
func TestControlGolden(t *testing.T) {
	l := layout.Default()
	date := time.Unix(testEpoch, 0)
	for _, g := range l.Groups {
		version := ""
		if g.Versioned {
			version = "1.21.14"
		}
		for _, p := range g.Packages {
			m, err := packageMeta(l, g, p, version, "VERSION-REVISION", DefaultArch, date)
			assert.NilError(t, err)
			var b strings.Builder
			b.WriteString("== control\n" + m.Control)
			b.WriteString("== conffiles\n" + strings.Join(m.Conffiles, "\n") + "\n")
			for _, name := range sortedKeys(m.Scripts) {
				b.WriteString("== " + name + "\n" + m.Scripts[name])
			}
			b.WriteString("== lintian overrides\n" + string(m.Docs["/usr/share/lintian/overrides/"+m.Name]))
			golden.Assert(t, b.String(), path.Join("golden", m.Name+".txt"))
		}
	}
}

// TestBuildRefusesBadInputs: a wrong harness output stops the build with
// a clear error and leaves nothing behind.
func TestBuildRefusesBadInputs(t *testing.T) {
	requireTools(t, "dpkg-deb")
	for _, tc := range []struct {
		name, wantErr string
		mangle        func(t *testing.T, cfg *Config)
	}{
		{name: "missing binary", wantErr: "is the harness output there?", mangle: func(t *testing.T, cfg *Config) {
			os.Remove(filepath.Join(cfg.InputDir, "1.21.14", "kubeadm"))
		}},
		{name: "binary of another version", wantErr: "reports another version", mangle: func(t *testing.T, cfg *Config) {
			writeExecutable(t, filepath.Join(cfg.InputDir, "1.21.14", "kubelet"), "#!/bin/sh\necho Kubernetes v1.20.15\n")
		}},
		{name: "some control-plane binaries", wantErr: "but not kube-scheduler", mangle: func(t *testing.T, cfg *Config) {
			os.Remove(filepath.Join(cfg.InputDir, "1.21.14", "kube-scheduler"))
		}},
		{name: "no SOURCE_DATE_EPOCH", wantErr: "SOURCE_DATE_EPOCH", mangle: func(t *testing.T, cfg *Config) { cfg.SourceDateEpoch = -1 }},
		{name: "changed content, old table", wantErr: "make deb-releases", mangle: func(t *testing.T, cfg *Config) {
			cfg.Layout = layout.Default()
			cfg.Layout.GuardScript = strings.Replace(cfg.Layout.GuardScript, "refusing to erase", "will not erase", 1)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work := t.TempDir()
			cfg := Config{Options: packaging.Options{InputDir: filepath.Join(work, "harness"), OutputDir: filepath.Join(work, "debs"), Versions: testVersions, SourceDateEpoch: testEpoch}}
			cfg.KubeletCompat = writeFakeHarness(t, cfg.InputDir)
			tc.mangle(t, &cfg)
			_, err := Build(context.Background(), cfg)
			assert.ErrorContains(t, err, tc.wantErr)
			leftovers, _ := filepath.Glob(filepath.Join(cfg.OutputDir, ".debbuild-*"))
			assert.Check(t, is.Len(leftovers, 0))
		})
	}
}
