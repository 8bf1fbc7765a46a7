// Package snapshot records what the container runtime runs (sandbox and
// container IDs, attempts, start times, restart counts) and compares two
// snapshots taken around a kubelet or runtime swap: the e2e's pictures and
// kubelet-compat picture and gate.
package snapshot

import (
	"sort"
	"strings"
	"time"
)

// Sandbox is one pod sandbox.
type Sandbox struct {
	Pod     string `json:"pod"` // namespace/name
	ID      string `json:"id"`
	UID     string `json:"uid"`
	Attempt uint32 `json:"attempt"`
	Ready   bool   `json:"ready"`
	IP      string `json:"ip,omitempty"`
	// HostNetwork is true for pods in the node's network namespace.
	HostNetwork bool      `json:"hostNetwork,omitempty"`
	CreatedAt   time.Time `json:"createdAt"`
}

// Container is one container.
type Container struct {
	Pod          string    `json:"pod"`
	Name         string    `json:"name"`
	ID           string    `json:"id"`
	SandboxID    string    `json:"sandboxId"`
	Attempt      uint32    `json:"attempt"`
	State        string    `json:"state"` // RUNNING, EXITED, CREATED, UNKNOWN
	ExitCode     int32     `json:"exitCode,omitempty"`
	CreatedAt    time.Time `json:"createdAt"`
	StartedAt    time.Time `json:"startedAt"`
	RestartCount string    `json:"restartCount"` // the kubelet's annotation, verbatim
	Hash         string    `json:"hash"`
	Image        string    `json:"image,omitempty"`
}

// Snapshot is the runtime's view of pods (the e2e's, or the node's) at one
// moment.
type Snapshot struct {
	Taken      time.Time   `json:"taken"`
	Sandboxes  []Sandbox   `json:"sandboxes"`
	Containers []Container `json:"containers"`
}

// Sort orders sandboxes and containers deterministically.
func (s *Snapshot) Sort() {
	sort.Slice(s.Sandboxes, func(i, j int) bool {
		a, b := s.Sandboxes[i], s.Sandboxes[j]
		if a.Pod != b.Pod {
			return a.Pod < b.Pod
		}
		return a.CreatedAt.Before(b.CreatedAt)
	})
	sort.Slice(s.Containers, func(i, j int) bool {
		a, b := s.Containers[i], s.Containers[j]
		if a.Pod != b.Pod {
			return a.Pod < b.Pod
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Attempt < b.Attempt
	})
}

// ReadySandbox returns the newest ready sandbox of a pod.
func (s *Snapshot) ReadySandbox(pod string) (Sandbox, bool) {
	var best Sandbox
	found := false
	for _, sb := range s.Sandboxes {
		if sb.Pod == pod && sb.Ready && (!found || sb.CreatedAt.After(best.CreatedAt)) {
			best, found = sb, true
		}
	}
	return best, found
}

// Pods lists the pods that have a ready sandbox.
func (s *Snapshot) Pods() []string {
	seen := map[string]bool{}
	var out []string
	for _, sb := range s.Sandboxes {
		if sb.Ready && !seen[sb.Pod] {
			seen[sb.Pod] = true
			out = append(out, sb.Pod)
		}
	}
	sort.Strings(out)
	return out
}

// Running returns the running containers of a pod's ready sandbox, by name.
func (s *Snapshot) Running(pod string) map[string]Container {
	sb, ok := s.ReadySandbox(pod)
	if !ok {
		return map[string]Container{}
	}
	return s.RunningIn(sb.ID)
}

// RunningIn returns the running containers of one sandbox by name, the
// highest attempt of each.
func (s *Snapshot) RunningIn(sandboxID string) map[string]Container {
	out := map[string]Container{}
	for _, c := range s.Containers {
		if c.SandboxID == sandboxID && c.State == "RUNNING" {
			if old, dup := out[c.Name]; !dup || c.Attempt > old.Attempt {
				out[c.Name] = c
			}
		}
	}
	return out
}

// ReadySandboxOf returns the newest ready sandbox of the pod with uid.
func (s *Snapshot) ReadySandboxOf(uid string) (Sandbox, bool) {
	var best Sandbox
	found := false
	for _, sb := range s.Sandboxes {
		if sb.UID == uid && sb.Ready && (!found || sb.CreatedAt.After(best.CreatedAt)) {
			best, found = sb, true
		}
	}
	return best, found
}

// ReadyPods returns the newest ready sandbox of each pod UID, ordered by
// pod and UID.
func (s *Snapshot) ReadyPods() []Sandbox {
	var out []Sandbox
	seen := map[string]bool{}
	for _, sb := range s.Sandboxes {
		if !sb.Ready || seen[sb.UID] {
			continue
		}
		seen[sb.UID] = true
		best, _ := s.ReadySandboxOf(sb.UID)
		out = append(out, best)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Pod != out[j].Pod {
			return out[i].Pod < out[j].Pod
		}
		return out[i].UID < out[j].UID
	})
	return out
}

// Container returns the container with id.
func (s *Snapshot) Container(id string) (Container, bool) {
	for _, c := range s.Containers {
		if c.ID == id {
			return c, true
		}
	}
	return Container{}, false
}

// RunningCount is the number of running containers in ready sandboxes.
func (s *Snapshot) RunningCount() int {
	n := 0
	for _, p := range s.Pods() {
		n += len(s.Running(p))
	}
	return n
}

// InNamespace is the part of s in namespace: its pods' sandboxes and
// containers.
func (s *Snapshot) InNamespace(namespace string) *Snapshot {
	out := &Snapshot{Taken: s.Taken}
	for _, sb := range s.Sandboxes {
		if strings.HasPrefix(sb.Pod, namespace+"/") {
			out.Sandboxes = append(out.Sandboxes, sb)
		}
	}
	for _, c := range s.Containers {
		if strings.HasPrefix(c.Pod, namespace+"/") {
			out.Containers = append(out.Containers, c)
		}
	}
	return out
}
