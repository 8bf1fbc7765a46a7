package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubelet-compat/kubelet-compat/pkg/packaging/packagingtest"
)

const runtimeGoldenFile = "testdata/SHA256SUMS-runtime"

// buildRuntime runs the command for the runtime set on the fake output of
// make runtime and returns the SHA256SUMS of both formats, as the golden
// file lists them.
func buildRuntime(t *testing.T) (string, string) {
	t.Helper()
	work := t.TempDir()
	input := filepath.Join(work, "runtime")
	packagingtest.FakeRuntime(t, input)
	out := filepath.Join(work, "out")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"-set", "runtime", "-format", "all", "-input", input, "-output", out,
		"-versions", strings.Join(packagingtest.RuntimeComponents, ","),
		"-source-date-epoch", fmt.Sprint(packagingtest.Epoch), "-jobs", "2"}, &stdout, &stderr)
	assert.NilError(t, err, stderr.String())
	var got strings.Builder
	for _, dir := range []string{"rpms", "debs"} {
		b, err := os.ReadFile(filepath.Join(out, dir, "SHA256SUMS"))
		assert.NilError(t, err)
		got.WriteString(strings.ReplaceAll(string(b), "  ", "  "+dir+"/"))
	}
	return got.String(), stdout.String()
}

// TestRuntimeGoldenChecksums: the runtime set (-set runtime) comes out of
// the same command: runtime-unversioned and one package per component and
// version, byte-identical for the same input and SOURCE_DATE_EPOCH (two
// builds compare equal, and equal testdata/SHA256SUMS-runtime, which
// -update-golden rewrites).
func TestRuntimeGoldenChecksums(t *testing.T) {
	packagingtest.RequireTools(t, "make rpm-deps deb-deps", "rpmbuild", "rpm", "dpkg-deb")
	got, stdout := buildRuntime(t)
	again, _ := buildRuntime(t)
	assert.Check(t, is.Equal(got, again), "two builds of the same input differ")
	assert.Check(t, is.Contains(stdout, "built 6 RPMs into "))
	assert.Check(t, is.Contains(stdout, "built 6 .debs into "))
	for _, name := range []string{
		"rpms/runtime-unversioned-1.0.0-3.kc.noarch.rpm",
		"rpms/runtime-containerd-1.7.35-1.7.35-1.kc.x86_64.rpm",
		"rpms/runtime-containerd-2.4.2-2.4.2-1.kc.x86_64.rpm",
		"rpms/runtime-runc-1.5.3-1.5.3-1.kc.x86_64.rpm",
		"rpms/runtime-crictl-1.34.0-1.34.0-1.kc.x86_64.rpm",
		"rpms/runtime-cni-1.10.0-1.10.0-1.kc.x86_64.rpm",
		"debs/runtime-unversioned_1.0.0-3_all.deb",
		"debs/runtime-containerd-1.7.35_1.7.35-1_amd64.deb",
		"debs/runtime-containerd-2.4.2_2.4.2-1_amd64.deb",
		"debs/runtime-runc-1.5.3_1.5.3-1_amd64.deb",
		"debs/runtime-crictl-1.34.0_1.34.0-1_amd64.deb",
		"debs/runtime-cni-1.10.0_1.10.0-1_amd64.deb",
	} {
		assert.Check(t, is.Contains(got, "  "+name+"\n"))
	}
	checkGolden(t, runtimeGoldenFile, "# sha256 of the runtime packages of the fake make runtime output (packagingtest.FakeRuntime),\n"+
		"# SOURCE_DATE_EPOCH=1622505600, by build-packages -set runtime -format all, with:\n", got, "TestRuntimeGoldenChecksums")
}

func TestRuntimeFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "unknown set", args: []string{"-set", "kernel", "-format", "deb", "-source-date-epoch", "1"}, wantErr: `-set "kernel"`},
		{name: "unknown component", args: []string{"-set", "runtime", "-format", "deb", "-source-date-epoch", "1", "-versions", "docker@1.0.0"}, wantErr: "not known"},
		{name: "unbuilt version", args: []string{"-set", "runtime", "-format", "deb", "-source-date-epoch", "1", "-versions", "runc@1.0.0"}, wantErr: "not known"},
		{name: "missing input", args: []string{"-set", "runtime", "-format", "deb", "-source-date-epoch", "1", "-versions", "runc", "-input", "/nonexistent", "-output", "/nonexistent/out"}, wantErr: "runc@1.5.3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tc.args, &stdout, &stderr)
			assert.Check(t, is.ErrorContains(err, tc.wantErr))
		})
	}
}
