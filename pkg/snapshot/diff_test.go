package snapshot

import (
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// node builds a snapshot: one ready sandbox per pod with running containers.
type podSpec struct {
	pod, sandbox string
	// uid is the sandbox's pod UID ("": uid-<sandbox>).
	uid        string
	containers []Container
}

func snap(pods ...podSpec) *Snapshot {
	s := &Snapshot{Taken: t0}
	for _, p := range pods {
		uid := p.uid
		if uid == "" {
			uid = "uid-" + p.sandbox
		}
		s.Sandboxes = append(s.Sandboxes, Sandbox{Pod: p.pod, ID: p.sandbox, UID: uid, Ready: true, CreatedAt: t0})
		for _, c := range p.containers {
			c.Pod, c.SandboxID = p.pod, p.sandbox
			if c.State == "" {
				c.State = "RUNNING"
			}
			if c.StartedAt.IsZero() {
				c.StartedAt = t0
			}
			s.Containers = append(s.Containers, c)
		}
	}
	s.Sort()
	return s
}

func TestCompare(t *testing.T) {
	web := podSpec{pod: "ns/web", sandbox: "sb-web", containers: []Container{
		{Name: "init", ID: "c-init", State: "EXITED"},
		{Name: "httpd", ID: "c-httpd", RestartCount: "0"},
		{Name: "side", ID: "c-side", RestartCount: "0"},
	}}
	db := podSpec{pod: "ns/db", sandbox: "sb-db", containers: []Container{{Name: "db", ID: "c-db", RestartCount: "0"}}}

	tests := []struct {
		name          string
		after         *Snapshot
		wantRestarts  int
		wantRecreated int
		wantUIDs      int
		wantKinds     []string
		wantPods      []string
	}{
		{name: "identical", after: snap(web, db)},
		{
			name: "container replaced",
			after: snap(web, podSpec{pod: "ns/db", sandbox: "sb-db", containers: []Container{
				{Name: "db", ID: "c-db", State: "EXITED"}, {Name: "db", ID: "c-db2", Attempt: 1, RestartCount: "1"}}}),
			wantRestarts: 1, wantKinds: []string{ContainerReplaced}, wantPods: []string{"ns/db"},
		},
		{
			name: "pod recreated",
			after: snap(db, podSpec{pod: "ns/web", sandbox: "sb-web2", containers: []Container{
				{Name: "init", ID: "n-init", State: "EXITED"}, {Name: "httpd", ID: "n-httpd"}, {Name: "side", ID: "n-side"}}}),
			wantRestarts: 2, wantRecreated: 1, wantUIDs: 1, wantKinds: []string{SandboxChanged, ContainerReplaced, ContainerReplaced}, wantPods: []string{"ns/web"},
		},
		{
			name: "pod recreated under the same UID (a new sandbox, not a new UID)",
			after: snap(db, podSpec{pod: "ns/web", sandbox: "sb-web2", uid: "uid-sb-web", containers: []Container{
				{Name: "init", ID: "n-init", State: "EXITED"}, {Name: "httpd", ID: "n-httpd"}, {Name: "side", ID: "n-side"}}}),
			wantRestarts: 2, wantRecreated: 1, wantKinds: []string{SandboxChanged, ContainerReplaced, ContainerReplaced}, wantPods: []string{"ns/web"},
		},
		{name: "pod gone", after: snap(web), wantRestarts: 1, wantKinds: []string{PodGone}, wantPods: []string{"ns/db"}},
		{
			name: "container exited",
			after: snap(db, podSpec{pod: "ns/web", sandbox: "sb-web", containers: []Container{
				{Name: "init", ID: "c-init", State: "EXITED"}, {Name: "httpd", ID: "c-httpd", RestartCount: "0"}, {Name: "side", ID: "c-side", State: "EXITED"}}}),
			wantRestarts: 1, wantKinds: []string{ContainerGone}, wantPods: []string{"ns/web"},
		},
		{
			name: "same ID but restart count and start time changed",
			after: snap(web, podSpec{pod: "ns/db", sandbox: "sb-db", containers: []Container{
				{Name: "db", ID: "c-db", RestartCount: "1", StartedAt: t0.Add(time.Minute)}}}),
			wantRestarts: 1, wantKinds: []string{RestartCountDiff, StartedAtChanged}, wantPods: []string{"ns/db"},
		},
		{
			name: "init container ran again",
			after: snap(db, podSpec{pod: "ns/web", sandbox: "sb-web", containers: []Container{
				{Name: "init", ID: "c-init", State: "EXITED"}, {Name: "init", ID: "c-init2", Attempt: 1, State: "EXITED"},
				{Name: "httpd", ID: "c-httpd", RestartCount: "0"}, {Name: "side", ID: "c-side", RestartCount: "0"}}}),
			wantKinds: []string{InitRerun}, wantPods: []string{"ns/web"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Compare(snap(web, db), tt.after)
			assert.Equal(t, d.Pods, 2)
			assert.Equal(t, d.Containers, 3)
			assert.Equal(t, d.Restarts, tt.wantRestarts)
			assert.Equal(t, d.RecreatedPods, tt.wantRecreated)
			assert.Equal(t, d.UIDChanges, tt.wantUIDs)
			var kinds []string
			for _, c := range d.Changes {
				kinds = append(kinds, c.Kind)
			}
			assert.DeepEqual(t, kinds, tt.wantKinds)
			assert.DeepEqual(t, d.RestartedPods, tt.wantPods)
		})
	}
}

func TestRunningPicksReadySandbox(t *testing.T) {
	s := snap(podSpec{pod: "ns/a", sandbox: "new", containers: []Container{{Name: "c", ID: "c2"}}})
	s.Sandboxes = append(s.Sandboxes, Sandbox{Pod: "ns/a", ID: "old", Ready: false, CreatedAt: t0.Add(-time.Hour)})
	s.Containers = append(s.Containers, Container{Pod: "ns/a", Name: "c", ID: "c1", SandboxID: "old", State: "RUNNING"})
	s.Sort()
	assert.DeepEqual(t, s.Pods(), []string{"ns/a"})
	assert.Equal(t, s.Running("ns/a")["c"].ID, "c2")
	assert.Equal(t, s.RunningCount(), 1)
}

// TestInNamespace: a namespace's sandboxes and containers, not those of a
// namespace whose name it prefixes.
func TestInNamespace(t *testing.T) {
	s := snap(
		podSpec{pod: "kc-e2e/web", sandbox: "s1", containers: []Container{{Name: "c", ID: "c1"}}},
		podSpec{pod: "kube-system/etcd", sandbox: "s2", containers: []Container{{Name: "etcd", ID: "c2"}}},
		podSpec{pod: "kc-e2e-other/x", sandbox: "s3", containers: []Container{{Name: "x", ID: "c3"}}},
	)
	got := s.InNamespace("kc-e2e")
	assert.Equal(t, len(got.Sandboxes), 1)
	assert.Equal(t, got.Sandboxes[0].ID, "s1")
	assert.Equal(t, len(got.Containers), 1)
	assert.Equal(t, got.Containers[0].ID, "c1")
	assert.Equal(t, got.Taken, s.Taken)
	assert.Equal(t, len(s.InNamespace("kube-system").Containers), 1)
}

// TestReadyPods: the newest ready sandbox per pod UID, a pod of the same
// name under another UID apart (a static pod's new UID).
func TestReadyPods(t *testing.T) {
	s := snap(
		podSpec{pod: "ns/a", sandbox: "a2", uid: "ua", containers: []Container{{Name: "c", ID: "c2"}}},
		podSpec{pod: "ns/etcd", sandbox: "e1", uid: "u-old", containers: []Container{{Name: "etcd", ID: "e-old"}}},
		podSpec{pod: "ns/etcd", sandbox: "e2", uid: "u-new", containers: []Container{{Name: "etcd", ID: "e-new"}}},
	)
	s.Sandboxes = append(s.Sandboxes,
		Sandbox{Pod: "ns/a", ID: "a1", UID: "ua", Ready: true, CreatedAt: t0.Add(-time.Hour)},
		Sandbox{Pod: "ns/a", ID: "a3", UID: "ua", Ready: false, CreatedAt: t0.Add(time.Hour)},
		Sandbox{Pod: "ns/gone", ID: "g1", UID: "ug", Ready: false, CreatedAt: t0})
	s.Sort()
	var got []string
	for _, sb := range s.ReadyPods() {
		got = append(got, sb.Pod+" "+sb.UID+" "+sb.ID)
	}
	assert.DeepEqual(t, got, []string{"ns/a ua a2", "ns/etcd u-new e2", "ns/etcd u-old e1"})
	_, ok := s.ReadySandboxOf("ug")
	assert.Assert(t, !ok)
	assert.Equal(t, s.RunningIn("e1")["etcd"].ID, "e-old")
	c, ok := s.Container("e-new")
	assert.Assert(t, ok)
	assert.Equal(t, c.SandboxID, "e2")
	_, ok = s.Container("none")
	assert.Assert(t, !ok)
}
