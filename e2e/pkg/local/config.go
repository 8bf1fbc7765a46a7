// Package local is the e2e's "local" node provider: containerd, runc and
// the CNI plugins from Debian, started with a generated configuration in a
// private state directory, the e2e's images built locally and imported,
// and an undo for everything it starts or changes on the machine.
package local

import (
	"encoding/json"
	"path/filepath"
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

// ContainerdConfig renders containerd's config (version 2, which
// Debian's 1.6.20 the run starts with reads) for the CRI plugin with the
// locally imported pause image as sandbox image: ContainerdSpec.Render(2)
// of the run's description (runtimeconfig.go; the next version's file of a
// runtime swap comes from the same description). restrictOOMScoreAdj is
// needed where the process lacks CAP_SYS_RESOURCE.
func ContainerdConfig(p Paths, sandboxImage, cniBinDir string, restrictOOMScoreAdj bool) string {
	s, _ := ContainerdSpec{Paths: p, SandboxImage: sandboxImage, CNIBinDir: cniBinDir, RestrictOOMScoreAdj: restrictOOMScoreAdj}.Render(2)
	return s
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
