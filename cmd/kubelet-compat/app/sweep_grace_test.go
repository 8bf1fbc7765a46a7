package app

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	podresfake "github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/internal/podresources/fake"
	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// TestSweepWaitsForTheNewKubelet (issue 19, item 5): on a step where no
// container hash changes (1.31 -> 1.37) and every static pod pins its UID,
// no running container "needs" the file the moment the new kubelet runs. But
// that kubelet has yet to admit its pods (the admission waivers read the
// file) and to sync them (1.33 to 1.36 write their actuated records from
// it): `select --restart-kubelet ... && kubelet-compat sweep` deleted the
// file before either. sweep keeps it for a grace period after the kubelet's
// start and until the kubelet has every pod the runtime runs.
func TestSweepWaitsForTheNewKubelet(t *testing.T) {
	plain := pod{file: "plain.yaml", yaml: plainYAML, uid: "plain-uid", created: beforeStart, ready: true}
	admitted := []podresfake.Pod{{Namespace: "default", Name: "plain-node-1"}}
	started := kubeletStart.UTC().Format(time.RFC3339)
	graceEnd := kubeletStart.Add(10 * time.Minute).UTC().Format(time.RFC3339)
	for _, tc := range []struct {
		name     string
		now      time.Time // default: long after the kubelet's start
		args     []string
		apis     []string // the pod-resources APIs the kubelet serves; default v1 and v1alpha1
		noSocket bool     // the kubelet serves no pod-resources socket
		has      []podresfake.Pod
		notAsked bool // the kubelet is not asked for its pods
		wantCode int
		wantOut  []string
		wantErr  string
	}{
		{name: "a minute after the kubelet started: kept for the grace period", now: kubeletStart.Add(time.Minute), has: admitted,
			notAsked: true, wantCode: ExitKept, wantErr: "upgrade-compat.json: the kubelet started less than --grace 10m0s ago (until " + graceEnd + ")",
			wantOut: []string{"the kubelet (pid 4242) started at " + started + ", less than the grace period of 10m0s ago: not before " + graceEnd}},
		{name: "--grace shorter than the kubelet's age: deleted", now: kubeletStart.Add(time.Minute), args: []string{"--grace", "30s"}, has: admitted,
			wantCode: ExitOK, wantOut: []string{"deleted "}},
		{name: "--grace 0 still waits for the pods", now: kubeletStart.Add(time.Second), args: []string{"--grace", "0s"},
			wantCode: ExitKept, wantErr: "1 running pod(s) the kubelet has not admitted yet",
			wantOut: []string{"pod default/plain-node-1 (uid plain-uid) runs, but the kubelet (pid 4242) has not admitted it yet (its pod-resources List does not name it)"}},
		{name: "after the grace, a running pod the kubelet has not admitted: kept",
			has:      []podresfake.Pod{{Namespace: "other", Name: "plain-node-1"}},
			wantCode: ExitKept, wantErr: "1 running pod(s) the kubelet has not admitted yet",
			wantOut: []string{"pod default/plain-node-1 (uid plain-uid) runs, but the kubelet (pid 4242) has not admitted it yet"}},
		{name: "after the grace, every running pod admitted: deleted", has: admitted, wantCode: ExitOK, wantOut: []string{"deleted "}},
		{name: "a kubelet that serves v1alpha1 only (1.18, 1.19)", apis: []string{podresfake.APIv1alpha1}, has: admitted, wantCode: ExitOK, wantOut: []string{"deleted "}},
		{name: "no pod-resources socket: nothing deleted", noSocket: true, wantCode: ExitError,
			wantErr: "cannot ask the kubelet which pods it has admitted: no pod-resources socket at "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, cri.APIv1)
			f.addStaticPods("v1.31.14", plain)
			if code := f.run("record", "--kubelet-binary", f.kubeletBinary("v1.31.14")); code != 0 {
				t.Fatalf("record exit %d: %s", code, f.stderr.String())
			}
			f.runKubelet("v1.37.2")
			// This kubelet's pod-resources socket is the one in its
			// --root-dir (short enough for a socket), where the CLI finds it
			// without --pod-resources-endpoint.
			f.podResources = nil
			root, err := os.MkdirTemp("", "kroot")
			assert.NilError(t, err)
			t.Cleanup(func() { os.RemoveAll(root) })
			var srv *podresfake.Server
			if !tc.noSocket {
				srv = podresfake.StartAt(t, filepath.Join(root, "pod-resources", "kubelet.sock"), tc.apis...)
				srv.Set(tc.has...)
			}
			if !tc.now.IsZero() {
				f.now = tc.now
			}
			args := append([]string{"sweep", "--root-dir", root, "--file", f.compatPath()}, tc.args...)
			code := f.run(args...)
			assert.Equal(t, code, tc.wantCode, "stdout %s\nstderr %s", f.stdout.String(), f.stderr.String())
			for _, want := range tc.wantOut {
				assert.Check(t, is.Contains(f.stdout.String(), want))
			}
			if tc.wantErr != "" {
				assertOneErrorLine(t, f.stderr.String(), tc.wantErr)
			}
			if srv != nil {
				assert.Check(t, (srv.Calls() == 0) == tc.notAsked, "pod-resources List calls: %d", srv.Calls())
			}
			_, err = os.Stat(f.compatPath())
			assert.Equal(t, err == nil, code != ExitOK, "file present after exit %d", code)
		})
	}
}
