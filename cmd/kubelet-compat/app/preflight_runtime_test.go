package app

import (
	"strings"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// TestPreflightRuntimeRefusals: preflight refuses an upgrade whose target
// kubelet the node's runtime does not serve, and names the runtime step
// that must come first.
func TestPreflightRuntimeRefusals(t *testing.T) {
	for _, tc := range []struct {
		name         string
		apis         []string
		runtime, ver string
		cgroupV1     bool
		args         []string
		want         string
	}{
		{name: "a 1.26+ kubelet on a runtime without CRI v1", apis: []string{cri.APIv1alpha2}, runtime: "containerd", ver: "v1.5.18",
			args: []string{"--node", "--from", "v1.25.16", "--to", "v1.26.15"},
			want: "runtime: kubelet 1.26 needs CRI v1, which containerd v1.5.18 does not serve (it answers v1alpha2): first move the runtime to containerd 1.7.35 (make runtime RUNTIME_COMPONENTS=containerd@1.7.35)"},
		{name: "a kubelet <= 1.22 on containerd 2.x", apis: []string{cri.APIv1}, runtime: "containerd", ver: "v2.4.2",
			args: []string{"--node", "--from", "v1.23.17", "--to", "v1.22.17"},
			want: "runtime: kubelet 1.22 speaks only CRI v1alpha2, which containerd v2.4.2 does not serve (it answers v1): first move the runtime to containerd 1.7.35"},
		{name: "without --node, --runtime names the runtime", apis: []string{cri.APIv1},
			args: []string{"-f", "testdata/corpus", "--runtime", "containerd@2.4.2", "--from", "v1.23.17", "--to", "v1.22.17"},
			want: "runtime: kubelet 1.22 speaks only CRI v1alpha2, which containerd 2.4.2 does not serve (it answers v1)"},
		{name: "a bad --runtime", apis: []string{cri.APIv1},
			args: []string{"-f", "testdata/corpus", "--runtime", "containerd", "--from", "v1.23.17", "--to", "v1.24.17"},
			want: `--runtime "containerd": want NAME@VERSION, e.g. containerd@1.7.35`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.apis...)
			if tc.runtime != "" {
				f.srv.SetVersion(tc.runtime, tc.ver)
			}
			if code := f.run(append([]string{"preflight"}, tc.args...)...); code != ExitError {
				t.Fatalf("exit %d, want 1; stdout %s", code, f.stdout.String())
			}
			assertOneErrorLine(t, f.stderr.String(), tc.want)
			assert.Check(t, is.Equal(f.stdout.String(), ""), "a refusal prints no report")
		})
	}
}

// TestPreflightRuntimeServed: a runtime that serves both kubelets is one
// note of the report.
func TestPreflightRuntimeServed(t *testing.T) {
	for _, tc := range []struct {
		name         string
		apis         []string
		runtime, ver string
		cgroupV1     bool
		args         []string
		want         string
	}{
		{name: "containerd 1.6.20 serves 1.25 and 1.26", apis: []string{cri.APIv1, cri.APIv1alpha2}, runtime: "containerd", ver: "1.6.20~ds1",
			args: []string{"--node", "--from", "v1.25.16", "--to", "v1.26.15"},
			want: "note: runtime: containerd 1.6.20~ds1 (answers CRI v1, v1alpha2) serves kubelet 1.25 and 1.26"},
		{name: "containerd 2.x serves 1.23 and 1.24", apis: []string{cri.APIv1}, runtime: "containerd", ver: "v2.4.2",
			args: []string{"--node", "--from", "v1.23.17", "--to", "v1.24.17"},
			want: "note: runtime: containerd v2.4.2 (answers CRI v1) serves kubelet 1.23 and 1.24"},
		{name: "another runtime is not checked", apis: []string{cri.APIv1},
			args: []string{"--node", "--from", "v1.30.14", "--to", "v1.31.14"},
			want: "note: runtime: crifake 1.0.0 is not in the runtime matrix (containerd): not checked"},
		{name: "1.35 on a cgroup v1 host", apis: []string{cri.APIv1, cri.APIv1alpha2}, runtime: "containerd", ver: "v1.7.35", cgroupV1: true,
			args: []string{"--node", "--from", "v1.34.12", "--to", "v1.35.8"},
			want: "note: runtime: kubelet 1.35 refuses to start on this cgroup v1 host unless its config sets failCgroupV1: false (KEP-5573)"},
		{name: "--runtime without --node: the matrix's APIs, no cgroup check", apis: []string{cri.APIv1},
			args: []string{"-f", "testdata/corpus", "--runtime", "containerd@2.4.2", "--from", "v1.34.12", "--to", "v1.35.8"},
			want: "note: runtime: containerd 2.4.2 (serves, per the matrix, CRI v1) serves kubelet 1.34 and 1.35\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.apis...)
			if tc.runtime != "" {
				f.srv.SetVersion(tc.runtime, tc.ver)
			}
			saved := cgroupV1Host
			defer func() { cgroupV1Host = saved }()
			cgroupV1Host = func() (bool, error) { return tc.cgroupV1, nil }
			if code := f.run(append([]string{"preflight"}, tc.args...)...); code != 0 {
				t.Fatalf("exit %d: %s", code, f.stderr.String())
			}
			assert.Check(t, is.Contains(f.stdout.String(), tc.want))
			assert.Check(t, !strings.Contains(f.stderr.String(), "error"), f.stderr.String())
		})
	}
}
