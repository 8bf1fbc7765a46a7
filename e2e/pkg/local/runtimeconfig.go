package local

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/versions"
)

// ContainerdSpec is the one description of the run's containerd
// configuration; Render writes it in the format a containerd version reads
// (ConfigVersion): version 2 for containerd 1.x (the CRI plugin is
// io.containerd.grpc.v1.cri), version 3 for 2.x (the CRI plugin split into
// io.containerd.cri.v1.images, io.containerd.cri.v1.runtime and the
// streaming server left in io.containerd.grpc.v1.cri). A runtime swap
// writes the next version's file from the same description, so both
// containerds run the same CRI settings on the same root and state.
type ContainerdSpec struct {
	Paths Paths
	// SandboxImage is the pause image (pinned in 2.x).
	SandboxImage string
	// CNIBinDir holds the CNI plugins (bridge, host-local, loopback).
	CNIBinDir string
	// CNIBinDirSingle writes version 3's CNI directory as bin_dir, the
	// only key containerd 2.0 reads; 2.1 added bin_dirs and deprecated
	// bin_dir, 2.4 removed it (the road's step into 2.0 found it: 2.0 read
	// bin_dirs as nothing and looked in /opt/cni/bin).
	CNIBinDirSingle bool
	// RestrictOOMScoreAdj is needed where the process lacks
	// CAP_SYS_RESOURCE.
	RestrictOOMScoreAdj bool
	// SystemdCgroup is the runc runtime's cgroup driver: false for
	// cgroupfs, the e2e kubelets' driver.
	SystemdCgroup bool
	// RuncBinary is the runc the runc shim runs ("": the one on PATH).
	RuncBinary string
}

// ConfigVersion is the configuration version containerd version reads:
// 2 for 1.x (1.6 and 1.7 also read version 1 and 2.x migrates 2 in
// memory, but each version is given its own), 3 for 2.x.
func ConfigVersion(containerdVersion string) (int, error) {
	v := strings.TrimPrefix(containerdVersion, "v")
	major, err := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	if err != nil || !strings.Contains(v, ".") {
		return 0, fmt.Errorf("containerd version %q: want MAJOR.MINOR.PATCH", containerdVersion)
	}
	switch major {
	case 1:
		return 2, nil
	case 2:
		return 3, nil
	}
	return 0, fmt.Errorf("containerd %s: no configuration format known for major %d", containerdVersion, major)
}

// Render writes the description as configuration version 2 or 3.
// Everything containerd can be told to put under the root goes there:
// runc's state, the netns bind mounts (not /run/netns), the opt plugin's
// directory (not /opt/containerd). Shim sockets (/run/containerd/s) and
// libcni's result cache (/var/lib/cni) cannot be moved: the journal
// records them.
func (c ContainerdSpec) Render(configVersion int) (string, error) {
	switch configVersion {
	case 2:
		return join(c.head(2), c.criV2(), c.opt()), nil
	case 3:
		return join(c.head(3), c.criV3(), c.opt()), nil
	}
	return "", fmt.Errorf("containerd configuration version %d: only 2 (containerd 1.x) and 3 (2.x) are written", configVersion)
}

func q(s string) string { b, _ := json.Marshal(s); return string(b) }

func join(parts ...[]string) string {
	var lines []string
	for _, p := range parts {
		lines = append(lines, p...)
	}
	return strings.Join(lines, "\n") + "\n"
}

func (c ContainerdSpec) head(version int) []string {
	p := c.Paths
	return []string{
		fmt.Sprintf(`version = %d`, version),
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
	}
}

// runcOptions are the runc runtime's options (indent: the table's).
func (c ContainerdSpec) runcOptions(table, indent string) []string {
	lines := []string{
		indent + `[` + table + `]`,
		fmt.Sprintf(indent+`  SystemdCgroup = %t`, c.SystemdCgroup),
		indent + `  Root = ` + q(c.Paths.RuncRoot()),
	}
	if c.RuncBinary != "" {
		lines = append(lines, indent+`  BinaryName = `+q(c.RuncBinary))
	}
	return lines
}

func (c ContainerdSpec) criV2() []string {
	const cri = `plugins."io.containerd.grpc.v1.cri"`
	lines := []string{
		`[` + cri + `]`,
		`  sandbox_image = ` + q(c.SandboxImage),
		fmt.Sprintf(`  restrict_oom_score_adj = %t`, c.RestrictOOMScoreAdj),
		`  netns_mounts_under_state_dir = true`,
		`  stream_server_address = "127.0.0.1"`,
		`  stream_server_port = "0"`,
		`  [` + cri + `.containerd]`,
		`    snapshotter = "overlayfs"`,
		`    default_runtime_name = "runc"`,
		`    [` + cri + `.containerd.runtimes.runc]`,
		`      runtime_type = "io.containerd.runc.v2"`,
	}
	lines = append(lines, c.runcOptions(cri+`.containerd.runtimes.runc.options`, "      ")...)
	return append(lines,
		`  [`+cri+`.cni]`,
		`    bin_dir = `+q(c.CNIBinDir),
		`    conf_dir = `+q(c.Paths.CNIConfDir()),
		`    max_conf_num = 1`,
		``,
	)
}

// criV3 is the CRI plugin's settings in containerd 2.x's tables: images
// (snapshotter, the sandbox image pinned), runtime (runtimes, CNI, the
// OOM score and netns settings) and the streaming server.
func (c ContainerdSpec) criV3() []string {
	const images, runtime, server = `plugins."io.containerd.cri.v1.images"`, `plugins."io.containerd.cri.v1.runtime"`, `plugins."io.containerd.grpc.v1.cri"`
	lines := []string{
		`[` + images + `]`,
		`  snapshotter = "overlayfs"`,
		`  [` + images + `.pinned_images]`,
		`    sandbox = ` + q(c.SandboxImage),
		``,
		`[` + runtime + `]`,
		fmt.Sprintf(`  restrict_oom_score_adj = %t`, c.RestrictOOMScoreAdj),
		`  netns_mounts_under_state_dir = true`,
		`  [` + runtime + `.containerd]`,
		`    default_runtime_name = "runc"`,
		`    [` + runtime + `.containerd.runtimes.runc]`,
		`      runtime_type = "io.containerd.runc.v2"`,
		`      snapshotter = "overlayfs"`,
	}
	lines = append(lines, c.runcOptions(runtime+`.containerd.runtimes.runc.options`, "      ")...)
	return append(lines,
		`  [`+runtime+`.cni]`,
		c.cniBinDirV3(),
		`    conf_dir = `+q(c.Paths.CNIConfDir()),
		`    max_conf_num = 1`,
		``,
		`[`+server+`]`,
		`  stream_server_address = "127.0.0.1"`,
		`  stream_server_port = "0"`,
		``,
	)
}

func (c ContainerdSpec) cniBinDirV3() string {
	if c.CNIBinDirSingle {
		return `    bin_dir = ` + q(c.CNIBinDir)
	}
	return `    bin_dirs = [` + q(c.CNIBinDir) + `]`
}

// CNIBinDirSingle says whether containerd version reads its CNI directory
// only as bin_dir in configuration version 3 (2.0).
func CNIBinDirSingle(containerdVersion string) bool {
	v, ok := versions.Leading(containerdVersion)
	return ok && v.Major == 2 && v.Minor == 0
}

func (c ContainerdSpec) opt() []string {
	return []string{
		`[plugins."io.containerd.internal.v1.opt"]`,
		`  path = ` + q(c.Paths.OptDir()),
	}
}
