package kind

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind/nodeimage"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
)

// bridgeEtcd takes the control plane's etcd across 3.6 -> 3.7 as etcd's
// upgrade guides say, before kubeadm upgrade apply v<version> moves it to
// 3.7: first to the bridge etcd (3.6.11 or later, which 3.7 requires) run
// with --snapshot-count=1 until it has written a snapshot at or past every
// entry the old etcd had applied, so that 3.7 replays none of the 3.5 era
// from its WAL; then to kubeadm's manifest with only the bridge's image.
// It does nothing when the apply stays within a minor of etcd.
func (r *clusterRun) bridgeEtcd(ctx context.Context, version string) error {
	cp := r.c.ControlPlane()
	want, err := nodeimage.KubeadmEtcdImage(ctx, r.o.Output, version)
	if err != nil {
		return err
	}
	manifestPath := StaticPodDir + "/etcd.yaml"
	raw, err := cp.ReadFile(ctx, manifestPath)
	if err != nil {
		return err
	}
	pod, err := decodeEtcdManifest(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", manifestPath, err)
	}
	running := pod.Spec.Containers[0].Image
	bridge, need, err := nodeimage.EtcdBridge(running, want)
	if err != nil || !need {
		return err
	}
	flags := commandFlags(pod.Spec.Containers[0].Command)
	dataDir := flags["data-dir"]
	if dataDir == "" {
		return fmt.Errorf("%s: no --data-dir", manifestPath)
	}
	metrics, err := metricsPort(flags["listen-metrics-urls"])
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
	r.logf("etcd %s -> %s before kubeadm's %s: with --snapshot-count=1 until a snapshot reaches applied index %d", running, bridge, want, applied)
	if err := writeEtcd(bridgePod(pod, bridge, "1")); err != nil {
		return err
	}
	var snap uint64
	err = poll(ctx, 3*time.Minute, func() error {
		if err := etcdServes(ctx, cp, metrics, nodeimage.EtcdBridgeVersion); err != nil {
			return err
		}
		out, err := cp.Exec(ctx, nil, "ls", "-1", path.Join(dataDir, "member", "snap"))
		if err != nil {
			return err
		}
		if snap = newestSnapshotIndex(strings.Fields(string(out))); snap < applied {
			return fmt.Errorf("etcd's newest snapshot is at index %d, below the applied index %d", snap, applied)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("etcd %s: %w", bridge, err)
	}
	if err := writeEtcd(bridgePod(pod, bridge, "")); err != nil {
		return err
	}
	// Serving again, from the one process of the manifest kubeadm wrote:
	// kubeadm's snapshot count, not the bridge's 1.
	err = poll(ctx, 3*time.Minute, func() error {
		if err := etcdServes(ctx, cp, metrics, nodeimage.EtcdBridgeVersion); err != nil {
			return err
		}
		out, err := cp.Exec(ctx, nil, "pgrep", "-a", "-x", "etcd")
		if err != nil {
			return fmt.Errorf("no etcd process: %w", err)
		}
		return oneEtcdWithout(string(out), "--snapshot-count=1")
	})
	if err != nil {
		return fmt.Errorf("etcd %s with kubeadm's flags: %w", bridge, err)
	}
	// The API server may have restarted while etcd was away (its liveness
	// probe checks etcd): kubeadm and the e2e need it serving again.
	if err := r.waitControlPlane(ctx); err != nil {
		return fmt.Errorf("after etcd %s: %w", bridge, err)
	}
	r.rep.Checks = append(r.rep.Checks, report.Check{
		Name:   fmt.Sprintf("%s %s: etcd %s -> %s before kubeadm upgrade apply v%s takes it to %s", r.name, r.step, running, bridge, version, want),
		Passed: true,
		Detail: fmt.Sprintf("a snapshot at index %d, at or past the applied index %d; healthy again with kubeadm's flags after %s", snap, applied, time.Since(start).Round(time.Second)),
	})
	return nil
}

// decodeEtcdManifest reads kubeadm's etcd manifest: a pod of one
// container.
func decodeEtcdManifest(raw []byte) (*v1.Pod, error) {
	var pod v1.Pod
	if err := yaml.UnmarshalStrict(raw, &pod); err != nil {
		return nil, err
	}
	if len(pod.Spec.Containers) != 1 {
		return nil, fmt.Errorf("want one container, found %d", len(pod.Spec.Containers))
	}
	return &pod, nil
}

// commandFlags are the --name=value arguments of a command.
func commandFlags(command []string) map[string]string {
	flags := map[string]string{}
	for _, arg := range command {
		if a, ok := strings.CutPrefix(arg, "--"); ok {
			name, value, _ := strings.Cut(a, "=")
			flags[name] = value
		}
	}
	return flags
}

// bridgePod is kubeadm's etcd pod running image and, unless snapshotCount
// is empty, --snapshot-count=snapshotCount (replaced, or added).
func bridgePod(kubeadm *v1.Pod, image, snapshotCount string) *v1.Pod {
	pod := kubeadm.DeepCopy()
	c := &pod.Spec.Containers[0]
	c.Image = image
	if snapshotCount == "" {
		return pod
	}
	flag := "--snapshot-count=" + snapshotCount
	for i, arg := range c.Command {
		if strings.HasPrefix(arg, "--snapshot-count=") {
			c.Command[i] = flag
			return pod
		}
	}
	c.Command = append(c.Command, flag)
	return pod
}

// metricsPort is the port of kubeadm's plain-HTTP etcd metrics listener on
// the node's loopback (--listen-metrics-urls=http://127.0.0.1:2381).
func metricsPort(urls string) (string, error) {
	for _, s := range strings.Split(urls, ",") {
		u, err := url.Parse(s)
		if err == nil && u.Scheme == "http" && u.Hostname() == "127.0.0.1" && u.Port() != "" {
			return u.Port(), nil
		}
	}
	return "", fmt.Errorf("no http://127.0.0.1:<port> in --listen-metrics-urls=%q", urls)
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
	return parseAppliedIndex(out)
}

// parseAppliedIndex reads etcd_server_proposals_applied_total (a gauge of
// the applied index) from etcd's metrics.
func parseAppliedIndex(metrics []byte) (uint64, error) {
	const name = "etcd_server_proposals_applied_total "
	v, ok := metricLine(metrics, name)
	if !ok {
		return 0, fmt.Errorf("etcd's metrics have no %s", strings.TrimSpace(name))
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || f < 1 {
		return 0, fmt.Errorf("%s%q is not an index", name, v)
	}
	return uint64(f), nil
}

// metricLine is the rest of the first line of metrics that starts with
// prefix.
func metricLine(metrics []byte, prefix string) (string, bool) {
	for _, line := range strings.Split(string(metrics), "\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			return rest, true
		}
	}
	return "", false
}

// etcdServes asks the etcd on the metrics port for /health, as kubeadm's
// probes do, and its version from its metrics.
func etcdServes(ctx context.Context, n *Node, port, version string) error {
	out, err := etcdGet(ctx, n, port, "/health")
	if err != nil {
		return err
	}
	if !bytes.Contains(out, []byte(`"health":"true"`)) {
		return fmt.Errorf("etcd is not healthy: %s", lastLine(out))
	}
	if out, err = etcdGet(ctx, n, port, "/metrics"); err != nil {
		return err
	}
	if got := etcdServerVersion(out); got != version {
		return fmt.Errorf("etcd %q serves, want %s", got, version)
	}
	return nil
}

// etcdServerVersion reads etcd_server_version{server_version="3.6.16"} 1.
func etcdServerVersion(metrics []byte) string {
	v, _ := metricLine(metrics, `etcd_server_version{server_version="`)
	v, _, _ = strings.Cut(v, `"`)
	return v
}

// oneEtcdWithout checks `pgrep -a -x etcd` lists one process, without arg.
func oneEtcdWithout(pgrep, arg string) error {
	var lines []string
	if out := strings.TrimSpace(pgrep); out != "" {
		lines = strings.Split(out, "\n")
	}
	if len(lines) != 1 {
		return fmt.Errorf("want one etcd process, found %d", len(lines))
	}
	for _, f := range strings.Fields(lines[0]) {
		if f == arg {
			return fmt.Errorf("etcd still runs with %s", arg)
		}
	}
	return nil
}

func lastLine(b []byte) []byte {
	b = bytes.TrimSpace(b)
	return b[bytes.LastIndexByte(b, '\n')+1:]
}

var snapName = regexp.MustCompile(`^[0-9a-f]{16}-([0-9a-f]{16})\.snap$`)

// newestSnapshotIndex is the highest raft index among etcd's snapshot
// files (<term>-<index>.snap, in hex), 0 with none.
func newestSnapshotIndex(names []string) uint64 {
	var newest uint64
	for _, name := range names {
		m := snapName.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		if i, err := strconv.ParseUint(m[1], 16, 64); err == nil && i > newest {
			newest = i
		}
	}
	return newest
}
