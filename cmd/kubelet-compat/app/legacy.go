package app

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/internal/manifest"
	"github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/pkg/cri"
	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	v1 "k8s.io/api/core/v1"
)

// Compat file states, as the kubelet sees the file.
const (
	fileActive  = "active"
	fileAbsent  = "absent"
	fileIgnored = "ignored"
)

// compatFileState is the compat file as the running kubelet sees it.
type compatFileState struct {
	Path            string     `json:"path"`
	State           string     `json:"state"`
	Reason          string     `json:"reason,omitempty"`
	PreviousVersion string     `json:"previousVersion,omitempty"`
	RecordedAt      *time.Time `json:"recordedAt,omitempty"`
	StaticPods      int        `json:"staticPods,omitempty"`
	file            *kubeletcompat.File
}

// readCompatFile applies the kubelet's checks: ReadFile with the owner the
// kubelet requires, and a previous version older than the kubelet's own.
func readCompatFile(path string, ownerUID int, current kubeletcompat.Version) compatFileState {
	st := compatFileState{Path: path}
	f, _, err := kubeletcompat.ReadFile(path, ownerUID)
	switch {
	case errors.Is(err, os.ErrNotExist):
		st.State = fileAbsent
		return st
	case err != nil:
		st.State, st.Reason = fileIgnored, err.Error()
		return st
	}
	st.file = f
	st.PreviousVersion, st.StaticPods = f.PreviousVersion, len(f.StaticPods)
	at := f.RecordedAt
	st.RecordedAt = &at
	prev, _ := kubeletcompat.ParseVersion(f.PreviousVersion)
	if !prev.LessThan(current) {
		st.State, st.Reason = fileIgnored, fmt.Sprintf("previous version %s is not older than the kubelet %s", prev, current)
		return st
	}
	st.State = fileActive
	return st
}

// legacyContainer is a running container created before the kubelet started.
type legacyContainer struct {
	c       cri.Container
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

// findLegacy lists the running containers created before start with their
// specs and the hash the running kubelet computes for them.
func findLegacy(st *nodeState, start time.Time, idx *specIndex, current kubeletcompat.Version) []legacyContainer {
	var out []legacyContainer
	for _, c := range st.containers {
		if c.State != cri.ContainerRunning || c.CreatedAt.IsZero() || !c.CreatedAt.Before(start) {
			continue
		}
		l := legacyContainer{c: c, sandbox: st.byID[c.SandboxID], pod: c.PodNamespace + "/" + c.PodName}
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
// or "" when the running kubelet keeps it on its own: its stored hash is the
// kubelet's own hash for the current spec. Without a spec it is assumed to
// need the file.
func (l legacyContainer) needsFile() string {
	switch {
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

func staticPodsNeedingFile(f *kubeletcompat.File, st *nodeState) []staticPodNeed {
	if f == nil {
		return nil
	}
	var out []staticPodNeed
	for _, sp := range f.StaticPods {
		data, err := os.ReadFile(sp.ManifestPath)
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
