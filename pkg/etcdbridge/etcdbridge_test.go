package etcdbridge

import (
	"os"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"
	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func TestBridge(t *testing.T) {
	const repo = "registry.k8s.io/etcd:"
	for _, tc := range []struct {
		running, want string
		bridge        string
		err           string
	}{
		// kubeadm 1.36 -> 1.37 on a cluster kubeadm 1.36 made or upgraded.
		{running: "3.6.8-0", want: "3.7.0-0", bridge: repo + "3.6.16-0"},
		// Already at a 3.6 etcd 3.7 accepts: its WAL may still hold 3.5's entries.
		{running: "3.6.16-0", want: "3.7.0-0", bridge: repo + "3.6.16-0"},
		{running: "3.6.8-0", want: "3.8.1-0", bridge: repo + "3.6.16-0"},
		// Within 3.6, within 3.7, and 3.5 -> 3.6 are kubeadm's own steps.
		{running: "3.6.5-0", want: "3.6.8-0"},
		{running: "3.7.0-0", want: "3.7.2-0"},
		{running: "3.5.24-0", want: "3.6.5-0"},
		{running: "3.6.8-0", want: "latest", err: `etcd tag "latest" is not a 3.x release`},
		{running: "", want: "3.7.0-0", err: `etcd tag "" is not a 3.x release`},
	} {
		running, want := repo+tc.running, repo+tc.want
		if tc.running == "" {
			running = "registry.k8s.io/etcd"
		}
		got, need, err := Bridge(running, want)
		if tc.err != "" {
			assert.Error(t, err, tc.err)
			_, err = Needed(running, want)
			assert.Error(t, err, tc.err)
			continue
		}
		assert.NilError(t, err)
		assert.Equal(t, need, tc.bridge != "", "%s -> %s", tc.running, tc.want)
		assert.Equal(t, got, tc.bridge, "%s -> %s", tc.running, tc.want)
		need, err = Needed(running, want)
		assert.NilError(t, err)
		assert.Equal(t, need, tc.bridge != "", "%s -> %s", tc.running, tc.want)
	}
}

func TestImagesCarryTheBridge(t *testing.T) {
	for _, tc := range []struct {
		want   string
		bridge bool
	}{
		{want: "registry.k8s.io/etcd:3.7.0-0", bridge: true},
		{want: "registry.k8s.io/etcd:3.6.8-0"},
		{want: "registry.k8s.io/etcd:3.5.24-0"},
	} {
		got, err := Carries(tc.want)
		assert.NilError(t, err)
		assert.Equal(t, got, tc.bridge, tc.want)
	}
	assert.Equal(t, Ref("registry.k8s.io/etcd:3.7.0-0"), "registry.k8s.io/etcd:3.6.16-0")
	assert.Equal(t, Ref("localhost:5000/etcd:3.7.0-0"), "localhost:5000/etcd:3.6.16-0")
	// The bridge is itself a 3.6 that 3.7 accepts (3.6.11 or later).
	r, err := ParseTag(Tag)
	assert.NilError(t, err)
	assert.Equal(t, r.Minor, 6)
	assert.Assert(t, !r.Below(MinRelease))
}

func TestParseTag(t *testing.T) {
	for _, tc := range []struct {
		tag  string
		want Release
		err  string
	}{
		{tag: "3.6.8-0", want: Release{3, 6, 8}},
		{tag: "v3.7.0", want: Release{3, 7, 0}},
		{tag: "3.5.24", want: Release{3, 5, 24}},
		{tag: "3.6", err: `etcd tag "3.6" is not a 3.x release`},
		{tag: "2.3.8", err: `etcd tag "2.3.8" is not a 3.x release`},
		{tag: "3.06.1", err: `etcd tag "3.06.1" is not a 3.x release`},
	} {
		got, err := ParseTag(tc.tag)
		if tc.err != "" {
			assert.Error(t, err, tc.err)
			continue
		}
		assert.NilError(t, err)
		assert.Equal(t, got, tc.want)
	}
	assert.Assert(t, Release{3, 6, 10}.Below(MinRelease))
	assert.Assert(t, !Release{3, 6, 11}.Below(MinRelease))
	assert.Assert(t, Release{3, 5, 30}.Below(MinRelease))
	assert.Equal(t, Release{3, 6, 8}.String(), "3.6.8")
	// Image references: a registry's port is not a tag, a digest is refused.
	for _, tc := range []struct{ ref, tag string }{
		{"registry.k8s.io/etcd:3.6.8-0", "3.6.8-0"},
		{"localhost:5000/etcd:3.6.8-0", "3.6.8-0"},
		{"localhost:5000/etcd", ""},
		{"registry.k8s.io/etcd@sha256:abc", ""},
	} {
		_, tag, _ := SplitRef(tc.ref)
		assert.Equal(t, tag, tc.tag, tc.ref)
	}
}

// TestBridgePod: the bridge changes kubeadm's etcd pod in the image and,
// while it snapshots, the snapshot count; nothing else.
func TestBridgePod(t *testing.T) {
	raw, err := os.ReadFile("testdata/etcd-1.36.yaml")
	assert.NilError(t, err)
	kubeadm, err := DecodeManifest(raw)
	assert.NilError(t, err)
	const bridge = "registry.k8s.io/etcd:3.6.16-0"

	snapshotting := Pod(kubeadm, bridge, "1")
	out, err := yaml.Marshal(snapshotting)
	assert.NilError(t, err)
	golden.Assert(t, string(out), "etcd-bridge-snapshotting.golden")
	flags := CommandFlags(snapshotting.Spec.Containers[0].Command)
	assert.Equal(t, flags["snapshot-count"], "1")
	assert.Equal(t, flags["data-dir"], "/var/lib/etcd")
	assert.Equal(t, flags["listen-metrics-urls"], "http://127.0.0.1:2381")

	// Back to kubeadm's pod but for the image; kubeadm's pod untouched.
	bridged := Pod(kubeadm, bridge, "")
	assert.Equal(t, kubeadm.Spec.Containers[0].Image, "registry.k8s.io/etcd:3.6.8-0")
	assert.Equal(t, CommandFlags(kubeadm.Spec.Containers[0].Command)["snapshot-count"], "10000")
	want := kubeadm.DeepCopy()
	want.Spec.Containers[0].Image = bridge
	assert.DeepEqual(t, bridged, want)

	// A command without --snapshot-count gets it.
	without := withoutSnapshotCount(kubeadm.DeepCopy())
	got := Pod(without, bridge, "1").Spec.Containers[0].Command
	assert.Equal(t, got[len(got)-1], "--snapshot-count=1")
	assert.Equal(t, len(got), len(kubeadm.Spec.Containers[0].Command))
}

func withoutSnapshotCount(pod *v1.Pod) *v1.Pod {
	c := &pod.Spec.Containers[0]
	for i, arg := range c.Command {
		if strings.HasPrefix(arg, "--snapshot-count=") {
			c.Command = append(c.Command[:i:i], c.Command[i+1:]...)
			break
		}
	}
	return pod
}

// TestRewriteManifest: the node's manifest is edited as text, kubeadm's
// bytes kept but for the image line and the snapshot count, and the edit
// is the pod the bridge means (Pod).
func TestRewriteManifest(t *testing.T) {
	raw, err := os.ReadFile("testdata/etcd-1.36.yaml")
	assert.NilError(t, err)
	const bridge = "registry.k8s.io/etcd:3.6.16-0"

	snapshotting, err := RewriteManifest(raw, bridge, "1")
	assert.NilError(t, err)
	golden.Assert(t, string(snapshotting), "etcd-bridge-snapshotting.yaml.golden")

	// kubeadm's manifest with the bridge's image: one line differs.
	bridged, err := RewriteManifest(raw, bridge, "")
	assert.NilError(t, err)
	assert.Equal(t, string(bridged), strings.Replace(string(raw), "image: registry.k8s.io/etcd:3.6.8-0\n", "image: "+bridge+"\n", 1))
	// From the snapshotting manifest back to kubeadm's needs kubeadm's
	// count: RewriteManifest of kubeadm's bytes, not of the bridge's.
	again, err := RewriteManifest(snapshotting, bridge, "10000")
	assert.NilError(t, err)
	assert.Equal(t, string(again), string(bridged))

	// No --snapshot-count: added after --data-dir, as a list item like it.
	without := strings.Replace(string(raw), "    - --snapshot-count=10000\n", "", 1)
	got, err := RewriteManifest([]byte(without), bridge, "1")
	assert.NilError(t, err)
	assert.Assert(t, strings.Contains(string(got), "    - --data-dir=/var/lib/etcd\n    - --snapshot-count=1\n"), string(got))
	// Without --snapshot-count and without a count asked: the image only.
	got, err = RewriteManifest([]byte(without), bridge, "")
	assert.NilError(t, err)
	assert.Equal(t, string(got), strings.Replace(without, "3.6.8-0", "3.6.16-0", 1))

	for _, tc := range []struct{ name, manifest, err string }{
		{"the image twice", strings.Replace(string(raw), "  annotations:\n", "  annotations:\n    image: registry.k8s.io/etcd:3.6.8-0\n", 1), "want one line `image: registry.k8s.io/etcd:3.6.8-0`, found 2"},
		{"a flow-style command", "spec:\n  containers:\n  - name: etcd\n    image: e:3.6.8-0\n    command: [etcd, --data-dir=/d]\n", "no line `- --data-dir=` to add --snapshot-count after"},
		{"two containers", "spec:\n  containers:\n  - name: a\n  - name: b\n", "want one container, found 2"},
		{"quoted image", strings.Replace(string(raw), "image: registry.k8s.io/etcd:3.6.8-0", `image: "registry.k8s.io/etcd:3.6.8-0"`, 1), "want one line `image: registry.k8s.io/etcd:3.6.8-0`, found 0"},
	} {
		_, err := RewriteManifest([]byte(tc.manifest), bridge, "1")
		assert.ErrorContains(t, err, tc.err, tc.name)
	}
}

func TestDecodeManifestRefuses(t *testing.T) {
	for _, tc := range []struct{ name, manifest, err string }{
		{"no container", "apiVersion: v1\nkind: Pod\nspec: {}\n", "want one container, found 0"},
		{"two containers", "spec:\n  containers:\n  - name: a\n  - name: b\n", "want one container, found 2"},
		{"a field the pod does not have", "spec:\n  containers:\n  - name: etcd\n    imagee: x\n", `unknown field "imagee"`},
	} {
		_, err := DecodeManifest([]byte(tc.manifest))
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
		got, err := MetricsPort(tc.urls)
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
	applied, err := ParseAppliedIndex(metrics)
	assert.NilError(t, err)
	assert.Equal(t, applied, uint64(5097))
	assert.Equal(t, ServerVersion(metrics), "3.6.16")

	// The text format writes large gauges with an exponent.
	applied, err = ParseAppliedIndex([]byte("etcd_server_proposals_applied_total 1.234567e+06\n"))
	assert.NilError(t, err)
	assert.Equal(t, applied, uint64(1234567))

	_, err = ParseAppliedIndex([]byte("etcd_server_proposals_committed_total 5\n"))
	assert.Error(t, err, "etcd's metrics have no etcd_server_proposals_applied_total")
	_, err = ParseAppliedIndex([]byte("etcd_server_proposals_applied_total 0\n"))
	assert.ErrorContains(t, err, "is not an index")
	assert.Equal(t, ServerVersion([]byte("etcd_server_has_leader 1\n")), "")

	assert.Assert(t, Healthy([]byte(`{"health":"true","reason":""}`)))
	assert.Assert(t, !Healthy([]byte(`{"health":"false","reason":"RAFT NO LEADER"}`)))
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
		assert.Equal(t, NewestSnapshotIndex(tc.names), tc.want, "%v", tc.names)
	}
}

func TestOneProcessWithout(t *testing.T) {
	for _, tc := range []struct{ pgrep, err string }{
		{pgrep: "812 etcd --data-dir=/var/lib/etcd --snapshot-count=10000\n"},
		{pgrep: "812 etcd --data-dir=/var/lib/etcd --snapshot-count=1\n", err: "etcd still runs with --snapshot-count=1"},
		{pgrep: "812 etcd --snapshot-count=1 --data-dir=/var/lib/etcd\n", err: "etcd still runs with --snapshot-count=1"},
		{pgrep: "812 etcd --snapshot-count=1\n901 etcd --snapshot-count=10000\n", err: "want one etcd process, found 2"},
		{pgrep: "", err: "want one etcd process, found 0"},
	} {
		err := OneProcessWithout(ParsePgrep(tc.pgrep), "--snapshot-count=1")
		if tc.err == "" {
			assert.NilError(t, err, tc.pgrep)
			continue
		}
		assert.Error(t, err, tc.err, tc.pgrep)
	}
	// pgrep -a's lines are the PID and the command line.
	assert.DeepEqual(t, ParsePgrep("812 etcd --a=b\n\n901 etcd\n"), [][]string{{"etcd", "--a=b"}, {"etcd"}})
}
