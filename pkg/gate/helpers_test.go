package gate

import (
	"time"

	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
)

// The tests' clock: the picture at t0, the swap over (the runtime back, or
// the new kubelet started) at since, the fixed wait 30 s.
var (
	t0        = time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	since     = t0.Add(time.Minute)
	fixedWait = 30 * time.Second
	// oldKubelet ran at the picture; in the runtime step it runs on.
	oldKubelet = Kubelet{PID: 100, StartedAt: t0.Add(-time.Hour)}
	// newKubelet started at since (the kubelet step).
	newKubelet = Kubelet{PID: 200, StartedAt: since}
)

// ctr is a container of a test pod: RUNNING unless state says otherwise.
type ctr struct{ name, id, state string }

// pod is a pod as the runtime shows it: one ready sandbox (unless
// notReady) and its containers.
type pod struct {
	name, uid, sandbox string
	notReady           bool
	containers         []ctr
}

func run(name, id string) ctr    { return ctr{name: name, id: id} }
func exited(name, id string) ctr { return ctr{name: name, id: id, state: "EXITED"} }

// snap is the runtime's view at taken.
func snap(taken time.Time, pods ...pod) *snapshot.Snapshot {
	s := &snapshot.Snapshot{Taken: taken}
	for _, p := range pods {
		ns, name := "ns", p.name
		s.Sandboxes = append(s.Sandboxes, snapshot.Sandbox{Pod: ns + "/" + name, ID: p.sandbox, UID: p.uid, Ready: !p.notReady, CreatedAt: t0.Add(-time.Hour)})
		for _, c := range p.containers {
			state := c.state
			if state == "" {
				state = "RUNNING"
			}
			s.Containers = append(s.Containers, snapshot.Container{Pod: ns + "/" + name, Name: c.name, ID: c.id, SandboxID: p.sandbox, State: state, RestartCount: "0"})
		}
	}
	s.Sort()
	return s
}

// record is the sync record of kubelet k.
func record(k Kubelet, pods ...kubeletcompat.PodRecord) *kubeletcompat.SyncRecord {
	return &kubeletcompat.SyncRecord{APIVersion: kubeletcompat.RecordAPIVersion, Kind: kubeletcompat.RecordKind,
		KubeletVersion: "v1.35.2+compat.1", KubeletPID: k.PID, KubeletStartedAt: k.StartedAt.Add(300 * time.Millisecond),
		WrittenAt: t0.Add(time.Hour), CompatFile: "active", Pods: pods}
}

// synced is a pod record whose last sync (without error) was at.
func synced(uid string, at time.Time, containers ...kubeletcompat.ContainerRecord) kubeletcompat.PodRecord {
	return kubeletcompat.PodRecord{UID: uid, Namespace: "ns", Name: "p-" + uid, Syncs: 3, FirstSyncAt: at.Add(-time.Hour), LastSyncAt: at, Containers: containers}
}

// killed is a container record with one kill of id.
func killed(name, id, reason string, at time.Time) kubeletcompat.ContainerRecord {
	return kubeletcompat.ContainerRecord{Name: name, Kills: []kubeletcompat.KilledContainer{{ID: id, Reason: reason, At: at}}, KillCount: 1}
}

// runtimeStep and kubeletStep are the options of the two steps.
func runtimeStep() Options {
	return Options{Step: StepRuntime, Since: since, FixedWait: fixedWait, Kubelet: oldKubelet}
}

func kubeletStep() Options {
	return Options{Step: StepKubelet, FixedWait: fixedWait, Kubelet: newKubelet}
}

// Pod UIDs: valid for the record's parser.
const (
	uidWeb   = "0f1e2d3c-0000-4000-8000-000000000001"
	uidSide  = "0f1e2d3c-0000-4000-8000-000000000002"
	uidEtcd  = "0f1e2d3c-0000-4000-8000-000000000003"
	uidNew   = "0f1e2d3c-0000-4000-8000-000000000004"
	uidEtcd2 = "0f1e2d3c-0000-4000-8000-000000000005"
)
