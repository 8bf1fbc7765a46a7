package kind

import (
	"os"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
)

// TestBridgeManifest: the bridge changes kubeadm's etcd manifest in the
// image tag and, while it snapshots, the snapshot count; nothing else.
func TestBridgeManifest(t *testing.T) {
	manifest, err := os.ReadFile("testdata/etcd-1.36.yaml")
	assert.NilError(t, err)

	snapshotting, err := bridgeManifest(manifest, "3.6.16-0", "1")
	assert.NilError(t, err)
	golden.Assert(t, string(snapshotting), "etcd-bridge-snapshotting.golden")

	bridged, err := bridgeManifest(manifest, "3.6.16-0", "")
	assert.NilError(t, err)
	assert.Equal(t, string(bridged), strings.Replace(string(manifest), "etcd:3.6.8-0", "etcd:3.6.16-0", 1))

	img, err := manifestImage(snapshotting)
	assert.NilError(t, err)
	assert.Equal(t, img, "registry.k8s.io/etcd:3.6.16-0")
	flags := manifestFlags(snapshotting)
	assert.Equal(t, flags["snapshot-count"], "1")
	assert.Equal(t, flags["data-dir"], "/var/lib/etcd")
	assert.Equal(t, flags["listen-metrics-urls"], "http://127.0.0.1:2381")

	// A manifest without --snapshot-count gets it after the command.
	without := strings.Replace(string(manifest), "    - --snapshot-count=10000\n", "", 1)
	got, err := bridgeManifest([]byte(without), "3.6.16-0", "1")
	assert.NilError(t, err)
	assert.Assert(t, is.Contains(string(got), "    - etcd\n    - --snapshot-count=1\n    - --advertise-client-urls"))
}

func TestBridgeManifestRefuses(t *testing.T) {
	for _, tc := range []struct{ name, manifest, err string }{
		{"no image", "spec:\n  containers:\n  - command:\n    - etcd\n", "want one image in the etcd manifest, found 0"},
		{"two images", "    image: a:1\n    image: b:2\n", "want one image in the etcd manifest, found 2"},
		{"untagged image", "    image: etcd\n", `etcd image "etcd" has no tag`},
		{"no command to flag", "    image: registry.k8s.io/etcd:3.6.8-0\n", `the etcd manifest has no "- etcd" command to add --snapshot-count to`},
	} {
		_, err := bridgeManifest([]byte(tc.manifest), "3.6.16-0", "1")
		assert.Error(t, err, tc.err, tc.name)
	}
	_, err := manifestImage([]byte("    image: a:1\n    image: b:2\n"))
	assert.ErrorContains(t, err, "want one image with a tag")
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
