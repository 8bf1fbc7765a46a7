package scenario

import (
	"os"
	"strings"
	"testing"
	"time"

	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
)

func TestSyncRecordVerdict(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	pod := func(name, uid string, ids ...string) (snapshot.Sandbox, []snapshot.Container) {
		sb := snapshot.Sandbox{Pod: "ns/" + name, ID: "sb-" + uid, UID: uid, Ready: true, CreatedAt: t0}
		var cs []snapshot.Container
		for i, id := range ids {
			cs = append(cs, snapshot.Container{Pod: sb.Pod, Name: string(rune('a' + i)), ID: id, SandboxID: sb.ID, State: "RUNNING"})
		}
		return sb, cs
	}
	snap := func(pods ...func() (snapshot.Sandbox, []snapshot.Container)) *snapshot.Snapshot {
		s := &snapshot.Snapshot{Taken: t0}
		for _, p := range pods {
			sb, cs := p()
			s.Sandboxes = append(s.Sandboxes, sb)
			s.Containers = append(s.Containers, cs...)
		}
		s.Sort()
		return s
	}
	web := func(ids ...string) func() (snapshot.Sandbox, []snapshot.Container) {
		return func() (snapshot.Sandbox, []snapshot.Container) { return pod("web", "u-web", ids...) }
	}
	before := snap(web("c1", "c2"))
	record := func(pods ...kubeletcompat.PodRecord) *kubeletcompat.SyncRecord {
		return &kubeletcompat.SyncRecord{KubeletPID: 42, KubeletVersion: "v1.38.0", KubeletStartedAt: t0, CompatFile: "active", Pods: pods}
	}
	synced := func(containers ...kubeletcompat.ContainerRecord) kubeletcompat.PodRecord {
		return kubeletcompat.PodRecord{UID: "u-web", Name: "web", Syncs: 1, FirstSyncAt: t0, LastSyncAt: t0, Containers: containers}
	}
	keptC1 := kubeletcompat.ContainerRecord{Name: "a", ID: "c1", Kept: &kubeletcompat.KeptContainer{ID: "c1", Reason: "kept"}}
	plainC2 := kubeletcompat.ContainerRecord{Name: "b", ID: "c2"}
	patched := recordedKubelet{PID: 42, Patched: true}

	tests := []struct {
		name       string
		rec        *kubeletcompat.SyncRecord
		readErr    error
		k          recordedKubelet
		after      *snapshot.Snapshot
		keptLog    int
		wantPassed bool
		wantDetail string
	}{
		{name: "every pod synced, one kept as logged", rec: record(synced(keptC1, plainC2)), k: patched, after: before, keptLog: 1, wantPassed: true},
		{name: "no record from the patched kubelet", readErr: os.ErrNotExist, k: patched, after: before, wantDetail: "reading the record"},
		{name: "a record of another kubelet", rec: &kubeletcompat.SyncRecord{KubeletPID: 7}, k: patched, after: before, wantDetail: "the kubelet is pid 42"},
		{name: "a pod without a sync", rec: record(), k: patched, after: before, wantDetail: "no sync recorded"},
		{name: "kept containers not as logged", rec: record(synced(keptC1, plainC2)), k: patched, after: before, keptLog: 2, wantDetail: "the kubelet logged keeping 2"},
		{
			name: "a restart the record names as a kill", k: patched, after: snap(web("c1", "c3")),
			rec:        record(synced(kubeletcompat.ContainerRecord{Name: "a", ID: "c1"}, kubeletcompat.ContainerRecord{Name: "b", ID: "c2", Kills: []kubeletcompat.KilledContainer{{ID: "c2", Reason: "definition changed"}}, KillCount: 1})),
			wantPassed: true,
		},
		{
			name: "a restart the record does not name", k: patched, after: snap(web("c1", "c3")),
			rec:        record(synced(kubeletcompat.ContainerRecord{Name: "a", ID: "c1"}, plainC2)),
			wantDetail: "the record kills 0 container(s) of the picture, the runtime shows 1 restarted",
		},
		{
			name: "the record's last sync saw another container", k: patched, after: before,
			rec:        record(synced(kubeletcompat.ContainerRecord{Name: "a", ID: "c1"}, kubeletcompat.ContainerRecord{Name: "b", ID: "c9"})),
			wantDetail: "the record's last sync saw \"c9\"",
		},
		{name: "unpatched: no record", readErr: os.ErrNotExist, k: recordedKubelet{PID: 42}, after: before, wantPassed: true},
		{name: "unpatched: the previous kubelet's record", rec: &kubeletcompat.SyncRecord{KubeletPID: 7}, k: recordedKubelet{PID: 42}, after: before, wantPassed: true},
		{name: "unpatched: a record of its own", rec: &kubeletcompat.SyncRecord{KubeletPID: 42}, k: recordedKubelet{PID: 42}, after: before, wantDetail: "the unpatched kubelet is pid 42"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := syncRecordVerdict(tt.rec, tt.readErr, tt.k, before, tt.after, tt.keptLog)
			if c.Passed != tt.wantPassed || !strings.Contains(c.Detail, tt.wantDetail) {
				t.Errorf("passed %v (%s), want %v with %q", c.Passed, c.Detail, tt.wantPassed, tt.wantDetail)
			}
		})
	}
}

func TestKeptEventsVerdict(t *testing.T) {
	rec := &kubeletcompat.SyncRecord{Pods: []kubeletcompat.PodRecord{
		{UID: "u-kept", Containers: []kubeletcompat.ContainerRecord{{Name: "a", Kept: &kubeletcompat.KeptContainer{ID: "c1"}}}},
		{UID: "u-plain", Containers: []kubeletcompat.ContainerRecord{{Name: "a", ID: "c2"}}},
	}}
	tests := []struct {
		name       string
		rec        *kubeletcompat.SyncRecord
		got        []string
		wantPassed bool
		wantDetail string
	}{
		{name: "one event per pod with kept containers", rec: rec, got: []string{"u-kept"}, wantPassed: true},
		{name: "an event missing", rec: rec, wantDetail: "no event on pod u-kept"},
		{name: "an event on a pod nothing was kept of", rec: rec, got: []string{"u-kept", "u-plain"}, wantDetail: "which the record keeps nothing of"},
		{name: "two events on one pod", rec: rec, got: []string{"u-kept", "u-kept"}, wantDetail: "2 events on pod u-kept"},
		{name: "unpatched: no record, no event", wantPassed: true},
		{name: "unpatched: an event", got: []string{"u-kept"}, wantDetail: "which the record keeps nothing of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := keptEventsVerdict("check", tt.rec, tt.got)
			if c.Passed != tt.wantPassed || !strings.Contains(c.Detail, tt.wantDetail) {
				t.Errorf("passed %v (%s), want %v with %q", c.Passed, c.Detail, tt.wantPassed, tt.wantDetail)
			}
		})
	}
}

func TestGenuineRecordVerdict(t *testing.T) {
	kill := func(reason string) kubeletcompat.ContainerRecord {
		return kubeletcompat.ContainerRecord{Name: "app", Kills: []kubeletcompat.KilledContainer{{ID: "c1", Reason: reason}}, KillCount: 1}
	}
	pinned := func(cs ...kubeletcompat.ContainerRecord) kubeletcompat.PodRecord {
		return kubeletcompat.PodRecord{UID: "u1", Namespace: "kc-e2e", Name: "pinned-007", Containers: cs}
	}
	other := kubeletcompat.PodRecord{UID: "u2", Namespace: "kc-e2e", Name: "web-000", Containers: []kubeletcompat.ContainerRecord{kill("Container app failed liveness probe")}}
	tests := []struct {
		name       string
		pods       []kubeletcompat.PodRecord
		wantPassed bool
	}{
		{name: "the changed pod's restart, named", pods: []kubeletcompat.PodRecord{pinned(kill("Container app definition changed, will be restarted"))}, wantPassed: true},
		{name: "no kill recorded", pods: []kubeletcompat.PodRecord{pinned(kubeletcompat.ContainerRecord{Name: "app"})}},
		{name: "a kill for another reason", pods: []kubeletcompat.PodRecord{pinned(kill("killed with its pod"))}},
		{name: "a kill in another pod too", pods: []kubeletcompat.PodRecord{pinned(kill("Container app definition changed")), other}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := genuineRecordVerdict("check", &kubeletcompat.SyncRecord{Pods: tt.pods}, "kc-e2e/pinned-007")
			if c.Passed != tt.wantPassed {
				t.Errorf("passed %v (%s), want %v", c.Passed, c.Detail, tt.wantPassed)
			}
		})
	}
}
