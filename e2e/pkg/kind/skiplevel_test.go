package kind

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
)

// TestStepActions: one minor stages and swaps every node after the control
// plane; skip-level moves the control plane (and its node's kubelet) one
// minor at a time, then each worker's kubelet From -> To once.
func TestStepActions(t *testing.T) {
	r := &ClusterRun{Options: ScenarioOptions{Workers: 2}}
	names := func(st Step) []string {
		actions, err := r.stepActions(st)
		assert.NilError(t, err)
		var out []string
		for _, a := range actions {
			out = append(out, a.Name)
		}
		return out
	}
	assert.DeepEqual(t, names(Step{From: "1.30.14", To: "1.31.14"}), []string{
		"stage 1.31.14 on every node (.debs, images)",
		"upgrade the control plane (kubeadm upgrade apply v1.31.14)",
		"upgrade the control-plane node 1.30.14 -> 1.31.14",
		"upgrade worker 1 1.30.14 -> 1.31.14",
		"upgrade worker 2 1.30.14 -> 1.31.14",
	})
	assert.DeepEqual(t, names(Step{From: "1.28.15", To: "1.31.14"}), []string{
		"stage 1.29.15 on the control-plane node (.debs, images; the workers: images)",
		"upgrade the control plane (kubeadm upgrade apply v1.29.15)",
		"upgrade the control-plane node 1.28.15 -> 1.29.15",
		"stage 1.30.14 on the control-plane node (.debs, images; the workers: images)",
		"upgrade the control plane (kubeadm upgrade apply v1.30.14)",
		"upgrade the control-plane node 1.29.15 -> 1.30.14",
		"stage 1.31.14 on the control-plane node (.debs, images; the workers: images)",
		"upgrade the control plane (kubeadm upgrade apply v1.31.14)",
		"upgrade the control-plane node 1.30.14 -> 1.31.14",
		"stage 1.31.14 on the workers (.debs, images)",
		"upgrade worker 1 1.28.15 -> 1.31.14",
		"upgrade worker 2 1.28.15 -> 1.31.14",
	})
}

func TestCheckSkew(t *testing.T) {
	for _, tc := range []struct {
		step Step
		err  string
	}{
		{step: Step{From: "1.30.14", To: "1.31.14"}},
		{step: Step{From: "1.18.19", To: "1.20.15"}},
		{step: Step{From: "1.28.15", To: "1.31.14"}},
		{step: Step{From: "1.31.14", To: "1.34.12"}},
		{step: Step{From: "1.18.19", To: "1.21.14"}, err: "outside upstream's version skew policy (at most 2 minors older)"},
		{step: Step{From: "1.30.14", To: "1.34.12"}, err: "at most 3 minors older"},
		// Rollbacks are refused by the provider's Check, before the skew.
		{step: Step{From: "1.31.14", To: "1.30.14"}, err: "local provider only"},
	} {
		err := (&Runner{}).Check(plan.Plan{Steps: []Step{tc.step}})
		if tc.err == "" {
			assert.NilError(t, err, tc.step.String())
		} else {
			assert.ErrorContains(t, err, tc.err, tc.step.String())
		}
	}
}

// TestSkewForce: kubeadm 1.20 refuses 1.18 kubelets without --force (its
// own skew is 1); kubeadm 1.29 on lets 1.28 kubelets under 1.31 pass.
func TestSkewForce(t *testing.T) {
	for _, tc := range []struct {
		version  string
		kubelets []string
		force    bool
	}{
		{"1.19.16", []string{"v1.18.19+compat.1", "v1.18.19+compat.1"}, false},
		{"1.20.15", []string{"v1.19.16+compat.1", "v1.18.19+compat.1"}, true},
		{"1.20.15", []string{"v1.20.15", "v1.19.16"}, false},
		{"1.29.15", []string{"v1.28.15"}, false},
		{"1.31.14", []string{"v1.30.14", "v1.28.15"}, false},
		{"1.34.12", []string{"v1.33.13", "v1.31.14"}, false},
	} {
		got := skewForce(tc.version, tc.kubelets)
		assert.Equal(t, got != nil, tc.force, "%s %v", tc.version, tc.kubelets)
	}
}

func TestConfigChanges(t *testing.T) {
	before := []byte("apiVersion: kubelet.config.k8s.io/v1beta1\ncgroupDriver: cgroupfs\nsyncFrequency: 10s\nold: 1\n")
	for _, tc := range []struct {
		after, want string
	}{
		{string(before), "unchanged"},
		{"apiVersion: kubelet.config.k8s.io/v1beta1\ncgroupDriver: systemd\nsyncFrequency: 10s\nold: 1\nfailCgroupV1: false\n", "changed cgroupDriver; added failCgroupV1"},
		{"apiVersion: kubelet.config.k8s.io/v1beta1\ncgroupDriver: cgroupfs\nsyncFrequency: 10s\n", "removed old"},
		{"old: 1\nsyncFrequency: 10s\ncgroupDriver: cgroupfs\napiVersion: kubelet.config.k8s.io/v1beta1\n", "rewritten, same content"},
	} {
		assert.Equal(t, configChanges(before, []byte(tc.after)), tc.want)
	}
}

// TestKubeadmRestartedStatics: kubeadm 1.32 restarted etcd with its
// manifest unchanged (measured on kind, 1.31 -> 1.32); its output says so.
func TestKubeadmRestartedStatics(t *testing.T) {
	out := []byte(`[upgrade/staticpods] Preparing for "etcd" upgrade
[upgrade/staticpods] Renewing etcd-server certificate
[upgrade/staticpods] Restarting the etcd static pod and backing up its manifest to "/etc/kubernetes/tmp/kubeadm-backup-manifests-2026-12-02-01-27-00/etcd.yaml"
[upgrade/staticpods] Component "etcd" upgraded successfully!
[upgrade/staticpods] Preparing for "kube-apiserver" upgrade
`)
	assert.DeepEqual(t, kubeadmRestartedStatics(out), map[string]bool{"etcd": true})
	assert.DeepEqual(t, kubeadmRestartedStatics(nil), map[string]bool{})
}

func TestSelectArgs(t *testing.T) {
	assert.DeepEqual(t, selectArgs(false, "stage1", "1.31.14"), []string{"kubernetes-select", "stage1", "1.31.14"})
	assert.DeepEqual(t, selectArgs(true, "--restart-kubelet", "stage2", "1.34.12"), []string{"kubernetes-select", "--force", "--restart-kubelet", "stage2", "1.34.12"})
}
