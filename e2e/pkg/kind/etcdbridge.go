package kind

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

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
	want, err := nodeimage.KubeadmEtcdTag(ctx, r.o.Output, version)
	if err != nil {
		return err
	}
	manifestPath := StaticPodDir + "/etcd.yaml"
	manifest, err := cp.ReadFile(ctx, manifestPath)
	if err != nil {
		return err
	}
	image, err := manifestImage(manifest)
	if err != nil {
		return err
	}
	running := image[strings.LastIndex(image, ":")+1:]
	if need, err := nodeimage.EtcdNeedsBridge(running, want); err != nil || !need {
		return err
	}
	flags := manifestFlags(manifest)
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
	snapshotting, err := bridgeManifest(manifest, nodeimage.EtcdBridgeTag, "1")
	if err != nil {
		return err
	}
	bridged, err := bridgeManifest(manifest, nodeimage.EtcdBridgeTag, "")
	if err != nil {
		return err
	}
	bridgeImage := image[:strings.LastIndex(image, ":")+1] + nodeimage.EtcdBridgeTag
	start := time.Now()
	r.logf("etcd %s -> %s before kubeadm's %s: with --snapshot-count=1 until a snapshot reaches applied index %d", running, nodeimage.EtcdBridgeTag, want, applied)
	if err := cp.WriteFile(ctx, manifestPath, snapshotting, 0o600); err != nil {
		return err
	}
	bridgeVersion := strings.TrimSuffix(nodeimage.EtcdBridgeTag, "-0")
	var snap uint64
	err = poll(ctx, 3*time.Minute, func() error {
		if err := etcdServes(ctx, cp, metrics, bridgeVersion); err != nil {
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
		return fmt.Errorf("etcd %s: %w", nodeimage.EtcdBridgeTag, err)
	}
	if err := cp.WriteFile(ctx, manifestPath, bridged, 0o600); err != nil {
		return err
	}
	// Serving again, from the one process of the manifest kubeadm wrote:
	// kubeadm's snapshot count, not the bridge's 1.
	err = poll(ctx, 3*time.Minute, func() error {
		if err := etcdServes(ctx, cp, metrics, bridgeVersion); err != nil {
			return err
		}
		out, err := cp.Exec(ctx, nil, "pgrep", "-a", "-x", "etcd")
		if err != nil {
			return fmt.Errorf("no etcd process: %w", err)
		}
		return oneEtcdWithout(string(out), "--snapshot-count=1")
	})
	if err != nil {
		return fmt.Errorf("etcd %s with kubeadm's flags: %w", nodeimage.EtcdBridgeTag, err)
	}
	// The API server may have restarted while etcd was away (its liveness
	// probe checks etcd): kubeadm and the e2e need it serving again.
	if err := r.waitControlPlane(ctx); err != nil {
		return fmt.Errorf("after etcd %s: %w", nodeimage.EtcdBridgeTag, err)
	}
	r.rep.Checks = append(r.rep.Checks, report.Check{
		Name:   fmt.Sprintf("%s %s: etcd %s -> %s before kubeadm upgrade apply v%s takes it to %s", r.name, r.step, running, nodeimage.EtcdBridgeTag, version, want),
		Passed: true,
		Detail: fmt.Sprintf("%s: a snapshot at index %d, at or past the applied index %d; healthy again with kubeadm's flags after %s", bridgeImage, snap, applied, time.Since(start).Round(time.Second)),
	})
	return nil
}

// manifestImage is the image of a single-container static pod manifest.
func manifestImage(manifest []byte) (string, error) {
	var images []string
	for _, line := range strings.Split(string(manifest), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "image: "); ok {
			images = append(images, strings.Trim(v, `"'`))
		}
	}
	if len(images) != 1 || !strings.Contains(images[0], ":") {
		return "", fmt.Errorf("want one image with a tag in the etcd manifest, found %q", images)
	}
	return images[0], nil
}

// manifestFlags are the --name=value arguments of a kubeadm manifest's
// command, one per line.
func manifestFlags(manifest []byte) map[string]string {
	flags := map[string]string{}
	for _, line := range strings.Split(string(manifest), "\n") {
		arg, ok := strings.CutPrefix(strings.TrimSpace(line), "- --")
		if !ok {
			continue
		}
		name, value, _ := strings.Cut(arg, "=")
		flags[name] = strings.Trim(value, `"'`)
	}
	return flags
}

// bridgeManifest is kubeadm's etcd manifest with the image tagged tag and,
// unless snapshotCount is empty, --snapshot-count=snapshotCount.
func bridgeManifest(manifest []byte, tag, snapshotCount string) ([]byte, error) {
	var out []string
	images, counts, commandAt := 0, 0, -1
	for _, line := range strings.Split(string(manifest), "\n") {
		trimmed := strings.TrimSpace(line)
		indent := line[:len(line)-len(strings.TrimLeft(line, " "))]
		switch {
		case strings.HasPrefix(trimmed, "image: "):
			ref := strings.Trim(strings.TrimPrefix(trimmed, "image: "), `"'`)
			i := strings.LastIndex(ref, ":")
			if i < 0 {
				return nil, fmt.Errorf("etcd image %q has no tag", ref)
			}
			line = indent + "image: " + ref[:i+1] + tag
			images++
		case strings.HasPrefix(trimmed, "- --snapshot-count=") && snapshotCount != "":
			line = indent + "- --snapshot-count=" + snapshotCount
			counts++
		case trimmed == "- etcd":
			commandAt = len(out)
		}
		out = append(out, line)
	}
	if images != 1 {
		return nil, fmt.Errorf("want one image in the etcd manifest, found %d", images)
	}
	if snapshotCount != "" && counts == 0 {
		if commandAt < 0 {
			return nil, fmt.Errorf("the etcd manifest has no \"- etcd\" command to add --snapshot-count to")
		}
		indent := out[commandAt][:len(out[commandAt])-len(strings.TrimLeft(out[commandAt], " "))]
		out = append(out[:commandAt+1], append([]string{indent + "- --snapshot-count=" + snapshotCount}, out[commandAt+1:]...)...)
	}
	return []byte(strings.Join(out, "\n")), nil
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
	sc := bufio.NewScanner(bytes.NewReader(metrics))
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), "etcd_server_proposals_applied_total ")
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f < 1 {
			return 0, fmt.Errorf("etcd_server_proposals_applied_total %q is not an index", v)
		}
		return uint64(f), nil
	}
	return 0, fmt.Errorf("etcd's metrics have no etcd_server_proposals_applied_total")
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
	const prefix = `etcd_server_version{server_version="`
	for _, line := range strings.Split(string(metrics), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			v, _, _ = strings.Cut(v, `"`)
			return v
		}
	}
	return ""
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
