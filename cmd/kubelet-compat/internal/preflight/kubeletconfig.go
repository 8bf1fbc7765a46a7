package preflight

import (
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// KubeletConfig is what the checks need of the target kubelet's
// configuration: the config file (--config, a KubeletConfiguration) with
// the command-line flags applied over it, as the kubelet does.
type KubeletConfig struct {
	KubeReserved       map[string]string `json:"kubeReserved,omitempty"`
	SystemReserved     map[string]string `json:"systemReserved,omitempty"`
	EvictionHard       map[string]string `json:"evictionHard,omitempty"`
	MaxPods            int32             `json:"maxPods,omitempty"`
	PodsPerCore        int32             `json:"podsPerCore,omitempty"`
	CPUManagerPolicy   string            `json:"cpuManagerPolicy,omitempty"`
	ReservedSystemCPUs string            `json:"reservedSystemCPUs,omitempty"`
	FeatureGates       map[string]bool   `json:"featureGates,omitempty"`
	UserNamespaces     struct {
		IDsPerPod int64 `json:"idsPerPod,omitempty"`
	} `json:"userNamespaces,omitempty"`
}

// DefaultEvictionHard is the kubelet's default when evictionHard is unset.
var DefaultEvictionHard = map[string]string{"memory.available": "100Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%", "imagefs.available": "15%"}

// ParseKubeletConfig reads a KubeletConfiguration (YAML or JSON); fields
// the checks do not use are ignored.
func ParseKubeletConfig(data []byte) (KubeletConfig, error) {
	var c KubeletConfig
	if err := yaml.Unmarshal(data, &c); err != nil {
		return c, err
	}
	return c, nil
}

// ValueFlags are the kubelet flags that take a value and matter here or in
// the flag check; "--flag value" is read for them, "--flag=value" for all.
var valueFlags = map[string]bool{
	"kube-reserved": true, "system-reserved": true, "eviction-hard": true, "max-pods": true, "pods-per-core": true,
	"cpu-manager-policy": true, "reserved-cpus": true, "feature-gates": true, "config": true, "root-dir": true,
	"kubeconfig": true, "bootstrap-kubeconfig": true, "container-runtime": true, "container-runtime-endpoint": true,
	"network-plugin": true, "pod-infra-container-image": true, "node-ip": true, "hostname-override": true,
	"cgroup-driver": true, "node-labels": true, "register-with-taints": true, "v": true, "cni-bin-dir": true,
	"cni-conf-dir": true, "image-service-endpoint": true, "runtime-request-timeout": true,
}

// FlagArg is one command-line flag.
type FlagArg struct {
	Name, Value string
	HasValue    bool
}

// ParseFlagArgs splits kubelet arguments into flags: --name=value,
// --name value (for the value flags above), --name; anything else is
// returned as a positional argument in the error-free second list.
func ParseFlagArgs(args []string) ([]FlagArg, []string) {
	var flags []FlagArg
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
			rest = append(rest, a)
			continue
		}
		name := strings.TrimLeft(a, "-")
		if k, v, ok := strings.Cut(name, "="); ok {
			flags = append(flags, FlagArg{Name: k, Value: v, HasValue: true})
			continue
		}
		if valueFlags[name] && i+1 < len(args) {
			flags = append(flags, FlagArg{Name: name, Value: args[i+1], HasValue: true})
			i++
			continue
		}
		flags = append(flags, FlagArg{Name: name})
	}
	return flags, rest
}

// SplitShellWords splits a shell-quoted argument string (the value of
// KUBELET_KUBEADM_ARGS): spaces separate, single and double quotes group,
// a backslash escapes the next character outside single quotes.
func SplitShellWords(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	in, quote := false, rune(0)
	escaped := false
	for _, r := range s {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case r == '\\' && quote != '\'':
			escaped, in = true, true
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 || escaped {
		return nil, fmt.Errorf("unterminated quote in %q", s)
	}
	if in {
		out = append(out, cur.String())
	}
	return out, nil
}

// ParseEnvFile reads KEY=VALUE lines (kubeadm-flags.env) and returns the
// value of key, unquoted.
func ParseEnvFile(data []byte, key string) (string, bool) {
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) != key {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		return v, true
	}
	return "", false
}

// parseMapFlag parses "a=1,b=2" (kube-reserved) or "a<1,b<2"
// (eviction-hard, sep "<").
func parseMapFlag(s, sep string) (map[string]string, error) {
	m := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, sep)
		if !ok {
			return nil, fmt.Errorf("%q: want key%svalue", kv, sep)
		}
		m[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return m, nil
}

// ApplyFlags applies the kubelet flags that override the config file
// fields used here (flags win, as in the kubelet).
func (c *KubeletConfig) ApplyFlags(flags []FlagArg) error {
	for _, f := range flags {
		if !f.HasValue {
			continue
		}
		var err error
		switch f.Name {
		case "kube-reserved":
			c.KubeReserved, err = parseMapFlag(f.Value, "=")
		case "system-reserved":
			c.SystemReserved, err = parseMapFlag(f.Value, "=")
		case "eviction-hard":
			c.EvictionHard, err = parseMapFlag(f.Value, "<")
		case "max-pods", "pods-per-core":
			var n int64
			n, err = strconv.ParseInt(f.Value, 10, 32)
			if f.Name == "max-pods" {
				c.MaxPods = int32(n)
			} else {
				c.PodsPerCore = int32(n)
			}
		case "cpu-manager-policy":
			c.CPUManagerPolicy = f.Value
		case "reserved-cpus":
			c.ReservedSystemCPUs = f.Value
		case "feature-gates":
			var m map[string]string
			m, err = parseMapFlag(f.Value, "=")
			if c.FeatureGates == nil {
				c.FeatureGates = map[string]bool{}
			}
			for k, v := range m {
				b, perr := strconv.ParseBool(v)
				if perr != nil {
					err = fmt.Errorf("feature gate %s=%s: %v", k, v, perr)
				}
				c.FeatureGates[k] = b
			}
		}
		if err != nil {
			return fmt.Errorf("--%s: %w", f.Name, err)
		}
	}
	return nil
}

// Allocatable is what the kubelet computes for the node status:
// capacity minus kube-reserved, system-reserved and the hard eviction
// thresholds (memory.available from memory, nodefs.available from
// ephemeral-storage; a percentage is of the capacity), hugepages
// subtracted from memory, pods = maxPods (default 110, at most
// podsPerCore per core). Device-plugin resources keep the node's current
// allocatable (the plugins' healthy devices), passed in deviceAllocatable.
func Allocatable(capacity, deviceAllocatable v1.ResourceList, c KubeletConfig) (v1.ResourceList, error) {
	reserve := map[v1.ResourceName]*resource.Quantity{}
	add := func(n v1.ResourceName, q resource.Quantity) {
		if reserve[n] == nil {
			z := resource.MustParse("0")
			reserve[n] = &z
		}
		reserve[n].Add(q)
	}
	for _, m := range []map[string]string{c.KubeReserved, c.SystemReserved} {
		for k, v := range m {
			q, err := resource.ParseQuantity(v)
			if err != nil {
				return nil, fmt.Errorf("reserved %s=%s: %v", k, v, err)
			}
			add(v1.ResourceName(k), q)
		}
	}
	eviction := c.EvictionHard
	if eviction == nil {
		eviction = DefaultEvictionHard
	}
	for signal, n := range map[string]v1.ResourceName{"memory.available": v1.ResourceMemory, "nodefs.available": v1.ResourceEphemeralStorage} {
		v, ok := eviction[signal]
		if !ok {
			continue
		}
		var q resource.Quantity
		if strings.HasSuffix(v, "%") {
			pct, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
			if err != nil {
				return nil, fmt.Errorf("eviction-hard %s<%s: %v", signal, v, err)
			}
			capQ := capacity[n]
			q = *resource.NewQuantity(int64(float64(capQ.Value())*pct/100), resource.BinarySI)
		} else {
			var err error
			if q, err = resource.ParseQuantity(v); err != nil {
				return nil, fmt.Errorf("eviction-hard %s<%s: %v", signal, v, err)
			}
		}
		add(n, q)
	}
	out := v1.ResourceList{}
	for n, q := range capacity {
		v := q.DeepCopy()
		if r := reserve[n]; r != nil {
			v.Sub(*r)
		}
		if v.Sign() < 0 {
			v.Set(0)
		}
		out[n] = v
	}
	maxPods := int64(c.MaxPods)
	if maxPods == 0 {
		maxPods = 110
	}
	if c.PodsPerCore > 0 {
		cpu := capacity[v1.ResourceCPU]
		if n := cpu.Value() * int64(c.PodsPerCore); n < maxPods {
			maxPods = n
		}
	}
	out[v1.ResourcePods] = *resource.NewQuantity(maxPods, resource.DecimalSI)
	for n, q := range deviceAllocatable {
		if isExtended(n) {
			out[n] = q.DeepCopy()
		}
	}
	for n, q := range capacity {
		if strings.HasPrefix(string(n), v1.ResourceHugePagesPrefix) {
			mem := out[v1.ResourceMemory]
			mem.Sub(q)
			if mem.Sign() < 0 {
				mem.Set(0)
			}
			out[v1.ResourceMemory] = mem
		}
	}
	return out, nil
}
