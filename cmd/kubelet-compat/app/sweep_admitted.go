package app

import (
	"context"
	"sort"

	"github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/internal/podresources"
	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
)

// runningPods are the pods the runtime runs: a ready sandbox, or a sandbox
// with a running container, one per namespace and name, sorted.
func runningPods(st *nodeState) []cri.Sandbox {
	running := map[string]bool{}
	for _, c := range st.containers {
		if c.State == cri.ContainerRunning {
			running[c.SandboxID] = true
		}
	}
	seen := map[podresources.Pod]bool{}
	var out []cri.Sandbox
	for _, sb := range st.sandboxes {
		key := podresources.Pod{Namespace: sb.Namespace, Name: sb.Name}
		if !(sb.Ready || running[sb.ID]) || seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, sb)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// podsNotAdmitted lists the running pods that the running kubelet does not
// have yet, by its own answer on its pod-resources socket (see package
// podresources for why that answer is evidence). Nothing running: nothing
// to ask.
func (o *sweepOptions) podsNotAdmitted(ctx context.Context, env Env, st *nodeState) ([]cri.Sandbox, error) {
	running := runningPods(st)
	if len(running) == 0 {
		return nil, nil
	}
	endpoint := o.podResourcesEndpoint
	if endpoint == "" {
		endpoint = podresources.DefaultEndpoint(o.rootDir)
	}
	has, _, err := podresources.List(ctx, endpoint, env.RootUID, o.criTimeout)
	if err != nil {
		return nil, err
	}
	admitted := make(map[podresources.Pod]bool, len(has))
	for _, p := range has {
		admitted[p] = true
	}
	var missing []cri.Sandbox
	for _, sb := range running {
		if !admitted[podresources.Pod{Namespace: sb.Namespace, Name: sb.Name}] {
			missing = append(missing, sb)
		}
	}
	return missing, nil
}
