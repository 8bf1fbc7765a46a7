package app

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/internal/filelock"
	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// etcdNode is a control-plane node for etcd-bridge: kubeadm's etcd
// manifest and data dir in a temp dir, a fake /proc, and an httptest
// server standing for etcd's metrics listener on 127.0.0.1. Each request
// first plays the kubelet: the etcd that runs is the one the manifest
// says (its version from the image tag, its command line in /proc), and an
// etcd run with --snapshot-count=1 writes a snapshot past the applied
// index, unless noSnapshot.
type etcdNode struct {
	t                   *testing.T
	f                   *fixture
	manifest, dataDir   string
	stateDir            string
	metrics             *httptest.Server
	apiserver           *httptest.Server
	kubeadm             string
	mu                  sync.Mutex
	applied             uint64
	noSnapshot          bool
	extraEtcd           bool
	unhealthy           bool
	requests            int
	apiserverNotReadyUp int
}

// etcdManifest is kubeadm's etcd manifest of a 1.36 cluster, with the
// metrics listener and the data dir of the test.
func etcdManifest(port, dataDir, image string) string {
	return `apiVersion: v1
kind: Pod
metadata:
  annotations:
    kubeadm.kubernetes.io/etcd.advertise-client-urls: https://10.217.78.2:2379
  labels:
    component: etcd
    tier: control-plane
  name: etcd
  namespace: kube-system
spec:
  containers:
  - command:
    - etcd
    - --advertise-client-urls=https://10.217.78.2:2379
    - --data-dir=` + dataDir + `
    - --listen-metrics-urls=http://127.0.0.1:` + port + `
    - --snapshot-count=10000
    - --trusted-ca-file=/etc/kubernetes/pki/etcd/ca.crt
    image: ` + image + `
    imagePullPolicy: IfNotPresent
    name: etcd
  hostNetwork: true
status: {}
`
}

func newEtcdNode(t *testing.T, image string) *etcdNode {
	n := &etcdNode{t: t, f: newFixture(t, cri.APIv1), applied: 5097}
	n.manifest = filepath.Join(n.f.manifestDir, "etcd.yaml")
	n.dataDir = filepath.Join(n.f.dir, "etcd")
	n.stateDir = filepath.Join(n.f.dir, "state")
	assert.NilError(t, os.MkdirAll(filepath.Join(n.dataDir, "member", "snap"), 0o700))
	// kubeadm's etcd snapshots every 10000 entries: one old snapshot.
	n.f.write(filepath.Join(n.dataDir, "member", "snap", "0000000000000002-0000000000000400.snap"), "")
	n.metrics = httptest.NewServer(http.HandlerFunc(n.serve))
	t.Cleanup(n.metrics.Close)
	n.apiserver = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.mu.Lock()
		defer n.mu.Unlock()
		if r.URL.Path != "/readyz" || n.apiserverNotReadyUp > 0 {
			n.apiserverNotReadyUp--
			http.Error(w, "[-]etcd failed", http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(n.apiserver.Close)
	_, port, err := net.SplitHostPort(n.metrics.Listener.Addr().String())
	assert.NilError(t, err)
	n.kubeadm = etcdManifest(port, n.dataDir, image)
	n.f.write(n.manifest, n.kubeadm)
	n.sync()
	return n
}

// sync is the kubelet: the etcd of the manifest runs.
func (n *etcdNode) sync() (version string, snapshotCount1 bool) {
	raw, err := os.ReadFile(n.manifest)
	if err != nil {
		return "", false
	}
	var image string
	var command []string
	inCommand := false
	for _, l := range strings.Split(string(raw), "\n") {
		t := strings.TrimSpace(l)
		switch {
		case t == "- command:":
			inCommand = true
		case inCommand && strings.HasPrefix(t, "- "):
			command = append(command, strings.TrimPrefix(t, "- "))
		default:
			inCommand = false
		}
		if v, ok := strings.CutPrefix(t, "image: "); ok {
			image = v
		}
	}
	_, tag, _ := strings.Cut(image[strings.LastIndex(image, "/"):], ":")
	version, _, _ = strings.Cut(tag, "-")
	for _, a := range command {
		snapshotCount1 = snapshotCount1 || a == "--snapshot-count=1"
	}
	n.f.write(filepath.Join(n.f.procRoot, "812", "comm"), "etcd\n")
	n.f.write(filepath.Join(n.f.procRoot, "812", "cmdline"), strings.Join(command, "\x00")+"\x00")
	if n.extraEtcd {
		n.f.write(filepath.Join(n.f.procRoot, "901", "comm"), "etcd\n")
		n.f.write(filepath.Join(n.f.procRoot, "901", "cmdline"), "etcd\x00--snapshot-count=1\x00")
	}
	// Another process whose command line names etcd is not etcd.
	n.f.write(filepath.Join(n.f.procRoot, "77", "comm"), "bash\n")
	n.f.write(filepath.Join(n.f.procRoot, "77", "cmdline"), "bash\x00-c\x00etcd\x00")
	if snapshotCount1 && !n.noSnapshot {
		n.f.write(filepath.Join(n.dataDir, "member", "snap", fmt.Sprintf("0000000000000003-%016x.snap", n.applied+3)), "")
	}
	return version, snapshotCount1
}

func (n *etcdNode) serve(w http.ResponseWriter, r *http.Request) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.requests++
	version, _ := n.sync()
	switch r.URL.Path {
	case "/health":
		if n.unhealthy {
			fmt.Fprint(w, `{"health":"false","reason":"RAFT NO LEADER"}`)
			return
		}
		fmt.Fprint(w, `{"health":"true","reason":""}`)
	case "/metrics":
		fmt.Fprintf(w, "# TYPE etcd_server_proposals_applied_total gauge\netcd_server_proposals_applied_total %d\netcd_server_version{server_version=%q} 1\n", n.applied, version)
	default:
		http.NotFound(w, r)
	}
}

func (n *etcdNode) run(args ...string) (int, string, string) {
	n.t.Helper()
	var stdout, stderr bytes.Buffer
	env := n.f.env()
	env.Stdout, env.Stderr = &stdout, &stderr
	full := append([]string{"etcd-bridge", "--manifest", n.manifest, "--state-dir", n.stateDir,
		"--apiserver-readyz", n.apiserver.URL + "/readyz", "--poll-interval", "10ms"}, args...)
	code := Run(context.Background(), env, full)
	return code, stdout.String(), stderr.String()
}

const (
	kubeadmEtcd36 = "registry.k8s.io/etcd:3.6.8-0"
	kubeadmEtcd37 = "registry.k8s.io/etcd:3.7.0-0"
	bridgeEtcd    = "registry.k8s.io/etcd:3.6.16-0"
)

func (n *etcdNode) manifestNow() string {
	raw, err := os.ReadFile(n.manifest)
	assert.NilError(n.t, err)
	return string(raw)
}

// bridged is kubeadm's manifest with the bridge's image: what etcd-bridge
// leaves.
func (n *etcdNode) bridged() string {
	return strings.Replace(n.kubeadm, "image: "+kubeadmEtcd36+"\n", "image: "+bridgeEtcd+"\n", 1)
}

func TestEtcdBridgeNotNeeded(t *testing.T) {
	for _, tc := range []struct{ running, target string }{
		{kubeadmEtcd36, "registry.k8s.io/etcd:3.6.9-0"},
		{"registry.k8s.io/etcd:3.5.24-0", "registry.k8s.io/etcd:3.6.5-0"},
		{kubeadmEtcd37, "registry.k8s.io/etcd:3.7.2-0"},
	} {
		n := newEtcdNode(t, tc.running)
		code, out, errOut := n.run("--target-etcd-image", tc.target)
		assert.Equal(t, code, 0, errOut)
		assert.Check(t, is.Contains(out, "no bridge needed"))
		assert.Equal(t, n.manifestNow(), n.kubeadm)
		_, err := os.Stat(filepath.Join(n.stateDir, "state"))
		assert.Check(t, os.IsNotExist(err))
	}
}

func TestEtcdBridgeRuns(t *testing.T) {
	n := newEtcdNode(t, kubeadmEtcd36)
	n.apiserverNotReadyUp = 2
	code, out, errOut := n.run("--target-etcd-image", kubeadmEtcd37, "--bridge-image", bridgeEtcd)
	assert.Equal(t, code, 0, "stderr: %s\nstdout: %s", errOut, out)
	t.Logf("etcd-bridge:\n%s", out)
	// kubeadm's bytes, but for the image.
	assert.Equal(t, n.manifestNow(), n.bridged())
	for _, want := range []string{
		"etcd registry.k8s.io/etcd:3.6.8-0 -> registry.k8s.io/etcd:3.7.0-0 crosses 3.6 -> 3.7: the bridge etcd registry.k8s.io/etcd:3.6.16-0 first",
		"applied index 5097",
		"with --snapshot-count=1 until a snapshot reaches index 5097",
		"a snapshot at index 5100 >= 5097",
		"kubeadm's manifest with the image registry.k8s.io/etcd:3.6.16-0",
		"bridged: etcd 3.6.16 serves with kubeadm's flags",
	} {
		assert.Check(t, is.Contains(out, want))
	}
	assert.Equal(t, errOut, "")
	// No temporary file left beside the manifest, nothing the kubelet reads.
	entries, err := os.ReadDir(n.f.manifestDir)
	assert.NilError(t, err)
	var names []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	assert.DeepEqual(t, names, []string{"etcd.yaml"})
	for _, e := range entries {
		assert.Check(t, !strings.HasSuffix(e.Name(), ".tmp") && !strings.Contains(e.Name(), "kc-new"), e.Name())
	}

	// Run again: done, nothing written.
	before, err := os.Stat(n.manifest)
	assert.NilError(t, err)
	code, out, errOut = n.run("--target-etcd-image", kubeadmEtcd37, "--bridge-image", bridgeEtcd)
	assert.Equal(t, code, 0, errOut)
	assert.Check(t, is.Contains(out, "the bridge is done"))
	after, err := os.Stat(n.manifest)
	assert.NilError(t, err)
	assert.Check(t, after.ModTime().Equal(before.ModTime()) && os.SameFile(before, after), "the manifest was written again")

	// Once kubeadm has moved etcd to 3.7: nothing to do.
	n.f.write(n.manifest, strings.Replace(n.kubeadm, kubeadmEtcd36, kubeadmEtcd37, 1))
	code, out, errOut = n.run("--target-etcd-image", kubeadmEtcd37, "--bridge-image", bridgeEtcd)
	assert.Equal(t, code, 0, errOut)
	assert.Check(t, is.Contains(out, "no bridge needed"))
}

// A run that stops half-way (here: its wait timed out; a kill leaves the
// same) leaves the bridge's manifest in place; the next run goes on from
// it and still puts kubeadm's manifest back, byte for byte but the image.
func TestEtcdBridgeGoesOn(t *testing.T) {
	n := newEtcdNode(t, kubeadmEtcd36)
	n.noSnapshot = true
	code, _, errOut := n.run("--target-etcd-image", kubeadmEtcd37, "--bridge-image", bridgeEtcd, "--timeout", "200ms")
	assert.Equal(t, code, 1)
	assertOneErrorLine(t, errOut, "etcd's newest snapshot is at index 1024, below the applied index 5097")
	assert.Check(t, is.Contains(errOut, "run etcd-bridge again to go on"))
	assert.Check(t, is.Contains(n.manifestNow(), "- --snapshot-count=1\n"))
	assert.Check(t, is.Contains(n.manifestNow(), "image: "+bridgeEtcd+"\n"))

	// The bridge etcd applies more meanwhile: the index to reach is the
	// one read before the bridge.
	n.noSnapshot = false
	n.applied = 6000
	code, out, errOut := n.run("--target-etcd-image", kubeadmEtcd37, "--bridge-image", bridgeEtcd)
	assert.Equal(t, code, 0, "stderr: %s\nstdout: %s", errOut, out)
	assert.Check(t, is.Contains(out, "going on with the bridge begun before"))
	assert.Check(t, is.Contains(out, "until a snapshot reaches index 5097"))
	assert.Equal(t, n.manifestNow(), n.bridged())
}

// Killed right after it saved its state, before the bridge's manifest:
// the old etcd still runs, and what it applied since counts too.
func TestEtcdBridgeKilledBeforeTheBridgeManifest(t *testing.T) {
	n := newEtcdNode(t, kubeadmEtcd36)
	n.f.write(filepath.Join(n.stateDir, "kubeadm-etcd.yaml"), n.kubeadm)
	n.f.write(filepath.Join(n.stateDir, "state"), `{"phase": "snapshotting", "bridgeImage": "`+bridgeEtcd+`", "kubeadmImage": "`+kubeadmEtcd36+
		`", "targetImage": "`+kubeadmEtcd37+`", "appliedIndex": 5097, "beganAt": "2026-12-03T10:00:00Z"}`)
	n.applied = 6000
	code, out, errOut := n.run("--target-etcd-image", kubeadmEtcd37, "--bridge-image", bridgeEtcd)
	assert.Equal(t, code, 0, "stderr: %s\nstdout: %s", errOut, out)
	assert.Check(t, is.Contains(out, "going on with the bridge begun before (2026-12-03T10:00:00Z, snapshotting)"))
	assert.Check(t, is.Contains(out, "until a snapshot reaches index 6000"))
	assert.Equal(t, n.manifestNow(), n.bridged())
	// Another bridge image than the one begun: refused.
	n.f.write(n.manifest, n.kubeadm)
	n.f.write(filepath.Join(n.stateDir, "kubeadm-etcd.yaml"), n.kubeadm)
	n.f.write(filepath.Join(n.stateDir, "state"), `{"phase": "snapshotting", "bridgeImage": "`+bridgeEtcd+`", "appliedIndex": 5097, "beganAt": "2026-12-03T10:00:00Z"}`)
	code, _, errOut = n.run("--target-etcd-image", kubeadmEtcd37, "--bridge-image", "registry.k8s.io/etcd:3.6.17-0")
	assert.Equal(t, code, 1)
	assertOneErrorLine(t, errOut, "a bridge to registry.k8s.io/etcd:3.6.16-0 was begun here (2026-12-03T10:00:00Z, snapshotting): finish it with that --bridge-image")
}

// Killed after kubeadm's manifest was put back, before the state said so:
// the next run waits for the same checks and ends.
func TestEtcdBridgeKilledWhileRestoring(t *testing.T) {
	n := newEtcdNode(t, kubeadmEtcd36)
	n.extraEtcd = true // the bridge's etcd lingers: the one-process check fails
	code, _, errOut := n.run("--target-etcd-image", kubeadmEtcd37, "--bridge-image", bridgeEtcd, "--timeout", "200ms")
	assert.Equal(t, code, 1)
	assertOneErrorLine(t, errOut, "want one etcd process, found 2")
	assert.Equal(t, n.manifestNow(), n.bridged())
	n.extraEtcd = false
	assert.NilError(t, os.RemoveAll(filepath.Join(n.f.procRoot, "901")))
	code, out, errOut := n.run("--target-etcd-image", kubeadmEtcd37, "--bridge-image", bridgeEtcd)
	assert.Equal(t, code, 0, "stderr: %s\nstdout: %s", errOut, out)
	assert.Check(t, is.Contains(out, "bridged: etcd 3.6.16 serves with kubeadm's flags"))
	assert.Equal(t, n.manifestNow(), n.bridged())
}

func TestEtcdBridgeRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		setup  func(n *etcdNode)
		args   []string
		err    string
		intact bool
	}{
		{name: "a bridge is needed, no --bridge-image", args: []string{"--target-etcd-image", kubeadmEtcd37},
			err: "etcd registry.k8s.io/etcd:3.6.8-0 -> registry.k8s.io/etcd:3.7.0-0 crosses 3.6 -> 3.7: the bridge etcd (3.6.11 or later) must run first; give --bridge-image", intact: true},
		{name: "a bridge older than 3.6.11", args: []string{"--target-etcd-image", kubeadmEtcd37, "--bridge-image", "registry.k8s.io/etcd:3.6.10-0"},
			err: "--bridge-image registry.k8s.io/etcd:3.6.10-0: want a 3.6 etcd of 3.6.11 or later", intact: true},
		{name: "no target", args: []string{"--bridge-image", bridgeEtcd}, err: `required flag(s) "target-etcd-image" not set`, intact: true},
		{name: "an unhealthy etcd", setup: func(n *etcdNode) { n.unhealthy = true }, args: []string{"--target-etcd-image", kubeadmEtcd37, "--bridge-image", bridgeEtcd},
			err: "etcd registry.k8s.io/etcd:3.6.8-0 is not healthy before the bridge", intact: true},
		{name: "a manifest already at --snapshot-count=1 with no bridge begun", setup: func(n *etcdNode) {
			n.kubeadm = strings.Replace(n.kubeadm, "--snapshot-count=10000", "--snapshot-count=1", 1)
			n.f.write(n.manifest, n.kubeadm)
		}, args: []string{"--target-etcd-image", kubeadmEtcd37, "--bridge-image", bridgeEtcd},
			err: "already runs etcd with --snapshot-count=1, and no bridge was begun here", intact: true},
		{name: "no metrics listener", setup: func(n *etcdNode) {
			n.kubeadm = strings.Replace(n.kubeadm, "--listen-metrics-urls=http://127.0.0.1:", "--listen-metrics-urls=https://127.0.0.1:", 1)
			n.f.write(n.manifest, n.kubeadm)
		}, args: []string{"--target-etcd-image", kubeadmEtcd37, "--bridge-image", bridgeEtcd},
			err: "no http://127.0.0.1:<port> in --listen-metrics-urls", intact: true},
		{name: "no manifest", setup: func(n *etcdNode) { os.Remove(n.manifest); n.kubeadm = "" },
			args: []string{"--target-etcd-image", kubeadmEtcd37, "--bridge-image", bridgeEtcd}, err: "etcd.yaml: no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newEtcdNode(t, kubeadmEtcd36)
			if tc.setup != nil {
				tc.setup(n)
			}
			code, _, errOut := n.run(tc.args...)
			assert.Equal(t, code, 1)
			assertOneErrorLine(t, errOut, tc.err)
			if tc.intact {
				assert.Equal(t, n.manifestNow(), n.kubeadm)
			}
		})
	}
}

// Someone else changed the manifest while a bridge was under way: the
// next run does not overwrite it.
func TestEtcdBridgeManifestChangedMeanwhile(t *testing.T) {
	n := newEtcdNode(t, kubeadmEtcd36)
	n.noSnapshot = true
	code, _, _ := n.run("--target-etcd-image", kubeadmEtcd37, "--bridge-image", bridgeEtcd, "--timeout", "100ms")
	assert.Equal(t, code, 1)
	other := strings.Replace(n.kubeadm, "--trusted-ca-file", "--trusted-ca-file2", 1)
	n.f.write(n.manifest, other)
	code, _, errOut := n.run("--target-etcd-image", kubeadmEtcd37, "--bridge-image", bridgeEtcd)
	assert.Equal(t, code, 1)
	assertOneErrorLine(t, errOut, "is neither kubeadm's manifest the bridge began from nor the bridge's: not touching it")
	assert.Equal(t, n.manifestNow(), other)
}

// Two etcd-bridge never edit the manifest at once: the second waits for
// the lock, at most --lock-timeout, then fails having changed nothing.
func TestEtcdBridgeWaitsForTheLock(t *testing.T) {
	n := newEtcdNode(t, kubeadmEtcd36)
	assert.NilError(t, os.MkdirAll(n.stateDir, 0o700))
	held, err := filelock.Acquire(context.Background(), filepath.Join(n.stateDir, ".state.lock"), time.Second)
	assert.NilError(t, err)
	defer held.Release()
	code, _, errOut := n.run("--target-etcd-image", kubeadmEtcd37, "--bridge-image", bridgeEtcd, "--lock-timeout", "100ms")
	assert.Equal(t, code, 1)
	assertOneErrorLine(t, errOut, "is still held after 100ms")
	assert.Check(t, is.Contains(errOut, "etcd-bridge?"))
	assert.Equal(t, n.manifestNow(), n.kubeadm)
}
