// Package local is the e2e's "local" node provider: containerd, runc and
// the CNI plugins from Debian, started with a generated configuration in a
// private state directory, the e2e's images built locally and imported,
// and an undo for everything it starts or changes on the machine.
package local

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
)

// Paths is where the provider keeps its state, all under Root.
type Paths struct {
	Root string
}

func (p Paths) ContainerdRoot() string   { return filepath.Join(p.Root, "containerd", "root") }
func (p Paths) ContainerdState() string  { return filepath.Join(p.Root, "containerd", "state") }
func (p Paths) ContainerdConfig() string { return filepath.Join(p.Root, "containerd", "config.toml") }
func (p Paths) ContainerdSocket() string {
	return filepath.Join(p.Root, "containerd", "containerd.sock")
}
func (p Paths) RuncRoot() string        { return filepath.Join(p.Root, "containerd", "runc") }
func (p Paths) OptDir() string          { return filepath.Join(p.Root, "containerd", "opt") }
func (p Paths) CNIConfDir() string      { return filepath.Join(p.Root, "cni", "net.d") }
func (p Paths) CNIDataDir() string      { return filepath.Join(p.Root, "cni", "ipam") }
func (p Paths) RuntimeEndpoint() string { return "unix://" + p.ContainerdSocket() }

// Network is the bridge CNI network: a private subnet that exists only
// inside this machine (no masquerading, nothing leaves).
type Network struct {
	Bridge string
	Subnet string
}

// DefaultNetwork is the e2e's bridge.
var DefaultNetwork = Network{Bridge: "kce2e0", Subnet: "10.217.77.0/24"}

// ContainerdConfig renders containerd's config (version 2) for the CRI
// plugin with the locally imported pause image as sandbox image.
// restrictOOMScoreAdj is needed where the process lacks CAP_SYS_RESOURCE.
// Everything containerd can be told to put under the root goes there:
// runc's state, the netns bind mounts (not /run/netns), the opt plugin's
// directory (not /opt/containerd). Shim sockets (/run/containerd/s) and
// libcni's result cache (/var/lib/cni) cannot be moved: the journal
// records them.
func ContainerdConfig(p Paths, sandboxImage, cniBinDir string, restrictOOMScoreAdj bool) string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	lines := []string{
		`version = 2`,
		`root = ` + q(p.ContainerdRoot()),
		`state = ` + q(p.ContainerdState()),
		`disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]`,
		``,
		`[grpc]`,
		`  address = ` + q(p.ContainerdSocket()),
		``,
		`[ttrpc]`,
		`  address = ` + q(p.ContainerdSocket()+".ttrpc"),
		``,
		`[plugins."io.containerd.grpc.v1.cri"]`,
		`  sandbox_image = ` + q(sandboxImage),
		fmt.Sprintf(`  restrict_oom_score_adj = %t`, restrictOOMScoreAdj),
		`  netns_mounts_under_state_dir = true`,
		`  stream_server_address = "127.0.0.1"`,
		`  stream_server_port = "0"`,
		`  [plugins."io.containerd.grpc.v1.cri".containerd]`,
		`    snapshotter = "overlayfs"`,
		`    default_runtime_name = "runc"`,
		`    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]`,
		`      runtime_type = "io.containerd.runc.v2"`,
		`      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]`,
		`        SystemdCgroup = false`,
		`        Root = ` + q(p.RuncRoot()),
		`  [plugins."io.containerd.grpc.v1.cri".cni]`,
		`    bin_dir = ` + q(cniBinDir),
		`    conf_dir = ` + q(p.CNIConfDir()),
		`    max_conf_num = 1`,
		``,
		`[plugins."io.containerd.internal.v1.opt"]`,
		`  path = ` + q(p.OptDir()),
	}
	return strings.Join(lines, "\n") + "\n"
}

// CNIConfList renders the bridge network's conflist.
func CNIConfList(n Network, dataDir string) (string, error) {
	conf := map[string]interface{}{
		"cniVersion": "0.4.0",
		"name":       "kc-e2e",
		"plugins": []interface{}{
			map[string]interface{}{
				"type":        "bridge",
				"bridge":      n.Bridge,
				"isGateway":   true,
				"ipMasq":      false,
				"hairpinMode": true,
				"ipam": map[string]interface{}{
					"type":    "host-local",
					"ranges":  [][]map[string]string{{{"subnet": n.Subnet}}},
					"dataDir": dataDir,
				},
			},
		},
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	return string(b) + "\n", err
}
