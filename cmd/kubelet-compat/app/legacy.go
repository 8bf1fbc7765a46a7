package app

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/internal/manifest"
	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	v1 "k8s.io/api/core/v1"
)

// compatFileState is the compat file as the running kubelet sees it.
type compatFileState struct {
	Path            string     `json:"path"`
	State           string     `json:"state"`
	Reason          string     `json:"reason,omitempty"`
	PreviousVersion string     `json:"previousVersion,omitempty"`
	RecordedAt      *time.Time `json:"recordedAt,omitempty"`
	Containers      int        `json:"containers,omitempty"`
	StaticPods      int        `json:"staticPods,omitempty"`
	// decider is the kubelet's own decision core on this file (its File is
	// nil when the file could not be read); state is ignored, not absent,
	// for a file that is there but unreadable.
	decider *kubeletcompat.Decider
	state   kubeletcompat.FileState
}

// readCompatFile reads the file with the kubelet's checks (ReadFile with the
// owner the kubelet requires) and decides on it exactly as the kubelet of
// version current, started at start, does.
func readCompatFile(path string, ownerUID int, current kubeletcompat.Version, start time.Time) compatFileState {
	st := compatFileState{Path: path}
	f, _, err := kubeletcompat.ReadFile(path, ownerUID)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		st.decider = kubeletcompat.NewDecider(nil, current, start)
		st.state, st.State, st.Reason = kubeletcompat.FileIgnored, kubeletcompat.FileIgnored.String(), err.Error()
		return st
	}
	st.decider = kubeletcompat.NewDecider(f, current, start)
	state, reason := st.decider.State()
	st.state, st.State, st.Reason = state, state.String(), reason
	if f != nil {
		st.PreviousVersion, st.Containers, st.StaticPods = f.PreviousVersion, len(f.Containers), len(f.StaticPods)
		at := f.RecordedAt
		st.RecordedAt = &at
	}
	return st
}

// legacyContainer is a running container that the compat file lists as
// carrying an older kubelet's hash, or that was created before the running
// kubelet started.
type legacyContainer struct {
	c cri.Container
	// listed is set when the compat file in force lists the container with
	// an older kubelet's hash: only then can the file keep it.
	listed  bool
	sandbox *cri.Sandbox
	pod     string // namespace/name
	spec    podSpec
	hasSpec bool
	// container is the spec of this container when known.
	container *v1.Container
	init      bool
	// currentHash is what the running kubelet computes for the spec.
	currentHash uint64
	currentErr  error
}

// findLegacy lists the running containers that the file lists with an older
// kubelet's hash (listed) or that were created before start, with their
// specs and the hash the running kubelet computes for them.
func findLegacy(st *nodeState, start time.Time, d *kubeletcompat.Decider, idx *specIndex, current kubeletcompat.Version) []legacyContainer {
	var out []legacyContainer
	for _, c := range st.containers {
		_, isListed := d.LegacyHashVersion(c.ID)
		old := !c.CreatedAt.IsZero() && c.CreatedAt.Before(start)
		if c.State != cri.ContainerRunning || !isListed && !old {
			continue
		}
		l := legacyContainer{c: c, listed: isListed, sandbox: st.byID[c.SandboxID], pod: c.PodNamespace + "/" + c.PodName}
		l.spec, l.hasSpec = idx.lookup(l.sandbox, c)
		if l.hasSpec {
			l.container, l.init = container(l.spec.pod, c.Name)
			if l.container != nil {
				l.currentHash, l.currentErr = kubeletcompat.ContainerHash(current, l.container)
			}
		}
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].pod != out[j].pod {
			return out[i].pod < out[j].pod
		}
		return out[i].c.Name < out[j].c.Name
	})
	return out
}

// needsFile says why a legacy container still depends on the compat file,
// or "" when it does not: the file does not list it (the kubelet would not
// keep it through the file anyway), or the running kubelet keeps it on its
// own because its stored hash is the kubelet's own hash for the current
// spec. A listed container without a spec is assumed to need the file.
func (l legacyContainer) needsFile() string {
	switch {
	case !l.listed:
		return ""
	case !l.hasSpec:
		return "no pod spec found (give --manifest-dir or --kubeconfig)"
	case l.container == nil:
		return fmt.Sprintf("container %s is not in the pod spec from %s", l.c.Name, l.spec.source)
	case l.init:
		return "" // a running init container is not hash-checked
	case l.c.HashErr != nil:
		return l.c.HashErr.Error()
	case l.currentErr != nil:
		return l.currentErr.Error()
	case l.c.Hash != l.currentHash:
		return fmt.Sprintf("stored hash %x is not the kubelet's %x", l.c.Hash, l.currentHash)
	}
	return ""
}

// staticPodNeed is a static pod that runs under the UID the compat file
// recorded: without the file the kubelet derives its own UID and recreates
// the pod, unless the manifest pins metadata.uid to that same UID.
type staticPodNeed struct {
	Pod          string `json:"pod"`
	UID          string `json:"uid"`
	ManifestPath string `json:"manifestPath"`
}

func staticPodsNeedingFile(d *kubeletcompat.Decider, st *nodeState) []staticPodNeed {
	if !d.InForce() {
		return nil
	}
	f := d.File()
	var out []staticPodNeed
	for _, sp := range f.StaticPods {
		data, err := manifest.ReadFile(sp.ManifestPath)
		if err != nil || kubeletcompat.ManifestSHA256(data) != sp.SHA256 {
			continue // the kubelet no longer uses this record
		}
		for _, sb := range st.sandboxes {
			if sb.UID != sp.UID || !sb.Ready {
				continue
			}
			if pinsUID(data, sp.UID) {
				break
			}
			out = append(out, staticPodNeed{Pod: sb.Namespace + "/" + sb.Name, UID: sp.UID, ManifestPath: sp.ManifestPath})
			break
		}
	}
	return out
}

// pinsUID reports whether a manifest sets metadata.uid to uid, so that any
// kubelet runs it under that UID.
func pinsUID(data []byte, uid string) bool {
	pod, err := manifest.DecodeStaticPod(data)
	return err == nil && string(pod.UID) == uid
}
