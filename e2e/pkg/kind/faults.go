package kind

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/node"
)

// The faults of the fault run, one per worker: what goes wrong on a real
// node during a swap must restart nothing either.
const (
	// faultContainerdRestart: containerd restarts while no kubelet runs
	// (a package upgrade or an operator between the two kubelets).
	faultContainerdRestart = "containerd restarted between the kubelets"
	// faultKubeletKilled: the new kubelet is SIGKILLed during its first
	// sync (right after it logged its first SyncLoop ADD); systemd starts
	// it again (Restart=always, RestartSec=10).
	faultKubeletKilled = "the new kubelet SIGKILLed during its first sync"
)

// faultOf is the fault worker i (1-based) of a fault run meets.
func faultOf(i int) string {
	switch i {
	case 1:
		return faultContainerdRestart
	case 2:
		return faultKubeletKilled
	}
	return ""
}

// swap replaces the node's kubelet by k: as an operator does, or, on a
// fault run's worker, with that worker's fault.
func (r *ClusterRun) swap(ctx context.Context, n *Node, k node.Kubelet) error {
	fault := ""
	if r.faults {
		for i, w := range r.Cluster.Workers() {
			if w == n {
				fault = faultOf(i + 1)
			}
		}
	}
	switch fault {
	case faultContainerdRestart:
		if err := n.CheckStaged(ctx, k); err != nil {
			return err
		}
		r.Logf("%s: fault: %s", n.name, fault)
		steps := [][]string{
			{"systemctl", "stop", "kubelet"},
			selectArgs(k.SkipLevel, "stage2", k.Version),
			{"systemctl", "restart", "containerd"},
			{"systemctl", "start", "kubelet"},
		}
		for _, args := range steps {
			if _, err := r.ExecLogged(ctx, n, "fault-"+args[0]+"-"+args[1], args...); err != nil {
				return err
			}
		}
		return nil
	case faultKubeletKilled:
		restarts := func() string {
			out, _ := n.Exec(ctx, nil, "systemctl", "show", "-p", "NRestarts", "--value", "kubelet")
			return strings.TrimSpace(string(out))
		}
		since := fmt.Sprintf("@%d", time.Now().Unix())
		if err := n.SwapKubelet(ctx, k); err != nil {
			return err
		}
		before := restarts()
		// Kill it once it has begun its first sync (it logs SyncLoop ADD
		// at V(2), which the staged environment file sets), by its unit
		// (systemd knows its main PID), and let systemd restart it.
		if err := waitLogged(ctx, n, since, "SyncLoop ADD", 30*time.Second); err != nil {
			return err
		}
		r.Logf("%s: fault: %s", n.name, fault)
		if _, err := r.ExecLogged(ctx, n, "fault-kill-kubelet", "systemctl", "kill", "--signal=SIGKILL", "kubelet"); err != nil {
			return err
		}
		return Poll(ctx, 90*time.Second, func() error {
			if now := restarts(); now == before {
				return fmt.Errorf("systemd has not restarted the kubelet yet (NRestarts %s)", now)
			}
			return n.waitKubeletActive(ctx)
		})
	}
	return n.SwapKubelet(ctx, k)
}

// waitLogged waits, polling every 100 ms, until the kubelet's journal
// since since holds what.
func waitLogged(ctx context.Context, n *Node, since, what string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		out, err := n.Exec(ctx, nil, "journalctl", "-u", "kubelet", "--since", since, "-o", "cat", "--no-pager")
		if err == nil && bytes.Contains(out, []byte(what)) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: the kubelet did not log %q within %s", n.name, what, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
