package inplace

import (
	"encoding/json"
	"reflect"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
)

func TestStep(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		ok       bool
		why      string
	}{
		{"v1.30.14", "v1.31.14", true, ""},
		{"v1.31.13", "v1.31.14", true, ""},
		{"v1.31.14", "v1.31.14", false, "no version change"},
		{"v1.31.14", "v1.30.14", false, "v1.31.14 -> v1.30.14 is a downgrade, which kc-roll does not do"},
		{"v1.31.14", "v1.31.13", false, "v1.31.14 -> v1.31.13 is a downgrade, which kc-roll does not do"},
		{"v1.30.14", "v1.32.0", false, "v1.30.14 -> v1.32.0 skips a minor version: kubeadm upgrades one minor at a time"},
		{"v1.30.14", "v2.0.0", false, "v1.30.14 -> v2.0.0 changes the major version"},
		{"v1.30.14", "v1.31.0-rc.1", false, `desired version "v1.31.0-rc.1": want vMAJOR.MINOR.PATCH, a release`},
		{"1.30.14", "v1.31.14", false, `current version "1.30.14": want vMAJOR.MINOR.PATCH, a release`},
	} {
		ok, why := Step(tc.from, tc.to)
		assert.Check(t, is.Equal(ok, tc.ok), "%s -> %s", tc.from, tc.to)
		assert.Check(t, is.Equal(why, tc.why))
	}
}

// objects are a Machine's objects as KCP sends them: the Machine, a
// DockerMachine (CAPD's), its KubeadmConfig.
type objects struct {
	machine clusterv1.Machine
	infra   map[string]any
	config  bootstrapv1.KubeadmConfig
}

func cpObjects(version string, gates map[string]bool) objects {
	return objects{
		machine: clusterv1.Machine{
			TypeMeta:   metav1.TypeMeta{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine"},
			ObjectMeta: metav1.ObjectMeta{Name: "cp-abc", Namespace: "default", Labels: map[string]string{clusterv1.MachineControlPlaneLabel: ""}},
			Spec: clusterv1.MachineSpec{ClusterName: "c1", Version: version,
				Bootstrap:         clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{APIGroup: bootstrapv1.GroupVersion.Group, Kind: "KubeadmConfig", Name: "cp-abc"}},
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "DockerMachine", Name: "cp-abc"}},
		},
		infra: map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "DockerMachine",
			"metadata": map[string]any{"name": "cp-abc", "namespace": "default"},
			"spec":     map[string]any{"extraMounts": []any{map[string]any{"containerPath": "/var/run/docker.sock", "hostPath": "/var/run/docker.sock"}}}},
		config: bootstrapv1.KubeadmConfig{
			TypeMeta:   metav1.TypeMeta{APIVersion: bootstrapv1.GroupVersion.String(), Kind: "KubeadmConfig"},
			ObjectMeta: metav1.ObjectMeta{Name: "cp-abc", Namespace: "default"},
			Spec: bootstrapv1.KubeadmConfigSpec{
				ClusterConfiguration: bootstrapv1.ClusterConfiguration{FeatureGates: gates,
					APIServer: bootstrapv1.APIServer{CertSANs: []string{"localhost"}}},
				JoinConfiguration: bootstrapv1.JoinConfiguration{ControlPlane: &bootstrapv1.JoinControlPlane{}},
			},
		},
	}
}

func raw(t *testing.T, obj any) runtime.RawExtension {
	b, err := json.Marshal(obj)
	assert.NilError(t, err)
	return runtime.RawExtension{Raw: b}
}

func (o objects) request(t *testing.T) runtimehooksv1.CanUpdateMachineRequestObjects {
	return runtimehooksv1.CanUpdateMachineRequestObjects{Machine: o.machine, InfrastructureMachine: raw(t, o.infra), BootstrapConfig: raw(t, o.config)}
}

// coveredByPatches applies the answer's patches to the current objects as
// CAPI does and compares their specs with the desired ones' as CAPI v1.13's
// KCP does (the Machine without the fields it ignores): whether CAPI
// would update the Machine in place.
func coveredByPatches(t *testing.T, req *runtimehooksv1.CanUpdateMachineRequest, resp *runtimehooksv1.CanUpdateMachineResponse) bool {
	covered := true
	for _, o := range []struct {
		current, desired any
		patch            runtimehooksv1.Patch
	}{
		{req.Current.Machine, req.Desired.Machine, resp.MachinePatch},
		{req.Current.BootstrapConfig, req.Desired.BootstrapConfig, resp.BootstrapConfigPatch},
		{req.Current.InfrastructureMachine, req.Desired.InfrastructureMachine, resp.InfrastructureMachinePatch},
	} {
		cur, err := asMap(o.current)
		assert.NilError(t, err)
		des, err := asMap(o.desired)
		assert.NilError(t, err)
		if o.patch.IsDefined() {
			cur, err = Apply(cur, o.patch)
			assert.NilError(t, err)
		}
		cs, _ := cur["spec"].(map[string]any)
		ds, _ := des["spec"].(map[string]any)
		if cur["kind"] == "Machine" {
			for _, f := range ignoredMachineFields {
				deletePath(cs, f)
				deletePath(ds, f)
			}
		}
		covered = covered && reflect.DeepEqual(cs, ds)
	}
	return covered
}

func TestCanUpdateMachine(t *testing.T) {
	local := map[string]bool{KubeletLocalModeGate: true}
	for _, tc := range []struct {
		name             string
		current, desired objects
		wantCovered      bool
		wantVersionPatch bool
		wantConfigPatch  bool
		wantMessage      string
	}{
		{name: "a version step, nothing else: covered", current: cpObjects("v1.32.5", local), desired: cpObjects("v1.33.1", local),
			wantCovered: true, wantVersionPatch: true, wantMessage: "covers version v1.32.5 -> v1.33.1"},
		{name: "a patch release: covered", current: cpObjects("v1.33.0", local), desired: cpObjects("v1.33.1", local),
			wantCovered: true, wantVersionPatch: true, wantMessage: "covers version v1.33.0 -> v1.33.1"},
		{name: "to 1.31: KCP adds the kubelet local mode gate, covered with the version", current: cpObjects("v1.30.14", nil), desired: cpObjects("v1.31.14", local),
			wantCovered: true, wantVersionPatch: true, wantConfigPatch: true,
			wantMessage: "covers version v1.30.14 -> v1.31.14, KubeadmConfig featureGates.ControlPlaneKubeletLocalMode"},
		{name: "to 1.36: KCP leaves the gate out, covered with the version", current: cpObjects("v1.35.2", local), desired: cpObjects("v1.36.0", nil),
			wantCovered: true, wantVersionPatch: true, wantConfigPatch: true,
			wantMessage: "covers version v1.35.2 -> v1.36.0, KubeadmConfig featureGates.ControlPlaneKubeletLocalMode"},
		{name: "to 1.36 with another gate kept: only the kubelet local mode gate goes",
			current:     cpObjects("v1.35.2", map[string]bool{KubeletLocalModeGate: true, "EtcdLearnerMode": true}),
			desired:     cpObjects("v1.36.0", map[string]bool{"EtcdLearnerMode": true}),
			wantCovered: true, wantVersionPatch: true, wantConfigPatch: true,
			wantMessage: "covers version v1.35.2 -> v1.36.0, KubeadmConfig featureGates.ControlPlaneKubeletLocalMode"},
		{name: "the version and the infrastructure template: not all covered",
			current: cpObjects("v1.32.5", local),
			desired: func() objects {
				o := cpObjects("v1.33.1", local)
				o.infra["spec"].(map[string]any)["customImage"] = "kindest/node:v1.33.1"
				return o
			}(),
			wantVersionPatch: true,
			wantMessage:      "covers version v1.32.5 -> v1.33.1; not covered (CAPI replaces the Machine): DockerMachine.spec.customImage"},
		{name: "the version and the failure domain: not all covered",
			current:          cpObjects("v1.32.5", local),
			desired:          func() objects { o := cpObjects("v1.33.1", local); o.machine.Spec.FailureDomain = "fd-2"; return o }(),
			wantVersionPatch: true,
			wantMessage:      "covers version v1.32.5 -> v1.33.1; not covered (CAPI replaces the Machine): Machine.spec.failureDomain"},
		{name: "the version and the API server's arguments: not all covered",
			current: cpObjects("v1.32.5", local),
			desired: func() objects {
				o := cpObjects("v1.33.1", local)
				o.config.Spec.ClusterConfiguration.APIServer.ExtraArgs = []bootstrapv1.Arg{{Name: "v", Value: ptr("4")}}
				return o
			}(),
			wantVersionPatch: true,
			wantMessage:      "covers version v1.32.5 -> v1.33.1; not covered (CAPI replaces the Machine): KubeadmConfig.spec.clusterConfiguration.apiServer.extraArgs"},
		{name: "the version and the Machine's labels and annotations: covered (CAPI syncs them in place, it compares specs)",
			current: cpObjects("v1.32.5", local),
			desired: func() objects {
				o := cpObjects("v1.33.1", local)
				o.machine.Labels = map[string]string{clusterv1.MachineControlPlaneLabel: "", "tier": "gold"}
				o.machine.Annotations = map[string]string{"note": "x"}
				return o
			}(),
			wantCovered: true, wantVersionPatch: true, wantMessage: "covers version v1.32.5 -> v1.33.1"},
		{name: "the gate alone, no version change: not covered", current: cpObjects("v1.32.5", nil), desired: cpObjects("v1.32.5", local),
			wantMessage: "no version change; not covered (CAPI replaces the Machine): KubeadmConfig.spec.clusterConfiguration.featureGates.ControlPlaneKubeletLocalMode"},
		{name: "no change", current: cpObjects("v1.32.5", local), desired: cpObjects("v1.32.5", local),
			wantCovered: true, wantMessage: "no version change"},
		{name: "a downgrade: refused", current: cpObjects("v1.33.1", local), desired: cpObjects("v1.32.5", local),
			wantMessage: "not covered: v1.33.1 -> v1.32.5 is a downgrade, which kc-roll does not do"},
		{name: "a skipped minor: refused", current: cpObjects("v1.31.14", local), desired: cpObjects("v1.33.1", local),
			wantMessage: "not covered: v1.31.14 -> v1.33.1 skips a minor version: kubeadm upgrades one minor at a time"},
		{name: "a pre-release: refused", current: cpObjects("v1.32.5", local), desired: cpObjects("v1.33.0-rc.1", local),
			wantMessage: `not covered: desired version "v1.33.0-rc.1": want vMAJOR.MINOR.PATCH, a release`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &runtimehooksv1.CanUpdateMachineRequest{Current: tc.current.request(t), Desired: tc.desired.request(t)}
			resp := &runtimehooksv1.CanUpdateMachineResponse{}
			CanUpdateMachine(req, resp)
			assert.Check(t, is.Equal(resp.GetStatus(), runtimehooksv1.ResponseStatusSuccess), "a Failure is an error to KCP")
			assert.Check(t, is.Equal(resp.GetMessage(), tc.wantMessage))
			assert.Check(t, is.Equal(resp.MachinePatch.IsDefined(), tc.wantVersionPatch), "the Machine's patch: %s", resp.MachinePatch.Patch)
			assert.Check(t, is.Equal(resp.BootstrapConfigPatch.IsDefined(), tc.wantConfigPatch), "the KubeadmConfig's patch: %s", resp.BootstrapConfigPatch.Patch)
			assert.Check(t, !resp.InfrastructureMachinePatch.IsDefined(), "the extension never changes the infrastructure")
			assert.Check(t, is.Equal(coveredByPatches(t, req, resp), tc.wantCovered), "CAPI's comparison after the patches")
			if tc.wantVersionPatch {
				assert.Check(t, is.Equal(string(resp.MachinePatch.Patch), `[{"op":"replace","path":"/spec/version","value":"`+tc.desired.machine.Spec.Version+`"}]`))
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func machineSet(version string, infra map[string]any) runtimehooksv1.CanUpdateMachineSetRequestObjects {
	tmpl := map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "DockerMachineTemplate",
		"metadata": map[string]any{"name": "md-0", "namespace": "default"},
		"spec":     map[string]any{"template": map[string]any{"spec": infra}}}
	cfg := map[string]any{"apiVersion": bootstrapv1.GroupVersion.String(), "kind": "KubeadmConfigTemplate",
		"metadata": map[string]any{"name": "md-0", "namespace": "default"},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"joinConfiguration": map[string]any{"nodeRegistration": map[string]any{"name": "x"}}}}}}
	b1, _ := json.Marshal(tmpl)
	b2, _ := json.Marshal(cfg)
	return runtimehooksv1.CanUpdateMachineSetRequestObjects{
		MachineSet: clusterv1.MachineSet{TypeMeta: metav1.TypeMeta{APIVersion: clusterv1.GroupVersion.String(), Kind: "MachineSet"},
			ObjectMeta: metav1.ObjectMeta{Name: "md-0-x", Namespace: "default"},
			Spec:       clusterv1.MachineSetSpec{ClusterName: "c1", Template: clusterv1.MachineTemplateSpec{Spec: clusterv1.MachineSpec{ClusterName: "c1", Version: version}}}},
		InfrastructureMachineTemplate: runtime.RawExtension{Raw: b1},
		BootstrapConfigTemplate:       runtime.RawExtension{Raw: b2},
	}
}

func TestCanUpdateMachineSet(t *testing.T) {
	plain := map[string]any{}
	custom := map[string]any{"customImage": "kindest/node:v1.33.1"}
	for _, tc := range []struct {
		name             string
		current, desired runtimehooksv1.CanUpdateMachineSetRequestObjects
		wantPatch        bool
		wantMessage      string
	}{
		{"a version step: covered", machineSet("v1.32.5", plain), machineSet("v1.33.1", plain), true, "covers version v1.32.5 -> v1.33.1"},
		{"the version and the infrastructure template: not all covered", machineSet("v1.32.5", plain), machineSet("v1.33.1", custom), true,
			"covers version v1.32.5 -> v1.33.1; not covered (CAPI replaces the Machine): DockerMachineTemplate.spec.template.spec.customImage"},
		{"the infrastructure template alone: not covered", machineSet("v1.32.5", plain), machineSet("v1.32.5", custom), false,
			"no version change; not covered (CAPI replaces the Machine): DockerMachineTemplate.spec.template.spec.customImage"},
		{"no change", machineSet("v1.32.5", plain), machineSet("v1.32.5", plain), false, "no version change"},
		{"a downgrade: refused", machineSet("v1.33.1", plain), machineSet("v1.32.5", plain), false,
			"not covered: v1.33.1 -> v1.32.5 is a downgrade, which kc-roll does not do"},
		{"a skipped minor: refused", machineSet("v1.31.14", plain), machineSet("v1.33.1", plain), false,
			"not covered: v1.31.14 -> v1.33.1 skips a minor version: kubeadm upgrades one minor at a time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &runtimehooksv1.CanUpdateMachineSetRequest{Current: tc.current, Desired: tc.desired}
			resp := &runtimehooksv1.CanUpdateMachineSetResponse{}
			CanUpdateMachineSet(req, resp)
			assert.Check(t, is.Equal(resp.GetStatus(), runtimehooksv1.ResponseStatusSuccess))
			assert.Check(t, is.Equal(resp.GetMessage(), tc.wantMessage))
			assert.Check(t, is.Equal(resp.MachineSetPatch.IsDefined(), tc.wantPatch))
			assert.Check(t, !resp.InfrastructureMachineTemplatePatch.IsDefined() && !resp.BootstrapConfigTemplatePatch.IsDefined())
			if tc.wantPatch {
				cur, err := asMap(req.Current.MachineSet)
				assert.NilError(t, err)
				cur, err = Apply(cur, resp.MachineSetPatch)
				assert.NilError(t, err)
				v, _ := lookup(cur, []string{"spec", "template", "spec", "version"})
				assert.Check(t, is.Equal(v, tc.desired.MachineSet.Spec.Template.Spec.Version))
			}
		})
	}
}
