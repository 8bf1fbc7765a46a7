package rpm

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/pkg/layout"
	"github.com/kubelet-compat/kubelet-compat/pkg/layout/files"
	"github.com/kubelet-compat/kubelet-compat/pkg/packaging"
)

func TestCheckVersion(t *testing.T) {
	for _, tc := range []struct {
		version string
		ok      bool
	}{
		{"1.21.14", true},
		{"1.18.19", true},
		{"v1.21.14", false},
		{"1.21", false},
		{"1.21.14-rc.0", true},
		{"1.38.0~rc.1", false},
		{"01.21.14", false},
		{"1.21.14 ", false},
		{"", false},
	} {
		if err := CheckVersion(tc.version); (err == nil) != tc.ok {
			t.Errorf("CheckVersion(%q) = %v, want ok=%v", tc.version, err, tc.ok)
		}
	}
}

func TestReportsVersion(t *testing.T) {
	for _, tc := range []struct {
		output, version string
		want            bool
	}{
		{"Kubernetes v1.21.14\n", "1.21.14", true},
		{`kubeadm version: &version.Info{Major:"1", Minor:"18", GitVersion:"v1.18.19", GitCommit:"abc"}`, "1.18.19", true},
		{"Client Version: v1.20.15", "1.20.15", true},
		{"Kubernetes v1.21.140", "1.21.14", false},
		{"Kubernetes v1.21.1", "1.21.14", false},
		{"Kubernetes v11.21.14", "1.21.14", false},
		{"Kubernetes v0.0.0-master+$Format:%h$", "1.21.14", false},
	} {
		if got := reportsVersion([]byte(tc.output), tc.version); got != tc.want {
			t.Errorf("reportsVersion(%q, %s) = %v, want %v", tc.output, tc.version, got, tc.want)
		}
	}
}

func TestRenderVersioned(t *testing.T) {
	for _, tc := range []struct {
		name    string
		spec    VersionedSpec
		wantErr string
		want    []string
	}{
		{
			name: "all three packages under the version's directory",
			spec: VersionedSpec{Version: "1.21.14", Release: "1", Arch: "x86_64"},
			want: []string{
				"%global kube_version 1.21.14\n",
				"%global kube_dir /usr/local/kubernetes/%{kube_version}\n",
				"Release:       1%{?dist}\n",
				"ExclusiveArch: x86_64\n",
				"%package node\n", "%package kubeadm\n", "%package client\n",
				"%global _build_id_links none\n", "%global debug_package %{nil}\n",
			},
		},
		{
			name: "a pre-release: its name and directory as Kubernetes spells it, its Version with a ~",
			spec: VersionedSpec{Version: "1.38.0-rc.1", Release: "2", Arch: "x86_64"},
			want: []string{
				"%global kube_version 1.38.0-rc.1\n",
				"%global kube_dir /usr/local/kubernetes/%{kube_version}\n",
				"Name:          kubernetes-%{kube_version}\n",
				"Version:       1.38.0~rc.1\n",
				"Provides: kubernetes-node = %{version}-%{release}\n",
			},
		},
		{name: "leading v", spec: VersionedSpec{Version: "v1.21.14", Release: "1", Arch: "x86_64"}, wantErr: "invalid Kubernetes version"},
		{name: "no release", spec: VersionedSpec{Version: "1.21.14", Arch: "x86_64"}, wantErr: "release and arch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RenderVersioned(tc.spec)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(got), w) {
					t.Errorf("spec lacks %q", w)
				}
			}
			if strings.Contains(string(got), "<no value>") {
				t.Error("spec has an unfilled template field")
			}
		})
	}
}

func TestRenderUnversioned(t *testing.T) {
	got, err := RenderUnversioned(UnversionedSpec{Version: "1.0.0", Release: "3"})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"BuildArch: noarch\n",
		"Release:   3%{?dist}\n",
		"ln -s ../local/kubernetes/current/stage2/usr/bin/kubelet %{buildroot}/usr/bin/kubelet\n",
		"%config(noreplace) /etc/sysconfig/kubelet\n",
		"%dir /usr/local/kubernetes/current/stage1\n",
	} {
		if !strings.Contains(string(got), w) {
			t.Errorf("spec lacks %q", w)
		}
	}
	if _, err := RenderUnversioned(UnversionedSpec{Version: "1.0.0"}); err == nil {
		t.Error("no error without a release")
	}
}

// The kubelet must get KUBELET_COMPAT_FILE only from /etc/sysconfig/kubelet,
// and the shipped sysconfig must not set it.
func TestKubeletCompatFileComesOnlyFromSysconfig(t *testing.T) {
	dropIn, err := shippedFile("10-kubeadm.conf")
	if err != nil {
		t.Fatal(err)
	}
	sysconfig, err := shippedFile("kubelet.sysconfig")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(dropIn), "\nEnvironmentFile=-/etc/sysconfig/kubelet\n") {
		t.Error("drop-in does not read /etc/sysconfig/kubelet")
	}
	for _, line := range strings.Split(string(dropIn), "\n") {
		if strings.HasPrefix(line, "Environment=") && strings.Contains(line, "KUBELET_COMPAT_FILE") {
			t.Errorf("drop-in hard-codes KUBELET_COMPAT_FILE: %s", line)
		}
	}
	for _, line := range strings.Split(string(sysconfig), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "KUBELET_COMPAT_FILE") {
			t.Errorf("shipped /etc/sysconfig/kubelet sets KUBELET_COMPAT_FILE: %s", line)
		}
	}
}

func TestDefinesSetEverythingThatShapesTheRPM(t *testing.T) {
	cfg := Config{Options: packaging.Options{SourceDateEpoch: 1}}
	cfg.setDefaults()
	defines := strings.Join(cfg.Defines("/top"), "\n") + "\n"
	for _, want := range []string{
		"_topdir /top\n",
		"_unitdir /usr/lib/systemd/system\n",
		"dist .kc\n",
		"_buildhost " + DefaultBuildHost + "\n",
		"use_source_date_epoch_as_buildtime 1\n",
		"clamp_mtime_to_source_date_epoch 1\n",
		"debug_package %{nil}\n",
		"_build_id_links none\n",
		"_binary_payload w2.xzdio\n",
	} {
		if !strings.Contains(defines, want) {
			t.Errorf("defines lack %q", want)
		}
	}
}

// The sweeper runs the selected CLI with the kubelet's environment, and
// sweep's "file kept" (exit 2) is not a failed unit.
func TestSweeperUnit(t *testing.T) {
	unit, err := shippedFile("kubelet-compat-sweep.service")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\nType=oneshot\n",
		"\nEnvironmentFile=-/etc/sysconfig/kubelet\n",
		"\nExecStart=" + CurrentDir + "/stage2/usr/bin/kubelet-compat sweep $KUBELET_COMPAT_SWEEP_ARGS\n",
		"\nSuccessExitStatus=2\n",
	} {
		if !strings.Contains(string(unit), want) {
			t.Errorf("kubelet-compat-sweep.service lacks %q", strings.TrimSpace(want))
		}
	}
	timer, err := shippedFile("kubelet-compat-sweep.timer")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(timer), "\nWantedBy=timers.target\n") {
		t.Error("timer is not installable")
	}
}

// shippedFile returns a file both formats ship, by name.
func shippedFile(name string) ([]byte, error) { return fs.ReadFile(files.Shipped, name) }

// TestPreReleaseSpecIsTheReleases: a pre-release's spec is its release's
// with the version put in, but for the Version tag (1.38.0~rc.1): so the
// digest of rpm/releases.txt, which renders a release's, covers what a
// pre-release's packages are made of, and a release's spec did not change.
func TestPreReleaseSpecIsTheReleases(t *testing.T) {
	for _, g := range layout.Default().Groups {
		if !g.Versioned {
			continue
		}
		render := func(v string) string {
			b, err := renderVersioned(Templates, layout.Default(), VersionedSpec{Version: v, Release: "2", Arch: "x86_64", Group: g.Key})
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		pre, rel := render("1.38.0-rc.1"), render("1.38.0")
		back := strings.NewReplacer("Version:       1.38.0~rc.1\n", "Version:       %{kube_version}\n", "1.38.0-rc.1", "1.38.0").Replace(pre)
		if back != rel {
			t.Errorf("%s: the pre-release's spec differs from the release's in more than its version:\n%s\n----\n%s", g.Key, pre, rel)
		}
		if !strings.Contains(pre, "Version:       1.38.0~rc.1\n") {
			t.Errorf("%s: no Version: 1.38.0~rc.1 in\n%s", g.Key, pre)
		}
	}
}
