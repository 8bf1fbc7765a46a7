package kubeletcompat

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var kubeletStart = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

var (
	beforeStart = kubeletStart.Add(-time.Hour)
	afterStart  = kubeletStart.Add(time.Minute)
)

// logRecorder collects what the library logs.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *logRecorder) logf(format string, args ...interface{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
}

func (r *logRecorder) count(substr string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, l := range r.lines {
		if strings.Contains(l, substr) {
			n++
		}
	}
	return n
}

// node is a kubelet root dir with an optional compat file.
type node struct {
	t    testing.TB
	path string
	log  *logRecorder
}

func newNode(t testing.TB) *node {
	return &node{t: t, path: filepath.Join(t.TempDir(), DefaultFileName), log: &logRecorder{}}
}

// record writes a file that lists the containers c1 and c2 as created by
// previous.
func (n *node) record(previous string, pods ...StaticPod) {
	n.t.Helper()
	n.recordContainers(previous, map[string]string{"c1": previous, "c2": previous}, pods...)
}

// recordContainers writes a file that lists the given containers (ID to
// hash version).
func (n *node) recordContainers(previous string, containers map[string]string, pods ...StaticPod) {
	n.t.Helper()
	f := testFile()
	f.PreviousVersion = previous
	f.Containers = nil
	for id, v := range containers {
		f.Containers = append(f.Containers, Container{ID: id, HashVersion: v})
	}
	f.StaticPods = pods
	must(n.t, WriteFile(n.path, f))
}

func (n *node) compat(own string, interval time.Duration) *Compat {
	return New(Config{
		Path:            n.path,
		KubeletVersion:  own,
		StartTime:       kubeletStart,
		Logf:            n.log.logf,
		OwnerUID:        os.Getuid(),
		RecheckInterval: interval,
	})
}

func mustHash(t testing.TB, version string, c *v1.Container) uint64 {
	t.Helper()
	v, err := ParseVersion(version)
	if err != nil {
		t.Fatal(err)
	}
	h, err := ContainerHash(v, c)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func seccompContainer() *v1.Container {
	return &v1.Container{
		Name:  "app",
		Image: "busybox:1.36",
		SecurityContext: &v1.SecurityContext{
			SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault},
		},
		LivenessProbe: &v1.Probe{
			ProbeHandler:                  v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}},
			TerminationGracePeriodSeconds: int64Ptr(10),
		},
	}
}

func int64Ptr(i int64) *int64 { return &i }

func TestDecide(t *testing.T) {
	spec := seccompContainer()
	changedImage := seccompContainer()
	changedImage.Image = "busybox:1.37"
	legacy118 := mustHash(t, "v1.18.19", spec)
	legacy120 := mustHash(t, "v1.20.15", spec)
	own, err := ContainerHash(Version{Major: 1, Minor: 21, Patch: 14}, spec)
	must(t, err)
	if legacy118 == own || legacy120 == own || legacy118 == legacy120 {
		t.Fatalf("test container must hash differently per version: %x %x %x", legacy118, legacy120, own)
	}

	tests := []struct {
		name      string
		own       string
		previous  string // "" = no compat file
		container *v1.Container
		running   RunningContainer
		wantKeep  bool
		wantWhy   string
	}{
		{name: "own hash, no file", own: "v1.21.14", container: spec,
			running: RunningContainer{ID: "c1", Hash: own, CreatedAt: beforeStart}, wantKeep: true, wantWhy: "hash matches"},
		{name: "legacy hash, no file", own: "v1.21.14", container: spec,
			running: RunningContainer{ID: "c1", Hash: legacy120, CreatedAt: beforeStart}, wantWhy: "definition changed"},
		{name: "legacy hash kept", own: "v1.21.14+compat.1", previous: "v1.20.15", container: spec,
			running: RunningContainer{ID: "c1", Hash: legacy120, CreatedAt: beforeStart}, wantKeep: true, wantWhy: "what v1.20.15 computes"},
		{name: "skip-level legacy hash kept", own: "v1.21.14", previous: "v1.18.19", container: spec,
			running: RunningContainer{ID: "c1", Hash: legacy118, CreatedAt: beforeStart}, wantKeep: true},
		{name: "legacy hash of another version", own: "v1.21.14", previous: "v1.20.15", container: spec,
			running: RunningContainer{ID: "c1", Hash: legacy118, CreatedAt: beforeStart}, wantWhy: "neither"},
		{name: "created by this kubelet", own: "v1.21.14", previous: "v1.20.15", container: spec,
			running: RunningContainer{ID: "c1", Hash: legacy120, CreatedAt: afterStart}, wantWhy: "created by this kubelet"},
		{name: "created at kubelet start", own: "v1.21.14", previous: "v1.20.15", container: spec,
			running: RunningContainer{ID: "c1", Hash: legacy120, CreatedAt: kubeletStart}, wantWhy: "created by this kubelet"},
		{name: "creation time unknown", own: "v1.21.14", previous: "v1.20.15", container: spec,
			running: RunningContainer{ID: "c1", Hash: legacy120}, wantWhy: "created by this kubelet"},
		{name: "genuine image change", own: "v1.21.14", previous: "v1.20.15", container: changedImage,
			running: RunningContainer{ID: "c1", Hash: legacy120, CreatedAt: beforeStart}, wantWhy: "definition changed"},
		{name: "not running when recorded", own: "v1.21.14", previous: "v1.20.15", container: spec,
			running: RunningContainer{ID: "c9", Hash: legacy120, CreatedAt: beforeStart}, wantWhy: "not running when the compat file was recorded"},
		{name: "missing hash annotation", own: "v1.21.14", previous: "v1.20.15", container: spec,
			running: RunningContainer{ID: "c1", Hash: 0, CreatedAt: beforeStart}, wantWhy: "definition changed"},
		{name: "previous equals own", own: "v1.21.14", previous: "v1.21.14", container: spec,
			running: RunningContainer{ID: "c1", Hash: legacy120, CreatedAt: beforeStart}, wantWhy: "definition changed"},
		{name: "previous newer than own", own: "v1.21.14", previous: "v1.22.0", container: spec,
			running: RunningContainer{ID: "c1", Hash: legacy120, CreatedAt: beforeStart}, wantWhy: "definition changed"},
		{name: "pre-1.16 previous, same image", own: "v1.18.19", previous: "v1.15.12", container: spec,
			running: RunningContainer{ID: "c1", Hash: 1, CreatedAt: beforeStart, Image: "docker.io/library/busybox:1.36"}, wantKeep: true, wantWhy: "image unchanged"},
		{name: "pre-1.16 previous, image changed", own: "v1.18.19", previous: "v1.15.12", container: changedImage,
			running: RunningContainer{ID: "c1", Hash: 1, CreatedAt: beforeStart, Image: "docker.io/library/busybox:1.36"}, wantWhy: "image"},
		{name: "pre-1.16 previous, image unknown", own: "v1.18.19", previous: "v1.15.12", container: spec,
			running: RunningContainer{ID: "c1", Hash: 1, CreatedAt: beforeStart}, wantWhy: "image"},
		{name: "pre-1.16 previous, created by this kubelet", own: "v1.18.19", previous: "v1.15.12", container: spec,
			running: RunningContainer{ID: "c1", Hash: 1, CreatedAt: afterStart, Image: "busybox:1.36"}, wantWhy: "created by this kubelet"},
		{name: "own version unparsable", own: "v0.0.0-master+$Format:%h$", previous: "v1.20.15", container: spec,
			running: RunningContainer{ID: "c1", Hash: legacy120, CreatedAt: beforeStart}, wantWhy: "definition changed"},
		{name: "own version unsupported", own: "v1.15.12", previous: "v1.14.10", container: spec,
			running: RunningContainer{ID: "c1", Hash: 1, CreatedAt: beforeStart, Image: "busybox:1.36"}, wantWhy: "definition changed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode(t)
			if tt.previous != "" {
				n.record(tt.previous)
			}
			got := n.compat(tt.own, time.Hour).Decide(tt.container, tt.running)
			if got.Keep != tt.wantKeep || !strings.Contains(got.Reason, tt.wantWhy) {
				t.Errorf("Decide = %+v, want keep=%v with reason containing %q", got, tt.wantKeep, tt.wantWhy)
			}
		})
	}
}

func TestFirstKeep(t *testing.T) {
	spec := seccompContainer()
	n := newNode(t)
	n.record("v1.20.15")
	c := n.compat("v1.21.14", time.Hour)
	running := RunningContainer{ID: "c1", Hash: mustHash(t, "v1.20.15", spec), CreatedAt: beforeStart}
	other := running
	other.ID = "c2"
	for i, tt := range []struct {
		running   RunningContainer
		wantFirst bool
	}{{running, true}, {running, false}, {other, true}, {running, false}} {
		d := c.Decide(spec, tt.running)
		if !d.Keep || d.FirstKeep != tt.wantFirst {
			t.Errorf("call %d (%s): %+v, want FirstKeep=%v", i, tt.running.ID, d, tt.wantFirst)
		}
	}
}

// TestKeptThroughTwoUpgrades is the chain 1.18 -> 1.19 -> 1.20: a container
// created by 1.18 and kept by the patched 1.19 still carries 1.18's hash when
// 1.20 replaces 1.19 (found by the e2e's full chain).
func TestKeptThroughTwoUpgrades(t *testing.T) {
	spec := seccompContainer()
	spec.LivenessProbe = nil // no field of 1.21
	running := RunningContainer{ID: "c1", Hash: mustHash(t, "v1.18.19", spec), CreatedAt: beforeStart}
	if h := mustHash(t, "v1.19.16", spec); h == running.Hash {
		t.Fatal("1.18 and 1.19 must hash this container differently")
	}

	withoutHistory := newNode(t)
	withoutHistory.record("v1.19.16")
	if d := withoutHistory.compat("v1.20.15", time.Hour).Decide(spec, running); d.Keep {
		t.Errorf("kept without the history: %+v", d)
	}

	withHistory := newNode(t)
	withHistory.recordContainers("v1.19.16", map[string]string{"c1": "v1.18.19", "c2": "v1.19.16"})
	d := withHistory.compat("v1.20.15", time.Hour).Decide(spec, running)
	if !d.Keep || !strings.Contains(d.Reason, "v1.18.19 computes") {
		t.Errorf("not kept with the history: %+v", d)
	}
	changed := spec.DeepCopy()
	changed.Args = []string{"--genuine-change"}
	if d := withHistory.compat("v1.20.15", time.Hour).Decide(changed, running); d.Keep || !strings.Contains(d.Reason, "v1.18.19's") {
		t.Errorf("genuine change with the history: %+v", d)
	}
}

func TestNilCompatIsUpstream(t *testing.T) {
	var c *Compat
	got := c.Decide(seccompContainer(), RunningContainer{ID: "c1", Hash: 1, CreatedAt: beforeStart})
	if got.Keep {
		t.Errorf("nil Compat kept a changed container: %+v", got)
	}
	if uid, ok := c.StaticPodUID("/etc/kubernetes/manifests/a.yaml", nil); ok || uid != "" {
		t.Errorf("nil Compat returned a static pod UID")
	}
	if _, ok := c.Active(); ok {
		t.Error("nil Compat is active")
	}
}

// TestImageChangeAlwaysRestarts: whatever the compat file says, a container
// whose image changed is restarted, for every corpus container and every
// previous version the library knows.
func TestImageChangeAlwaysRestarts(t *testing.T) {
	corpus := loadCorpus(t)
	previous := []string{"v1.15.12"}
	for minor := firstJSONMinor; minor <= lastKnownMinor-1; minor++ {
		previous = append(previous, fmt.Sprintf("v1.%d.0", minor))
	}
	for _, prev := range previous {
		n := newNode(t)
		n.record(prev)
		c := n.compat("v1.37.2", time.Hour)
		for _, item := range corpus {
			old := item.Container.DeepCopy()
			if old.Image == "" {
				old.Image = "busybox"
			}
			changed := old.DeepCopy()
			changed.Image = old.Image + "-changed"
			running := RunningContainer{ID: "c1", CreatedAt: beforeStart, Image: old.Image}
			if v, _ := ParseVersion(prev); v.Minor > lastGoStructMinor {
				running.Hash = mustHash(t, prev, old)
			}
			if d := c.Decide(old, running); !d.Keep {
				t.Errorf("%s from %s: unchanged container not kept: %s", item.Name, prev, d.Reason)
			}
			if d := c.Decide(changed, running); d.Keep {
				t.Errorf("%s from %s: image change kept: %s", item.Name, prev, d.Reason)
			}
		}
	}
}

func TestStaticPodUID(t *testing.T) {
	manifest := []byte("apiVersion: v1\nkind: Pod\n")
	sum := ManifestSHA256(manifest)
	path := filepath.Join(t.TempDir(), "web.yaml")
	n := newNode(t)
	n.record("v1.20.15", StaticPod{ManifestPath: path, SHA256: sum, UID: "recorded-uid"})
	c := n.compat("v1.21.14", time.Hour)

	if uid, ok := c.StaticPodUID(path, manifest); !ok || uid != "recorded-uid" {
		t.Errorf("StaticPodUID(recorded manifest) = %q, %v", uid, ok)
	}
	if uid, ok := c.StaticPodUID(filepath.Dir(path)+"/./web.yaml", manifest); !ok || uid != "recorded-uid" {
		t.Errorf("StaticPodUID(unclean path) = %q, %v", uid, ok)
	}
	dir, file := filepath.Split(path)
	wd, err := os.Getwd()
	must(t, err)
	must(t, os.Chdir(dir))
	defer os.Chdir(wd)
	if uid, ok := c.StaticPodUID(file, manifest); !ok || uid != "recorded-uid" {
		t.Errorf("StaticPodUID(relative path) = %q, %v", uid, ok)
	}
	changed := append([]byte(nil), manifest...)
	changed = append(changed, "# edited\n"...)
	for i := 0; i < 3; i++ {
		if uid, ok := c.StaticPodUID(path, changed); ok {
			t.Errorf("StaticPodUID(changed manifest) = %q", uid)
		}
	}
	if got := n.log.count("changed since it was recorded"); got != 1 {
		t.Errorf("changed manifest logged %d times, want once", got)
	}
	if _, ok := c.StaticPodUID(filepath.Join(filepath.Dir(path), "other.yaml"), manifest); ok {
		t.Error("StaticPodUID(unrecorded manifest) returned a UID")
	}

	rollback := newNode(t)
	rollback.record("v1.22.0", StaticPod{ManifestPath: path, SHA256: sum, UID: "recorded-uid"})
	if uid, ok := rollback.compat("v1.21.14", time.Hour).StaticPodUID(path, manifest); !ok || uid != "recorded-uid" {
		t.Errorf("a rollback file (recorded by a newer kubelet): StaticPodUID = %q, %v, want the recorded UID", uid, ok)
	}
}

// TestCacheReload: the file is re-read only after the recheck interval, and
// a rewrite, a removal or a chmod takes effect then.
func TestCacheReload(t *testing.T) {
	spec := seccompContainer()
	running := RunningContainer{ID: "c1", Hash: mustHash(t, "v1.20.15", spec), CreatedAt: beforeStart}
	n := newNode(t)
	n.record("v1.20.15")

	cached := n.compat("v1.21.14", time.Hour)
	fresh := n.compat("v1.21.14", time.Nanosecond)
	for _, c := range []*Compat{cached, fresh} {
		if !c.Decide(spec, running).Keep {
			t.Fatal("legacy container not kept with an active file")
		}
	}

	must(t, os.Remove(n.path))
	if !cached.Decide(spec, running).Keep {
		t.Error("cached Compat re-read the file before its interval")
	}
	if fresh.Decide(spec, running).Keep {
		t.Error("removal of the file not noticed")
	}
	if got := n.log.count("is gone"); got != 1 {
		t.Errorf("removal logged %d times, want 1", got)
	}

	n.record("v1.20.15")
	if !fresh.Decide(spec, running).Keep {
		t.Error("re-created file not noticed")
	}
	must(t, os.Chmod(n.path, 0666))
	if fresh.Decide(spec, running).Keep {
		t.Error("a world-writable file is still trusted")
	}
	must(t, os.Chmod(n.path, 0644))
	n.record("v1.18.19") // 1.18 had no seccompProfile: another legacy hash
	if fresh.Decide(spec, running).Keep {
		t.Error("rewritten file (other previous version) not noticed")
	}
}

// TestBadFileLoggedOnce: a bad file is ignored with one log line per
// distinct problem, however often the kubelet asks.
func TestBadFileLoggedOnce(t *testing.T) {
	n := newNode(t)
	must(t, os.WriteFile(n.path, []byte("{not json"), 0644))
	c := n.compat("v1.21.14", time.Nanosecond)
	spec := seccompContainer()
	running := RunningContainer{ID: "c1", Hash: mustHash(t, "v1.20.15", spec), CreatedAt: beforeStart}
	for i := 0; i < 50; i++ {
		if c.Decide(spec, running).Keep {
			t.Fatal("bad file kept a changed container")
		}
	}
	if got := n.log.count("Ignoring compat file"); got != 1 {
		t.Errorf("bad file logged %d times, want 1: %q", got, n.log.lines)
	}
	// A different problem is a new line.
	must(t, os.WriteFile(n.path, []byte(`{"apiVersion":"x"}`), 0644))
	time.Sleep(10 * time.Millisecond) // let the mtime move on coarse clocks
	for i := 0; i < 50; i++ {
		c.Decide(spec, running)
	}
	if got := n.log.count("Ignoring compat file"); got != 2 {
		t.Errorf("two distinct problems logged %d times, want 2: %q", got, n.log.lines)
	}
}

// TestConcurrentUse runs decisions from many goroutines while the file is
// rewritten (meant for -race).
func TestConcurrentUse(t *testing.T) {
	n := newNode(t)
	n.record("v1.20.15")
	c := n.compat("v1.21.14", time.Nanosecond)
	spec := seccompContainer()
	running := RunningContainer{ID: "c1", Hash: mustHash(t, "v1.20.15", spec), CreatedAt: beforeStart}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				c.Decide(spec, running)
				c.StaticPodUID("/etc/kubernetes/manifests/web.yaml", nil)
			}
		}()
	}
	for i := 0; i < 20; i++ {
		n.record("v1.20.15")
	}
	wg.Wait()
	if !c.Decide(spec, running).Keep {
		t.Error("legacy container not kept after concurrent rewrites")
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv(PathEnv, "")
	if got := DefaultPath("/var/lib/kubelet"); got != "/var/lib/kubelet/upgrade-compat.json" {
		t.Errorf("DefaultPath = %q", got)
	}
	t.Setenv(PathEnv, "/run/compat.json")
	if got := DefaultPath("/var/lib/kubelet"); got != "/run/compat.json" {
		t.Errorf("DefaultPath with %s = %q", PathEnv, got)
	}
}

func TestInitDefault(t *testing.T) {
	n := newNode(t)
	c := Init(Config{Path: n.path, KubeletVersion: "v1.21.14"})
	if Default() != c || c.Path() != n.path {
		t.Errorf("Default() = %p, want %p", Default(), c)
	}
}

type corpusItem struct {
	Name      string       `json:"name"`
	Container v1.Container `json:"container"`
}

func loadCorpus(t testing.TB) []corpusItem {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "containers.json"))
	if err != nil {
		t.Fatal(err)
	}
	var items []corpusItem
	if err := json.Unmarshal(data, &items); err != nil {
		t.Fatal(err)
	}
	if len(items) < 30 {
		t.Fatalf("corpus has %d containers, want at least 30", len(items))
	}
	return items
}

// TestStructuredLogging: with LogS the library logs a message and key/value
// pairs (klog.InfoS); with Logf alone, one rendered line (klog.Infof).
func TestStructuredLogging(t *testing.T) {
	n := newNode(t)
	must(t, os.WriteFile(n.path, []byte("{not json"), 0644))
	var msgs []string
	var kvs [][]interface{}
	c := New(Config{Path: n.path, KubeletVersion: "v1.21.14", OwnerUID: os.Getuid(),
		LogS: func(msg string, kv ...interface{}) { msgs = append(msgs, msg); kvs = append(kvs, kv) }})
	c.Decide(seccompContainer(), RunningContainer{ID: "c1", Hash: 1, CreatedAt: beforeStart})
	if len(msgs) != 1 || msgs[0] != "Ignoring compat file" || len(kvs[0]) != 2 || kvs[0][0] != "err" {
		t.Errorf("LogS got %q %v, want one message with an err pair", msgs, kvs)
	}

	printf := newNode(t)
	must(t, os.WriteFile(printf.path, []byte("{not json"), 0644))
	printf.compat("v1.21.14", time.Hour).Decide(seccompContainer(), RunningContainer{ID: "c1", Hash: 1, CreatedAt: beforeStart})
	if got := printf.log.count(`kubelet-compat: Ignoring compat file err="`); got != 1 {
		t.Errorf("Logf got %q, want one rendered line", printf.log.lines)
	}
}

// TestStaticPodStatus: a static pod of an unchanged manifest gets the status
// its previous kubelet last reported, as record wrote it, so that the prober
// keeps its running containers Ready (WasReady); a file recorded long
// before or after the kubelet started, another UID, a changed manifest or
// a pod recorded without containers give none.
func TestStaticPodStatus(t *testing.T) {
	manifest := []byte("apiVersion: v1\nkind: Pod\n")
	path := filepath.Join(t.TempDir(), "web.yaml")
	recorded := StaticPod{
		ManifestPath: path, SHA256: ManifestSHA256(manifest), UID: "recorded-uid", Ready: true,
		Containers: []StaticPodContainer{
			{Name: "app", ContainerID: "containerd://c1", Ready: true, Started: true},
			{Name: "warming", ContainerID: "containerd://c2", Started: true},
		},
	}
	noContainers := recorded
	noContainers.Containers = nil
	for _, tc := range []struct {
		name       string
		pod        StaticPod
		recordedAt time.Time
		previous   string
		data       []byte
		uid        string
		want       bool
	}{
		{"recorded for the swap", recorded, kubeletStart.Add(-5 * time.Minute), "v1.33.13", manifest, "recorded-uid", true},
		{"rollback file", recorded, kubeletStart.Add(-5 * time.Minute), "v1.35.8", manifest, "recorded-uid", true},
		{"recorded an hour and more before", recorded, kubeletStart.Add(-StaticStatusMaxAge - time.Second), "v1.33.13", manifest, "recorded-uid", false},
		{"recorded after the kubelet started", recorded, kubeletStart.Add(time.Second), "v1.33.13", manifest, "recorded-uid", false},
		{"another UID", recorded, kubeletStart.Add(-5 * time.Minute), "v1.33.13", manifest, "other-uid", false},
		{"manifest changed", recorded, kubeletStart.Add(-5 * time.Minute), "v1.33.13", append([]byte("# edited\n"), manifest...), "recorded-uid", false},
		{"no mirror status recorded", noContainers, kubeletStart.Add(-5 * time.Minute), "v1.33.13", manifest, "recorded-uid", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t)
			f := testFile()
			f.PreviousVersion, f.RecordedAt, f.StaticPods = tc.previous, tc.recordedAt, []StaticPod{tc.pod}
			must(t, WriteFile(n.path, f))
			status, ok := n.compat("v1.34.12", time.Hour).StaticPodStatus(path, tc.data, tc.uid)
			if ok != tc.want {
				t.Fatalf("StaticPodStatus ok = %v, want %v", ok, tc.want)
			}
			if !ok {
				return
			}
			defer SetReadyStartForTest(kubeletStart)()
			pod := &v1.Pod{Status: status}
			running := func(name, id string) *v1.ContainerStatus {
				return &v1.ContainerStatus{Name: name, ContainerID: id, State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(beforeStart)}}}
			}
			if !WasReady(pod, running("app", "containerd://c1")) || !WasStarted(pod, running("app", "containerd://c1")) {
				t.Error("the recorded Ready container is not WasReady and WasStarted")
			}
			if WasReady(pod, running("warming", "containerd://c2")) || !WasStarted(pod, running("warming", "containerd://c2")) {
				t.Error("the recorded started, not Ready container: want WasStarted only")
			}
			if WasReady(pod, running("app", "containerd://c9")) {
				t.Error("a container the previous kubelet did not report (another ID) is WasReady")
			}
			if len(status.Conditions) != 1 || status.Conditions[0].Type != v1.PodReady || status.Conditions[0].Status != v1.ConditionTrue {
				t.Errorf("conditions = %+v, want the recorded Ready condition", status.Conditions)
			}
			decoded := &v1.Pod{Status: v1.PodStatus{Phase: v1.PodPending}}
			decoded.UID = "recorded-uid"
			n.compat("v1.34.12", time.Hour).SetStaticPodStatus(path, tc.data, decoded)
			if decoded.Status.Phase != v1.PodPending || len(decoded.Status.ContainerStatuses) != 2 || len(decoded.Status.Conditions) != 1 {
				t.Errorf("SetStaticPodStatus: status %+v, want the decoded phase kept and the recorded conditions and containers", decoded.Status)
			}
		})
	}
}
