package app

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	"github.com/kubelet-compat/kubelet-compat/pkg/shimgroups"
	"github.com/kubelet-compat/kubelet-compat/pkg/taskcgroups"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// cgroupsOptions are the flags of cgroups, and preflight's for its check
// of the same.
type cgroupsOptions struct {
	runcRoot  string
	taskState string
	repair    bool
}

func (c *cgroupsOptions) addRuncRootFlag(fs *pflag.FlagSet) {
	fs.StringVar(&c.runcRoot, "runc-root", taskcgroups.DefaultRuncRoot, "runc's state of the Kubernetes namespace's containers (containerd's runc shim: /run/containerd/runc/k8s.io)")
}

func (c *cgroupsOptions) addTaskStateFlag(fs *pflag.FlagSet) {
	fs.StringVar(&c.taskState, "task-state", shimgroups.DefaultTaskState, "containerd's state of the Kubernetes namespace's tasks, whose bundles name their shims' addresses")
}

func newCgroupsCommand(env Env) *cobra.Command {
	o := &cgroupsOptions{}
	n := &nodeOptions{}
	cmd := &cobra.Command{
		Use:   "cgroups [--repair]",
		Short: "Before containerd moves to 1.7 or later: find (and put back) containers out of their cgroups",
		Long: `cgroups lists the running containers whose first process runc ps would not
find, with their pods, and with --repair puts each back.

runc lists a container's processes from one of its cgroups and every
cgroup below it (on cgroup v1 the devices hierarchy's, on cgroup v2 its
one cgroup), and containerd's runc shim answers containerd's Pids call
with that list. A process in a cgroup below its container's (systemd as
PID 1 or Docker-in-Docker made one and moved there) is found, and one out
of another controller's cgroup only is not looked for: neither is out.
--repair looks again right before each write, and leaves a process found
in its cgroup or below it by then where it is.

On cgroup v1 nodes with the systemd cgroup driver a container's process
can end up in its pod slice's devices cgroup instead of its scope
(measured on kind nodes: the first pods of each node, such as kube-proxy's). It runs on, but its shim reports no process, and containerd
1.7 or later, at its start, kills such a shim as leaked when its own
sandbox store does not hold the sandbox: every sandbox containerd 1.6
started, and any container. The pod's sandbox is then gone and the kubelet
recreates the pod. Run cgroups --repair right before containerd restarts
into 1.7 or later (the fleet's Job does, in its runtime step;
preflight --runtime refuses such a runtime while a container is out).

It also fails while a running container's shim no longer answers at the
address its bundle names (a pod whose shim group split in two: the shim
of its next container found the pod's socket unanswering and took its
place): containerd 1.7 or later kills such a shim at its start too, and
nothing can join the two again. Restart the named pods first.

The evidence is runc's state under --runc-root (its init PID, start time
and recorded cgroups) and the kernel's (/proc, the cgroup files). A PID
that names another process than the one runc started is left alone, and
the process, held by its open /proc directory, is checked again after the
write: an init that exited meanwhile (its PID may name another process
now, which the write may have moved) is an error.

Exit codes:
  0  no running container is out of its cgroups (with --repair: any that
     were are back)
  1  an error
  2  containers are out of their cgroups (without --repair), or a
     container's shim no longer answers at its address`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCgroups(cmd.Context(), env, o, n)
		},
	}
	fs := cmd.Flags()
	o.addRuncRootFlag(fs)
	o.addTaskStateFlag(fs)
	fs.BoolVar(&o.repair, "repair", false, "put each container's first process back into the cgroup runc ps lists it from")
	fs.StringVar(&n.runtimeEndpoint, "runtime-endpoint", cri.DefaultRuntimeEndpoint, "CRI socket of the container runtime (names the containers' pods)")
	positiveDurationVar(fs, &n.criTimeout, "cri-timeout", cri.DefaultCallTimeout, "timeout of each CRI call (positive)")
	return cmd
}

func runCgroups(ctx context.Context, env Env, o *cgroupsOptions, n *nodeOptions) error {
	if err := runCgroupsRepair(ctx, env, o, n); err != nil {
		return err
	}
	pods, why, err := strandedPods(ctx, env, o.runcRoot, o.taskState, n)
	if err != nil || len(pods) == 0 {
		return err
	}
	for _, w := range why {
		fmt.Fprintf(env.Stdout, "away from its shim's address: %s\n", w)
	}
	return &exitError{code: ExitKept, err: fmt.Errorf("%d pod(s) whose shim no longer answers at its bundle's address (its shim group split in two): containerd 1.7 or later would kill them at its start; restart them first, nothing joins their shims again: %s", len(pods), strings.Join(pods, " "))}
}

// runCgroupsRepair lists (and with --repair puts back) the containers out
// of their cgroups.
func runCgroupsRepair(ctx context.Context, env Env, o *cgroupsOptions, n *nodeOptions) error {
	out, err := escapedTasks(ctx, env, o.runcRoot, n)
	if err != nil {
		return err
	}
	if len(out) == 0 {
		fmt.Fprintln(env.Stdout, "no running container is out of the cgroups runc gave it")
		return nil
	}
	host := taskcgroups.Host{RuncRoot: o.runcRoot, FSRoot: env.FSRoot}
	for _, e := range out {
		if !o.repair {
			fmt.Fprintf(env.Stdout, "out: %s\n", e)
			continue
		}
		moved, err := host.Repair(e.Task)
		if err != nil {
			return err
		}
		if !moved {
			// Moved into its cgroup or below it since it was listed (the
			// tenant's systemd or Docker-in-Docker): runc ps finds it.
			fmt.Fprintf(env.Stdout, "left alone, in its cgroup or below it now: %s\n", e)
			continue
		}
		fmt.Fprintf(env.Stdout, "put back: %s\n", e)
	}
	if !o.repair {
		return &exitError{code: ExitKept, err: fmt.Errorf("%d container(s) out of their cgroups: containerd 1.7 or later would kill their pods at its start (kubelet-compat cgroups --repair puts them back)", len(out))}
	}
	return nil
}

// escapedTask is a container out of its cgroups, with its pod.
type escapedTask struct {
	taskcgroups.Task
	pod, what string
}

func (e escapedTask) String() string {
	var ctls []string
	for _, c := range e.Out {
		ctls = append(ctls, c.Name())
	}
	return fmt.Sprintf("%s %s %.13s: process %d out of its %s cgroup", e.pod, e.what, e.ID, e.Pid, strings.Join(ctls, ", "))
}

// escapedTasks lists the running containers out of their cgroups, each
// named by its pod through the CRI (a task the runtime does not list is
// named by its ID alone).
func escapedTasks(ctx context.Context, env Env, runcRoot string, n *nodeOptions) ([]escapedTask, error) {
	tasks, err := taskcgroups.Host{RuncRoot: runcRoot, FSRoot: env.FSRoot}.Escaped()
	if err != nil || len(tasks) == 0 {
		return nil, err
	}
	names, err := taskNames(ctx, n)
	if err != nil {
		return nil, err
	}
	var out []escapedTask
	for _, t := range tasks {
		e := escapedTask{pod: names.pod(t.ID), what: names.what(t.ID)}
		e.Task = t
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pod+out[i].ID < out[j].pod+out[j].ID })
	return out, nil
}

// taskName is a task's pod and what it is in the pod, by task ID.
type taskName struct{ pod, what string }

type taskNameMap map[string]taskName

func (m taskNameMap) pod(id string) string {
	if n, ok := m[id]; ok {
		return n.pod
	}
	return "(no pod)"
}

func (m taskNameMap) what(id string) string {
	if n, ok := m[id]; ok {
		return n.what
	}
	return "task"
}

// taskNames names the runtime's sandboxes and containers by their pods
// through the CRI.
func taskNames(ctx context.Context, n *nodeOptions) (taskNameMap, error) {
	c, node, err := n.dialNode(ctx)
	if err != nil {
		return nil, err
	}
	c.Close()
	names := taskNameMap{}
	for _, s := range node.sandboxes {
		names[s.ID] = taskName{pod: s.Namespace + "/" + s.Name, what: "sandbox"}
	}
	for _, ct := range node.containers {
		pod := "(no pod)"
		if s, ok := node.byID[ct.SandboxID]; ok {
			pod = s.Namespace + "/" + s.Name
		}
		names[ct.ID] = taskName{pod: pod, what: "container " + ct.Name}
	}
	return names, nil
}
