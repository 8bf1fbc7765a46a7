package nodeimage

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubelet-compat/kubelet-compat/pkg/matrix"
)

const list120 = `k8s.gcr.io/kube-apiserver:v1.20.15
k8s.gcr.io/kube-controller-manager:v1.20.15
k8s.gcr.io/kube-scheduler:v1.20.15
k8s.gcr.io/kube-proxy:v1.20.15
k8s.gcr.io/pause:3.2
k8s.gcr.io/etcd:3.4.13-0
k8s.gcr.io/coredns:1.7.0
`

const list121 = `k8s.gcr.io/kube-apiserver:v1.21.14
k8s.gcr.io/kube-controller-manager:v1.21.14
k8s.gcr.io/kube-scheduler:v1.21.14
k8s.gcr.io/kube-proxy:v1.21.14
k8s.gcr.io/pause:3.4.1
k8s.gcr.io/etcd:3.4.13-0
k8s.gcr.io/coredns/coredns:v1.8.0
`

func TestParseImageList(t *testing.T) {
	for _, tc := range []struct {
		name, out       string
		wantCoreDNS     string
		wantCoreDNSTag  string
		wantPause, want string
	}{
		{name: "1.20", out: list120, wantCoreDNS: "k8s.gcr.io/coredns:1.7.0", wantCoreDNSTag: "1.7.0", wantPause: "k8s.gcr.io/pause:3.2"},
		{name: "1.21 nested coredns repository", out: list121, wantCoreDNS: "k8s.gcr.io/coredns/coredns:v1.8.0", wantCoreDNSTag: "v1.8.0", wantPause: "k8s.gcr.io/pause:3.4.1"},
		{name: "blank lines and spaces", out: "\n  " + list120 + "\n\n", wantCoreDNS: "k8s.gcr.io/coredns:1.7.0", wantCoreDNSTag: "1.7.0", wantPause: "k8s.gcr.io/pause:3.2"},
		{name: "registry with a port", out: "registry.local:5000/kube-apiserver:v1.20.15\n" + list120[len("k8s.gcr.io/kube-apiserver:v1.20.15\n"):], wantCoreDNS: "k8s.gcr.io/coredns:1.7.0", wantCoreDNSTag: "1.7.0", wantPause: "k8s.gcr.io/pause:3.2"},
		{name: "missing etcd", out: "k8s.gcr.io/kube-apiserver:v1.20.15\nk8s.gcr.io/kube-controller-manager:v1.20.15\nk8s.gcr.io/kube-scheduler:v1.20.15\nk8s.gcr.io/kube-proxy:v1.20.15\nk8s.gcr.io/pause:3.2\nk8s.gcr.io/coredns:1.7.0\n", want: "kubeadm listed no etcd image"},
		{name: "duplicate", out: list120 + "k8s.gcr.io/pause:3.2\n", want: "kubeadm listed pause twice"},
		{name: "unknown component", out: list120 + "k8s.gcr.io/dashboard:v2\n", want: `kubeadm listed "k8s.gcr.io/dashboard:v2": unknown component "dashboard"`},
		{name: "no tag", out: "k8s.gcr.io/pause\n", want: `kubeadm listed "k8s.gcr.io/pause", not an image reference with a tag`},
		{name: "a warning line", out: "W1130 could not fetch: x\n" + list120, want: `kubeadm listed "W1130 could not fetch: x", not an image reference with a tag`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := parseImageList(tc.out)
			if tc.want != "" {
				assert.Error(t, err, tc.want)
				return
			}
			assert.NilError(t, err)
			assert.Equal(t, l[compCoreDNS], tc.wantCoreDNS)
			assert.Equal(t, l.tag(compCoreDNS), tc.wantCoreDNSTag)
			assert.Equal(t, l[compPause], tc.wantPause)
			assert.Check(t, is.Len(l.refs(), 7))
		})
	}
}

func TestCoreDNSModuleVersion(t *testing.T) {
	for _, tc := range []struct{ tag, want, err string }{
		{tag: "1.7.0", want: "v1.7.0"},
		{tag: "v1.8.0", want: "v1.8.0"},
		{tag: "1.8.0-rc1", err: `CoreDNS tag "1.8.0-rc1" is not a release version`},
		{tag: "latest", err: `CoreDNS tag "latest" is not a release version`},
	} {
		got, err := coreDNSModuleVersion(tc.tag)
		if tc.err != "" {
			assert.Error(t, err, tc.err)
			continue
		}
		assert.NilError(t, err)
		assert.Equal(t, got, tc.want)
	}
}

func TestEtcdModuleVersion(t *testing.T) {
	for _, tc := range []struct{ tag, want, err string }{
		{"3.5.15-0", "v3.5.15", ""},
		{"3.4.13-0", "v3.4.13", ""},
		{"3.6.5-0", "v3.6.5", ""},
		{"3.7.0", "v3.7.0", ""},
		{"v3.5.1-0", "", "not a 3.x release"},
		{"latest", "", "not a 3.x release"},
	} {
		got, err := etcdModuleVersion(tc.tag)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.tag)
			continue
		}
		assert.NilError(t, err, tc.tag)
		assert.Equal(t, got, tc.want, tc.tag)
	}
}

// TestLeftBehind: the images a roll from one minor to the next leaves
// unused, never the sandbox image and never one the next minor lists too.
func TestLeftBehind(t *testing.T) {
	old := imageList{compAPIServer: "registry.k8s.io/kube-apiserver:v1.33.13", compController: "registry.k8s.io/kube-controller-manager:v1.33.13",
		compPause: "registry.k8s.io/pause:3.10", compEtcd: "registry.k8s.io/etcd:3.5.24-0", compCoreDNS: "registry.k8s.io/coredns/coredns:v1.12.0"}
	next := imageList{compAPIServer: "registry.k8s.io/kube-apiserver:v1.34.12", compController: "registry.k8s.io/kube-controller-manager:v1.34.12",
		compPause: "registry.k8s.io/pause:3.10.1", compEtcd: "registry.k8s.io/etcd:3.6.6-0", compCoreDNS: "registry.k8s.io/coredns/coredns:v1.12.0"}
	assert.DeepEqual(t, leftBehind(old, next), []string{"registry.k8s.io/etcd:3.5.24-0", "registry.k8s.io/kube-apiserver:v1.33.13", "registry.k8s.io/kube-controller-manager:v1.33.13"})
}

// CoreDNS falls back to the Go of the release that ships it, never older
// than oldGo: CoreDNS 1.9.3 (kubeadm 1.25) failed with go1.16.15 (its
// //go:build lines) and with the machine's Go (a linkname it refuses).
func TestCoreDNSGo(t *testing.T) {
	for _, tc := range []struct{ kubernetes, want string }{
		{"1.18.19", oldGo},
		{"1.21.14", oldGo},
		{"1.22.17", oldGo},
		{"1.25.16", "1.20.14"},
		{"1.26.15", "1.21.8"},
		{"1.28.15", "1.22.8"},
	} {
		got, err := coreDNSGo(tc.kubernetes)
		assert.NilError(t, err)
		assert.Check(t, is.Equal(got, tc.want), tc.kubernetes)
		// The fallback must be a toolchain the matrix can install.
		assert.Check(t, goInMatrix(tc.want), tc.want)
	}
	_, err := coreDNSGo("1.99.0")
	assert.ErrorContains(t, err, "1.99")
}

func goInMatrix(goVersion string) bool {
	rows, _ := matrix.Load()
	for _, r := range rows {
		if r.Go == goVersion {
			return true
		}
	}
	return false
}
