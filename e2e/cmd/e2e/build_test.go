package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// TestPrintBuild: every mode, on each provider it runs on, and the forms
// of e2e/e2e.mk's header → what make e2e-binaries builds. The mode table
// is the e2e's (plans); e2e.mk only runs these lines.
func TestPrintBuild(t *testing.T) {
	const (
		kindPatched  = " BINARIES=kubelet,kubeadm,kubectl"
		kindReleased = " PATCHED=false BINARIES=kubelet,kube-apiserver,kube-controller-manager,kube-scheduler,kube-proxy"
		runtime      = "runtime RUNTIME_COMPONENTS=containerd@1.7.35,containerd@2.4.2,runc@1.5.3,cni-plugins@1.10.0"
	)
	root := filepath.Join(t.TempDir(), "e2e-root")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{args: []string{"-mode", "ci"}, want: []string{
			"build VERSIONS=1.20.15,1.21.14 BINARIES=kubelet", "build VERSIONS=1.21.14 PATCHED=false BINARIES=kubelet"}},
		{args: []string{"-mode", "bench"}, want: []string{
			"build VERSIONS=1.20.15,1.21.14 BINARIES=kubelet", "build VERSIONS=1.21.14 PATCHED=false BINARIES=kubelet"}},
		{args: []string{"-mode", "full"}, want: []string{
			"build VERSIONS=1.18.19,1.19.16,1.20.15,1.21.14 BINARIES=kubelet",
			"build VERSIONS=1.19.16,1.20.15,1.21.14 PATCHED=false BINARIES=kubelet"}},
		{args: []string{"-mode", "api"}, want: []string{
			"build VERSIONS=1.20.15,1.21.14 BINARIES=kubelet,kube-apiserver",
			"build VERSIONS=1.21.14 PATCHED=false BINARIES=kubelet",
			"build VERSIONS=1.20.15,1.21.14 PATCHED=false BINARIES=kube-controller-manager"}},
		{args: []string{"-mode", "api", "-steps", "1.32.13:1.33.13"}, want: []string{
			"build VERSIONS=1.32.13,1.33.13 BINARIES=kubelet,kube-apiserver",
			"build VERSIONS=1.33.13 PATCHED=false BINARIES=kubelet",
			"build VERSIONS=1.32.13,1.33.13 PATCHED=false BINARIES=kube-controller-manager"}},
		{args: []string{"-mode", "admission"}, want: []string{
			"build VERSIONS=1.20.15,1.21.14 BINARIES=kubelet,kube-apiserver", "build VERSIONS=1.21.14 PATCHED=false BINARIES=kubelet"}},
		{args: []string{"-mode", "devices"}, want: []string{
			"build VERSIONS=1.18.19,1.19.16,1.20.15,1.21.14 BINARIES=kubelet,kube-apiserver",
			"build VERSIONS=1.19.16,1.20.15,1.21.14 PATCHED=false BINARIES=kubelet"}},
		{args: []string{"-mode", "steps", "-versions", "1.21.14,1.22.17,1.23.17"}, want: []string{
			"build VERSIONS=1.21.14,1.22.17,1.23.17 BINARIES=kubelet", "build VERSIONS=1.22.17,1.23.17 PATCHED=false BINARIES=kubelet"}},
		{args: []string{"-mode", "steps", "-versions", "1.20.15,1.21.14", "-steps", "1.28.15:1.31.14"}, want: []string{
			"build VERSIONS=1.20.15,1.21.14,1.28.15,1.31.14 BINARIES=kubelet", "build VERSIONS=1.21.14,1.31.14 PATCHED=false BINARIES=kubelet"}},
		{args: []string{"-mode", "steps", "-steps", "1.31.14:1.30.14"}, want: []string{ // a rollback: its target as released
			"build VERSIONS=1.31.14,1.30.14 BINARIES=kubelet", "build VERSIONS=1.30.14 PATCHED=false BINARIES=kubelet"}},
		{args: []string{"-mode", "runtime", "-runtime-kubelet", "1.37.2"}, want: []string{
			"build VERSIONS=1.37.2 BINARIES=kubelet", "build VERSIONS=1.37.2 PATCHED=false BINARIES=kubelet", runtime}},
		{args: []string{"-mode", "runtime", "-runtime-kubelet", "1.37.2", "-runtime-steps", "containerd@1.7.35:containerd@2.4.2", "-runtime-order", "1.36.5:1.37.2"}, want: []string{
			"build VERSIONS=1.36.5,1.37.2 BINARIES=kubelet", "build VERSIONS=1.36.5,1.37.2 PATCHED=false BINARIES=kubelet", runtime}},
		// The shim faults need only the patched kubelet, and the
		// containerds they compare.
		{args: []string{"-mode", "runtime", "-shim-faults", "all"}, want: []string{
			"build VERSIONS=1.37.2 BINARIES=kubelet", "runtime RUNTIME_COMPONENTS=containerd@1.7.35,containerd@1.7.36+compat.1,runc@1.5.3,cni-plugins@1.10.0"}},
		{args: []string{"-provider", "kind", "-mode", "ci"}, want: []string{
			"build VERSIONS=1.20.15,1.21.14" + kindPatched, "build VERSIONS=1.20.15,1.21.14" + kindReleased}},
		{args: []string{"-provider", "kind", "-mode", "full"}, want: []string{
			"build VERSIONS=1.18.19,1.19.16,1.20.15,1.21.14" + kindPatched, "build VERSIONS=1.18.19,1.19.16,1.20.15,1.21.14" + kindReleased}},
		{args: []string{"-provider", "kind", "-mode", "fleet"}, want: []string{
			"build VERSIONS=1.30.14,1.31.14" + kindPatched, "build VERSIONS=1.30.14,1.31.14" + kindReleased}},
		{args: []string{"-provider", "kind", "-mode", "fleet", "-versions", "1.33.13,1.34.12,1.35.8"}, want: []string{ // the minors roll's chain
			"build VERSIONS=1.33.13,1.34.12,1.35.8" + kindPatched, "build VERSIONS=1.33.13,1.34.12,1.35.8" + kindReleased}},
		{args: []string{"-provider", "kind", "-mode", "steps", "-steps", "1.31.14:1.34.12"}, want: []string{ // the control plane's minors too
			"build VERSIONS=1.31.14,1.34.12,1.32.13,1.33.13" + kindPatched, "build VERSIONS=1.31.14,1.34.12,1.32.13,1.33.13" + kindReleased}},
		{args: []string{"-provider", "kind", "-mode", "steps", "-road", "1.30.14,1.31.14,containerd@1.7.35,1.32.13,containerd@2.4.2,1.33.13"}, want: []string{
			"build VERSIONS=1.30.14,1.31.14,1.32.13,1.33.13" + kindPatched, "build VERSIONS=1.30.14,1.31.14,1.32.13,1.33.13" + kindReleased,
			"runtime-deb RUNTIME_COMPONENTS=containerd@1.7.35,containerd@2.4.2,runc@1.5.3"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"-print-build", "-root", root}, tc.args...), &stdout, &stderr)
			assert.Equal(t, code, 0, stderr.String())
			assert.DeepEqual(t, strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n"), tc.want)
			_, err := os.Stat(root)
			assert.Assert(t, os.IsNotExist(err), "made its root")
		})
	}
}

// TestPrintBuildRefuses: a plan the e2e would refuse prints nothing to
// build (make stops there).
func TestPrintBuildRefuses(t *testing.T) {
	root := filepath.Join(t.TempDir(), "e2e-root")
	for _, args := range [][]string{
		{"-mode", "steps"},
		{"-mode", "nosuch"},
		{"-provider", "kind", "-mode", "steps", "-steps", "1.18.19:1.21.14"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"-print-build", "-root", root}, args...), &stdout, &stderr)
		assert.Equal(t, code, 2, "%v", args)
		assert.Equal(t, stdout.String(), "", "%v", args)
	}
}
