package kubeletcompat

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

const (
	podA = "0a4f5c3e-4a5e-4c1b-9f66-3d1f1c2b7a01"
	podB = "0a4f5c3e-4a5e-4c1b-9f66-3d1f1c2b7a02"
)

// clock is a settable clock for the record.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// recordingCompat returns a Compat of kubelet 1.21.14 started at
// kubeletStart whose record is written to the node's directory only when
// flushed (the interval is an hour), with previous recorded when set.
func (n *node) recordingCompat(previous string, clk *clock) *Compat {
	if previous != "" {
		n.record(previous)
	}
	return New(Config{
		Path:           n.path,
		KubeletVersion: "v1.21.14",
		StartTime:      kubeletStart,
		Logf:           n.log.logf,
		OwnerUID:       os.Getuid(),
		RecordInterval: time.Hour,
		Now:            clk.now,
	})
}

func (n *node) readRecord(c *Compat) *SyncRecord {
	n.t.Helper()
	if err := c.FlushRecord(); err != nil {
		n.t.Fatal(err)
	}
	rec, err := ReadSyncRecord(c.RecordPath(), os.Getuid())
	if err != nil {
		n.t.Fatal(err)
	}
	return rec
}

func TestRecordSync(t *testing.T) {
	spec := seccompContainer()
	legacy := RunningContainer{ID: "c1", Hash: mustHash(t, "v1.20.15", spec), CreatedAt: beforeStart}
	at := func(d time.Duration) time.Time { return afterStart.Add(d) }

	tests := []struct {
		name     string
		previous string
		syncs    func(c *Compat, clk *clock)
		want     []PodRecord
	}{
		{
			name:     "a container the compat file kept, with its reason",
			previous: "v1.20.15",
			syncs: func(c *Compat, clk *clock) {
				if d := c.KeepChanged(spec, legacy); !d.Keep {
					t.Fatalf("not kept: %s", d.Reason)
				}
				c.RecordSync(PodSync{UID: podA, Namespace: "ns", Name: "web", Running: []SyncContainer{{Name: "app", ID: "c1"}, {Name: "side", ID: "c9"}}})
				clk.t = at(time.Minute)
				c.KeepChanged(spec, legacy)
				c.RecordSync(PodSync{UID: podA, Namespace: "ns", Name: "web", Running: []SyncContainer{{Name: "app", ID: "c1"}, {Name: "side", ID: "c9"}}})
			},
			want: []PodRecord{{
				UID: podA, Namespace: "ns", Name: "web", Syncs: 2, FirstSyncAt: at(0), LastSyncAt: at(time.Minute),
				Containers: []ContainerRecord{
					{Name: "app", ID: "c1", Kept: &KeptContainer{ID: "c1", Reason: fmt.Sprintf("kept: stored hash %08x is what v1.20.15 computes for the current spec", legacy.Hash), CreatedBy: "v1.20.15", At: at(0)}},
					{Name: "side", ID: "c9"},
				},
			}},
		},
		{
			name: "a killed and restarted container, a new sandbox and a failed sync",
			syncs: func(c *Compat, clk *clock) {
				c.RecordSync(PodSync{UID: podA, Name: "web", Running: []SyncContainer{{Name: "app", ID: "c1"}},
					Killed: []SyncContainer{{Name: "app", ID: "c1", Reason: "Container app definition changed"}}, Started: []string{"app"}})
				clk.t = at(time.Second)
				c.RecordSync(PodSync{UID: podB, Name: "db", Running: []SyncContainer{{Name: "db", ID: "c2"}}, CreateSandbox: true, KillPod: true, Started: []string{"db"}, Err: errors.New("failed to start container db")})
			},
			want: []PodRecord{
				{
					UID: podA, Name: "web", Syncs: 1, FirstSyncAt: at(0), LastSyncAt: at(0),
					Containers: []ContainerRecord{{
						Name: "app", ID: "c1", KillCount: 1, Starts: 1, FirstStartAt: timePtr(at(0)),
						Kills: []KilledContainer{{ID: "c1", Reason: "Container app definition changed", At: at(0)}},
					}},
				},
				{
					UID: podB, Name: "db", Syncs: 1, FirstSyncAt: at(time.Second), LastSyncAt: at(time.Second),
					LastSyncError:    "failed to start container db",
					SandboxesCreated: 1, FirstSandboxAt: timePtr(at(time.Second)), PodKills: 1, FirstPodKillAt: timePtr(at(time.Second)),
					Containers: []ContainerRecord{{Name: "db", ID: "c2", Starts: 1, FirstStartAt: timePtr(at(time.Second)),
						KillCount: 1, Kills: []KilledContainer{{ID: "c2", Reason: ReasonPodKilled, At: at(time.Second)}}}},
				},
			},
		},
		{
			name: "a container that stopped running has no ID; a later sync clears the error",
			syncs: func(c *Compat, clk *clock) {
				c.RecordSync(PodSync{UID: podA, Name: "web", Running: []SyncContainer{{Name: "app", ID: "c1"}}, Err: errors.New("boom")})
				clk.t = at(time.Minute)
				c.RecordSync(PodSync{UID: podA, Name: "web"})
			},
			want: []PodRecord{{UID: podA, Name: "web", Syncs: 2, FirstSyncAt: at(0), LastSyncAt: at(time.Minute), Containers: []ContainerRecord{{Name: "app"}}}},
		},
		{
			name: "kills beyond the first few are counted only",
			syncs: func(c *Compat, clk *clock) {
				for i := 0; i < maxRecordedKills+2; i++ {
					c.RecordSync(PodSync{UID: podA, Name: "web", Killed: []SyncContainer{{Name: "app", ID: "c1", Reason: "liveness"}}})
				}
			},
			want: []PodRecord{{UID: podA, Name: "web", Syncs: maxRecordedKills + 2, FirstSyncAt: at(0), LastSyncAt: at(0), Containers: []ContainerRecord{{
				Name: "app", KillCount: maxRecordedKills + 2,
				Kills: []KilledContainer{{ID: "c1", Reason: "liveness", At: at(0)}, {ID: "c1", Reason: "liveness", At: at(0)}, {ID: "c1", Reason: "liveness", At: at(0)}, {ID: "c1", Reason: "liveness", At: at(0)}},
			}}}},
		},
		{
			name: "a pod not synced for the retention is dropped",
			syncs: func(c *Compat, clk *clock) {
				c.RecordSync(PodSync{UID: podA, Name: "gone"})
				clk.t = at(RecordRetention + time.Second)
				c.RecordSync(PodSync{UID: podB, Name: "kept"})
			},
			want: []PodRecord{{UID: podB, Name: "kept", Syncs: 1, FirstSyncAt: at(RecordRetention + time.Second), LastSyncAt: at(RecordRetention + time.Second)}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode(t)
			clk := &clock{t: afterStart}
			c := n.recordingCompat(tt.previous, clk)
			tt.syncs(c, clk)
			rec := n.readRecord(c)
			if rec.KubeletVersion != "v1.21.14" || !rec.KubeletStartedAt.Equal(kubeletStart) || rec.KubeletPID != os.Getpid() || !rec.WrittenAt.Equal(clk.t) {
				t.Errorf("record names kubelet %s pid %d started %s, written %s", rec.KubeletVersion, rec.KubeletPID, rec.KubeletStartedAt, rec.WrittenAt)
			}
			wantState := "absent"
			if tt.previous != "" {
				wantState = "active"
			}
			if rec.CompatFile != wantState {
				t.Errorf("compatFile %q, want %q", rec.CompatFile, wantState)
			}
			normalizeTimes(rec)
			if !reflect.DeepEqual(rec.Pods, tt.want) {
				got, _ := MarshalSyncRecord(&SyncRecord{Pods: rec.Pods})
				want, _ := MarshalSyncRecord(&SyncRecord{Pods: tt.want})
				t.Errorf("pods:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// normalizeTimes drops the monotonic and location parts JSON loses.
func normalizeTimes(rec *SyncRecord) {
	for i := range rec.Pods {
		p := &rec.Pods[i]
		p.FirstSyncAt, p.LastSyncAt = p.FirstSyncAt.UTC(), p.LastSyncAt.UTC()
		for _, tp := range []**time.Time{&p.FirstSandboxAt, &p.FirstPodKillAt} {
			if *tp != nil {
				*tp = timePtr((**tp).UTC())
			}
		}
		for j := range p.Containers {
			cr := &p.Containers[j]
			if cr.Kept != nil {
				cr.Kept.At = cr.Kept.At.UTC()
			}
			for k := range cr.Kills {
				cr.Kills[k].At = cr.Kills[k].At.UTC()
			}
			if cr.FirstStartAt != nil {
				cr.FirstStartAt = timePtr(cr.FirstStartAt.UTC())
			}
		}
	}
}

// TestRecordWritesOncePerInterval: syncs only touch memory; the record is
// written once the interval after the first unwritten sync has passed, and
// a flush with nothing new writes nothing.
func TestRecordWritesOncePerInterval(t *testing.T) {
	n := newNode(t)
	c := New(Config{Path: n.path, KubeletVersion: "v1.21.14", StartTime: kubeletStart, OwnerUID: os.Getuid(), RecordInterval: 50 * time.Millisecond})
	for i := 0; i < 100; i++ {
		c.RecordSync(PodSync{UID: podA, Name: "web"})
	}
	if _, err := os.Lstat(c.RecordPath()); !os.IsNotExist(err) {
		t.Fatalf("the record was written before its interval: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		rec, err := ReadSyncRecord(c.RecordPath(), os.Getuid())
		if err == nil {
			if len(rec.Pods) != 1 || rec.Pods[0].Syncs != 100 {
				t.Fatalf("record %+v, want one pod of 100 syncs", rec.Pods)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no record 10 s after the syncs: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	fi, err := os.Stat(c.RecordPath())
	must(t, err)
	if fi.Mode().Perm() != 0644 {
		t.Errorf("record mode %#o, want 0644", fi.Mode().Perm())
	}
	must(t, os.Remove(c.RecordPath()))
	must(t, c.FlushRecord())
	if _, err := os.Lstat(c.RecordPath()); !os.IsNotExist(err) {
		t.Errorf("a flush without a new sync wrote the record: %v", err)
	}
}

// TestRecordDisabled: a kubelet outside the supported range, a nil Compat
// and upstream's Init record nothing and write nothing.
func TestRecordDisabled(t *testing.T) {
	n := newNode(t)
	for name, c := range n.upstreamCompats() {
		c.RecordSync(PodSync{UID: podA, Name: "web"})
		if err := c.FlushRecord(); err != nil || c.RecordPath() != "" {
			t.Errorf("%s: flush %v, record path %q", name, err, c.RecordPath())
		}
	}
	entries, err := os.ReadDir(filepath.Dir(n.path))
	must(t, err)
	if len(entries) != 0 {
		t.Errorf("a disabled Compat wrote %s", entries[0].Name())
	}
}

// TestRecordWriteFailure: a record that cannot be written is logged once
// and the kubelet's syncs go on.
func TestRecordWriteFailure(t *testing.T) {
	n := newNode(t)
	clk := &clock{t: afterStart}
	c := New(Config{Path: n.path, KubeletVersion: "v1.21.14", StartTime: kubeletStart, Logf: n.log.logf, OwnerUID: os.Getuid(),
		RecordPath: filepath.Join(filepath.Dir(n.path), "missing", RecordFileName), RecordInterval: time.Hour, Now: clk.now})
	for i := 0; i < 3; i++ {
		c.RecordSync(PodSync{UID: podA, Name: "web"})
		if err := c.FlushRecord(); err == nil {
			t.Fatal("writing into a missing directory succeeded")
		}
	}
	if got := n.log.count("Cannot write the pod sync record"); got != 1 {
		t.Errorf("logged the failure %d times, want once", got)
	}
}

// TestRecordAdmittedDespite: a rejection the compat file overruled is in
// the pod's record.
func TestRecordAdmittedDespite(t *testing.T) {
	n := newNode(t)
	clk := &clock{t: afterStart}
	c := n.recordingCompat("v1.20.15", clk)
	pod := &v1.Pod{}
	pod.UID, pod.Namespace, pod.Name = podA, "ns", "pinned"
	c.SetRuntime(func(uid string) (RuntimePod, error) {
		return RuntimePod{RunningContainerIDs: []string{"c1"}, SandboxReady: true}, nil
	})
	if !c.AdmitDespite(pod, "NodeAffinity", "node labels changed") {
		t.Fatal("the rejection was not waived")
	}
	rec := n.readRecord(c)
	p, ok := rec.Pod(podA)
	if !ok || p.AdmittedDespite != "NodeAffinity" || p.Name != "pinned" {
		t.Errorf("record %+v, want pod %s admitted despite NodeAffinity", rec.Pods, podA)
	}
}

// TestRecordSyncNews: what the kubelet announces (an event, a counter)
// comes once per pod and kubelet process.
func TestRecordSyncNews(t *testing.T) {
	n := newNode(t)
	clk := &clock{t: afterStart}
	c := n.recordingCompat("v1.20.15", clk)
	spec := seccompContainer()
	legacy := RunningContainer{ID: "c1", Hash: mustHash(t, "v1.20.15", spec), CreatedAt: beforeStart}
	running := []SyncContainer{{Name: "app", ID: "c1"}, {Name: "side", ID: "c2"}}

	c.KeepChanged(spec, legacy)
	first := c.RecordSync(PodSync{UID: podA, Name: "web", Running: running})
	if !first.KeptPod || len(first.NewlyKept) != 1 || first.NewlyKept[0].CreatedBy != "v1.20.15" || strings.Join(first.Kept, ",") != "app" || first.KeptBy != "v1.20.15" || first.FileState != "active" {
		t.Errorf("first sync's news %+v, want the pod's kept container app announced", first)
	}
	c.KeepChanged(spec, legacy)
	if again := c.RecordSync(PodSync{UID: podA, Name: "web", Running: running}); again.KeptPod || len(again.NewlyKept) != 0 {
		t.Errorf("second sync's news %+v, want nothing new", again)
	}
	changed := c.RecordSync(PodSync{UID: podA, Name: "web", Running: running, Killed: []SyncContainer{
		{Name: "side", ID: "c2", Reason: "Container side definition changed, will be restarted"},
		{Name: "app", ID: "c1", Reason: "Container app failed liveness probe, will be restarted"},
	}})
	if changed.RestartedForChange != 1 {
		t.Errorf("%d restarts for a changed definition, want 1", changed.RestartedForChange)
	}

	pod := &v1.Pod{}
	pod.UID, pod.Namespace, pod.Name = podB, "ns", "pinned"
	c.SetRuntime(func(uid string) (RuntimePod, error) {
		return RuntimePod{RunningContainerIDs: []string{"c1"}, SandboxReady: true}, nil
	})
	if !c.AdmitDespite(pod, "NodeAffinity", "node labels changed") {
		t.Fatal("the rejection was not waived")
	}
	admitted := c.RecordSync(PodSync{UID: podB, Namespace: "ns", Name: "pinned"})
	if admitted.AdmittedDespite != "NodeAffinity: node labels changed" || admitted.AdmittedDespiteReason != "NodeAffinity" {
		t.Errorf("news %+v, want the overruled NodeAffinity rejection", admitted)
	}
	if again := c.RecordSync(PodSync{UID: podB, Namespace: "ns", Name: "pinned"}); again.AdmittedDespite != "" {
		t.Errorf("the admission was announced twice: %+v", again)
	}
}

func TestReadSyncRecordRefuses(t *testing.T) {
	good := &SyncRecord{APIVersion: RecordAPIVersion, Kind: RecordKind, KubeletVersion: "v1.21.14", KubeletStartedAt: kubeletStart, Pods: []PodRecord{{UID: podA}}}
	data, err := MarshalSyncRecord(good)
	must(t, err)
	tests := []struct {
		name    string
		setup   func(dir, path string)
		wantErr string
	}{
		{"a good record", func(dir, path string) { must(t, os.WriteFile(path, data, 0644)) }, ""},
		{"a symbolic link", func(dir, path string) {
			must(t, os.WriteFile(filepath.Join(dir, "real"), data, 0644))
			must(t, os.Symlink("real", path))
		}, "symbolic link"},
		{"a world-writable file", func(dir, path string) {
			must(t, os.WriteFile(path, data, 0644))
			must(t, os.Chmod(path, 0666))
		}, "writable"},
		{"an unknown field", func(dir, path string) {
			must(t, os.WriteFile(path, []byte(strings.Replace(string(data), `"kind"`, `"extra": 1, "kind"`, 1)), 0644))
		}, "unknown field"},
		{"another kind", func(dir, path string) {
			must(t, os.WriteFile(path, []byte(strings.Replace(string(data), RecordKind, "UpgradeCompat", 1)), 0644))
		}, "not a sync record"},
		{"a pod listed twice", func(dir, path string) {
			twice := *good
			twice.Pods = append(twice.Pods, good.Pods...)
			d, _ := MarshalSyncRecord(&twice)
			must(t, os.WriteFile(path, d, 0644))
		}, "twice"},
		{"no kubelet start", func(dir, path string) {
			none := *good
			none.KubeletStartedAt = time.Time{}
			d, _ := MarshalSyncRecord(&none)
			must(t, os.WriteFile(path, d, 0644))
		}, "no kubelet start"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, RecordFileName)
			tt.setup(dir, path)
			_, err := ReadSyncRecord(path, os.Getuid())
			if tt.wantErr == "" {
				must(t, err)
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	if _, err := ReadSyncRecord(filepath.Join(t.TempDir(), RecordFileName), os.Getuid()); !os.IsNotExist(err) {
		t.Errorf("a missing record: %v, want a not-exist error", err)
	}
}

// BenchmarkRecordSync is what the record adds to one sync of a pod of ten
// running containers, two of them kept; compare it with
// BenchmarkUpstreamHashContainer (upstream hashes every container on every
// sync) from the same run.
func BenchmarkRecordSync(b *testing.B) {
	n := newNode(b)
	c := New(Config{Path: n.path, KubeletVersion: "v1.21.14", StartTime: kubeletStart, OwnerUID: os.Getuid(), RecordInterval: time.Hour})
	var running []SyncContainer
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		running = append(running, SyncContainer{Name: name, ID: "id-" + name})
	}
	c.kept["id-a"], c.kept["id-b"] = keptInfo{reason: "kept"}, keptInfo{reason: "kept"}
	sync := PodSync{UID: podA, Namespace: "ns", Name: "web", Running: running}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.RecordSync(sync)
	}
}
