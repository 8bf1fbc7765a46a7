package app

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	"github.com/kubelet-compat/kubelet-compat/pkg/runtimecompat"
	"github.com/kubelet-compat/kubelet-compat/pkg/runtimeroad"
	"github.com/kubelet-compat/kubelet-compat/pkg/shimgroups"
	"github.com/kubelet-compat/kubelet-compat/pkg/versions"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"
)

// runtimeCheckOptions are preflight's flags for the runtime check
// (pkg/runtimecompat, docs/runtime.md).
type runtimeCheckOptions struct {
	runtime string
	cgroups cgroupsOptions
}

func (r *runtimeCheckOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&r.runtime, "runtime", "", "the node's container runtime as NAME@VERSION, e.g. containerd@1.7.35, judged by the runtime matrix (docs/runtime.md) instead of asking --runtime-endpoint (--node asks it by default); with --node and containerd 1.7 or later, also refused while a running container is out of its cgroups (kubelet-compat cgroups) or its shim no longer answers at its bundle's address")
	r.cgroups.addRuncRootFlag(fs)
	r.cgroups.addTaskStateFlag(fs)
}

// cgroupV1Host says whether this host mounts cgroup v1 at /sys/fs/cgroup;
// tests replace it.
var cgroupV1Host = func() (bool, error) {
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/cgroup", &st); err != nil {
		return false, err
	}
	return st.Type != unix.CGROUP2_SUPER_MAGIC, nil
}

// checkRuntime refuses an upgrade whose target kubelet the node's runtime
// does not serve, naming the runtime step that must come first, and
// returns the report's notes on the runtime. With --node it asks the
// runtime which CRI APIs it answers and whether it implements
// RuntimeConfig; --runtime names it instead. Without
// either (manifests only) there is no runtime to check.
//
// With --node, a --runtime that kills shims whose task reports no process
// (containerd 1.7 or later) is refused while a running container is out
// of its cgroups, or while a task's shim no longer answers at the address
// its bundle names (package shimgroups): that containerd's start would
// kill its pod.
func (o *preflightOptions) checkRuntime(ctx context.Context, env Env, from, to kubeletcompat.Version) ([]string, error) {
	var rt runtimecompat.Runtime
	switch {
	case o.runtime != "":
		name, version, ok := versions.SplitRef(o.runtime)
		if !ok {
			return nil, fmt.Errorf("--runtime %q: want NAME@VERSION, e.g. containerd@1.7.35", o.runtime)
		}
		rt = runtimecompat.Runtime{Name: name, Version: version}
	case o.onNode:
		s, err := cri.Probe(ctx, o.runtimeEndpoint, cri.Options{Timeout: o.criTimeout})
		if err != nil {
			return nil, err
		}
		rt = runtimecompat.Runtime{Name: s.Runtime.RuntimeName, Version: s.Runtime.RuntimeVersion, APIs: s.APIs, RuntimeConfig: &s.RuntimeConfig}
	default:
		return nil, nil
	}
	var notes []string
	cgroupV1 := false
	if o.onNode {
		v1, err := cgroupV1Host()
		if err != nil {
			notes = append(notes, "runtime: not checked: the host's cgroup version: "+err.Error())
		}
		cgroupV1 = v1
	}
	verdict := runtimecompat.Check(from.Minor, to.Minor, rt, cgroupV1)
	if err := verdict.Err(); err != nil {
		return nil, fmt.Errorf("runtime: %w", err)
	}
	if o.runtime != "" && o.onNode {
		note, err := o.checkRoad(ctx, env, rt)
		if err != nil {
			return nil, err
		}
		notes = append(notes, note)
	}
	if o.runtime != "" && o.onNode && runtimecompat.KillsShimsWithoutProcesses(rt.Name, rt.Version) {
		out, err := escapedTasks(ctx, env, o.cgroups.runcRoot, &o.nodeOptions)
		if err != nil {
			return nil, fmt.Errorf("runtime: the containers' cgroups: %w", err)
		}
		if len(out) > 0 {
			var pods []string
			seen := map[string]bool{}
			for _, e := range out {
				if !seen[e.pod] {
					seen[e.pod] = true
					pods = append(pods, e.pod)
				}
			}
			return nil, fmt.Errorf("runtime: %s would kill %d pod(s) at its start, whose shim reports no process (a container out of its cgroups; kubelet-compat cgroups): %s; put them back first: kubelet-compat cgroups --repair", o.runtime, len(pods), strings.Join(pods, " "))
		}
		if err := o.checkShimGroups(ctx, env); err != nil {
			return nil, err
		}
		notes = append(notes, "runtime: no running container is out of its cgroups or away from its shim's address: "+o.runtime+" kills no shim as leaked at its start")
	}
	for _, n := range verdict.Notes {
		notes = append(notes, "runtime: "+n)
	}
	return notes, nil
}

// checkRoad refuses a move of the node's containerd to --runtime off the
// road containerd supports (pkg/runtimeroad: one minor at a time), and one
// to a release without the runtime type of a handler a running pod's
// sandbox runs under (its RuntimeClass: io.containerd.runc.v1 and
// io.containerd.runtime.v1.linux are gone in 2.0), naming those pods.
func (o *preflightOptions) checkRoad(ctx context.Context, env Env, to runtimecompat.Runtime) (string, error) {
	c, err := o.dial(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	running := c.Runtime()
	if running.RuntimeName != "containerd" || to.Name != "containerd" {
		return fmt.Sprintf("runtime: the road from %s %s to %s is not checked (containerd's only)", running.RuntimeName, running.RuntimeVersion, o.runtime), nil
	}
	from, ok := versions.Leading(running.RuntimeVersion)
	target, err := versions.ParseRelease(to.Version)
	if !ok || err != nil {
		return "", fmt.Errorf("runtime: cannot place containerd %s -> %s on the road", running.RuntimeVersion, to.Version)
	}
	step := runtimeroad.Step{From: from, To: target}
	if err := step.Check(); err != nil {
		return "", fmt.Errorf("runtime: %w (docs/runtime.md, the road)", err)
	}
	if step.LeavesTaskAPIv3() {
		// A step down from 2.x: containerd 1.x cannot reach a shim 2.x
		// started.
		tasks, err := runtimeroad.TasksOnShimV3(runtimeroad.HostRoot(env.FSRoot), filepath.Dir(o.cgroups.taskState))
		if err != nil {
			return "", fmt.Errorf("runtime: the tasks' bundles: %w", err)
		}
		if len(tasks) > 0 {
			return "", fmt.Errorf("runtime: containerd %s cannot reach the %d task(s) containerd %s started (their shims serve the task API v3 only; containerd/containerd#11720: their containers would be orphaned): %s; a step back to 1.x is lossless only before 2.x started any",
				to.Version, len(tasks), running.RuntimeVersion, strings.Join(tasks, " "))
		}
	}
	if step.Down() {
		return fmt.Sprintf("runtime: containerd %s -> %s is a step back of the road (one minor at a time); no task runs on a shim the version it leaves started", running.RuntimeVersion, to.Version), nil
	}
	removed := false
	for t := range runtimeroad.RemovedRuntimeTypes {
		removed = removed || step.RemovesRuntimeType(t)
	}
	if !removed {
		return fmt.Sprintf("runtime: containerd %s -> %s is a step of the road (one minor at a time)", running.RuntimeVersion, to.Version), nil
	}
	handlers, def, err := c.RuntimeHandlers(ctx)
	if err != nil {
		return "", fmt.Errorf("runtime: containerd %s removes runtime types; which handler runs which type: %w", to.Version, err)
	}
	sandboxes, err := c.ListSandboxes(ctx)
	if err != nil {
		return "", err
	}
	var pods []string
	for _, sb := range sandboxes {
		if !sb.Ready {
			continue
		}
		st, err := c.SandboxStatus(ctx, sb.ID)
		if err != nil {
			return "", err
		}
		handler := st.RuntimeHandler
		if handler == "" {
			handler = def
		}
		if t := handlers[handler]; step.RemovesRuntimeType(t) {
			pods = append(pods, fmt.Sprintf("%s/%s (handler %s: %s)", sb.Namespace, sb.Name, handler, t))
		}
	}
	if len(pods) > 0 {
		sort.Strings(pods)
		return "", fmt.Errorf("runtime: containerd %s has no runtime of the type %d running pod(s) run under, which it could not start again: %s; move them to a RuntimeClass of io.containerd.runc.v2 first", to.Version, len(pods), strings.Join(pods, ", "))
	}
	return fmt.Sprintf("runtime: containerd %s -> %s is a step of the road; no running pod runs under a runtime type %s removes", running.RuntimeVersion, to.Version, to.Version), nil
}

// checkShimGroups refuses the runtime while a running container's shim is
// not the one listening at its bundle's address (a pod whose shim group
// split in two): that containerd's start would take it for leaked. Nothing
// joins them again; the pod must be restarted first.
func (o *preflightOptions) checkShimGroups(ctx context.Context, env Env) error {
	pods, why, err := strandedPods(ctx, env, o.cgroups.runcRoot, o.cgroups.taskState, &o.nodeOptions)
	if err != nil || len(pods) == 0 {
		return err
	}
	return fmt.Errorf("runtime: %s would kill %d pod(s) at its start, whose shim no longer answers at its bundle's address (the pod's shim split in two): %s (%s); restart them first: nothing joins their shims again", o.runtime, len(pods), strings.Join(pods, " "), strings.Join(why, "; "))
}

// strandedPods names the pods of the running containers whose shim no
// longer answers at their bundle's address (package shimgroups), and why
// for each such container.
func strandedPods(ctx context.Context, env Env, runcRoot, taskState string, n *nodeOptions) (pods, why []string, err error) {
	tasks, _, err := shimgroups.Host{RuncRoot: runcRoot, TaskState: taskState, FSRoot: env.FSRoot, Listeners: env.UnixListeners}.Stranded()
	if err != nil {
		return nil, nil, fmt.Errorf("the containers' shims: %w", err)
	}
	if len(tasks) == 0 {
		return nil, nil, nil
	}
	names, err := taskNames(ctx, n)
	if err != nil {
		return nil, nil, err
	}
	seen := map[string]bool{}
	for _, t := range tasks {
		pod := names.pod(t.ID)
		if !seen[pod] {
			seen[pod] = true
			pods = append(pods, pod)
		}
		why = append(why, fmt.Sprintf("%s %.13s of %s: %s", names.what(t.ID), t.ID, pod, t.Reason()))
	}
	return pods, why, nil
}
