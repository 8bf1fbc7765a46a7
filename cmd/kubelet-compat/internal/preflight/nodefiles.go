package preflight

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/devicecheckpoint"
	v1 "k8s.io/api/core/v1"
)

// noStart is the verdict when the target kubelet refuses to start: the
// containers keep running, but the node goes NotReady and, after
// node-monitor-grace-period and the pods' tolerationSeconds, the node
// lifecycle controller evicts them.
const noStart = "kubelet does not start (node NotReady: pods evicted after their tolerationSeconds)"

// ---- 5. cpu_manager_state ----

// cpuManagerState is <root-dir>/cpu_manager_state (checkpoint v2, 1.18+; the
// v1 format of 1.16-1.17 has the same policyName and defaultCpuSet).
type cpuManagerState struct {
	PolicyName    string `json:"policyName"`
	DefaultCPUSet string `json:"defaultCpuSet"`
}

// ParseCPUSet parses the Linux cpuset list format ("0-3,8,10-11").
func ParseCPUSet(s string) (map[int]bool, error) {
	set := map[int]bool{}
	s = strings.TrimSpace(s)
	if s == "" {
		return set, nil
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("cpuset %q: %v", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("cpuset %q: bad range %q", s, part)
			}
		}
		for i := a; i <= b; i++ {
			set[i] = true
		}
	}
	return set, nil
}

func formatCPUs(set map[int]bool) string {
	var l []int
	for c := range set {
		l = append(l, c)
	}
	sort.Ints(l)
	var parts []string
	for i := 0; i < len(l); {
		j := i
		for j+1 < len(l) && l[j+1] == l[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, strconv.Itoa(l[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", l[i], l[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// CPUManagerState checks the CPU manager checkpoint against the target's
// cpuManagerPolicy and reservedSystemCPUs as the CPU manager does at start:
// a policy name differing from the checkpoint's is refused ("configured
// policy X differs from state checkpoint policy Y": the kubelet does not
// start until the file is removed), and the static policy refuses a state
// whose defaultCpuSet lacks a reserved CPU ("not all reserved cpus ... are
// present in defaultCpuSet"). It returns the findings and a line saying
// what was checked.
func CPUManagerState(path string, data []byte, cfg KubeletConfig) ([]Finding, string) {
	var st cpuManagerState
	if err := json.Unmarshal(data, &st); err != nil {
		return []Finding{{Pod: NodeRow, Check: CheckCPUManager, Unpatched: noStart, Patched: noStart,
			Why:           fmt.Sprintf("%s does not parse (%v): the CPU manager refuses it", path, err),
			PatchedReason: sameAsUpstream + ": drain the node and remove the file"}}, ""
	}
	want := cfg.CPUManagerPolicy
	if want == "" {
		want = "none"
	}
	if st.PolicyName != want {
		return []Finding{{Pod: NodeRow, Check: CheckCPUManager, Unpatched: noStart, Patched: noStart,
			Why: fmt.Sprintf("%s has policy %q, the target's cpuManagerPolicy is %q: \"configured policy %q differs from state checkpoint policy %q\"",
				path, st.PolicyName, want, want, st.PolicyName),
			PatchedReason: sameAsUpstream + ": keep the policy, or drain the node and remove the file"}}, ""
	}
	if want != "static" || cfg.ReservedSystemCPUs == "" {
		note := fmt.Sprintf("cpu-manager: %s policy %q matches the target", path, st.PolicyName)
		if want == "static" {
			note += " (reserved CPUs come from kube-reserved/system-reserved cpu and the topology: not checked)"
		}
		return nil, note
	}
	reserved, err := ParseCPUSet(cfg.ReservedSystemCPUs)
	if err != nil {
		return []Finding{{Pod: NodeRow, Check: CheckCPUManager, Unpatched: noStart, Patched: noStart,
			Why: "reservedSystemCPUs: " + err.Error(), PatchedReason: sameAsUpstream}}, ""
	}
	def, err := ParseCPUSet(st.DefaultCPUSet)
	if err != nil {
		return []Finding{{Pod: NodeRow, Check: CheckCPUManager, Unpatched: noStart, Patched: noStart,
			Why: path + ": " + err.Error(), PatchedReason: sameAsUpstream}}, ""
	}
	if len(def) == 0 {
		return nil, fmt.Sprintf("cpu-manager: %s is empty: the static policy initialises it", path)
	}
	missing := map[int]bool{}
	for c := range reserved {
		if !def[c] {
			missing[c] = true
		}
	}
	if len(missing) > 0 {
		return []Finding{{Pod: NodeRow, Check: CheckCPUManager, Unpatched: noStart, Patched: noStart,
			Why: fmt.Sprintf("%s: reserved CPUs %s are not in defaultCpuSet %q (missing %s): \"not all reserved cpus ... are present in defaultCpuSet\"",
				path, formatCPUs(reserved), st.DefaultCPUSet, formatCPUs(missing)),
			PatchedReason: sameAsUpstream + ": keep reservedSystemCPUs, or drain the node and remove the file"}}, ""
	}
	return nil, fmt.Sprintf("cpu-manager: %s policy static, reserved CPUs %s within defaultCpuSet %s", path, formatCPUs(reserved), st.DefaultCPUSet)
}

// ---- 6. device-plugin checkpoint ----

// DeviceCheckpointRestores says whether a kubelet of version v restores a
// checkpoint of format v1 (DeviceIDs a list: written up to 1.19) and v2
// (DeviceIDs per NUMA node: 1.20+). 1.20 and 1.21 read v1 only from
// 1.20.14 and 1.21.8 (kubernetes#102882, checkpointv1.go: present in the
// 1.20.15 and 1.21.14 trees, absent from 1.19.16's); the fix predates 1.22.
func DeviceCheckpointRestores(v kubeletcompat.Version, format int) bool {
	if format == 2 {
		return v.Minor >= 20
	}
	switch v.Minor {
	case 20:
		return v.Patch >= 14
	case 21:
		return v.Patch >= 8
	}
	return true
}

// DeviceCheckpoint reports the pods whose device allocations the target
// loses because it cannot read the checkpoint: without it the device
// manager allocates their devices again at re-admission, which fails with
// UnexpectedAdmissionError while the plugin has not registered (and may
// hand out other devices when it has). patched is the version of the
// patched kubelet (the patches do not touch the device manager: it does
// what its upstream version does). pods maps a pod UID to its name.
func DeviceCheckpoint(path string, data []byte, to kubeletcompat.Version, podsByUID map[string]string) ([]Finding, string) {
	cp, err := devicecheckpoint.Parse(data)
	if err != nil {
		return nil, fmt.Sprintf("device-checkpoint: %s does not parse (%v): every kubelet ignores it", path, err)
	}
	entries := cp.Data.PodDeviceEntries
	if len(entries) == 0 {
		return nil, fmt.Sprintf("device-checkpoint: %s holds no device allocation", path)
	}
	format := 0
	for _, e := range entries {
		if format = e.Format(); format != 0 {
			break
		}
	}
	if format == 0 {
		return nil, fmt.Sprintf("device-checkpoint: %s: unknown DeviceIDs format", path)
	}
	if DeviceCheckpointRestores(to, format) {
		return nil, fmt.Sprintf("device-checkpoint: %s is format v%d, %s restores it (%d allocation(s))", path, format, to, len(entries))
	}
	seen := map[string]bool{}
	var out []Finding
	for _, e := range entries {
		name := podsByUID[e.PodUID]
		if name == "" {
			name = "pod uid " + e.PodUID
		}
		key := name + "/" + e.ResourceName
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, Finding{Pod: name, Check: CheckDeviceCheckpoint,
			Unpatched: "may be rejected: UnexpectedAdmissionError (pod Failed, containers killed)", Patched: "same as upstream " + to.String(),
			Why: fmt.Sprintf("%s is format v%d (written by <= 1.19), which %s cannot read (fixed by kubernetes#102882 in 1.20.14+/1.21.8+): the %s allocation of container %s is lost",
				path, format, to, e.ResourceName, e.ContainerName),
			PatchedReason: "the patches do not touch the device manager: upgrade to a release with the fix (our builds 1.20.15 and 1.21.14 carry it)"})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pod < out[j].Pod })
	return out, ""
}

// PodsByUID maps the pods' UIDs (and a mirror pod's static pod UID) to
// namespace/name.
func PodsByUID(pods []*v1.Pod) map[string]string {
	m := map[string]string{}
	for _, p := range pods {
		m[string(p.UID)] = podName(p)
		if uid := p.Annotations["kubernetes.io/config.mirror"]; uid != "" {
			m[uid] = podName(p)
		}
	}
	return m
}
