// Package inplace answers Cluster API's CanUpdateMachine and
// CanUpdateMachineSet hooks: which of the changes between a Machine's (or
// a MachineSet's) current and desired specs the extension updates in place.
// It covers a Kubernetes version step that kc-roll takes and nothing else:
// CAPI applies the answer's patches to the current objects and updates in
// place only when they then equal the desired ones; any other change makes
// CAPI replace the Machine, as without the extension.
package inplace

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/runtime"

	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"

	"github.com/kubelet-compat/kubelet-compat/pkg/versions"
)

// KubeletLocalModeGate is the kubeadm feature gate KCP (v1.13,
// desiredstate.DefaultFeatureGates) adds to a control-plane Machine's
// KubeadmConfig from Kubernetes 1.31 and leaves out from 1.36: the one
// field of the KubeadmConfig a version change alone changes.
const KubeletLocalModeGate = "ControlPlaneKubeletLocalMode"

// gatePath is where KubeletLocalModeGate is in a KubeadmConfig.
var gatePath = []string{"spec", "clusterConfiguration", "featureGates", KubeletLocalModeGate}

// Step says whether the extension rolls a node from Kubernetes version
// current to desired (Machine spec.version, v1.31.14): a release of the
// same major, newer, at most one minor ahead (kubeadm's skew, kc-roll's
// packages). why says why not.
func Step(current, desired string) (ok bool, why string) {
	cur, err := release(current)
	if err != nil {
		return false, "current " + err.Error()
	}
	des, err := release(desired)
	if err != nil {
		return false, "desired " + err.Error()
	}
	switch {
	case des.Compare(cur) == 0:
		return false, "no version change"
	case des.Major != cur.Major:
		return false, fmt.Sprintf("%s -> %s changes the major version", current, desired)
	case des.Less(cur):
		return false, fmt.Sprintf("%s -> %s is a downgrade, which kc-roll does not do", current, desired)
	case des.Minor > cur.Minor+1:
		return false, fmt.Sprintf("%s -> %s skips a minor version: kubeadm upgrades one minor at a time", current, desired)
	}
	return true, ""
}

// release reads a Machine's version: v1.MINOR.PATCH, a release (the Plans'
// versions: kc-roll installs released packages).
func release(v string) (versions.Version, error) {
	r, err := versions.ParseKubernetes(strings.TrimPrefix(v, "v"))
	if err != nil || !strings.HasPrefix(v, "v") || r.PreRelease() != "" {
		return versions.Version{}, fmt.Errorf("version %q: want vMAJOR.MINOR.PATCH, a release", v)
	}
	return r, nil
}

// CanUpdateMachine answers for a control-plane Machine (KCP asks): the
// version's patch, and the KubeadmConfig's KubeletLocalModeGate when the
// version change moved it. The answer is always Success (a Failure is an
// error to KCP, which would stop its reconcile): what is not covered is
// said in the message and left to CAPI's replacement.
func CanUpdateMachine(req *runtimehooksv1.CanUpdateMachineRequest, resp *runtimehooksv1.CanUpdateMachineResponse) {
	resp.SetStatus(runtimehooksv1.ResponseStatusSuccess)
	cur, des := req.Current.Machine.Spec.Version, req.Desired.Machine.Spec.Version
	var covered []string
	if ok, why := Step(cur, des); ok {
		resp.MachinePatch = versionPatch("/spec/version", des)
		covered = append(covered, "version "+cur+" -> "+des)
		if p, ok := gatePatch(req.Current.BootstrapConfig, req.Desired.BootstrapConfig); ok {
			resp.BootstrapConfigPatch = p
			covered = append(covered, "KubeadmConfig featureGates."+KubeletLocalModeGate)
		}
	} else if cur != des {
		resp.SetMessage("not covered: " + why)
		return
	}
	left, err := machineLeft(req, resp)
	if err != nil {
		resp.SetMessage("not covered: " + err.Error())
		resp.MachinePatch, resp.BootstrapConfigPatch = runtimehooksv1.Patch{}, runtimehooksv1.Patch{}
		return
	}
	resp.SetMessage(summary(covered, left))
}

// CanUpdateMachineSet answers for a MachineSet's Machines (the
// MachineDeployment controller asks): the version of its template, nothing
// of its templates (a KubeadmConfigTemplate carries no version).
func CanUpdateMachineSet(req *runtimehooksv1.CanUpdateMachineSetRequest, resp *runtimehooksv1.CanUpdateMachineSetResponse) {
	resp.SetStatus(runtimehooksv1.ResponseStatusSuccess)
	cur, des := req.Current.MachineSet.Spec.Template.Spec.Version, req.Desired.MachineSet.Spec.Template.Spec.Version
	var covered []string
	if ok, why := Step(cur, des); ok {
		resp.MachineSetPatch = versionPatch("/spec/template/spec/version", des)
		covered = append(covered, "version "+cur+" -> "+des)
	} else if cur != des {
		resp.SetMessage("not covered: " + why)
		return
	}
	left, err := machineSetLeft(req, resp)
	if err != nil {
		resp.SetMessage("not covered: " + err.Error())
		resp.MachineSetPatch = runtimehooksv1.Patch{}
		return
	}
	resp.SetMessage(summary(covered, left))
}

func summary(covered, left []string) string {
	var parts []string
	if len(covered) > 0 {
		parts = append(parts, "covers "+strings.Join(covered, ", "))
	} else {
		parts = append(parts, "no version change")
	}
	if len(left) > 0 {
		parts = append(parts, "not covered (CAPI replaces the Machine): "+strings.Join(left, ", "))
	}
	return strings.Join(parts, "; ")
}

func versionPatch(path, version string) runtimehooksv1.Patch {
	ops, _ := json.Marshal([]map[string]any{{"op": "replace", "path": path, "value": version}})
	return runtimehooksv1.Patch{PatchType: runtimehooksv1.JSONPatchType, Patch: ops}
}

// gatePatch is the JSON patch that gives the current KubeadmConfig the
// desired one's KubeletLocalModeGate (set, changed or gone, and the maps
// above it added or removed with it so that nothing else differs); false
// when the gate did not change or the objects are no KubeadmConfigs.
func gatePatch(current, desired runtime.RawExtension) (runtimehooksv1.Patch, bool) {
	cur, err1 := object(current)
	des, err2 := object(desired)
	if err1 != nil || err2 != nil || cur == nil || des == nil || cur["kind"] != "KubeadmConfig" || des["kind"] != "KubeadmConfig" {
		return runtimehooksv1.Patch{}, false
	}
	curVal, curHas := lookup(cur, gatePath)
	desVal, desHas := lookup(des, gatePath)
	if curHas == desHas && reflect.DeepEqual(curVal, desVal) {
		return runtimehooksv1.Patch{}, false
	}
	var op map[string]any
	if desHas {
		// Add the value at the first missing map of its path.
		path, value := gatePath, any(desVal)
		for i := 1; i < len(gatePath); i++ {
			if _, ok := lookup(cur, gatePath[:i+1]); !ok {
				path = gatePath[:i+1]
				value = nest(gatePath[i+1:], desVal)
				break
			}
		}
		op = map[string]any{"op": "add", "path": pointer(path), "value": value}
	} else {
		// Remove the gate, or the highest map that holds nothing else and
		// that the desired KubeadmConfig does not have.
		path := gatePath
		for i := len(gatePath) - 1; i > 1; i-- {
			parent, _ := lookup(cur, gatePath[:i])
			m, _ := parent.(map[string]any)
			if _, kept := lookup(des, gatePath[:i]); len(m) != 1 || kept {
				break
			}
			path = gatePath[:i]
		}
		op = map[string]any{"op": "remove", "path": pointer(path)}
	}
	ops, _ := json.Marshal([]map[string]any{op})
	return runtimehooksv1.Patch{PatchType: runtimehooksv1.JSONPatchType, Patch: ops}, true
}

// object is a request's object as JSON's maps (nil when absent).
func object(ext runtime.RawExtension) (map[string]any, error) {
	raw := ext.Raw
	if raw == nil && ext.Object != nil {
		var err error
		if raw, err = json.Marshal(ext.Object); err != nil {
			return nil, err
		}
	}
	if len(raw) == 0 {
		return nil, nil
	}
	var m map[string]any
	return m, json.Unmarshal(raw, &m)
}

func lookup(obj map[string]any, path []string) (any, bool) {
	var v any = obj
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

func nest(path []string, v any) any {
	for i := len(path) - 1; i >= 0; i-- {
		v = map[string]any{path[i]: v}
	}
	return v
}

func pointer(path []string) string {
	var b strings.Builder
	for _, p := range path {
		b.WriteString("/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(p))
	}
	return b.String()
}

// ignoredMachineFields are the Machine spec fields CAPI v1.13 leaves out
// of its in-place comparison (internal/util/inplace.CleanupMachineSpecForDiff):
// never changed, another controller's, or changed in place without a
// rollout. Only the message uses them: CAPI compares on its own.
var ignoredMachineFields = [][]string{
	{"clusterName"}, {"bootstrap"}, {"infrastructureRef"}, {"providerID"}, {"minReadySeconds"}, {"readinessGates"},
	{"deletion", "nodeDrainTimeoutSeconds"}, {"deletion", "nodeVolumeDetachTimeoutSeconds"}, {"deletion", "nodeDeletionTimeoutSeconds"},
	{"taints"},
}

// compared is one object of a request, as it is, as desired, the patch
// the answer gives it and the fields CAPI does not compare.
type compared struct {
	name             string
	current, desired any
	patch            runtimehooksv1.Patch
	ignored          [][]string
}

// fieldsLeft are the fields under spec (path) still different once the
// answer's patches are applied to the current objects, as CAPI will apply
// them.
func fieldsLeft(spec []string, objects ...compared) ([]string, error) {
	var out []string
	for _, o := range objects {
		diff, err := specLeft(o.name, o.current, o.desired, o.patch, spec, o.ignored)
		if err != nil {
			return nil, err
		}
		out = append(out, diff...)
	}
	return out, nil
}

func machineLeft(req *runtimehooksv1.CanUpdateMachineRequest, resp *runtimehooksv1.CanUpdateMachineResponse) ([]string, error) {
	return fieldsLeft([]string{"spec"},
		compared{"Machine", req.Current.Machine, req.Desired.Machine, resp.MachinePatch, ignoredMachineFields},
		compared{"BootstrapConfig", req.Current.BootstrapConfig, req.Desired.BootstrapConfig, resp.BootstrapConfigPatch, nil},
		compared{"InfrastructureMachine", req.Current.InfrastructureMachine, req.Desired.InfrastructureMachine, resp.InfrastructureMachinePatch, nil})
}

func machineSetLeft(req *runtimehooksv1.CanUpdateMachineSetRequest, resp *runtimehooksv1.CanUpdateMachineSetResponse) ([]string, error) {
	return fieldsLeft([]string{"spec", "template", "spec"},
		compared{"MachineSet", req.Current.MachineSet, req.Desired.MachineSet, resp.MachineSetPatch, ignoredMachineFields},
		compared{"BootstrapConfigTemplate", req.Current.BootstrapConfigTemplate, req.Desired.BootstrapConfigTemplate, resp.BootstrapConfigTemplatePatch, nil},
		compared{"InfrastructureMachineTemplate", req.Current.InfrastructureMachineTemplate, req.Desired.InfrastructureMachineTemplate, resp.InfrastructureMachineTemplatePatch, nil})
}

// specLeft applies patch to current and lists the fields under path (the
// spec CAPI compares) where it still differs from desired, ignored fields
// left out; each named kind.field.path.
func specLeft(name string, current, desired any, patch runtimehooksv1.Patch, path []string, ignored [][]string) ([]string, error) {
	cur, err := asMap(current)
	if err != nil {
		return nil, fmt.Errorf("reading the current %s: %v", name, err)
	}
	des, err := asMap(desired)
	if err != nil {
		return nil, fmt.Errorf("reading the desired %s: %v", name, err)
	}
	if cur == nil && des == nil {
		return nil, nil
	}
	if kind, ok := des["kind"].(string); ok && kind != "" {
		name = kind
	}
	if patch.IsDefined() {
		if cur, err = Apply(cur, patch); err != nil {
			return nil, fmt.Errorf("the extension's own %s patch: %v", name, err)
		}
	}
	a, _ := lookup(cur, path)
	b, _ := lookup(des, path)
	am, _ := a.(map[string]any)
	bm, _ := b.(map[string]any)
	for _, f := range ignored {
		deletePath(am, f)
		deletePath(bm, f)
	}
	var left []string
	differences(name+"."+strings.Join(path, "."), am, bm, &left)
	return left, nil
}

// Apply applies an answer's patch to an object (as JSON's maps), as CAPI
// applies it (RFC 6902 JSON patch or RFC 7386 merge patch).
func Apply(obj map[string]any, p runtimehooksv1.Patch) (map[string]any, error) {
	doc, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	switch p.PatchType {
	case runtimehooksv1.JSONPatchType:
		ops, err := jsonpatch.DecodePatch(p.Patch)
		if err != nil {
			return nil, err
		}
		if doc, err = ops.Apply(doc); err != nil {
			return nil, err
		}
	case runtimehooksv1.JSONMergePatchType:
		if doc, err = jsonpatch.MergePatch(doc, p.Patch); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("patch type %q: want %s or %s", p.PatchType, runtimehooksv1.JSONPatchType, runtimehooksv1.JSONMergePatchType)
	}
	var out map[string]any
	return out, json.Unmarshal(doc, &out)
}

// asMap is an object of a request as JSON's maps: a typed object or a
// RawExtension.
func asMap(obj any) (map[string]any, error) {
	if ext, ok := obj.(runtime.RawExtension); ok {
		return object(ext)
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(raw, &m)
}

func deletePath(m map[string]any, path []string) {
	for i, k := range path {
		if m == nil {
			return
		}
		if i == len(path)-1 {
			delete(m, k)
			return
		}
		m, _ = m[k].(map[string]any)
	}
}

// differences lists the paths where a and b differ: a map's keys one by
// one, anything else (lists too) as a whole; empty maps and lists are
// absent (CAPI's comparison drops omittable fields).
func differences(prefix string, a, b any, out *[]string) {
	am, aIsMap := a.(map[string]any)
	bm, bIsMap := b.(map[string]any)
	if (aIsMap || a == nil) && (bIsMap || b == nil) {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			differences(prefix+"."+k, am[k], bm[k], out)
		}
		return
	}
	if empty(a) && empty(b) || reflect.DeepEqual(a, b) {
		return
	}
	*out = append(*out, prefix)
}

func empty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}
