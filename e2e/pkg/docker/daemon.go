package docker

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/capfilter"
	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
	"github.com/kubelet-compat/kubelet-compat/pkg/proc"
)

// DefaultBridge is a private daemon's default bridge network: made by
// the run before dockerd starts (address and all), removed afterwards.
var DefaultBridge = struct{ Name, Address string }{"kce2edock0", "10.217.79.1/24"}

// CgroupParent is the cgroup (cgroupfs driver) of a private daemon's
// containers.
const CgroupParent = "kc-e2e-docker"

// Paths are where a private daemon keeps what goes with the run.
type Paths struct {
	// Root is the run's directory for the daemon.
	Root string
}

func (p Paths) ContainerdConfig() string { return filepath.Join(p.Root, "containerd.toml") }
func (p Paths) ContainerdRoot() string   { return filepath.Join(p.Root, "containerd", "root") }
func (p Paths) ContainerdState() string  { return filepath.Join(p.Root, "containerd", "state") }
func (p Paths) ContainerdSocket() string {
	return filepath.Join(p.Root, "containerd", "containerd.sock")
}
func (p Paths) ExecRoot() string     { return filepath.Join(p.Root, "exec") }
func (p Paths) Socket() string       { return filepath.Join(p.Root, "docker.sock") }
func (p Paths) PIDFile() string      { return filepath.Join(p.Root, "dockerd.pid") }
func (p Paths) DaemonConfig() string { return filepath.Join(p.Root, "daemon.json") }
func (p Paths) KeyFile() string      { return filepath.Join(p.Root, "key.json") }

// DaemonOptions configure a private daemon.
type DaemonOptions struct {
	Paths
	// DataRoot is dockerd's image store, kept between runs so that images
	// build incrementally.
	DataRoot string
	// Runtime is the e2e-oci-runtime binary, the default runtime when
	// the bounding set lacks capabilities (Wrap).
	Runtime string
	// Recorder records containerd and dockerd in the run's journal.
	Recorder proc.Recorder
	// BridgeAlias is the ifalias the default bridge gets (the run's tag),
	// right after it is made: the undo deletes it only with that tag.
	BridgeAlias string
	LogDir      string
	Log         io.Writer
}

// Daemon is a dockerd (and its containerd) the e2e started.
type Daemon struct {
	Engine
	Paths
	// Wrapped is true when containers run through e2e-oci-runtime.
	Wrapped             bool
	containerd, dockerd *proc.Process
}

// Missing lists the capabilities this machine's bounding set lacks up to
// the kernel's last capability: what a --privileged container cannot get.
func Missing() ([]string, error) {
	set, err := capfilter.Bounding("/proc/self/status")
	if err != nil {
		return nil, err
	}
	last := len(capfilter.Names) - 1
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		fmt.Sscanf(strings.TrimSpace(string(b)), "%d", &last)
	}
	var out []string
	for i, n := range capfilter.Names {
		if i <= last && !set.Has(n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// ContainerdConfig is the private daemon's containerd: no CRI, everything
// under the run's root (the opt plugin's directory included).
func ContainerdConfig(p Paths) string {
	return fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri"]

[grpc]
  address = %q

[plugins."io.containerd.internal.v1.opt"]
  path = %q
`, p.ContainerdRoot(), p.ContainerdState(), p.ContainerdSocket(), filepath.Join(p.Root, "opt"))
}

// DaemonConfig is dockerd's configuration file: only where its trust key
// goes (dockerd 20.10 writes /etc/docker/key.json otherwise).
func DaemonConfig(p Paths) string {
	return fmt.Sprintf("{\"deprecated-key-path\": %q}\n", p.KeyFile())
}

// DaemonArgs are dockerd's flags. The daemon changes nothing on the host's
// network configuration: no iptables rules, no ip_forward, no default
// bridge (kind's nodes reach each other on their own bridge network and
// the host reaches published ports through docker-proxy).
func DaemonArgs(p Paths, dataRoot, runtime string) []string {
	args := []string{
		"--config-file=" + p.DaemonConfig(),
		"--data-root=" + dataRoot,
		"--exec-root=" + p.ExecRoot(),
		"--pidfile=" + p.PIDFile(),
		"--host=unix://" + p.Socket(),
		"--containerd=" + p.ContainerdSocket(),
		"--iptables=false", "--ip-forward=false", "--ip-masq=false",
		// Its default network on a bridge the run made (dockerd would
		// create docker0, and with --bridge=none delete an existing one).
		"--bridge=" + DefaultBridge.Name,
		// Its containers' cgroups in a parent of the run's own, which the
		// journal records and the cleanup removes.
		"--cgroup-parent=" + CgroupParent,
	}
	if runtime != "" {
		args = append(args, "--add-runtime=kc-e2e="+runtime, "--default-runtime=kc-e2e")
	}
	return args
}

// Start starts containerd and dockerd and waits until docker answers.
func Start(ctx context.Context, o DaemonOptions) (*Daemon, error) {
	d := &Daemon{Paths: o.Paths, Engine: Engine{Env: []string{"DOCKER_HOST=unix://" + o.Socket()}, Private: true}}
	missing, err := Missing()
	if err != nil {
		return nil, err
	}
	runtime := ""
	if len(missing) > 0 {
		if o.Runtime == "" {
			return nil, fmt.Errorf("this machine lacks %s, so --privileged containers need e2e-oci-runtime, and none was given", strings.Join(missing, ", "))
		}
		runtime, d.Wrapped = o.Runtime, true
		fmt.Fprintf(o.Log, "docker: the capability bounding set lacks %s: containers run through %s\n", strings.Join(missing, ", "), runtime)
	}
	for _, dir := range []string{o.Root, o.ContainerdRoot(), o.ContainerdState(), o.ExecRoot(), o.DataRoot, o.LogDir} {
		if err := os.MkdirAll(dir, 0o711); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(o.ContainerdConfig(), []byte(ContainerdConfig(o.Paths)), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(o.DaemonConfig(), []byte(DaemonConfig(o.Paths)), 0o644); err != nil {
		return nil, err
	}
	d.containerd, err = proc.Start(o.Recorder, "containerd (docker)", "containerd", []string{"--config", o.ContainerdConfig()}, nil, filepath.Join(o.LogDir, "docker-containerd.log"))
	if err != nil {
		return nil, err
	}
	if err := waitFor(ctx, d.containerd, "containerd (docker)", 60*time.Second, func() error {
		_, err := os.Stat(o.ContainerdSocket())
		return err
	}); err != nil {
		d.Stop(ctx)
		return nil, err
	}
	if err := makeBridge(ctx, linkExists, runIP, o.BridgeAlias); err != nil {
		d.Stop(ctx)
		return nil, err
	}
	d.dockerd, err = proc.Start(o.Recorder, "dockerd", "dockerd", DaemonArgs(o.Paths, o.DataRoot, runtime), nil, filepath.Join(o.LogDir, "dockerd.log"))
	if err != nil {
		d.Stop(ctx)
		return nil, err
	}
	var info Info
	if err := waitFor(ctx, d.dockerd, "dockerd", 90*time.Second, func() (err error) {
		info, err = d.Info(ctx)
		return err
	}); err != nil {
		d.Stop(ctx)
		return nil, fmt.Errorf("%w (see %s)", err, filepath.Join(o.LogDir, "dockerd.log"))
	}
	fmt.Fprintf(o.Log, "docker: private dockerd pid %d ready: %s, data root %s\n", d.dockerd.PID, info, o.DataRoot)
	return d, nil
}

// Stop stops dockerd (which stops its containers first), then containerd.
func (d *Daemon) Stop(ctx context.Context) error {
	var first error
	if d.dockerd != nil {
		first = d.dockerd.Stop(ctx, 60*time.Second)
	}
	if d.containerd != nil {
		if err := d.containerd.Stop(ctx, 20*time.Second); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// waitFor polls ready until it succeeds, the process ends or the timeout.
func waitFor(ctx context.Context, p *proc.Process, name string, timeout time.Duration, ready func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		if ended, err := p.Exited(); ended {
			return fmt.Errorf("%s exited: %v", name, err)
		}
		err := ready()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s: %w", name, timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// makeBridge creates the daemon's default bridge, tags it with alias
// (the kernel ignores an ifalias given to `ip link add`: measured, set
// apart right after) and gives it its address; the caller recorded its
// name in the journal before. A link of that name is refused: not the
// run's.
func makeBridge(ctx context.Context, linkExists func(name string) bool, ip func(ctx context.Context, args ...string) error, alias string) error {
	if linkExists(DefaultBridge.Name) {
		return fmt.Errorf("network interface %s exists already: another e2e runs, or a killed one left it (make e2e-cleanup)", DefaultBridge.Name)
	}
	steps := [][]string{{"link", "add", DefaultBridge.Name, "type", "bridge"}}
	if alias != "" {
		steps = append(steps, []string{"link", "set", "dev", DefaultBridge.Name, "alias", alias})
	}
	steps = append(steps,
		[]string{"addr", "add", DefaultBridge.Address, "dev", DefaultBridge.Name},
		[]string{"link", "set", DefaultBridge.Name, "up"})
	for _, args := range steps {
		if err := ip(ctx, args...); err != nil {
			return fmt.Errorf("dockerd's bridge: %w", err)
		}
	}
	return nil
}

func runIP(ctx context.Context, args ...string) error { return exec.Command("ip", args...).Run(ctx) }

func linkExists(name string) bool {
	_, err := os.Stat("/sys/class/net/" + name)
	return err == nil
}
