package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Help is what `kubelet --help` lists: the flags this binary accepts
// visibly. A flag missing from it was removed, or deprecated and hidden
// (pflag's MarkDeprecated): either way the e2e no longer relies on it and
// sets the KubeletConfiguration field instead, when there is one.
type Help struct {
	Flags map[string]bool
}

var helpFlag = regexp.MustCompile(`^\s+(?:-[A-Za-z], )?--([A-Za-z0-9][A-Za-z0-9._-]*)`)

// ParseHelp reads the output of `kubelet --help`.
func ParseHelp(out string) Help {
	h := Help{Flags: map[string]bool{}}
	for _, line := range strings.Split(out, "\n") {
		if m := helpFlag.FindStringSubmatch(line); m != nil {
			h.Flags[m[1]] = true
		}
	}
	return h
}

// AskHelp runs `<binary> --help` (the kubelet prints it and exits without
// touching the node) and parses it. An output that lists no flag is an
// error: the binary is not a kubelet, or could not run.
func AskHelp(ctx context.Context, binary string) (Help, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := osexec.CommandContext(ctx, binary, "--help").CombinedOutput()
	h := ParseHelp(string(out))
	if len(h.Flags) == 0 {
		return h, fmt.Errorf("%s --help listed no flags (%v): %.200s", binary, err, out)
	}
	return h, nil
}

// setting is one thing the e2e sets on every kubelet: a flag, or the
// KubeletConfiguration field that replaces it (field "" when there is none:
// the flag is dropped when the binary no longer lists it).
type setting struct {
	flag  string
	value string
	field string
	// config is the field's value in the configuration file.
	config interface{}
}

// Plan is the kubelet's command line and, when some setting has no flag
// left, the KubeletConfiguration to write to ConfigFile (passed as
// --config).
type Plan struct {
	Args []string
	// Config holds the fields set through the file (nil: no file).
	Config map[string]interface{}
	// Dropped are flags neither passed nor replaced (not listed by
	// --help, no configuration field): for the logs.
	Dropped []string
}

// settings are the e2e's kubelet settings in the order of the command
// line (docs/upstream-behaviour.md, "A kubelet on a bare node").
func (c Config) settings() []setting {
	// Absolute, not 1%: on a 250 GB disk 1% is 2.5 GB, and a disk that full
	// (builds running beside) put the node under DiskPressure and the kubelet
	// rejected every pod.
	evictionHard := map[string]string{"memory.available": "1Mi", "nodefs.available": "100Mi", "imagefs.available": "100Mi"}
	s := []setting{
		{flag: "root-dir", value: c.RootDir},
		{flag: "cert-dir", value: joinDir(c.RootDir, "pki")},
		{flag: "volume-plugin-dir", value: joinDir(c.RootDir, "volume-plugins"), field: "volumePluginDir", config: joinDir(c.RootDir, "volume-plugins")},
		{flag: "pod-manifest-path", value: c.ManifestDir, field: "staticPodPath", config: c.ManifestDir},
		{flag: "container-runtime-endpoint", value: c.RuntimeEndpoint, field: "containerRuntimeEndpoint", config: c.RuntimeEndpoint},
		{flag: "cgroup-driver", value: "cgroupfs", field: "cgroupDriver", config: "cgroupfs"},
		{flag: "fail-swap-on", value: "false", field: "failSwapOn", config: false},
		{flag: "hostname-override", value: c.NodeName},
		// Removed in later minors: containerd's sandbox_image (the same
		// image, set by the local provider) takes over.
		{flag: "pod-infra-container-image", value: c.PauseImage},
		{flag: "address", value: "127.0.0.1", field: "address", config: "127.0.0.1"},
		{flag: "healthz-bind-address", value: "127.0.0.1", field: "healthzBindAddress", config: "127.0.0.1"},
		{flag: "read-only-port", value: "0", field: "readOnlyPort", config: 0},
		{flag: "sync-frequency", value: c.SyncFrequency.String(), field: "syncFrequency", config: c.SyncFrequency.String()},
		{flag: "file-check-frequency", value: "5s", field: "fileCheckFrequency", config: "5s"},
		// The node's disk may be fuller than the kubelet's default
		// thresholds: the e2e must never see evictions or image GC.
		{flag: "eviction-hard", value: "memory.available<1Mi,nodefs.available<100Mi,imagefs.available<100Mi", field: "evictionHard", config: evictionHard},
		{flag: "image-gc-high-threshold", value: "100", field: "imageGCHighThresholdPercent", config: 100},
		{flag: "image-gc-low-threshold", value: "99", field: "imageGCLowThresholdPercent", config: 99},
		// computePodActions is logged at V(3): how the e2e sees each pod synced.
		{flag: "v", value: "3"},
	}
	if c.Minor < 27 {
		// Gone in 1.27 (the only runtime left is remote); hidden from
		// --help but accepted in 1.24 .. 1.26.
		s = append(s, setting{flag: "container-runtime", value: "remote"})
	}
	if c.Minor >= 31 {
		// 1.31 added failCgroupV1 (default false); 1.35 turned it on:
		// the kubelet refuses to start on a cgroup v1 host, like this
		// one, unless told otherwise. Harmless on cgroup v2.
		s = append(s, setting{flag: "fail-cgroupv1", value: "false", field: "failCgroupV1", config: false})
	}
	if c.Kubeconfig != "" {
		s = append(s, setting{flag: "kubeconfig", value: c.Kubeconfig})
	}
	if len(c.FeatureGates) > 0 {
		s = append(s, setting{flag: "feature-gates", value: FeatureGatesFlag(c.FeatureGates), field: "featureGates", config: c.FeatureGates})
	}
	return s
}

// FeatureGatesFlag is the value of --feature-gates: name=bool, sorted.
func FeatureGatesFlag(gates map[string]bool) string {
	var out []string
	for k, v := range gates {
		out = append(out, fmt.Sprintf("%s=%t", k, v))
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// ParseFeatureGates reads a --feature-gates value (Name=true,Other=false;
// "" is none): every entry Name=bool, each name once. The kubelet itself
// refuses a gate it does not know when it starts.
func ParseFeatureGates(value string) (map[string]bool, error) {
	if strings.TrimSpace(value) == "" {
		return nil, nil
	}
	gates := map[string]bool{}
	for _, kv := range strings.Split(value, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || !featureGateName.MatchString(k) {
			return nil, fmt.Errorf("feature gate %q: want Name=true or Name=false", kv)
		}
		on, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("feature gate %q: %q is not a bool", kv, v)
		}
		if _, dup := gates[k]; dup {
			return nil, fmt.Errorf("feature gate %s given twice", k)
		}
		gates[k] = on
	}
	return gates, nil
}

var featureGateName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9.]*$`)

// MergeFeatureGates is a's gates, then b's (b wins); nil when both are
// empty.
func MergeFeatureGates(a, b map[string]bool) map[string]bool {
	if len(a)+len(b) == 0 {
		return nil
	}
	out := map[string]bool{}
	for _, m := range []map[string]bool{a, b} {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func joinDir(dir, name string) string {
	if dir == "" {
		return name
	}
	return strings.TrimSuffix(dir, "/") + "/" + name
}

// standaloneAuth are the authentication and authorization of a kubelet
// started without --config (its legacy flag defaults): a configuration
// file defaults to webhooks, which a standalone kubelet (no API client)
// refuses to start with.
var standaloneAuth = map[string]interface{}{
	"authentication": map[string]interface{}{
		"anonymous": map[string]interface{}{"enabled": true},
		"webhook":   map[string]interface{}{"enabled": false},
	},
	"authorization": map[string]interface{}{"mode": "AlwaysAllow"},
}

// Plan decides flags and configuration fields. Without Help (nil) every
// flag is passed, as the e2e did for 1.18 .. 1.21; with it, a flag the
// binary no longer lists moves to the configuration file, or is dropped
// when there is no field for it.
func (c Config) Plan() Plan {
	var p Plan
	for _, s := range c.settings() {
		if c.Help == nil || c.Help.Flags[s.flag] {
			p.Args = append(p.Args, "--"+s.flag+"="+s.value)
			continue
		}
		if s.field == "" {
			p.Dropped = append(p.Dropped, "--"+s.flag)
			continue
		}
		if p.Config == nil {
			p.Config = map[string]interface{}{
				"apiVersion": "kubelet.config.k8s.io/v1beta1",
				"kind":       "KubeletConfiguration",
			}
			for k, v := range standaloneAuth {
				p.Config[k] = v
			}
		}
		p.Config[s.field] = s.config
	}
	if p.Config != nil {
		p.Args = append(p.Args, "--config="+c.configFile())
	}
	p.Args = append(p.Args, c.ExtraArgs...)
	return p
}

func (c Config) configFile() string {
	if c.ConfigFile != "" {
		return c.ConfigFile
	}
	return joinDir(c.RootDir, "kubelet-config.json")
}

// ConfigJSON is the configuration file's content (sorted keys).
func (p Plan) ConfigJSON() ([]byte, error) {
	b, err := json.MarshalIndent(p.Config, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// writeConfig writes the plan's configuration file, if any.
func (c Config) writeConfig(p Plan) error {
	if p.Config == nil {
		return nil
	}
	b, err := p.ConfigJSON()
	if err != nil {
		return err
	}
	return os.WriteFile(c.configFile(), b, 0o644)
}

// Fields lists the configuration file's fields, for the logs.
func (p Plan) Fields() []string {
	var out []string
	for k := range p.Config {
		if k != "apiVersion" && k != "kind" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
