package kubelet

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// help lists the flags of a kubelet's --help, as pflag prints them.
func help(flags ...string) *Help {
	var b strings.Builder
	b.WriteString("Usage:\n  kubelet [flags]\n\nFlags:\n")
	for _, f := range flags {
		b.WriteString("      --" + f + " string      some text (DEPRECATED: This parameter should be set via the config file)\n")
	}
	h := ParseHelp(b.String())
	return &h
}

// allFlags are the flags the e2e sets that every kubelet 1.18 .. 1.34
// lists (upstream's cmd/kubelet/app/options and pkg/kubelet/config/flags.go).
var allFlags = []string{"root-dir", "cert-dir", "volume-plugin-dir", "pod-manifest-path", "container-runtime-endpoint",
	"cgroup-driver", "fail-swap-on", "hostname-override", "address", "healthz-bind-address", "read-only-port",
	"sync-frequency", "file-check-frequency", "eviction-hard", "image-gc-high-threshold", "image-gc-low-threshold", "v", "kubeconfig"}

func without(list []string, drop ...string) []string {
	var out []string
	for _, x := range list {
		keep := true
		for _, d := range drop {
			keep = keep && x != d
		}
		if keep {
			out = append(out, x)
		}
	}
	return out
}

func TestParseHelpOfARealKubelet(t *testing.T) {
	out, err := os.ReadFile("testdata/help-1.23.17.txt")
	assert.NilError(t, err)
	h := ParseHelp(string(out))
	for _, f := range append(allFlags, "container-runtime", "pod-infra-container-image", "config") {
		assert.Assert(t, h.Flags[f], "1.23.17 --help lists --%s", f)
	}
	assert.Assert(t, !h.Flags["fail-cgroupv1"])
	// Feature gate lines and the usage text are no flags.
	assert.Assert(t, !h.Flags["APIListChunking"])
}

// TestPlanPerEra: what each era of kubelet gets, from what its --help
// lists (the flag sets are upstream's, read in each minor's source).
func TestPlanPerEra(t *testing.T) {
	base := allFlags
	tests := []struct {
		name   string
		minor  int
		help   *Help
		want   []string // in the command line
		absent []string // not in it
		fields []string // in the configuration file (nil: no file)
	}{
		{name: "no help: every flag, as measured on 1.18-1.21", minor: 18,
			want: []string{"--container-runtime=remote", "--pod-infra-container-image=pause", "--sync-frequency=10s", "--v=3"}, absent: []string{"--config=", "--fail-cgroupv1"}},
		{name: "1.23: all flags listed", minor: 23, help: help(append(base, "container-runtime", "pod-infra-container-image")...),
			want: []string{"--container-runtime=remote", "--pod-manifest-path=/m", "--eviction-hard=memory.available<1Mi,nodefs.available<100Mi,imagefs.available<100Mi"}, absent: []string{"--config="}},
		{name: "1.24-1.26: --container-runtime hidden: dropped (remote is the only runtime)", minor: 25, help: help(append(base, "pod-infra-container-image")...),
			absent: []string{"--container-runtime=", "--config="}},
		{name: "1.27: no --container-runtime at all", minor: 27, help: help(append(base, "pod-infra-container-image")...),
			want: []string{"--container-runtime-endpoint=unix:///c.sock"}, absent: []string{"--container-runtime=", "--config="}},
		{name: "1.31-1.34: --fail-cgroupv1=false", minor: 31, help: help(append(base, "pod-infra-container-image", "fail-cgroupv1")...),
			want: []string{"--fail-cgroupv1=false"}, absent: []string{"--config="}},
		{name: "1.35+: no --pod-infra-container-image (containerd's sandbox_image)", minor: 35, help: help(append(base, "fail-cgroupv1")...),
			want: []string{"--fail-cgroupv1=false"}, absent: []string{"--pod-infra-container-image", "--config="}},
		{name: "a kubelet without the deprecated config flags: a KubeletConfiguration", minor: 36,
			help:   help("root-dir", "cert-dir", "hostname-override", "v", "config", "container-runtime-endpoint"),
			want:   []string{"--root-dir=/r", "--config=/r/kubelet-config.json"},
			absent: []string{"--pod-manifest-path", "--fail-cgroupv1", "--sync-frequency"},
			fields: []string{"address", "authentication", "authorization", "cgroupDriver", "evictionHard", "failCgroupV1", "failSwapOn", "fileCheckFrequency",
				"healthzBindAddress", "imageGCHighThresholdPercent", "imageGCLowThresholdPercent", "readOnlyPort", "staticPodPath", "syncFrequency", "volumePluginDir"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Config{Minor: tt.minor, Help: tt.help, RootDir: "/r", ManifestDir: "/m", RuntimeEndpoint: "unix:///c.sock",
				PauseImage: "pause", NodeName: "n", SyncFrequency: 10 * time.Second}
			p := c.Plan()
			args := strings.Join(p.Args, " ")
			for _, w := range tt.want {
				assert.Assert(t, strings.Contains(args, w), "%s lacks %s", args, w)
			}
			for _, w := range tt.absent {
				assert.Assert(t, !strings.Contains(args, w), "%s has %s", args, w)
			}
			if tt.fields == nil {
				assert.Assert(t, is.Nil(p.Config))
				return
			}
			assert.DeepEqual(t, p.Fields(), tt.fields)
		})
	}
}

func TestConfigFileIsAStandaloneKubeletConfiguration(t *testing.T) {
	c := Config{Minor: 36, Help: help("root-dir", "v"), RootDir: "/r", ManifestDir: "/m", RuntimeEndpoint: "unix:///c.sock",
		SyncFrequency: 10 * time.Second, ConfigFile: "/x/k.json"}
	p := c.Plan()
	assert.Assert(t, is.Contains(p.Args, "--config=/x/k.json"))
	// Flags-only settings without a field are dropped, not guessed.
	assert.DeepEqual(t, p.Dropped, []string{"--cert-dir", "--hostname-override", "--pod-infra-container-image"})
	b, err := p.ConfigJSON()
	assert.NilError(t, err)
	var got map[string]interface{}
	assert.NilError(t, json.Unmarshal(b, &got))
	assert.Equal(t, got["kind"], "KubeletConfiguration")
	assert.Equal(t, got["apiVersion"], "kubelet.config.k8s.io/v1beta1")
	assert.Equal(t, got["containerRuntimeEndpoint"], "unix:///c.sock")
	assert.Equal(t, got["staticPodPath"], "/m")
	assert.Equal(t, got["failCgroupV1"], false)
	assert.Equal(t, got["syncFrequency"], "10s")
	// Without a kubeconfig, webhook authn/authz would keep the kubelet from starting.
	assert.DeepEqual(t, got["authorization"], map[string]interface{}{"mode": "AlwaysAllow"})
}

// TestFeatureGates: --feature-gates while --help lists it (1.27 .. 1.32
// do), else the configuration's featureGates; nothing without gates.
func TestFeatureGates(t *testing.T) {
	gates := map[string]bool{"InPlacePodVerticalScaling": true, "B": false}
	c := Config{Minor: 32, Help: help(append(allFlags, "feature-gates", "fail-cgroupv1")...), RootDir: "/r", FeatureGates: gates}
	p := c.Plan()
	assert.Assert(t, is.Contains(p.Args, "--feature-gates=B=false,InPlacePodVerticalScaling=true"))
	assert.Assert(t, is.Nil(p.Config))

	c.Help = help("root-dir", "v", "config")
	p = c.Plan()
	b, err := p.ConfigJSON()
	assert.NilError(t, err)
	var got map[string]interface{}
	assert.NilError(t, json.Unmarshal(b, &got))
	assert.DeepEqual(t, got["featureGates"], map[string]interface{}{"InPlacePodVerticalScaling": true, "B": false})

	c.FeatureGates, c.Help = nil, help(append(allFlags, "feature-gates")...)
	args := strings.Join(c.Plan().Args, " ")
	assert.Assert(t, !strings.Contains(args, "--feature-gates"), args)
}

func TestParseFeatureGates(t *testing.T) {
	g, err := ParseFeatureGates("RestartAllContainersOnContainerExits=false, InPlacePodVerticalScaling=true")
	assert.NilError(t, err)
	assert.DeepEqual(t, g, map[string]bool{"RestartAllContainersOnContainerExits": false, "InPlacePodVerticalScaling": true})
	assert.Equal(t, FeatureGatesFlag(g), "InPlacePodVerticalScaling=true,RestartAllContainersOnContainerExits=false")
	g, err = ParseFeatureGates("")
	assert.NilError(t, err)
	assert.Assert(t, g == nil)
	for _, bad := range []string{"A", "A=maybe", "=true", "A=true,A=false", "A=true,", "a b=true"} {
		_, err := ParseFeatureGates(bad)
		assert.Assert(t, err != nil, bad)
	}
}

func TestMergeFeatureGates(t *testing.T) {
	assert.Assert(t, MergeFeatureGates(nil, nil) == nil)
	assert.DeepEqual(t, MergeFeatureGates(map[string]bool{"A": true, "B": true}, map[string]bool{"B": false}), map[string]bool{"A": true, "B": false})
	// The gates reach the kubelet as a flag while it lists --feature-gates.
	c := Config{Minor: 36, Help: &Help{Flags: map[string]bool{"feature-gates": true}}, FeatureGates: map[string]bool{"RestartAllContainersOnContainerExits": false}}
	assert.Assert(t, contains(c.Plan().Args, "--feature-gates=RestartAllContainersOnContainerExits=false"))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
