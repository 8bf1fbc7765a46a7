package kind

import (
	"os"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"
	"sigs.k8s.io/yaml"
)

// TestBridgePod: the bridge changes kubeadm's etcd pod in the image and,
// while it snapshots, the snapshot count; nothing else.
func TestBridgePod(t *testing.T) {
	raw, err := os.ReadFile("testdata/etcd-1.36.yaml")
	assert.NilError(t, err)
	kubeadm, err := decodeEtcdManifest(raw)
	assert.NilError(t, err)
	const bridge = "registry.k8s.io/etcd:3.6.16-0"

	snapshotting := bridgePod(kubeadm, bridge, "1")
	out, err := yaml.Marshal(snapshotting)
	assert.NilError(t, err)
	golden.Assert(t, string(out), "etcd-bridge-snapshotting.golden")
	flags := commandFlags(snapshotting.Spec.Containers[0].Command)
	assert.Equal(t, flags["snapshot-count"], "1")
	assert.Equal(t, flags["data-dir"], "/var/lib/etcd")
	assert.Equal(t, flags["listen-metrics-urls"], "http://127.0.0.1:2381")

	// Back to kubeadm's pod but for the image; kubeadm's pod untouched.
	bridged := bridgePod(kubeadm, bridge, "")
	assert.Equal(t, kubeadm.Spec.Containers[0].Image, "registry.k8s.io/etcd:3.6.8-0")
	assert.Equal(t, commandFlags(kubeadm.Spec.Containers[0].Command)["snapshot-count"], "10000")
	want := kubeadm.DeepCopy()
	want.Spec.Containers[0].Image = bridge
	assert.DeepEqual(t, bridged, want)

	// A command without --snapshot-count gets it.
	without := kubeadm.DeepCopy()
	c := &without.Spec.Containers[0]
	for i, arg := range c.Command {
		if strings.HasPrefix(arg, "--snapshot-count=") {
			c.Command = append(c.Command[:i:i], c.Command[i+1:]...)
			break
		}
	}
	got := bridgePod(without, bridge, "1").Spec.Containers[0].Command
	assert.Equal(t, got[len(got)-1], "--snapshot-count=1")
	assert.Equal(t, len(got), len(kubeadm.Spec.Containers[0].Command))
}

func TestDecodeEtcdManifestRefuses(t *testing.T) {
	for _, tc := range []struct{ name, manifest, err string }{
		{"no container", "apiVersion: v1\nkind: Pod\nspec: {}\n", "want one container, found 0"},
		{"two containers", "spec:\n  containers:\n  - name: a\n  - name: b\n", "want one container, found 2"},
		{"a field the pod does not have", "spec:\n  containers:\n  - name: etcd\n    imagee: x\n", `unknown field "imagee"`},
	} {
		_, err := decodeEtcdManifest([]byte(tc.manifest))
		assert.ErrorContains(t, err, tc.err, tc.name)
	}
}

func TestMetricsPort(t *testing.T) {
	for _, tc := range []struct{ urls, want, err string }{
		{urls: "http://127.0.0.1:2381", want: "2381"},
		{urls: "https://10.0.0.2:2381,http://127.0.0.1:2382", want: "2382"},
		{urls: "https://127.0.0.1:2381", err: "no http://127.0.0.1:<port>"},
		{urls: "", err: "no http://127.0.0.1:<port>"},
	} {
		got, err := metricsPort(tc.urls)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.urls)
			continue
		}
		assert.NilError(t, err)
		assert.Equal(t, got, tc.want)
	}
}

func TestEtcdMetrics(t *testing.T) {
	metrics := []byte(`# HELP etcd_server_proposals_applied_total The total number of consensus proposals applied.
# TYPE etcd_server_proposals_applied_total gauge
etcd_server_proposals_applied_total 5097
etcd_server_proposals_committed_total 5098
# TYPE etcd_server_version gauge
etcd_server_version{server_version="3.6.16"} 1
`)
	applied, err := parseAppliedIndex(metrics)
	assert.NilError(t, err)
	assert.Equal(t, applied, uint64(5097))
	assert.Equal(t, etcdServerVersion(metrics), "3.6.16")

	// The text format writes large gauges with an exponent.
	applied, err = parseAppliedIndex([]byte("etcd_server_proposals_applied_total 1.234567e+06\n"))
	assert.NilError(t, err)
	assert.Equal(t, applied, uint64(1234567))

	_, err = parseAppliedIndex([]byte("etcd_server_proposals_committed_total 5\n"))
	assert.Error(t, err, "etcd's metrics have no etcd_server_proposals_applied_total")
	_, err = parseAppliedIndex([]byte("etcd_server_proposals_applied_total 0\n"))
	assert.ErrorContains(t, err, "is not an index")
	assert.Equal(t, etcdServerVersion([]byte("etcd_server_has_leader 1\n")), "")
}

func TestNewestSnapshotIndex(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  uint64
	}{
		{nil, 0},
		{[]string{"db"}, 0},
		// <term>-<index>.snap in hex; db files and broken snapshots aside.
		{[]string{"0000000000000002-000000000000028a.snap", "0000000000000005-00000000000013f9.snap", "db"}, 0x13f9},
		{[]string{"0000000000000005-00000000000013f9.snap.broken", "000000000000028a.snap.db"}, 0},
	} {
		assert.Equal(t, newestSnapshotIndex(tc.names), tc.want, "%v", tc.names)
	}
}

func TestOneEtcdWithout(t *testing.T) {
	for _, tc := range []struct{ pgrep, err string }{
		{pgrep: "812 etcd --data-dir=/var/lib/etcd --snapshot-count=10000\n"},
		{pgrep: "812 etcd --data-dir=/var/lib/etcd --snapshot-count=1\n", err: "etcd still runs with --snapshot-count=1"},
		{pgrep: "812 etcd --snapshot-count=1 --data-dir=/var/lib/etcd\n", err: "etcd still runs with --snapshot-count=1"},
		{pgrep: "812 etcd --snapshot-count=1\n901 etcd --snapshot-count=10000\n", err: "want one etcd process, found 2"},
		{pgrep: "", err: "want one etcd process, found 0"},
	} {
		err := oneEtcdWithout(tc.pgrep, "--snapshot-count=1")
		if tc.err == "" {
			assert.NilError(t, err, tc.pgrep)
			continue
		}
		assert.Error(t, err, tc.err, tc.pgrep)
	}
}
