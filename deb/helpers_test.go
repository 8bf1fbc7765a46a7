package deb

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

// testEpoch is a fixed SOURCE_DATE_EPOCH for the tests (2021-06-01).
const testEpoch = 1622505600

// testVersions: 1.21.14 with the control-plane binaries (a -master
// package), 1.20.15 without.
var testVersions = []string{"1.20.15", "1.21.14"}

// requireTools skips without the programs, except in CI, where their
// absence is a broken setup (`make test` installs them through deb-deps).
func requireTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			msg := fmt.Sprintf("%s not found: run `make deb-deps`", tool)
			if os.Getenv("CI") != "" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
}

// writeFakeHarness writes shell scripts that stand in for the harness
// output (<dir>/<ver>/<binary>, printing their version like the real
// ones; the control-plane binaries for 1.21.14 only) and a fake CLI, whose
// path it returns.
func writeFakeHarness(t *testing.T, dir string) string {
	t.Helper()
	for _, v := range testVersions {
		bins := []string{"kubelet", "kubeadm", "kubectl"}
		if v == "1.21.14" {
			bins = append(bins, "kube-apiserver", "kube-controller-manager", "kube-scheduler")
		}
		for _, bin := range bins {
			writeExecutable(t, filepath.Join(dir, v, bin), fmt.Sprintf(`#!/bin/sh
case "$1" in
completion) echo "# fake bash completion of %[1]s %[2]s"; echo "complete -F __start_%[1]s %[1]s" ;;
*) echo "Kubernetes v%[2]s (fake %[1]s)" ;;
esac
`, bin, v))
		}
	}
	cli := filepath.Join(dir, "kubelet-compat")
	writeExecutable(t, cli, "#!/bin/sh\necho \"fake kubelet-compat $*\"\n")
	return cli
}

func writeExecutable(t *testing.T, path, content string) {
	t.Helper()
	assert.NilError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	assert.NilError(t, os.WriteFile(path, []byte(content), 0o755))
}

// buildDebs builds the .debs of testVersions from cfg (fake binaries
// unless cfg.InputDir is set) into a new directory.
func buildDebs(t *testing.T, cfg Config) (string, []string) {
	t.Helper()
	work := t.TempDir()
	if cfg.InputDir == "" {
		cfg.InputDir = filepath.Join(work, "harness")
		cfg.KubeletCompat = writeFakeHarness(t, cfg.InputDir)
	}
	if cfg.OutputDir == "" {
		cfg.OutputDir = filepath.Join(work, "debs")
	}
	if cfg.Versions == nil {
		cfg.Versions = testVersions
	}
	if cfg.SourceDateEpoch == 0 {
		cfg.SourceDateEpoch = testEpoch
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	built, err := Build(ctx, cfg)
	assert.NilError(t, err)
	return cfg.OutputDir, built
}

// run runs a command and returns its stdout, failing the test on error.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	assert.NilError(t, err, "%s %v: %s", name, args, stderr.String())
	return string(out)
}

type result struct {
	code           int
	stdout, stderr string
}

func runResult(t *testing.T, env []string, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	if err != nil {
		exitErr, ok := err.(*exec.ExitError)
		assert.Assert(t, ok, "%s %v: %v", name, args, err)
		r.code = exitErr.ExitCode()
	}
	return r
}

// debEntry is one member of a .deb's data archive.
type debEntry struct {
	typ     string // dir, file, link
	mode    os.FileMode
	owner   string
	target  string
	content []byte
}

// debContents reads the data archive of a .deb (dpkg-deb --fsys-tarfile),
// by absolute path.
func debContents(t *testing.T, deb string) map[string]debEntry {
	t.Helper()
	out := run(t, "dpkg-deb", "--fsys-tarfile", deb)
	tr := tar.NewReader(strings.NewReader(out))
	got := map[string]debEntry{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		assert.NilError(t, err)
		p := "/" + strings.Trim(strings.TrimPrefix(h.Name, "."), "/")
		e := debEntry{mode: os.FileMode(h.Mode).Perm(), owner: fmt.Sprintf("%s:%s %d:%d", h.Uname, h.Gname, h.Uid, h.Gid), target: h.Linkname}
		switch h.Typeflag {
		case tar.TypeDir:
			e.typ = "dir"
		case tar.TypeSymlink:
			e.typ = "link"
		case tar.TypeReg:
			e.typ = "file"
			e.content, err = io.ReadAll(tr)
			assert.NilError(t, err)
		default:
			t.Fatalf("%s: %s has tar type %c", deb, p, h.Typeflag)
		}
		got[p] = e
	}
	return got
}

// control returns a field of a .deb's control file.
func control(t *testing.T, deb, field string) string {
	t.Helper()
	return strings.TrimSpace(run(t, "dpkg-deb", "-f", deb, field))
}

// extract unpacks every .deb into root, as dpkg would without running
// their scripts.
func extract(t *testing.T, root string, debs []string) {
	t.Helper()
	for _, d := range debs {
		run(t, "dpkg-deb", "-x", d, root)
	}
}

// maintainerScript returns a .deb's maintainer script ("" if none).
func maintainerScript(t *testing.T, deb, name string) string {
	t.Helper()
	dir := t.TempDir()
	run(t, "dpkg-deb", "-e", deb, dir)
	b, err := os.ReadFile(filepath.Join(dir, name))
	if os.IsNotExist(err) {
		return ""
	}
	assert.NilError(t, err)
	return string(b)
}

// byName maps package names to .debs.
func byName(t *testing.T, debs []string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, d := range debs {
		m[control(t, d, "Package")] = d
	}
	return m
}
