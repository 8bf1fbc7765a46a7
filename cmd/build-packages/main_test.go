package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubelet-compat/kubelet-compat/pkg/packaging/packagingtest"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/SHA256SUMS from this build (after a change that is meant to change the packages' bytes)")

// goldenVersions: 1.21.14 with the control-plane binaries (a -master
// package), 1.20.15 without.
var goldenVersions = []string{"1.20.15", "1.21.14"}

const goldenFile = "testdata/SHA256SUMS"

// toolVersions is the line of testdata/SHA256SUMS that names the tools
// the sums were recorded with: other versions of rpmbuild or dpkg-deb
// may write other bytes for the same input.
func toolVersions(t *testing.T) string {
	t.Helper()
	first := func(s string) string { return strings.TrimSpace(strings.SplitN(s, "\n", 2)[0]) }
	return "# tools: " + first(packagingtest.Run(t, "rpmbuild", "--version")) + " | " + first(packagingtest.Run(t, "dpkg-deb", "--version"))
}

// TestGoldenChecksums builds both formats from the fake harness with a
// fixed SOURCE_DATE_EPOCH and wants the sha256 of every package recorded
// in testdata/SHA256SUMS: the sums the two commands before this one
// (rpm/cmd/build-rpms, deb/cmd/build-debs) gave, so the refactoring into
// one command changed no byte. A change meant to change the packages
// (a new release, another file) rewrites the file with -update-golden.
func TestGoldenChecksums(t *testing.T) {
	packagingtest.RequireTools(t, "make rpm-deps deb-deps", "rpmbuild", "rpm", "dpkg-deb")
	work := t.TempDir()
	input := filepath.Join(work, "harness")
	cli := packagingtest.FakeHarness(t, input, goldenVersions, "1.21.14")
	out := filepath.Join(work, "out")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"-format", "all", "-input", input, "-output", out,
		"-versions", strings.Join(goldenVersions, ","), "-kubelet-compat", cli,
		"-source-date-epoch", fmt.Sprint(packagingtest.Epoch), "-jobs", "2"}, &stdout, &stderr)
	assert.NilError(t, err, stderr.String())
	var got strings.Builder
	for _, dir := range []string{"rpms", "debs"} {
		b, err := os.ReadFile(filepath.Join(out, dir, "SHA256SUMS"))
		assert.NilError(t, err)
		got.WriteString(strings.ReplaceAll(string(b), "  ", "  "+dir+"/"))
	}
	checkGolden(t, goldenFile, "# sha256 of the packages of the fake harness (packagingtest.FakeHarness: 1.20.15, 1.21.14 with\n"+
		"# the control-plane binaries), SOURCE_DATE_EPOCH=1622505600, by build-packages -format all, with:\n", got.String(), "TestGoldenChecksums")
	assert.Check(t, is.Contains(stdout.String(), "built 8 RPMs into "+filepath.Join(out, "rpms")))
	assert.Check(t, is.Contains(stdout.String(), "built 8 .debs into "+filepath.Join(out, "debs")))
}

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "no format", args: []string{"-source-date-epoch", "1"}, wantErr: "-format is required"},
		{name: "unknown format", args: []string{"-format", "tar"}, wantErr: `-format "tar": want rpm, deb or all`},
		{name: "no epoch", args: []string{"-format", "deb", "-source-date-epoch", ""}, wantErr: "set -source-date-epoch"},
		{name: "bad epoch", args: []string{"-format", "deb", "-source-date-epoch", "soon"}, wantErr: `source date epoch "soon"`},
		{name: "bad version", args: []string{"-format", "rpm", "-source-date-epoch", "1", "-versions", "1.x"}, wantErr: "1.x"},
		{name: "arguments", args: []string{"-format", "rpm", "extra"}, wantErr: `unexpected arguments ["extra"]`},
		{name: "another format's flag is accepted", args: []string{"-format", "deb", "-payload", "w6.xzdio", "-source-date-epoch", "x"}, wantErr: "source date epoch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tc.args, &stdout, &stderr)
			assert.Check(t, is.ErrorContains(err, tc.wantErr))
			assert.Check(t, is.Equal(stdout.String(), ""))
		})
	}
	var stderr bytes.Buffer
	assert.Check(t, run(context.Background(), []string{"-h"}, &bytes.Buffer{}, &stderr))
	for _, f := range []string{"-format", "-set", "-input", "-output", "-versions", "-release", "-revision", "-rpm-arch", "-deb-arch", "-payload", "-compression"} {
		assert.Check(t, is.Contains(stderr.String(), "  "+f+" "), "-h lists %s", f)
	}
}

// TestInterruptStopsThePackagers: an interrupt (kind's image builder
// sends one to the command, not to its group) ends the packaging tools it
// runs and removes their work directories; the command fails.
func TestInterruptStopsThePackagers(t *testing.T) {
	packagingtest.RequireTools(t, "make deb-deps", "dpkg-deb", "dpkg", "lintian")
	work := t.TempDir()
	bin := filepath.Join(work, "build-packages")
	packagingtest.Run(t, "go", "build", "-o", bin, ".")
	// A dpkg-deb that records its pid and hangs.
	fakes := filepath.Join(work, "fakes")
	pids := filepath.Join(work, "pids")
	packagingtest.WriteExecutable(t, filepath.Join(fakes, "dpkg-deb"), "#!/bin/sh\necho $$ >>"+pids+"\nexec sleep 300\n")
	input := filepath.Join(work, "harness")
	cli := packagingtest.FakeHarness(t, input, goldenVersions)
	out := filepath.Join(work, "debs")
	cmd := exec.Command(bin, "-format", "deb", "-input", input, "-output", out, "-versions", "1.21.14",
		"-kubelet-compat", cli, "-source-date-epoch", fmt.Sprint(packagingtest.Epoch), "-jobs", "2")
	cmd.Env = append(os.Environ(), "PATH="+fakes+":"+os.Getenv("PATH"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	assert.NilError(t, cmd.Start())
	deadline := time.Now().Add(time.Minute)
	for {
		if b, _ := os.ReadFile(pids); strings.Count(string(b), "\n") >= 2 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no fake dpkg-deb started: %s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	assert.NilError(t, cmd.Process.Signal(os.Interrupt))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		assert.Check(t, err != nil, "the command succeeded after an interrupt")
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the command did not end within 30 s of an interrupt")
	}
	b, err := os.ReadFile(pids)
	assert.NilError(t, err)
	for _, pid := range strings.Fields(string(b)) {
		var p int
		fmt.Sscan(pid, &p)
		assert.Check(t, syscall.Kill(p, 0) == syscall.ESRCH, "dpkg-deb %d still runs after the interrupt", p)
	}
	left, _ := filepath.Glob(filepath.Join(out, ".debbuild-*"))
	assert.Check(t, is.Len(left, 0), "work directories left behind")
	_, err = os.Stat(filepath.Join(out, "SHA256SUMS"))
	assert.Check(t, os.IsNotExist(err), "an interrupted build wrote SHA256SUMS")
}

// checkGolden wants got (sha256sum lines) to be the lines of the golden
// file, recorded with this host's rpmbuild and dpkg-deb (else it skips:
// other tools may write other bytes); -update-golden rewrites the file
// with header instead.
func checkGolden(t *testing.T, file, header, got, test string) {
	t.Helper()
	tools := toolVersions(t)
	if *updateGolden {
		assert.NilError(t, os.WriteFile(file, []byte(header+tools+"\n"+got), 0o644))
		return
	}
	golden, err := os.ReadFile(file)
	assert.NilError(t, err)
	var want strings.Builder
	recordedWith := ""
	s := bufio.NewScanner(bytes.NewReader(golden))
	for s.Scan() {
		switch line := s.Text(); {
		case strings.HasPrefix(line, "# tools: "):
			recordedWith = line
		case !strings.HasPrefix(line, "#"):
			want.WriteString(line + "\n")
		}
	}
	if recordedWith != tools {
		t.Skipf("%s was recorded with %q, this host has %q: other tools may write other bytes", file, recordedWith, tools)
	}
	assert.Check(t, is.Equal(got, want.String()),
		"the packages changed: if that is meant (a new release, another file), go test ./cmd/build-packages -run "+test+" -update-golden")
}
