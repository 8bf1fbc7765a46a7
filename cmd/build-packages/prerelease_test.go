package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubelet-compat/kubelet-compat/pkg/packaging/packagingtest"
)

// TestPreReleasePackages: a pre-release without a shim that changes its
// binaries (1.38.0-rc.1, fake) is packaged as any release: named and
// installed under its Kubernetes spelling, versioned with a ~ in both
// formats (and rpm asks for nothing EL7's rpm 4.11 lacks: tildes are 4.10's).
func TestPreReleasePackages(t *testing.T) {
	packagingtest.RequireTools(t, "make rpm-deps deb-deps", "rpmbuild", "rpm", "dpkg-deb")
	const v = "1.38.0-rc.1"
	work := t.TempDir()
	input := filepath.Join(work, "harness")
	cli := packagingtest.FakeHarness(t, input, []string{v})
	out := filepath.Join(work, "out")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"-format", "all", "-input", input, "-output", out, "-versions", v,
		"-kubelet-compat", cli, "-source-date-epoch", fmt.Sprint(packagingtest.Epoch), "-jobs", "2"}, &stdout, &stderr)
	assert.NilError(t, err, stderr.String())
	var names []string
	for _, dir := range []string{"rpms", "debs"} {
		got, err := filepath.Glob(filepath.Join(out, dir, "kubernetes-1.38*"))
		assert.NilError(t, err)
		for _, p := range got {
			names = append(names, dir+"/"+filepath.Base(p))
		}
	}
	sort.Strings(names)
	assert.Check(t, is.DeepEqual(names, []string{
		"debs/kubernetes-1.38.0-rc.1-client_1.38.0~rc.1-1_amd64.deb",
		"debs/kubernetes-1.38.0-rc.1-kubeadm_1.38.0~rc.1-1_amd64.deb",
		"debs/kubernetes-1.38.0-rc.1-node_1.38.0~rc.1-1_amd64.deb",
		"rpms/kubernetes-1.38.0-rc.1-client-1.38.0~rc.1-2.kc.x86_64.rpm",
		"rpms/kubernetes-1.38.0-rc.1-kubeadm-1.38.0~rc.1-2.kc.x86_64.rpm",
		"rpms/kubernetes-1.38.0-rc.1-node-1.38.0~rc.1-2.kc.x86_64.rpm",
	}))
	rpm := filepath.Join(out, "rpms", "kubernetes-1.38.0-rc.1-node-1.38.0~rc.1-2.kc.x86_64.rpm")
	assert.Check(t, is.Equal(packagingtest.Run(t, "rpm", "-qp", "--qf", "%{NAME} %{VERSION}-%{RELEASE}\n", rpm), "kubernetes-1.38.0-rc.1-node 1.38.0~rc.1-2.kc\n"))
	assert.Check(t, is.Contains(packagingtest.Run(t, "rpm", "-qp", "--provides", rpm), "kubernetes-node = 1.38.0~rc.1-2.kc\n"))
	assert.Check(t, is.Contains(packagingtest.Run(t, "rpm", "-qp", "--requires", rpm), "rpmlib(TildeInVersions) <= 4.10.0-1\n"))
	assert.Check(t, is.Contains(packagingtest.Run(t, "rpm", "-qlp", rpm), "/usr/local/kubernetes/1.38.0-rc.1/stage2/usr/bin/kubelet\n"))
	assert.Check(t, is.Contains(packagingtest.Run(t, "rpm", "-qp", "--scripts", rpm), "refusing to erase Kubernetes 1.38.0-rc.1"))
	deb := filepath.Join(out, "debs", "kubernetes-1.38.0-rc.1-node_1.38.0~rc.1-1_amd64.deb")
	assert.Check(t, is.Equal(packagingtest.Run(t, "dpkg-deb", "-f", deb, "Package", "Version", "Provides"),
		"Package: kubernetes-1.38.0-rc.1-node\nVersion: 1.38.0~rc.1-1\nProvides: kubernetes-node (= 1.38.0~rc.1-1)\n"))
	assert.Check(t, is.Contains(packagingtest.Run(t, "dpkg-deb", "-c", deb), "./usr/local/kubernetes/1.38.0-rc.1/stage2/usr/bin/kubelet\n"))
}

// TestRefusesASourceThatIsNotUpstreams: build-packages refuses the
// 1.38.0-beta.0 row, whose kubelet is built with kubelet-compat's shim of
// sigs.k8s.io/iptables-wrappers, in one line naming the module and why,
// before it builds or installs anything.
func TestRefusesASourceThatIsNotUpstreams(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"-format", "all", "-input", t.TempDir(), "-output", out, "-versions", "1.37.2 1.38.0-beta.0",
		"-kubelet-compat", "cli", "-source-date-epoch", "1"}, &stdout, &stderr)
	assert.Assert(t, err != nil)
	assert.Check(t, is.Contains(err.Error(), "kubernetes 1.38.0-beta.0: not packaged: sigs.k8s.io/iptables-wrappers"))
	assert.Check(t, is.Contains(err.Error(), "KUBE-IPTABLES-HINT"))
	assert.Check(t, !strings.Contains(err.Error(), "\n"), "not one line: %q", err)
	assert.Check(t, is.Equal(stdout.String()+stderr.String(), ""))
	_, statErr := os.Stat(out)
	assert.Check(t, os.IsNotExist(statErr), "the refused build made its output directory")
}
