package app

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/etcdbridge"
	"github.com/spf13/cobra"
)

// Defaults of etcd-bridge.
const (
	defaultEtcdManifest    = "/etc/kubernetes/manifests/etcd.yaml"
	defaultBridgeStateDir  = "/var/lib/kubelet-compat/etcd-bridge"
	defaultBridgeTimeout   = 5 * time.Minute
	defaultBridgePoll      = 2 * time.Second
	defaultApiserverReadyz = "https://127.0.0.1:6443/readyz"
	// bridgeStateFile and kubeadmManifestCopy live in the state dir.
	bridgeStateFile     = "state"
	kubeadmManifestCopy = "kubeadm-etcd.yaml"
	// The phases of a bridge: the bridge etcd runs with
	// --snapshot-count=1 (snapshotting), then with kubeadm's flags
	// (restoring) until it serves; done once it does.
	phaseSnapshotting = "snapshotting"
	phaseRestoring    = "restoring"
	phaseDone         = "done"
	snapshotCount1    = "--snapshot-count=1"
)

type etcdBridgeOptions struct {
	target, bridge  string
	manifest        string
	stateDir        string
	timeout         time.Duration
	poll            time.Duration
	lockTimeout     time.Duration
	apiserverReadyz string
}

func newEtcdBridgeCommand(env Env) *cobra.Command {
	o := &etcdBridgeOptions{}
	cmd := &cobra.Command{
		Use:   "etcd-bridge --target-etcd-image IMAGE --bridge-image IMAGE",
		Short: "Take this control-plane node's etcd across 3.6 -> 3.7 before kubeadm does",
		Long: `etcd-bridge runs on a control-plane node, as root, before kubeadm upgrade
apply (or node) moves the node's etcd from 3.6 to 3.7. etcd 3.7 wants a
3.6.11 or later before it and a snapshot, taken by it, of everything the old
etcd applied: without it, 3.7.0 replays WAL entries of the 3.5 era and panics
("unmarshal should never fail") on a cluster born at 1.33 or earlier, and
kubeadm rolls back after five minutes.

When --target-etcd-image (the etcd kubeadm of the target wants: kubeadm config
images list) is a 3.7 or later and the manifest (--manifest) runs a 3.6, it:
  1. reads the index etcd has applied (etcd_server_proposals_applied_total,
     from the manifest's plain-HTTP --listen-metrics-urls on 127.0.0.1), and
     keeps kubeadm's manifest in --state-dir;
  2. writes the manifest with --bridge-image and --snapshot-count=1 (kubeadm's
     bytes, but the image line and that flag), and waits until etcd serves
     the bridge's version and a snapshot file in <data-dir>/member/snap
     reaches the applied index;
  3. writes kubeadm's manifest back, byte for byte but the image line, and
     waits until exactly one etcd runs, without --snapshot-count=1, healthy,
     of the bridge's version, and the API server answers --apiserver-readyz.
Otherwise it says no bridge is needed and changes nothing.

Manifests are written whole beside the manifest as a dot file (the kubelet
ignores it), then renamed. The command may be killed at any line and run
again: it goes on from --state-dir (the bridge's manifest in place: it waits
again for the same applied index), or says the bridge is done. A manifest
that is neither kubeadm's, saved in step 1, nor the bridge's is not touched.
A wait that times out (--timeout, each) leaves the manifest as it is: run the
command again to go on.

Errors are one line on stderr and exit 1.`,
		Example: `  kubelet-compat etcd-bridge --target-etcd-image registry.k8s.io/etcd:3.7.0-0 \
      --bridge-image registry.k8s.io/etcd:3.6.16-0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runEtcdBridge(cmd.Context(), env, o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.target, "target-etcd-image", "", "the etcd image kubeadm of the target version wants (kubeadm config images list), e.g. registry.k8s.io/etcd:3.7.0-0 (required)")
	fs.StringVar(&o.bridge, "bridge-image", "", "the bridge etcd's image, a 3.6 of 3.6.11 or later, e.g. registry.k8s.io/etcd:"+etcdbridge.Tag+" (required when a bridge is needed)")
	fs.StringVar(&o.manifest, "manifest", defaultEtcdManifest, "kubeadm's etcd static pod manifest")
	fs.StringVar(&o.stateDir, "state-dir", defaultBridgeStateDir, "where the bridge keeps its state and kubeadm's manifest while it runs")
	positiveDurationVar(fs, &o.timeout, "timeout", defaultBridgeTimeout, "how long each wait lasts: for the snapshot, for etcd serving with kubeadm's flags")
	fs.StringVar(&o.apiserverReadyz, "apiserver-readyz", defaultApiserverReadyz, "the API server's /readyz, waited for at the end (its certificate is not verified, as the kubelet's probes do not); empty: not waited for")
	positiveDurationVar(fs, &o.lockTimeout, "lock-timeout", defaultLockTimeout, "how long to wait for another etcd-bridge (the lock <state-dir>/.state.lock)")
	positiveDurationVar(fs, &o.poll, "poll-interval", defaultBridgePoll, "time between two looks")
	fs.MarkHidden("poll-interval")
	cmd.MarkFlagRequired("target-etcd-image")
	return cmd
}

// bridgeState is <state-dir>/state.
type bridgeState struct {
	Phase        string `json:"phase"`
	BridgeImage  string `json:"bridgeImage"`
	KubeadmImage string `json:"kubeadmImage"`
	TargetImage  string `json:"targetImage"`
	AppliedIndex uint64 `json:"appliedIndex"`
	BeganAt      string `json:"beganAt"`
	DoneAt       string `json:"doneAt,omitempty"`
}

type etcdBridgeRun struct {
	env    Env
	o      *etcdBridgeOptions
	client *http.Client
	port   string
	// version is the bridge's etcd release, as etcd_server_version says it.
	version string
}

func runEtcdBridge(ctx context.Context, env Env, o *etcdBridgeOptions) error {
	if err := os.MkdirAll(o.stateDir, 0o700); err != nil {
		return err
	}
	release, err := o.lockBridgeState(ctx) // lock.go
	if err != nil {
		return err
	}
	defer release()
	r := &etcdBridgeRun{env: env, o: o, client: &http.Client{Timeout: 5 * time.Second}}
	return r.run(ctx)
}

func (r *etcdBridgeRun) say(format string, args ...interface{}) {
	fmt.Fprintf(r.env.Stdout, "etcd-bridge: "+format+"\n", args...)
}

func (r *etcdBridgeRun) run(ctx context.Context) error {
	o := r.o
	raw, err := os.ReadFile(o.manifest)
	if err != nil {
		return err
	}
	pod, err := etcdbridge.DecodeManifest(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", o.manifest, err)
	}
	running := pod.Spec.Containers[0].Image
	flags := etcdbridge.CommandFlags(pod.Spec.Containers[0].Command)
	st, bridge, err := r.decide(running, flags)
	if err != nil || bridge == "" {
		return err
	}
	copyPath := filepath.Join(o.stateDir, kubeadmManifestCopy)
	st, kubeadm, err := r.begin(ctx, st, raw, running, bridge, flags, copyPath)
	if err != nil {
		return err
	}
	m, err := r.manifests(kubeadm, bridge, copyPath)
	if err != nil {
		return err
	}
	if err := m.known(raw); err != nil {
		return err
	}
	if st.Phase == phaseRestoring && bytes.Equal(raw, kubeadm) {
		// kubeadm's own etcd runs again (put back from outside): the
		// bridge starts over from the snapshot.
		st.Phase = phaseSnapshotting
	}
	start := time.Now()
	if st.Phase == phaseSnapshotting {
		if err := r.snapshot(ctx, st, raw, m, bridge); err != nil {
			return err
		}
		raw = m.snapshotting
	}
	if err := r.restore(ctx, st, raw, m, bridge); err != nil {
		return err
	}
	if err := os.Remove(copyPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	r.say("bridged: etcd %s serves with kubeadm's flags (%s); kubeadm may now take it to %s", r.version, time.Since(start).Round(time.Second), st.TargetImage)
	return nil
}

// decide reads the bridge's state and says which bridge image to run:
// none (nothing to do) or the one a run begun here uses or --bridge-image
// names. st is nil when no bridge was begun here (or an earlier one was
// done and since replaced).
func (r *etcdBridgeRun) decide(running string, flags map[string]string) (st *bridgeState, bridge string, err error) {
	o := r.o
	if st, err = r.readState(); err != nil {
		return nil, "", err
	}
	if st != nil && st.Phase == phaseDone {
		if running == st.BridgeImage && flags["snapshot-count"] != "1" {
			r.say("the bridge is done (%s): etcd runs %s with kubeadm's flags; nothing to do", st.DoneAt, running)
			return nil, "", nil
		}
		st = nil // an earlier bridge, since replaced: judged anew
	}
	if st == nil {
		need, err := etcdbridge.Needed(running, o.target)
		if err != nil {
			return nil, "", err
		}
		if !need {
			r.say("etcd %s -> %s: no bridge needed (within a minor, or kubeadm's own step)", running, o.target)
			return nil, "", nil
		}
		if o.bridge == "" {
			return nil, "", fmt.Errorf("etcd %s -> %s crosses 3.6 -> 3.7: the bridge etcd (%s or later) must run first; give --bridge-image", running, o.target, etcdbridge.MinRelease)
		}
	} else if o.bridge != "" && o.bridge != st.BridgeImage {
		return nil, "", fmt.Errorf("a bridge to %s was begun here (%s, %s): finish it with that --bridge-image, not %s", st.BridgeImage, st.BeganAt, st.Phase, o.bridge)
	}
	bridge = o.bridge
	if st != nil {
		bridge = st.BridgeImage
	}
	rel, err := etcdbridge.ImageRelease(bridge)
	if err != nil {
		return nil, "", fmt.Errorf("--bridge-image %s: %w", bridge, err)
	}
	if rel.Minor != 6 || rel.Below(etcdbridge.MinRelease) {
		return nil, "", fmt.Errorf("--bridge-image %s: want a 3.6 etcd of %s or later", bridge, etcdbridge.MinRelease)
	}
	r.version = rel.String()
	return st, bridge, nil
}

// begin starts a bridge (st nil: kubeadm's manifest kept, the applied
// index and the state written) or takes up the one begun here, and
// returns its state and kubeadm's manifest.
func (r *etcdBridgeRun) begin(ctx context.Context, st *bridgeState, raw []byte, running, bridge string, flags map[string]string, copyPath string) (*bridgeState, []byte, error) {
	o := r.o
	if st != nil {
		kubeadm, err := os.ReadFile(copyPath)
		if err != nil {
			return nil, nil, fmt.Errorf("the bridge begun here (%s) lost kubeadm's manifest: %w", st.BeganAt, err)
		}
		r.say("going on with the bridge begun before (%s, %s): etcd %s -> %s", st.BeganAt, st.Phase, st.KubeadmImage, bridge)
		return st, kubeadm, nil
	}
	if flags["snapshot-count"] == "1" {
		return nil, nil, fmt.Errorf("%s already runs etcd with %s, and no bridge was begun here (%s): not touching it", o.manifest, snapshotCount1, filepath.Join(o.stateDir, bridgeStateFile))
	}
	if err := r.readFlags(o.manifest, flags); err != nil {
		return nil, nil, err
	}
	if err := r.healthy(ctx); err != nil {
		return nil, nil, fmt.Errorf("etcd %s is not healthy before the bridge: %w", running, err)
	}
	applied, err := r.appliedIndex(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("etcd %s: %w", running, err)
	}
	r.say("etcd %s -> %s crosses 3.6 -> 3.7: the bridge etcd %s first", running, o.target, bridge)
	if err := writeFileAtomic(copyPath, raw, 0o600); err != nil {
		return nil, nil, err
	}
	st = &bridgeState{Phase: phaseSnapshotting, BridgeImage: bridge, KubeadmImage: running, TargetImage: o.target,
		AppliedIndex: applied, BeganAt: r.env.Now().UTC().Format(time.RFC3339)}
	if err := r.writeState(st); err != nil {
		return nil, nil, err
	}
	r.say("applied index %d (etcd's metrics on 127.0.0.1:%s); kubeadm's manifest kept as %s", applied, r.port, copyPath)
	return st, raw, nil
}

// bridgeManifests are the three manifests a bridge writes or finds:
// kubeadm's, the bridge's while it snapshots, and kubeadm's with the
// bridge's image.
type bridgeManifests struct {
	kubeadm, snapshotting, restored []byte
	dataDir, copyPath, path         string
}

func (r *etcdBridgeRun) manifests(kubeadm []byte, bridge, copyPath string) (*bridgeManifests, error) {
	kpod, err := etcdbridge.DecodeManifest(kubeadm)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", copyPath, err)
	}
	kflags := etcdbridge.CommandFlags(kpod.Spec.Containers[0].Command)
	if err := r.readFlags(copyPath, kflags); err != nil {
		return nil, err
	}
	m := &bridgeManifests{kubeadm: kubeadm, dataDir: kflags["data-dir"], copyPath: copyPath, path: r.o.manifest}
	if m.snapshotting, err = etcdbridge.RewriteManifest(kubeadm, bridge, "1"); err != nil {
		return nil, fmt.Errorf("%s: %w", copyPath, err)
	}
	if m.restored, err = etcdbridge.RewriteManifest(kubeadm, bridge, ""); err != nil {
		return nil, fmt.Errorf("%s: %w", copyPath, err)
	}
	return m, nil
}

// known refuses a manifest the bridge did not write nor begin from.
func (m *bridgeManifests) known(cur []byte) error {
	if bytes.Equal(cur, m.kubeadm) || bytes.Equal(cur, m.snapshotting) || bytes.Equal(cur, m.restored) {
		return nil
	}
	return fmt.Errorf("%s is neither kubeadm's manifest the bridge began from nor the bridge's: not touching it (kubeadm's is kept as %s)", m.path, m.copyPath)
}

// snapshot runs the bridge etcd with --snapshot-count=1 until a snapshot
// reaches the applied index, then records the restoring phase.
func (r *etcdBridgeRun) snapshot(ctx context.Context, st *bridgeState, raw []byte, m *bridgeManifests, bridge string) error {
	start := time.Now()
	if bytes.Equal(raw, m.kubeadm) && st.BeganAt != "" {
		// The old etcd runs (a run before died before the bridge's
		// manifest, or it was put back): what it applied since counts.
		if applied, err := r.appliedIndex(ctx); err == nil && applied > st.AppliedIndex {
			st.AppliedIndex = applied
			if err := r.writeState(st); err != nil {
				return err
			}
		}
	}
	if !bytes.Equal(raw, m.snapshotting) {
		if err := writeManifest(m.path, m.snapshotting); err != nil {
			return err
		}
	}
	r.say("wrote %s: etcd %s with --snapshot-count=1 until a snapshot reaches index %d (at most %s)", m.path, bridge, st.AppliedIndex, r.o.timeout)
	snapDir := filepath.Join(m.dataDir, "member", "snap")
	var snap uint64
	err := r.poll(ctx, func() error {
		if err := r.serves(ctx); err != nil {
			return err
		}
		entries, err := os.ReadDir(snapDir)
		if err != nil {
			return err
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if snap = etcdbridge.NewestSnapshotIndex(names); snap < st.AppliedIndex {
			return fmt.Errorf("etcd's newest snapshot is at index %d, below the applied index %d", snap, st.AppliedIndex)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("etcd %s with --snapshot-count=1: %w; the manifest is left as the bridge's: run etcd-bridge again to go on", bridge, err)
	}
	r.say("a snapshot at index %d >= %d (%s)", snap, st.AppliedIndex, time.Since(start).Round(time.Second))
	st.Phase = phaseRestoring
	return r.writeState(st)
}

// restore puts kubeadm's flags back with the bridge's image and waits for
// one etcd without --snapshot-count=1, healthy, and the API server; then
// records the bridge done.
func (r *etcdBridgeRun) restore(ctx context.Context, st *bridgeState, raw []byte, m *bridgeManifests, bridge string) error {
	if !bytes.Equal(raw, m.restored) {
		if err := writeManifest(m.path, m.restored); err != nil {
			return err
		}
	}
	r.say("wrote %s: kubeadm's manifest with the image %s (its bytes but the image line); waiting for one etcd %s without %s, healthy, and the API server", m.path, bridge, r.version, snapshotCount1)
	err := r.poll(ctx, func() error {
		if err := r.serves(ctx); err != nil {
			return err
		}
		cmdlines, err := etcdProcesses(r.env.ProcRoot)
		if err != nil {
			return err
		}
		if err := etcdbridge.OneProcessWithout(cmdlines, snapshotCount1); err != nil {
			return err
		}
		return r.apiserverReady(ctx)
	})
	if err != nil {
		return fmt.Errorf("etcd %s with kubeadm's flags: %w; run etcd-bridge again to go on", bridge, err)
	}
	st.Phase, st.DoneAt = phaseDone, r.env.Now().UTC().Format(time.RFC3339)
	return r.writeState(st)
}

// readFlags takes the metrics port from etcd's flags, and checks the data
// dir is named.
func (r *etcdBridgeRun) readFlags(path string, flags map[string]string) error {
	if flags["data-dir"] == "" {
		return fmt.Errorf("%s: no --data-dir", path)
	}
	port, err := etcdbridge.MetricsPort(flags["listen-metrics-urls"])
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	r.port = port
	return nil
}

// poll runs check until it passes, for at most --timeout; the error is its
// last.
func (r *etcdBridgeRun) poll(ctx context.Context, check func() error) error {
	deadline := time.Now().Add(r.o.timeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("after %s: %w", r.o.timeout, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(r.o.poll):
		}
	}
}

// get GETs path from etcd's metrics listener on the node's loopback.
func (r *etcdBridgeRun) get(ctx context.Context, path string) ([]byte, error) {
	return httpGet(ctx, r.client, "http://127.0.0.1:"+r.port+path)
}

func httpGet(ctx context.Context, client *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return body, nil
}

func (r *etcdBridgeRun) healthy(ctx context.Context) error {
	body, err := r.get(ctx, "/health")
	if err != nil {
		return err
	}
	if !etcdbridge.Healthy(body) {
		return fmt.Errorf("/health: %s", strings.TrimSpace(string(body)))
	}
	return nil
}

func (r *etcdBridgeRun) appliedIndex(ctx context.Context) (uint64, error) {
	body, err := r.get(ctx, "/metrics")
	if err != nil {
		return 0, err
	}
	return etcdbridge.ParseAppliedIndex(body)
}

// serves checks etcd answers /health healthy, as kubeadm's probes ask, and
// is the bridge's version.
func (r *etcdBridgeRun) serves(ctx context.Context) error {
	if err := r.healthy(ctx); err != nil {
		return err
	}
	body, err := r.get(ctx, "/metrics")
	if err != nil {
		return err
	}
	if got := etcdbridge.ServerVersion(body); got != r.version {
		return fmt.Errorf("etcd %q serves, want %s", got, r.version)
	}
	return nil
}

// apiserverReady waits for the API server, which may have restarted while
// etcd was away (its liveness probe checks etcd): kubeadm checks the
// control plane's health first.
func (r *etcdBridgeRun) apiserverReady(ctx context.Context) error {
	if r.o.apiserverReadyz == "" {
		return nil
	}
	// As the kubelet's HTTPS probes of kubeadm's kube-apiserver: the
	// serving certificate is not verified; the answer is only waited for.
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec
	defer client.CloseIdleConnections()
	if _, err := httpGet(ctx, client, r.o.apiserverReadyz); err != nil {
		return fmt.Errorf("the API server is not ready: %w", err)
	}
	return nil
}

func (r *etcdBridgeRun) readState() (*bridgeState, error) {
	path := filepath.Join(r.o.stateDir, bridgeStateFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var st bridgeState
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	switch st.Phase {
	case phaseSnapshotting, phaseRestoring, phaseDone:
	default:
		return nil, fmt.Errorf("%s: unknown phase %q", path, st.Phase)
	}
	return &st, nil
}

func (r *etcdBridgeRun) writeState(st *bridgeState) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(r.o.stateDir, bridgeStateFile), append(data, '\n'), 0o600)
}

// writeManifest replaces a static pod's manifest atomically, keeping its
// mode.
func writeManifest(path string, data []byte) error {
	mode := os.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	return writeFileAtomic(path, data, mode)
}

// writeFileAtomic writes data whole to a dot file beside path (the
// kubelet's manifest directory ignores dot files), syncs it, and renames
// it over path.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	tmp := filepath.Join(dir, "."+filepath.Base(path)+".kc-new")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// etcdProcesses are the command lines of the processes named etcd (their
// comm, as pgrep -x etcd matches) in procRoot.
func etcdProcesses(procRoot string) ([][]string, error) {
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, err
	}
	var cmdlines [][]string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "comm"))
		if err != nil || strings.TrimSpace(string(comm)) != "etcd" {
			continue // gone meanwhile, or not etcd
		}
		cmdline, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		cmdlines = append(cmdlines, strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00"))
	}
	return cmdlines, nil
}
