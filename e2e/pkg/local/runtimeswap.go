package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/leftovers"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/local/mounts"
	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
	"github.com/kubelet-compat/kubelet-compat/pkg/versions"
)

// RuntimeDist is where one containerd version's binaries are: Debian's
// (the node's starting point) or a make runtime build, whose runc and CNI
// plugins move with it where the build provides them.
type RuntimeDist struct {
	Version string
	// Containerd is the daemon ("containerd": Debian's, from PATH).
	Containerd string
	// BinDir goes first on the daemon's PATH: containerd starts the
	// containerd-shim-runc-v2 it finds there ("": Debian's PATH).
	BinDir string
	// Runc is the runc the runc shim runs ("": the PATH's, Debian's).
	Runc      string
	CNIBinDir string
}

func (d RuntimeDist) String() string {
	where := "Debian's"
	if d.BinDir != "" {
		where = d.BinDir
	}
	runc := "Debian's runc"
	if d.Runc != "" {
		runc = d.Runc
	}
	return fmt.Sprintf("containerd %s (%s; %s; CNI plugins %s)", d.Version, where, runc, d.CNIBinDir)
}

// debianDist is Debian's containerd, runc and CNI plugins.
func debianDist(version string) RuntimeDist {
	return RuntimeDist{Version: version, Containerd: "containerd", CNIBinDir: cniBinDir}
}

// FindRuntime is containerd version: make runtime's build in
// <runtimeOutput>/containerd-<version> (with the newest runc-* and
// cni-plugins-* builds beside it, else Debian's), or Debian's containerd
// when that is the version it reports (containerd --version: 1.6.20~ds1).
func FindRuntime(ctx context.Context, runtimeOutput, version string) (RuntimeDist, error) {
	dir := filepath.Join(runtimeOutput, "containerd-"+version)
	if fileExists(filepath.Join(dir, "containerd")) {
		d := RuntimeDist{Version: version, Containerd: filepath.Join(dir, "containerd"), BinDir: dir, CNIBinDir: cniBinDir}
		if r := newestBuild(runtimeOutput, "runc", "runc"); r != "" {
			d.Runc = filepath.Join(r, "runc")
		}
		if c := newestBuild(runtimeOutput, "cni-plugins", "bridge"); c != "" {
			d.CNIBinDir = c
		}
		return d, nil
	}
	out, err := exec.Command("containerd", "--version").Output(ctx)
	if err == nil && DebianVersionIs(string(out), version) {
		return debianDist(version), nil
	}
	return RuntimeDist{}, fmt.Errorf("containerd %s: neither built (%s; make runtime RUNTIME_COMPONENTS=containerd@%s) nor Debian's (containerd --version: %s)",
		version, dir, version, strings.TrimSpace(string(out)))
}

// DebianVersionIs says whether containerd --version's output names
// version (Debian's reads "containerd github.com/containerd/containerd
// 1.6.20~ds1 1.6.20~ds1-1+deb12u3").
func DebianVersionIs(versionOutput, version string) bool {
	for _, f := range strings.Fields(versionOutput) {
		f = strings.TrimPrefix(f, "v")
		if f == version || strings.HasPrefix(f, version+"~") || strings.HasPrefix(f, version+"-") || strings.HasPrefix(f, version+"+") {
			return true
		}
	}
	return false
}

// newestBuild is the newest <dir>/<name>-<version> holding marker ("":
// none), by version.
func newestBuild(dir, name, marker string) string {
	found, _ := filepath.Glob(filepath.Join(dir, name+"-*"))
	var ok []string
	for _, f := range found {
		if fileExists(filepath.Join(f, marker)) {
			ok = append(ok, f)
		}
	}
	if len(ok) == 0 {
		return ""
	}
	sort.Slice(ok, func(i, j int) bool { return versionLess(filepath.Base(ok[i]), filepath.Base(ok[j])) })
	return ok[len(ok)-1]
}

// versionLess orders name-MAJOR.MINOR.PATCH by number (pkg/versions; a
// version that does not parse as 0.0.0), then by name.
func versionLess(a, b string) bool {
	key := func(s string) versions.Version {
		v, _ := versions.ParseRelease(s[strings.LastIndex(s, "-")+1:])
		return v
	}
	if c := key(a).Compare(key(b)); c != 0 {
		return c < 0
	}
	return a < b
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// RunningRuntime is the containerd the node runs now.
func (n *Node) RunningRuntime() RuntimeDist { return n.dist }

// env is the containerd process's environment: its own directory and its
// runc's first on PATH.
func (d RuntimeDist) env() []string {
	var dirs []string
	if d.BinDir != "" {
		dirs = append(dirs, d.BinDir)
	}
	if d.Runc != "" {
		dirs = append(dirs, filepath.Dir(d.Runc))
	}
	if len(dirs) == 0 {
		return nil
	}
	return []string{"PATH=" + strings.Join(dirs, ":") + ":" + os.Getenv("PATH")}
}

// HostDropIns are what containerd 2.x's migration of a version 3
// configuration imports.
const HostDropIns = "/etc/containerd/conf.d/*.toml"

// writeConfig writes the running description for d in d's format.
func (n *Node) writeConfig(d RuntimeDist) error {
	v, err := ConfigVersion(d.Version)
	if err != nil {
		return err
	}
	if v == 3 {
		// containerd 2.4.2 migrates version 3 to its version 4 in memory
		// (the same settings as `containerd config migrate` writes, checked
		// with config dump), and the migration imports
		// /etc/containerd/conf.d/*.toml: the host's drop-ins must not
		// configure the run's containerd.
		if found, _ := filepath.Glob(HostDropIns); len(found) > 0 {
			return fmt.Errorf("containerd %s would import %v (its migration of configuration version 3 imports %s): not running it over the host's configuration", d.Version, found, HostDropIns)
		}
	}
	spec := n.spec
	spec.CNIBinDir, spec.RuncBinary, spec.CNIBinDirSingle = d.CNIBinDir, d.Runc, CNIBinDirSingle(d.Version)
	text, err := spec.Render(v)
	if err != nil {
		return err
	}
	return os.WriteFile(n.ContainerdConfig(), []byte(text), 0o644)
}

// SwapRuntime swaps the node's containerd in place: SIGTERM to the one the
// run started (its shims, and so the containers, keep running), the next
// version's configuration written from the same description, the next
// containerd started on the same root and state, and its CRI answering.
// It returns when the new containerd started and how long the node's CRI
// did not answer: from the old one's SIGTERM until the new one answered.
// With killShims the old containerd's shims are killed after it stopped,
// as systemd stops a unit without KillMode=process (the negative control:
// the new containerd finds their tasks dead).
func (n *Node) SwapRuntime(ctx context.Context, to RuntimeDist, killShims bool) (started time.Time, down time.Duration, err error) {
	stopping := time.Now()
	if err := n.StopContainerd(ctx); err != nil {
		return time.Time{}, 0, err
	}
	if killShims {
		if err := n.killShims(ctx); err != nil {
			return time.Time{}, 0, err
		}
	}
	if err := n.writeConfig(to); err != nil {
		return time.Time{}, 0, err
	}
	n.dist = to
	if err := n.StartContainerd(ctx); err != nil {
		return time.Time{}, 0, err
	}
	return n.containerd.Started, time.Since(stopping), nil
}

// ResetRuntime starts d on an empty root and state (the pods were removed
// through the CRI before), with the e2e's images imported again: every
// runtime run starts from the same place, never from a root a newer
// containerd wrote.
func (n *Node) ResetRuntime(ctx context.Context, d RuntimeDist) error {
	if err := n.StopContainerd(ctx); err != nil {
		return err
	}
	for _, dir := range []string{n.ContainerdRoot(), n.ContainerdState(), n.RuncRoot()} {
		if err := mounts.UnmountUnder(dir); err != nil {
			return err
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	for _, dir := range []string{n.ContainerdRoot(), n.ContainerdState()} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	if err := n.writeConfig(d); err != nil {
		return err
	}
	n.dist = d
	if err := n.StartContainerd(ctx); err != nil {
		return err
	}
	return n.importImages(ctx)
}

// DebianRuntime is Debian's containerd, at the version it reports.
func DebianRuntime(ctx context.Context) (RuntimeDist, error) {
	out, err := exec.Command("containerd", "--version").Output(ctx)
	if err != nil {
		return RuntimeDist{}, err
	}
	v := DebianVersion(string(out))
	if v == "" {
		return RuntimeDist{}, fmt.Errorf("containerd --version: no version in %q", strings.TrimSpace(string(out)))
	}
	return debianDist(v), nil
}

// DebianVersion is MAJOR.MINOR.PATCH of containerd --version's output
// (1.6.20 of "containerd github.com/containerd/containerd 1.6.20~ds1
// 1.6.20~ds1-1+deb12u3"), or "".
func DebianVersion(versionOutput string) string {
	f := strings.Fields(versionOutput)
	if len(f) < 3 {
		return ""
	}
	v, ok := versions.Leading(f[2])
	if !ok {
		return ""
	}
	return v.String()
}

// killShims SIGKILLs the shims of the run's containerd as the cleanup
// finds them (leftovers.KillShims). At least one must be found: the
// negative control needs running tasks.
func (n *Node) killShims(ctx context.Context) error {
	found, err := leftovers.KillShims(ctx, n.Journal.State(), leftovers.Machine(nil))
	if err != nil {
		return fmt.Errorf("killing the shims: %w", err)
	}
	if found == 0 {
		return errors.New("no shim of the run's containerd to kill")
	}
	return nil
}
