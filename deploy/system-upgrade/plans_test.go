package systemupgrade

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	corev1 "k8s.io/api/core/v1"
)

// TestRender pins the manifests: go test ./deploy/system-upgrade -update
// rewrites testdata/*.golden.
func TestRender(t *testing.T) {
	cordon := DefaultOptions("1.31.14")
	cordon.Concurrency, cordon.Cordon, cordon.AllowLoss, cordon.GateTimeout = 2, true, true, 600
	naive := DefaultOptions("1.31.14")
	naive.Naive = true
	runtime := DefaultOptions("1.31.14")
	runtime.Runtime = "containerd@1.7.35"
	for name, o := range map[string]Options{"default-1.31.14": DefaultOptions("1.31.14"), "cordon-concurrency-2": cordon, "naive-1.31.14": naive,
		"runtime-containerd-1.7.35": runtime} {
		t.Run(name, func(t *testing.T) {
			y, err := Render(o)
			assert.NilError(t, err)
			golden.Assert(t, string(y), name+".yaml.golden")
		})
	}
}

func TestPlans(t *testing.T) {
	o := DefaultOptions("1.31.14")
	o.Concurrency = 3
	plans, err := Plans(o)
	assert.NilError(t, err)
	assert.Assert(t, is.Len(plans, 2))
	cp, workers := plans[0].Spec, plans[1].Spec
	assert.Check(t, is.Equal(cp.Concurrency, int64(1)), "the control plane goes one node at a time")
	assert.Check(t, is.Equal(workers.Concurrency, int64(3)))
	assert.Check(t, cp.Prepare == nil)
	assert.Check(t, is.DeepEqual(workers.Prepare.Args, []string{"wait-plan", ControlPlanePlan}), "the workers wait for the control plane")
	for _, p := range plans {
		assert.Check(t, !p.Spec.Cordon, "no cordon by default")
		assert.Check(t, is.Equal(p.Spec.Version, "1.31.14"))
		assert.Check(t, is.Equal(p.Spec.Upgrade.Image, UpgradeImageName), "untagged: the controller tags it with the version")
	}
	// The naive roll: its own Plans and image, kc-roll naive, without
	// the gate's and the preflight's settings.
	o.Naive = true
	plans, err = Plans(o)
	assert.NilError(t, err)
	assert.Assert(t, is.Len(plans, 2))
	assert.Check(t, is.Equal(plans[0].Metadata.Name, NaiveControlPlanePlan))
	assert.Check(t, is.Equal(plans[1].Metadata.Name, NaiveWorkersPlan))
	assert.Check(t, is.DeepEqual(plans[1].Spec.Prepare.Args, []string{"wait-plan", NaiveControlPlanePlan}), "the workers wait for the naive control plane")
	for _, p := range plans {
		assert.Check(t, !p.Spec.Cordon, "no cordon, no drain")
		assert.Check(t, is.Equal(p.Spec.Upgrade.Image, NaiveImageName))
		assert.Check(t, is.DeepEqual(p.Spec.Upgrade.Args, []string{"naive"}))
		var env []string
		for _, e := range p.Spec.Upgrade.Env {
			env = append(env, e.Name)
		}
		assert.Check(t, is.DeepEqual(env, []string{"KC_ROLE", "KC_NAMESPACE"}))
	}
	for _, bad := range []Options{{Version: "v1.31.14", Concurrency: 1, GateTimeout: 1}, {Version: "1.31", Concurrency: 1, GateTimeout: 1},
		{Version: "1.31.14", Concurrency: 0, GateTimeout: 1}, {Version: "1.31.14", Concurrency: 1}} {
		_, err := Plans(bad)
		assert.Check(t, err != nil, "%+v", bad)
	}
}

// TestJobTTL: SUC deletes a finished Job once its TTL has passed, and
// creates a failed node's Job again then (the re-run kc-roll is built
// for); the TTL is 900 s unless set, and never negative.
func TestJobTTL(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ttl     int64
		want    string
		wantErr string
	}{
		{name: "SUC's default", want: "900"},
		{name: "set", ttl: 30, want: "30"},
		{name: "negative", ttl: -1, wantErr: "job TTL -1: want 0 (SUC's 900 s) or more seconds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions("1.31.14")
			o.JobTTL = tc.ttl
			objs, err := Controller(o)
			if tc.wantErr != "" {
				assert.Error(t, err, tc.wantErr)
				return
			}
			assert.NilError(t, err)
			var got string
			for _, obj := range objs {
				if cm, ok := obj.(corev1.ConfigMap); ok {
					got = cm.Data["SYSTEM_UPGRADE_JOB_TTL_SECONDS_AFTER_FINISH"]
				}
			}
			assert.Check(t, is.Equal(got, tc.want))
		})
	}
}

func TestUpgradeImage(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"kubernetes-1.31.14-node_1.31.14-2_amd64.deb", "kubernetes-1.31.14-kubeadm_1.31.14-2_amd64.deb",
		"kubernetes-unversioned_1.0.0-4_all.deb", "kubernetes-1.30.14-node_1.30.14-2_amd64.deb", "SHA256SUMS",
		"kubernetes-1.31.14-node-1.31.14-2.kc.x86_64.rpm", "kubernetes-unversioned-1.0.0-4.kc.noarch.rpm", "kubectl", "busybox", "kc-roll"} {
		assert.NilError(t, os.WriteFile(filepath.Join(dir, p), []byte(p), 0o644))
	}
	img, err := UpgradeImage(UpgradeImageName+":1.31.14", "1.31.14", filepath.Join(dir, "busybox"), filepath.Join(dir, "kubectl"), filepath.Join(dir, "kc-roll"), dir)
	assert.NilError(t, err)
	files := map[string]string{}
	var pkgs []string
	for _, f := range img.Files {
		files[f.Path] = string(f.Data) + f.Link
		if strings.HasPrefix(f.Path, "packages/") {
			pkgs = append(pkgs, strings.TrimPrefix(f.Path, "packages/"))
		}
	}
	sort.Strings(pkgs)
	assert.Check(t, is.DeepEqual(pkgs, []string{"kubernetes-1.31.14-kubeadm_1.31.14-2_amd64.deb", "kubernetes-1.31.14-node-1.31.14-2.kc.x86_64.rpm",
		"kubernetes-1.31.14-node_1.31.14-2_amd64.deb", "kubernetes-unversioned-1.0.0-4.kc.noarch.rpm", "kubernetes-unversioned_1.0.0-4_all.deb"}))
	assert.Check(t, is.Equal(files["bin/kc-roll"], "kc-roll"))
	assert.Check(t, is.Equal(files["bin/kubectl"], "kubectl"))
	for _, a := range UpgradeApplets {
		assert.Check(t, is.Equal(files["bin/"+a], "busybox"), "applet %s", a)
	}
	assert.Check(t, is.DeepEqual(img.Entrypoint, []string{"/bin/kubectl"}), "the cordon step's kubectl image")

	_, err = UpgradeImage("x", "1.32.0", filepath.Join(dir, "busybox"), filepath.Join(dir, "kubectl"), filepath.Join(dir, "kc-roll"), dir)
	assert.Check(t, is.ErrorContains(err, "no package of Kubernetes 1.32.0"))
}

// TestUpgradeImagePreRelease: a release's image takes none of its
// pre-release's packages (kubernetes-1.38.0-rc.1-node starts like
// kubernetes-1.38.0-*), and the pre-release's image takes its own.
func TestUpgradeImagePreRelease(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"kubernetes-1.38.0-node_1.38.0-1_amd64.deb", "kubernetes-1.38.0-rc.1-node_1.38.0~rc.1-1_amd64.deb",
		"kubernetes-1.38.0-node-1.38.0-1.kc.x86_64.rpm", "kubernetes-1.38.0-rc.1-node-1.38.0~rc.1-1.kc.x86_64.rpm", "kubectl", "busybox", "kc-roll"} {
		assert.NilError(t, os.WriteFile(filepath.Join(dir, p), []byte(p), 0o644))
	}
	for version, want := range map[string][]string{
		"1.38.0":      {"kubernetes-1.38.0-node-1.38.0-1.kc.x86_64.rpm", "kubernetes-1.38.0-node_1.38.0-1_amd64.deb"},
		"1.38.0-rc.1": {"kubernetes-1.38.0-rc.1-node-1.38.0~rc.1-1.kc.x86_64.rpm", "kubernetes-1.38.0-rc.1-node_1.38.0~rc.1-1_amd64.deb"},
	} {
		img, err := UpgradeImage("x", version, filepath.Join(dir, "busybox"), filepath.Join(dir, "kubectl"), filepath.Join(dir, "kc-roll"), dir)
		assert.NilError(t, err)
		var pkgs []string
		for _, f := range img.Files {
			if strings.HasPrefix(f.Path, "packages/") {
				pkgs = append(pkgs, strings.TrimPrefix(f.Path, "packages/"))
			}
		}
		sort.Strings(pkgs)
		assert.Check(t, is.DeepEqual(pkgs, want), version)
	}
}

// TestEtcdBridgeImage: the control-plane Plan's Jobs get the bridge etcd's
// image (KC_ETCD_BRIDGE_IMAGE) when the roll-out names one; the workers and
// the naive roll never do, and a bridge image is a tagged etcd reference.
func TestEtcdBridgeImage(t *testing.T) {
	o := DefaultOptions("1.37.0")
	plans, err := Plans(o)
	assert.NilError(t, err)
	_, set := envOf(plans[0].Spec.Upgrade)["KC_ETCD_BRIDGE_IMAGE"]
	assert.Check(t, !set, "no bridge image unless given")

	o.EtcdBridgeImage = "registry.k8s.io/etcd:3.6.16-0"
	plans, err = Plans(o)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(envOf(plans[0].Spec.Upgrade)["KC_ETCD_BRIDGE_IMAGE"], "registry.k8s.io/etcd:3.6.16-0"))
	_, set = envOf(plans[1].Spec.Upgrade)["KC_ETCD_BRIDGE_IMAGE"]
	assert.Check(t, !set, "the workers run no etcd")

	o.Naive = true
	plans, err = Plans(o)
	assert.NilError(t, err)
	_, set = envOf(plans[0].Spec.Upgrade)["KC_ETCD_BRIDGE_IMAGE"]
	assert.Check(t, !set, "the naive roll runs no bridge")

	for _, bad := range []string{"registry.k8s.io/etcd", "etcd:3.6.16-0 x", "registry.k8s.io/etcd@sha256:abc"} {
		o := DefaultOptions("1.37.0")
		o.EtcdBridgeImage = bad
		_, err := Plans(o)
		assert.Check(t, is.ErrorContains(err, "etcd bridge image"), bad)
	}
}

// TestKubeadmArgs: arguments for kubeadm upgrade (KC_KUBEADM_ARGS, e.g. a
// cgroup v1 fleet's --ignore-preflight-errors=SystemVerification from
// 1.35) reach every Plan's Jobs, the naive roll's too; none, no variable;
// an argument the script's word splitting would mangle is refused.
func TestKubeadmArgs(t *testing.T) {
	o := DefaultOptions("1.35.8")
	plans, err := Plans(o)
	assert.NilError(t, err)
	_, set := envOf(plans[0].Spec.Upgrade)["KC_KUBEADM_ARGS"]
	assert.Check(t, !set, "no KC_KUBEADM_ARGS unless given")

	o.KubeadmArgs = []string{"--ignore-preflight-errors=SystemVerification", "--v=1"}
	for _, naive := range []bool{false, true} {
		o.Naive = naive
		plans, err = Plans(o)
		assert.NilError(t, err)
		for _, p := range plans {
			assert.Check(t, is.Equal(envOf(p.Spec.Upgrade)["KC_KUBEADM_ARGS"], "--ignore-preflight-errors=SystemVerification --v=1"), "%s", p.Metadata.Name)
		}
	}
	for _, bad := range []string{"", "SystemVerification", "--a b", "--x=$(id)", "--x=*", "--x=a;b"} {
		o := DefaultOptions("1.35.8")
		o.KubeadmArgs = []string{bad}
		_, err := Plans(o)
		assert.Check(t, is.ErrorContains(err, "kubeadm argument"), "%q", bad)
	}
}

// TestRuntime: with a runtime step (Options.Runtime), every node's Job gets
// KC_RUNTIME, the containerd that kc-roll selects before the kubelet;
// the prepare step and the naive roll never do, and only a runtime the
// project builds and packages is taken.
func TestRuntime(t *testing.T) {
	for _, tc := range []struct {
		name    string
		runtime string
		naive   bool
		want    string // KC_RUNTIME of both Plans' upgrade step; "" unset
		wantErr string
	}{
		{name: "none: no runtime step, as before"},
		{name: "containerd 1.7.35", runtime: "containerd@1.7.35", want: "containerd@1.7.35"},
		{name: "containerd 2.4.2", runtime: "containerd@2.4.2", want: "containerd@2.4.2"},
		{name: "the naive roll runs no runtime step", runtime: "containerd@1.7.35", naive: true},
		{name: "a containerd the project does not build", runtime: "containerd@1.7.99",
			wantErr: `runtime "containerd@1.7.99": want one of containerd@1.7.35, containerd@1.7.36+compat.1, containerd@2.0.14+compat.1, containerd@2.1.9+compat.1, containerd@2.2.10+compat.1, containerd@2.3.7+compat.1, containerd@2.4.2, containerd@2.4.2+compat.1 (the runtime builds: make runtime, runtime-containerd-VERSION packages)`},
		{name: "not NAME@VERSION", runtime: "1.7.35", wantErr: `runtime "1.7.35": want one of`},
		{name: "another runtime", runtime: "cri-o@1.31.0", wantErr: `runtime "cri-o@1.31.0": want one of`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions("1.31.14")
			o.Runtime, o.Naive = tc.runtime, tc.naive
			plans, err := Plans(o)
			if tc.wantErr != "" {
				assert.Check(t, is.ErrorContains(err, tc.wantErr))
				return
			}
			assert.NilError(t, err)
			for _, p := range plans {
				got, set := envOf(p.Spec.Upgrade)["KC_RUNTIME"]
				assert.Check(t, is.Equal(set, tc.want != ""), "%s: KC_RUNTIME set", p.Metadata.Name)
				assert.Check(t, is.Equal(got, tc.want), p.Metadata.Name)
				if p.Spec.Prepare != nil {
					_, set := envOf(p.Spec.Prepare)["KC_RUNTIME"]
					assert.Check(t, !set, "%s: the prepare step waits, it selects nothing", p.Metadata.Name)
				}
			}
		})
	}
}

// envOf is a container's environment, by name.
func envOf(c *ContainerSpec) map[string]string {
	m := map[string]string{}
	for _, e := range c.Env {
		m[e.Name] = e.Value
	}
	return m
}

// TestRenderHeaderNamesEveryOption: the header's command regenerates the
// file, so it names every option that changed it.
func TestRenderHeaderNamesEveryOption(t *testing.T) {
	o := DefaultOptions("1.37.2")
	o.EtcdBridgeImage = "registry.k8s.io/etcd:3.6.16-0"
	o.KubeadmArgs = []string{"--ignore-preflight-errors=SystemVerification", "--v=1"}
	o.Runtime = "containerd@2.4.2"
	y, err := Render(o)
	assert.NilError(t, err)
	header, _, _ := strings.Cut(string(y), "\n")
	assert.Check(t, is.Contains(header, " -etcd-bridge-image registry.k8s.io/etcd:3.6.16-0"))
	assert.Check(t, is.Contains(header, " -kubeadm-arg --ignore-preflight-errors=SystemVerification -kubeadm-arg --v=1"))
	assert.Check(t, is.Contains(header, " -runtime containerd@2.4.2"))
}
