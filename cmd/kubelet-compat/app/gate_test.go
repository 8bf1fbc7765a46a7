package app

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	"github.com/kubelet-compat/kubelet-compat/pkg/gate"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

const webUID = "6a1e0000-0000-4000-8000-000000000001"

// fakePod is a pod the fake runtime runs: a sandbox and its containers.
type fakePod struct {
	name, uid, sandbox string
	notReady           bool
	containers         []fakeContainer
}

type fakeContainer struct {
	name, id string
	state    cri.ContainerState
}

func running(name, id string) fakeContainer {
	return fakeContainer{name: name, id: id, state: cri.ContainerRunning}
}

func stopped(name, id string) fakeContainer {
	return fakeContainer{name: name, id: id, state: cri.ContainerExited}
}

// web is the tests' pod: an app and its sidecar.
func web(cs ...fakeContainer) fakePod {
	if cs == nil {
		cs = []fakeContainer{running("app", "c-app"), running("side", "c-side")}
	}
	return fakePod{name: "web", uid: webUID, sandbox: "sb-web", containers: cs}
}

// setRuntime makes the fake runtime run pods (namespace default).
func (f *fixture) setRuntime(pods ...fakePod) {
	var sbs []cri.Sandbox
	var cs []cri.Container
	for _, p := range pods {
		sbs = append(sbs, cri.Sandbox{ID: p.sandbox, Name: p.name, Namespace: "default", UID: p.uid, Ready: !p.notReady, CreatedAt: beforeStart})
		for _, c := range p.containers {
			cs = append(cs, cri.Container{ID: c.id, SandboxID: p.sandbox, Name: c.name, State: c.state, CreatedAt: beforeStart})
		}
	}
	f.srv.Set(sbs, cs)
}

// writeSyncRecord writes the sync record of the fixture's running kubelet
// (it took its start a moment after /proc's) beside the compat file.
func (f *fixture) writeSyncRecord(pods ...kubeletcompat.PodRecord) {
	f.t.Helper()
	rec := &kubeletcompat.SyncRecord{APIVersion: kubeletcompat.RecordAPIVersion, Kind: kubeletcompat.RecordKind, KubeletVersion: "v1.35.2",
		KubeletPID: kubeletPID, KubeletStartedAt: kubeletStart.Add(200 * time.Millisecond), WrittenAt: f.now, CompatFile: "absent", Pods: pods}
	assert.NilError(f.t, kubeletcompat.WriteSyncRecord(kubeletcompat.DefaultRecordPath(f.compatPath()), rec))
}

// webSynced is web's pod record, last synced at.
func webSynced(at time.Time) kubeletcompat.PodRecord {
	return kubeletcompat.PodRecord{UID: webUID, Namespace: "default", Name: "web", Syncs: 2, FirstSyncAt: kubeletStart, LastSyncAt: at,
		Containers: []kubeletcompat.ContainerRecord{{Name: "app", ID: "c-app"}, {Name: "side", ID: "c-side"}}}
}

// takePicture runs picture and returns the file.
func (f *fixture) takePicture() string {
	f.t.Helper()
	path := filepath.Join(f.dir, "picture.json")
	if code := f.run("picture", "-o", path); code != ExitOK {
		f.t.Fatalf("picture: exit %d, stderr %q", code, f.stderr.String())
	}
	return path
}

// pictureBefore rewrites the picture as one taken before the running
// kubelet started, under another kubelet: the kubelet step's.
func (f *fixture) pictureBefore(path string) {
	f.t.Helper()
	data, err := os.ReadFile(path)
	assert.NilError(f.t, err)
	p, err := gate.ParsePicture(data)
	assert.NilError(f.t, err)
	p.Runtime.Taken = kubeletStart.Add(-time.Minute)
	p.Kubelet = gate.Kubelet{PID: 1111, StartedAt: kubeletStart.Add(-24 * time.Hour)}
	data, err = gate.MarshalPicture(p)
	assert.NilError(f.t, err)
	assert.NilError(f.t, os.WriteFile(path, data, 0600))
}

func TestPictureWritesTheNode(t *testing.T) {
	f := newFixture(t, cri.APIv1)
	f.runKubelet("v1.35.2")
	f.setRuntime(web(), fakePod{name: "done", uid: "6a1e0000-0000-4000-8000-000000000002", sandbox: "sb-done", notReady: true,
		containers: []fakeContainer{stopped("work", "c-work")}})
	path := f.takePicture()
	assert.Check(t, is.Contains(f.stdout.String(), "node node-1, 1 pod(s), 2 running container(s); kubelet pid 4242 started 2023-11-14T22:30:00Z (process scan)"))
	fi, err := os.Stat(path)
	assert.NilError(t, err)
	assert.Equal(t, fi.Mode().Perm(), os.FileMode(0600))
	data, err := os.ReadFile(path)
	assert.NilError(t, err)
	p, err := gate.ParsePicture(data)
	assert.NilError(t, err)
	assert.Equal(t, p.Node, "node-1")
	assert.Equal(t, p.Kubelet, gate.Kubelet{PID: kubeletPID, StartedAt: kubeletStart.UTC()})
	assert.Equal(t, p.CRIAPIVersion, cri.APIv1)
	assert.Assert(t, p.Runtime.Taken.Equal(now))
	assert.Equal(t, len(p.Runtime.Sandboxes), 2)
	assert.Equal(t, len(p.Runtime.Containers), 3)
	leftovers, _ := filepath.Glob(filepath.Join(f.dir, ".picture.json*"))
	assert.Check(t, is.Len(leftovers, 0))
}

// TestGateRuntimeStepWaitsForASyncAfterSince is the runtime step's
// scenario through the command: the record's last sync of the pod is before
// --since, the fixed wait is long over: not yet (exit 3), until the record
// shows a sync after --since.
func TestGateRuntimeStepWaitsForASyncAfterSince(t *testing.T) {
	f := newFixture(t, cri.APIv1)
	f.runKubelet("v1.35.2")
	f.setRuntime(web())
	pic := f.takePicture()
	since := now.Add(-time.Minute) // the runtime came back a minute ago
	args := []string{"gate", "--picture", pic, "--step", "runtime", "--since", since.Format(time.RFC3339), "--poll", "10ms"}

	f.writeSyncRecord(webSynced(since.Add(-10 * time.Second)))
	code := f.run(append(args, "--timeout", "100ms")...)
	assert.Equal(t, code, ExitGateNotYet, "stdout %s\nstderr %s", f.stdout.String(), f.stderr.String())
	assert.Check(t, is.Contains(f.stdout.String(), "gate runtime step on node node-1: not-yet"))
	assert.Check(t, is.Contains(f.stdout.String(), "waiting for a sync of the pod after 2026-01-02T03:03:05Z: the last was at 2026-01-02T03:02:55Z"))
	assertOneErrorLine(t, f.stderr.String(), "not yet after 100ms: 1 pod(s) not known to be synced since 2026-01-02T03:03:05Z")

	// The kubelet syncs the pod while the gate polls.
	var stdout, stderr bytes.Buffer
	done := make(chan int)
	go func() { done <- f.runTo(context.Background(), &stdout, &stderr, append(args, "--timeout", "30s")...) }()
	time.Sleep(100 * time.Millisecond)
	f.writeSyncRecord(webSynced(since.Add(30 * time.Second)))
	select {
	case code = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the gate did not pass within 20s of the sync")
	}
	assert.Equal(t, code, ExitOK, "stdout %s\nstderr %s", stdout.String(), stderr.String())
	assert.Check(t, is.Contains(stdout.String(), ": passed\n"))
	assert.Check(t, is.Contains(stdout.String(), "sync evidence: record: the sync record of the running kubelet v1.35.2 pid 4242"))
	assert.Check(t, is.Contains(stdout.String(), "default/web uid "+webUID+": kept, synced\n"))
	assert.Check(t, is.Equal(stderr.String(), ""))
}

// TestGateSidecarGoneIsALoss is the sidecar scenario through the command.
func TestGateSidecarGoneIsALoss(t *testing.T) {
	f := newFixture(t, cri.APIv1)
	f.runKubelet("v1.35.2")
	f.setRuntime(web())
	pic := f.takePicture()
	f.setRuntime(web(running("app", "c-app"), stopped("side", "c-side")))
	f.writeSyncRecord(webSynced(now))
	code := f.run("gate", "--picture", pic, "--step", "runtime", "--since", now.Add(-time.Minute).Format(time.RFC3339), "--timeout", "5s")
	assert.Equal(t, code, ExitGateLost, "stdout %s\nstderr %s", f.stdout.String(), f.stderr.String())
	assert.Check(t, is.Contains(f.stdout.String(), "default/web uid "+webUID+": container-gone\n"))
	assert.Check(t, is.Contains(f.stdout.String(), "container side c-side runs no more (exited, code 0), no kill of it recorded"))
	assertOneErrorLine(t, f.stderr.String(), "lost: 1 pod(s) lost containers across the runtime swap")
}

func TestGateKubeletStep(t *testing.T) {
	tests := []struct {
		name string
		// record: the running kubelet's sync record of web, nil for none.
		record   *kubeletcompat.PodRecord
		extra    []string
		before   bool // the picture was taken before the kubelet started
		want     int
		contains []string
	}{
		{name: "synced by the new kubelet", record: podRecord(webSynced(kubeletStart.Add(20 * time.Second))), before: true, want: ExitOK,
			contains: []string{"sync evidence: record:", "synced at 2023-11-14T22:30:20Z"}},
		{name: "no record: the fixed wait", before: true, want: ExitOK,
			contains: []string{"sync evidence: fixed-wait: no sync record", "assumed synced: the fixed wait of 30s since 2023-11-14T22:30:00Z is over"}},
		{name: "no record, one required", before: true, extra: []string{"--require-record"}, want: ExitGateNotYet,
			contains: []string{"sync evidence: none:", "waiting for a sync record of the running kubelet (required: no fixed wait)"}},
		{name: "the kubelet has not restarted since the picture", record: podRecord(webSynced(now)), want: ExitGateNotYet,
			contains: []string{"waiting for: the running kubelet (pid 4242) started 2023-11-14T22:30:00Z, before the picture (2026-01-02T03:04:05Z): it has not restarted yet"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, cri.APIv1)
			f.runKubelet("v1.35.2")
			f.setRuntime(web())
			pic := f.takePicture()
			if tt.before {
				f.pictureBefore(pic)
			}
			if tt.record != nil {
				f.writeSyncRecord(*tt.record)
			}
			code := f.run(append([]string{"gate", "--picture", pic, "--step", "kubelet", "--timeout", "50ms", "--poll", "10ms"}, tt.extra...)...)
			assert.Equal(t, code, tt.want, "stdout %s\nstderr %s", f.stdout.String(), f.stderr.String())
			for _, c := range tt.contains {
				assert.Check(t, is.Contains(f.stdout.String(), c))
			}
		})
	}
}

// TestGateFirstLookOutlastsTheTimeout: a runtime slower to answer the
// first look than --timeout still gets that look to its end (a verdict
// that says what it waits for), not "no verdict" from a cut request.
func TestGateFirstLookOutlastsTheTimeout(t *testing.T) {
	f := newFixture(t, cri.APIv1)
	f.runKubelet("v1.35.2")
	f.setRuntime(web())
	pic := f.takePicture()
	f.writeSyncRecord(*podRecord(webSynced(now)))
	var once sync.Once
	f.srv.OnCall("ListPodSandbox", func() { once.Do(func() { time.Sleep(300 * time.Millisecond) }) })
	code := f.run("gate", "--picture", pic, "--step", "kubelet", "--timeout", "50ms", "--poll", "10ms")
	assert.Equal(t, code, ExitGateNotYet, "stdout %s\nstderr %s", f.stdout.String(), f.stderr.String())
	assert.Check(t, is.Contains(f.stdout.String(), "it has not restarted yet"))
}

// TestGateRefusedRecord: a record the kubelet's ownership checks refuse is
// no record, and the gate says so.
func TestGateRefusedRecord(t *testing.T) {
	f := newFixture(t, cri.APIv1)
	f.runKubelet("v1.35.2")
	f.setRuntime(web())
	pic := f.takePicture()
	f.writeSyncRecord(webSynced(now))
	path := kubeletcompat.DefaultRecordPath(f.compatPath())
	assert.NilError(t, os.Chmod(path, 0666))
	code := f.run("gate", "--picture", pic, "--step", "runtime", "--since", now.Add(-time.Minute).Format(time.RFC3339), "--timeout", "5s")
	assert.Equal(t, code, ExitOK, "stdout %s\nstderr %s", f.stdout.String(), f.stderr.String())
	assert.Check(t, is.Contains(f.stdout.String(), "sync evidence: fixed-wait: no sync record"))
	assert.Check(t, is.Contains(f.stdout.String(), "record "+path+": sync record refused, judged as without one:"))
	assert.Check(t, is.Contains(f.stderr.String(), "kubelet-compat: warning: sync record refused, judged as without one: "))
	assert.Check(t, is.Equal(strings.Count(f.stderr.String(), "\n"), 1))
}

func TestGateJSON(t *testing.T) {
	f := newFixture(t, cri.APIv1)
	f.runKubelet("v1.35.2")
	f.setRuntime(web())
	pic := f.takePicture()
	f.setRuntime()
	code := f.run("gate", "--picture", pic, "--step", "runtime", "--since", now.Add(-time.Minute).Format(time.RFC3339), "--timeout", "50ms", "-o", "json")
	assert.Equal(t, code, ExitGateGoneOnly, "stdout %s\nstderr %s", f.stdout.String(), f.stderr.String())
	var r gateReport
	assert.NilError(t, json.Unmarshal(f.stdout.Bytes(), &r))
	assert.Equal(t, r.Verdict.Result, gate.GoneOnly)
	assert.Equal(t, r.Verdict.SyncEvidence, gate.ByFixedWait)
	assert.Equal(t, r.Kubelet.PID, kubeletPID)
	assert.Equal(t, len(r.Verdict.Pods), 1)
	assert.Equal(t, r.Verdict.Pods[0].Outcome, gate.Gone)
	assertOneErrorLine(t, f.stderr.String(), "gone only: nothing lost, but 1 pod(s) of the picture run no more")
}

func TestGateBadInput(t *testing.T) {
	tests := []struct {
		name string
		args []string
		// picture is written to the picture file when set ("-": none).
		picture string
		want    string
	}{
		{name: "no picture flag", args: []string{"--step", "kubelet"}, want: "--picture is required"},
		{name: "no step", args: []string{"--picture", "{pic}"}, want: "--step is required: kubelet or runtime"},
		{name: "another step", args: []string{"--picture", "{pic}", "--step", "containerd"}, want: `--step: unknown step "containerd"`},
		{name: "bad since", args: []string{"--picture", "{pic}", "--step", "runtime", "--since", "yesterday"}, want: `--since: invalid time "yesterday"`},
		{name: "bad output", args: []string{"--picture", "{pic}", "--step", "runtime", "-o", "yaml"}, want: `unknown output format "yaml"`},
		{name: "zero timeout", args: []string{"--picture", "{pic}", "--step", "runtime", "--timeout", "0s"}, want: `--timeout: must be positive`},
		{name: "missing picture", picture: "-", args: []string{"--picture", "{pic}", "--step", "runtime"}, want: "no picture {pic}: take one with kubelet-compat picture before the swap"},
		{name: "corrupt picture", picture: `{"apiVersion": "kubelet-compat.io/v1alpha1", "kind": "NodePic`, args: []string{"--picture", "{pic}", "--step", "runtime"}, want: "picture {pic}: not a picture: unexpected EOF"},
		{name: "a record is no picture", picture: `{"apiVersion": "kubelet-compat.io/v1alpha1", "kind": "PodSyncRecord"}`, args: []string{"--picture", "{pic}", "--step", "runtime"}, want: `not a picture: apiVersion "kubelet-compat.io/v1alpha1", kind "PodSyncRecord"`},
		{name: "another node's picture", args: []string{"--picture", "{pic}", "--step", "runtime", "--node-name", "node-2"}, want: `picture {pic} is of node "node-1", this is node "node-2"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, cri.APIv1)
			f.runKubelet("v1.35.2")
			f.setRuntime(web())
			pic := f.takePicture()
			switch tt.picture {
			case "-":
				os.Remove(pic)
			case "":
			default:
				assert.NilError(t, os.WriteFile(pic, []byte(tt.picture), 0600))
			}
			args := []string{"gate"}
			for _, a := range tt.args {
				args = append(args, strings.ReplaceAll(a, "{pic}", pic))
			}
			if code := f.run(args...); code != ExitError {
				t.Fatalf("exit %d, want 1; stdout %q stderr %q", code, f.stdout.String(), f.stderr.String())
			}
			assertOneErrorLine(t, f.stderr.String(), strings.ReplaceAll(tt.want, "{pic}", pic))
			assert.Check(t, is.Equal(f.stdout.String(), ""))
		})
	}
}

func TestPictureBadInput(t *testing.T) {
	f := newFixture(t, cri.APIv1)
	f.selectKubelet("v1.35.2") // installed, not running
	f.setRuntime(web())
	if code := f.run("picture"); code != ExitError {
		t.Fatalf("exit %d, want 1", code)
	}
	assertOneErrorLine(t, f.stderr.String(), "-o FILE is required")
	path := filepath.Join(f.dir, "picture.json")
	if code := f.run("picture", "-o", path); code != ExitError {
		t.Fatalf("exit %d, want 1", code)
	}
	assertOneErrorLine(t, f.stderr.String(), "no running kubelet")
	_, err := os.Stat(path)
	assert.Check(t, os.IsNotExist(err), "a picture without a kubelet was written")
}

func podRecord(p kubeletcompat.PodRecord) *kubeletcompat.PodRecord { return &p }
