package app

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	"github.com/kubelet-compat/kubelet-compat/pkg/shimgroups"
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
			want: "runtime: kubelet 1.26 needs CRI v1, which containerd v1.5.18 does not serve (it answers v1alpha2): first move the runtime to containerd 1.7.36+compat.1 (make runtime RUNTIME_COMPONENTS=containerd@1.7.36+compat.1)"},
		{name: "a kubelet <= 1.22 on containerd 2.x", apis: []string{cri.APIv1}, runtime: "containerd", ver: "v2.4.2",
			args: []string{"--node", "--from", "v1.23.17", "--to", "v1.22.17"},
			want: "runtime: kubelet 1.22 speaks only CRI v1alpha2, which containerd v2.4.2 does not serve (it answers v1): first move the runtime to containerd 1.7.36+compat.1"},
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

// runcV2Config is containerd 1.7's CRI configuration as its verbose Status
// sends it (trimmed): runc.v2 only.
const runcV2Config = `{"containerd":{"defaultRuntimeName":"runc","runtimes":{"runc":{"runtimeType":"io.containerd.runc.v2"}}}}`

// TestPreflightRuntimeRoad: --runtime on a node follows the road
// containerd supports, one minor at a time, and names the running pods
// whose RuntimeClass's handler runs a runtime type the target removes.
func TestPreflightRuntimeRoad(t *testing.T) {
	legacy := `{"containerd":{"defaultRuntimeName":"runc","runtimes":{"runc":{"runtimeType":"io.containerd.runc.v2"},"legacy":{"runtimeType":"io.containerd.runc.v1"}}}}`
	for _, tc := range []struct {
		name, running, runtime, config string
		handlers                       map[string]string // sandbox ID -> its handler
		// bootstrap: task ID -> its bundle's bootstrap.json ("": none, a
		// 1.x bundle).
		bootstrap         map[string]string
		wantErr, wantNote string
	}{
		{name: "1.6 to 1.7: a step of the road", running: "1.6.20~ds1", runtime: "containerd@1.7.36+compat.1",
			wantNote: "note: runtime: containerd 1.6.20~ds1 -> 1.7.36+compat.1 is a step of the road (one minor at a time)"},
		{name: "1.7 to 2.4 skips four minors", running: "v1.7.36+compat.1", runtime: "containerd@2.4.2",
			wantErr: "runtime: containerd 1.7.36 -> 2.4.2 skips 2.0, 2.1, 2.2, 2.3: containerd supports one minor at a time (RELEASES.md: no compatibility guarantees across minors); go through 2.0 first (docs/runtime.md, the road)"},
		{name: "one minor down: a step back", running: "v2.1.9", runtime: "containerd@2.0.14",
			wantNote: "note: runtime: containerd v2.1.9 -> 2.0.14 is a step back of the road (one minor at a time); no task runs on a shim the version it leaves started"},
		{name: "two minors down", running: "v2.4.2", runtime: "containerd@2.2.10",
			wantErr: "runtime: containerd 2.4.2 -> 2.2.10 goes down 2 minors: roll back one minor at a time (2.3 first) (docs/runtime.md, the road)"},
		{name: "2.0 down to 1.7, no task on a shim 2.0 started", running: "v2.0.14", runtime: "containerd@1.7.36+compat.1",
			bootstrap: map[string]string{"c17": ""},
			wantNote:  "note: runtime: containerd v2.0.14 -> 1.7.36+compat.1 is a step back of the road (one minor at a time); no task runs on a shim the version it leaves started"},
		{name: "2.0 down to 1.7, a task on a shim 2.0 started", running: "v2.0.14", runtime: "containerd@1.7.36+compat.1",
			bootstrap: map[string]string{"c17": "", "c20": `{"version":3,"address":"unix:///run/containerd/s/def","protocol":"ttrpc"}`},
			wantErr:   "runtime: containerd 1.7.36+compat.1 cannot reach the 1 task(s) containerd v2.0.14 started (their shims serve the task API v3 only; containerd/containerd#11720: their containers would be orphaned): k8s.io/c20; a step back to 1.x is lossless only before 2.x started any"},
		{name: "1.7 to 2.0, every pod on runc.v2", running: "v1.7.35", runtime: "containerd@2.0.14", config: legacy,
			wantNote: "note: runtime: containerd v1.7.35 -> 2.0.14 is a step of the road; no running pod runs under a runtime type 2.0.14 removes"},
		{name: "1.7 to 2.0, a pod under a runc.v1 RuntimeClass", running: "v1.7.35", runtime: "containerd@2.0.14", config: legacy,
			handlers: map[string]string{"sb-web": "legacy"},
			wantErr:  "runtime: containerd 2.0.14 has no runtime of the type 1 running pod(s) run under, which it could not start again: default/web-0 (handler legacy: io.containerd.runc.v1); move them to a RuntimeClass of io.containerd.runc.v2 first"},
		{name: "1.7 to 2.0, the default handler is runc.v1", running: "v1.7.35", runtime: "containerd@2.0.14",
			config:  `{"containerd":{"defaultRuntimeName":"old","runtimes":{"old":{"runtimeType":"io.containerd.runtime.v1.linux"}}}}`,
			wantErr: "runtime: containerd 2.0.14 has no runtime of the type 2 running pod(s) run under, which it could not start again: default/web-0 (handler old: io.containerd.runtime.v1.linux), kube-system/kube-proxy-7sh5b (handler old: io.containerd.runtime.v1.linux)"},
		{name: "1.7 to 2.0, no configuration to read", running: "v1.7.35", runtime: "containerd@2.0.14",
			wantErr: `runtime: containerd 2.0.14 removes runtime types; which handler runs which type: the runtime's verbose Status has no "config": not containerd's CRI plugin of 1.x`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, cri.APIv1, cri.APIv1alpha2)
			f.srv.SetVersion("containerd", tc.running)
			f.kubeProxyPod()
			f.srv.SetConfig(tc.config)
			for id, h := range tc.handlers {
				f.srv.SetSandboxNetwork(id, cri.SandboxStatus{RuntimeHandler: h})
			}
			for id, b := range tc.bootstrap {
				dir := filepath.Join(f.hostRoot(), shimgroups.DefaultTaskState, id)
				f.write(filepath.Join(dir, "address"), "unix:///run/containerd/s/"+id)
				if b != "" {
					f.write(filepath.Join(dir, "bootstrap.json"), b)
				}
			}
			code := f.run("preflight", "--node", "--from", "v1.30.14", "--to", "v1.31.14", "--runtime", tc.runtime)
			if tc.wantErr != "" {
				assert.Equal(t, code, ExitError, f.stdout.String())
				assertOneErrorLine(t, f.stderr.String(), tc.wantErr)
				return
			}
			assert.Equal(t, code, ExitOK, f.stderr.String())
			assert.Check(t, is.Contains(f.stdout.String(), tc.wantNote))
		})
	}
}
