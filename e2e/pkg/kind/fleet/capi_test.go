package fleet

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func testCAPICluster() capiCluster {
	return capiCluster{Name: "kc-e2e-capi", Namespace: CAPINamespace, Version: "1.30.14", Image: "kubelet-compat/kind-node:v1.30.14",
		HAProxyImageRepository: "kubelet-compat", HAProxyImageTag: "0123456789ab", SyncFrequency: "10s", ControlPlanes: 3, MachineDeployments: capiMDs, InPlace: true}
}

// docs decodes a YAML stream strictly enough to catch a template's
// indentation: every document an object with apiVersion, kind and name.
func docs(t *testing.T, stream []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, d := range strings.Split(string(stream), "\n---\n") {
		if strings.TrimSpace(d) == "" {
			continue
		}
		var m map[string]any
		assert.NilError(t, yaml.UnmarshalStrict([]byte(d), &m), d)
		meta, _ := m["metadata"].(map[string]any)
		assert.Assert(t, m["apiVersion"] != nil && m["kind"] != nil && meta["name"] != nil, d)
		out = append(out, m)
	}
	return out
}

func TestCAPIObjects(t *testing.T) {
	c := testCAPICluster()
	stream, err := c.objects()
	assert.NilError(t, err)
	golden.Assert(t, string(stream), "capi-cluster.golden")

	var kinds []string
	for _, d := range docs(t, stream) {
		kinds = append(kinds, d["kind"].(string))
	}
	assert.DeepEqual(t, kinds, []string{"Namespace", "Cluster", "ConfigMap", "DockerCluster", "DockerMachineTemplate", "KubeadmControlPlane",
		"DockerMachineTemplate", "KubeadmConfigTemplate", "MachineDeployment", "DockerMachineTemplate", "KubeadmConfigTemplate", "MachineDeployment"})
	// The load balancer's template as CAPD's default but for maxconn.
	var cm struct {
		Data map[string]string `json:"data"`
	}
	assert.NilError(t, yaml.Unmarshal([]byte(strings.Split(string(stream), "\n---\n")[2]), &cm))
	assert.Check(t, is.Equal(strings.TrimRight(cm.Data["value"], "\n"), strings.TrimRight(capiHAProxyTemplate, "\n")))
	// Every node gets the kubelets' periods through kubeadm's patches.
	assert.Check(t, is.Equal(strings.Count(string(stream), "kubeletconfiguration0+merge.yaml"), 3))
	assert.Check(t, is.Equal(strings.Count(string(stream), "syncFrequency: 10s"), 3))
	assert.Check(t, is.Equal(strings.Count(string(stream), "maxSurge: 0"), 3), "in place: no surge Machine anywhere")

	c.InPlace = false
	stream, err = c.objects()
	assert.NilError(t, err)
	docs(t, stream)
	assert.Check(t, !strings.Contains(string(stream), "rollout:"), "CAPI's defaults")
}

func TestCAPIMachineTemplate(t *testing.T) {
	b, err := testCAPICluster().machineTemplate("md-0", "1.31.14", "kubelet-compat/kind-node:v1.31.14")
	assert.NilError(t, err)
	d := docs(t, b)
	assert.Assert(t, is.Len(d, 1))
	assert.Check(t, is.Equal(d[0]["metadata"].(map[string]any)["name"], "kc-e2e-capi-md-0-v1-31-14"))
	assert.Check(t, strings.Contains(string(b), "customImage: kubelet-compat/kind-node:v1.31.14"))
}

func TestCAPIVersionPatch(t *testing.T) {
	for _, tc := range []struct {
		kcp      bool
		template string
		want     string
	}{
		{true, "", `{"spec":{"version":"v1.31.14"}}`},
		{false, "", `{"spec":{"template":{"spec":{"version":"v1.31.14"}}}}`},
		{true, "c-control-plane-v1-31-14", `{"spec":{"version":"v1.31.14","machineTemplate":{"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"DockerMachineTemplate","name":"c-control-plane-v1-31-14"}}}}}`},
		{false, "c-md-0-v1-31-14", `{"spec":{"template":{"spec":{"version":"v1.31.14","infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"DockerMachineTemplate","name":"c-md-0-v1-31-14"}}}}}`},
	} {
		got := capiVersionPatch(tc.kcp, "1.31.14", tc.template)
		assert.Check(t, json.Valid(got), string(got))
		assert.Check(t, is.Equal(string(got), tc.want))
	}
}

func TestParseRunsCAPI(t *testing.T) {
	runs, err := ParseRuns("capi-replace,capi")
	assert.NilError(t, err)
	assert.DeepEqual(t, runs, []string{CAPI, CAPIReplace})
	assert.Check(t, NeedsCAPI(runs))
	assert.Check(t, !NeedsCAPI(Runs))
}

func TestConditionsOf(t *testing.T) {
	var u map[string]any
	assert.NilError(t, json.Unmarshal([]byte(`{"status":{"conditions":[
		{"type":"UpToDate","status":"False","reason":"Updating","lastTransitionTime":"2026-12-08T02:00:00Z"},
		{"type":"Updating","status":"True","reason":"InPlaceUpdateFailed","message":"UpdateMachine hook failed: please check controller logs for errors"}]}}`), &u))
	got := conditionsOf(unstructuredOf(u))
	assert.Assert(t, is.Len(got, 2))
	assert.Check(t, is.Equal(got[1].Reason, "InPlaceUpdateFailed"))
	assert.Check(t, is.Equal(got[0].LastTransitionTime.Format("15:04"), "02:00"))
	assert.Check(t, is.Equal(conditionOf(unstructuredOf(u), "Updating").Status, "True"))
	assert.Check(t, is.Equal(conditionOf(unstructuredOf(u), "Ready").Status, ""))
}

func unstructuredOf(m map[string]any) unstructured.Unstructured {
	return unstructured.Unstructured{Object: m}
}

// TestReplaceWindows: a replaced Machine's window runs from its deletion
// (its drain) to its end, in the order CAPI took them.
func TestReplaceWindows(t *testing.T) {
	t0 := time.Date(2026, 12, 8, 2, 0, 0, 0, time.UTC)
	f := &fleetRun{capi: &capiState{
		machinesBefore: map[string]capiMachine{"cp-a": {Name: "cp-a", Node: "cp-a"}, "md-0-b": {Name: "md-0-b", Node: "md-0-b"}},
		deleting:       map[string]time.Time{"cp-a": t0.Add(time.Minute), "md-0-b": t0.Add(5 * time.Minute)},
		gone:           map[string]time.Time{"cp-a": t0.Add(3 * time.Minute), "md-0-b": t0.Add(6 * time.Minute)},
	}}
	f.replaceWindows()
	assert.DeepEqual(t, f.order, []string{"cp-a", "md-0-b"})
	assert.DeepEqual(t, f.data.windows, []nodeWindow{
		{Node: "cp-a", Start: t0.Add(time.Minute), End: t0.Add(3 * time.Minute), Outcome: outcomeReplaced},
		{Node: "md-0-b", Start: t0.Add(5 * time.Minute), End: t0.Add(6 * time.Minute), Outcome: outcomeReplaced}})
}
