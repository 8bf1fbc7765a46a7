package kind

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind/nodeimage"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/pkg/etcdbridge"
)

// bridgeEtcd takes the control plane's etcd across 3.6 -> 3.7 as etcd's
// upgrade guides say, before kubeadm upgrade apply v<version> moves it to
// 3.7: first to the bridge etcd (3.6.11 or later, which 3.7 requires) run
// with --snapshot-count=1 until it has written a snapshot at or past every
// entry the old etcd had applied, so that 3.7 replays none of the 3.5 era
// from its WAL; then to kubeadm's manifest with only the bridge's image.
// It does nothing when the apply stays within a minor of etcd. The logic
// is the product's (pkg/etcdbridge, which kubelet-compat etcd-bridge runs
// on a node); the e2e brings its own evidence through the node's exec.
func (r *ClusterRun) bridgeEtcd(ctx context.Context, version string) error {
	cp := r.Cluster.ControlPlane()
	want, err := nodeimage.KubeadmEtcdImage(ctx, r.Options.Output, version)
	if err != nil {
		return err
	}
	manifestPath := StaticPodDir + "/etcd.yaml"
	raw, err := cp.ReadFile(ctx, manifestPath)
	if err != nil {
		return err
	}
	pod, err := etcdbridge.DecodeManifest(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", manifestPath, err)
	}
	running := pod.Spec.Containers[0].Image
	bridge, need, err := etcdbridge.Bridge(running, want)
	if err != nil || !need {
		return err
	}
	flags := etcdbridge.CommandFlags(pod.Spec.Containers[0].Command)
	dataDir := flags["data-dir"]
	if dataDir == "" {
		return fmt.Errorf("%s: no --data-dir", manifestPath)
	}
	metrics, err := etcdbridge.MetricsPort(flags["listen-metrics-urls"])
	if err != nil {
		return fmt.Errorf("%s: %w", manifestPath, err)
	}
	applied, err := etcdAppliedIndex(ctx, cp, metrics)
	if err != nil {
		return fmt.Errorf("etcd %s: %w", running, err)
	}
	writeEtcd := func(p *v1.Pod) error {
		data, err := yaml.Marshal(p)
		if err != nil {
			return err
		}
		return cp.WriteFile(ctx, manifestPath, data, 0o600)
	}
	start := time.Now()
	r.Logf("etcd %s -> %s before kubeadm's %s: with --snapshot-count=1 until a snapshot reaches applied index %d", running, bridge, want, applied)
	if err := writeEtcd(etcdbridge.Pod(pod, bridge, "1")); err != nil {
		return err
	}
	var snap uint64
	err = Poll(ctx, 3*time.Minute, func() error {
		if err := etcdServes(ctx, cp, metrics, etcdbridge.Version); err != nil {
			return err
		}
		out, err := cp.Exec(ctx, nil, "ls", "-1", path.Join(dataDir, "member", "snap"))
		if err != nil {
			return err
		}
		if snap = etcdbridge.NewestSnapshotIndex(strings.Fields(string(out))); snap < applied {
			return fmt.Errorf("etcd's newest snapshot is at index %d, below the applied index %d", snap, applied)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("etcd %s: %w", bridge, err)
	}
	if err := writeEtcd(etcdbridge.Pod(pod, bridge, "")); err != nil {
		return err
	}
	// Serving again, from the one process of the manifest kubeadm wrote:
	// kubeadm's snapshot count, not the bridge's 1.
	err = Poll(ctx, 3*time.Minute, func() error {
		if err := etcdServes(ctx, cp, metrics, etcdbridge.Version); err != nil {
			return err
		}
		out, err := cp.Exec(ctx, nil, "pgrep", "-a", "-x", "etcd")
		if err != nil {
			return fmt.Errorf("no etcd process: %w", err)
		}
		return etcdbridge.OneProcessWithout(etcdbridge.ParsePgrep(string(out)), "--snapshot-count=1")
	})
	if err != nil {
		return fmt.Errorf("etcd %s with kubeadm's flags: %w", bridge, err)
	}
	// The API server may have restarted while etcd was away (its liveness
	// probe checks etcd): kubeadm and the e2e need it serving again.
	if err := r.WaitControlPlane(ctx); err != nil {
		return fmt.Errorf("after etcd %s: %w", bridge, err)
	}
	r.Report.Checks = append(r.Report.Checks, report.Check{
		Name:   fmt.Sprintf("%s %s: etcd %s -> %s before kubeadm upgrade apply v%s takes it to %s", r.Name, r.Step, running, bridge, version, want),
		Passed: true,
		Detail: fmt.Sprintf("a snapshot at index %d, at or past the applied index %d; healthy again with kubeadm's flags after %s", snap, applied, time.Since(start).Round(time.Second)),
	})
	return nil
}

// etcdGet GETs path from the etcd metrics listener inside the node (the
// node image has bash and no HTTP client).
func etcdGet(ctx context.Context, n *Node, port, path string) ([]byte, error) {
	script := `exec 3<>"/dev/tcp/127.0.0.1/$1" && printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$2" >&3 && cat <&3`
	out, err := n.Exec(ctx, nil, "bash", "-c", script, "bash", port, path)
	if err != nil {
		return nil, fmt.Errorf("GET http://127.0.0.1:%s%s: %w", port, path, err)
	}
	status, _, _ := bytes.Cut(out, []byte("\n"))
	if !bytes.HasPrefix(status, []byte("HTTP/1.")) || !bytes.Contains(status, []byte(" 200 ")) {
		return nil, fmt.Errorf("GET http://127.0.0.1:%s%s: %q", port, path, bytes.TrimSpace(status))
	}
	return out, nil
}

// etcdAppliedIndex is the raft index etcd has applied, from its metrics.
func etcdAppliedIndex(ctx context.Context, n *Node, port string) (uint64, error) {
	out, err := etcdGet(ctx, n, port, "/metrics")
	if err != nil {
		return 0, err
	}
	return etcdbridge.ParseAppliedIndex(out)
}

// etcdServes asks the etcd on the metrics port for /health, as kubeadm's
// probes do, and its version from its metrics.
func etcdServes(ctx context.Context, n *Node, port, version string) error {
	out, err := etcdGet(ctx, n, port, "/health")
	if err != nil {
		return err
	}
	if !etcdbridge.Healthy(out) {
		return fmt.Errorf("etcd is not healthy: %s", lastLine(out))
	}
	if out, err = etcdGet(ctx, n, port, "/metrics"); err != nil {
		return err
	}
	if got := etcdbridge.ServerVersion(out); got != version {
		return fmt.Errorf("etcd %q serves, want %s", got, version)
	}
	return nil
}

func lastLine(b []byte) []byte {
	b = bytes.TrimSpace(b)
	return b[bytes.LastIndexByte(b, '\n')+1:]
}
