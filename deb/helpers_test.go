package deb

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/kubelet-compat/kubelet-compat/pkg/packaging/packagingtest"
)

// testVersions: 1.21.14 with the control-plane binaries (a -master
// package), 1.20.15 without.
var testVersions = []string{"1.20.15", "1.21.14"}

// The helpers both formats' tests share (pkg/packaging/packagingtest).
const testEpoch = packagingtest.Epoch

type result = packagingtest.Result

var (
	run             = packagingtest.Run
	runResult       = packagingtest.RunResult
	writeExecutable = packagingtest.WriteExecutable
)

// requireTools skips without the programs, except in CI, where their
// absence is a broken setup (`make test` installs them through deb-deps).
func requireTools(t *testing.T, tools ...string) {
	t.Helper()
	packagingtest.RequireTools(t, "make deb-deps", tools...)
}

// writeFakeHarness writes the fake harness output of testVersions (the
// control-plane binaries for 1.21.14 only) into dir and returns the fake
// CLI's path.
func writeFakeHarness(t *testing.T, dir string) string {
	t.Helper()
	return packagingtest.FakeHarness(t, dir, testVersions, "1.21.14")
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
