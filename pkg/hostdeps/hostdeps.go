// Package hostdeps is the one place that says which external programs each
// path of the project runs on the host, and installs the Debian packages
// of those that are missing: a fresh machine needs nothing but Go and
// Debian's package archive. Every path calls Ensure with its own list
// before it runs anything; hostdeps_test.go reads the code each path
// executes and fails when it runs a program that is not on that path's
// list (the way `rpmbuild` once reached the kind image builder without an
// install step).
//
// Installing never starts or enables a host service: while apt-get runs, a
// policy-rc.d refuses every start, and the systemd enablement links the
// packages' scripts create are removed again. What was installed is
// appended to a journal, so an operator can see and remove it.
package hostdeps

import (
	"context"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
)

// Program is an external program and the Debian package that installs it.
type Program struct {
	// Name is what the project executes: a name looked up in PATH, or an
	// absolute path for programs outside PATH (the CNI plugins), or for a
	// file a build reads (a C header: see isDataFile).
	Name string
	// Package is the Debian package that installs Name; empty for the
	// machine's preconditions (Go, and Debian's Essential packages such as
	// coreutils, tar and dpkg), which no path installs.
	Package string
}

// Path is one way through the project (a make target, an e2e provider)
// and the programs it runs.
type Path struct {
	Name     string
	Programs []Program
}

// Programs every path may run without installing them: the project's
// precondition (Go, git for the clone) and Debian's Essential packages.
var (
	Go      = Program{Name: "go"}
	Git     = Program{Name: "git"}
	Tar     = Program{Name: "tar"}
	Cp      = Program{Name: "cp"}
	Chmod   = Program{Name: "chmod"}
	Diff    = Program{Name: "diff"}
	DpkgDeb = Program{Name: "dpkg-deb"}
	AptGet  = Program{Name: "apt-get"}
	DpkgQ   = Program{Name: "dpkg-query"}
	Dpkg    = Program{Name: "dpkg"}
)

// Programs of Debian packages.
var (
	Rpmbuild    = Program{"rpmbuild", "rpm"}
	Rpm         = Program{"rpm", "rpm"}
	Patch       = Program{"patch", "patch"}
	Python3     = Program{"python3", "python3"}
	Debootstrap = Program{"debootstrap", "debootstrap"}
	Docker      = Program{"docker", "docker.io"}
	Dockerd     = Program{"dockerd", "docker.io"}
	Containerd  = Program{"containerd", "containerd"}
	Runc        = Program{"runc", "runc"}
	Iptables    = Program{"iptables", "iptables"}
	Ip6tables   = Program{"ip6tables", "iptables"}
	Conntrack   = Program{"conntrack", "conntrack"}
	IP          = Program{"ip", "iproute2"}
	Mount       = Program{"mount", "mount"}
	Umount      = Program{"umount", "mount"}
	Busybox     = Program{"/bin/busybox", "busybox-static"}
	CNIBridge   = Program{"/usr/lib/cni/bridge", "containernetworking-plugins"}
	Etcd        = Program{"etcd", "etcd-server"}
	Lintian     = Program{"lintian", "lintian"}
	// Gcc and PkgConfig are what `go build` runs for a cgo package (runc);
	// LibseccompH is the header runc's seccomp support compiles against.
	Gcc         = Program{"gcc", "gcc"}
	PkgConfig   = Program{"pkg-config", "pkgconf"}
	LibseccompH = Program{"/usr/include/seccomp.h", "libseccomp-dev"}
)

// The paths. A path that runs another (the kind image builder runs
// cmd/build-packages -format deb) lists that path's programs too.
var (
	// RPM: `make rpm`, cmd/build-packages -format rpm, and the RPM tests of
	// `make test`.
	// cp and chmod: the runtime set's inputs come through pkg/runtimebuild.
	RPM = Path{"rpm", []Program{Go, Git, Cp, Chmod, Rpmbuild, Rpm}}
	// Deb: `make deb`, cmd/build-packages -format deb and the Debian package tests of
	// `make test`: dpkg-deb builds (no fakeroot: --root-owner-group), dpkg
	// reads them back, lintian checks them.
	Deb = Path{"deb", []Program{Go, Git, Cp, Chmod, DpkgDeb, Dpkg, Lintian}}
	// DebTestReal: `make deb-test-real` installs the .debs into a Debian
	// root that debootstrap makes.
	DebTestReal = Path{"deb-test-real", []Program{Go, Git, DpkgDeb, Dpkg, Debootstrap}}
	// Build: the harness (`make`, `make build`, `make verify-trees`) and
	// the generators in hack/.
	Build = Path{"build", []Program{Go, Git, Tar, Cp, Chmod, Diff, Patch, Python3}}
	// Local: the e2e's local provider (a real node on this host).
	Local = Path{"local", []Program{Go, Cp, Chmod, Tar, DpkgQ, AptGet, Containerd, Runc, CNIBridge, Iptables, Ip6tables, Conntrack, Busybox, IP, Mount, Umount}}
	// LocalAPI: the local provider's API mode adds etcd.
	LocalAPI = Path{"local-api", []Program{Etcd}}
	// Kind: the kind provider on any Docker engine, and its node images
	// (debootstrap, the .debs, etcd and CoreDNS built for the images, the
	// host's static busybox in the workload images).
	Kind = Path{"kind", []Program{Go, Git, Tar, Cp, Chmod, DpkgDeb, Dpkg, DpkgQ, AptGet, Docker, Debootstrap, Busybox, IP, Iptables, Ip6tables, Conntrack}}
	// KindPrivateEngine: the private dockerd the kind provider starts when
	// no Docker engine answers.
	KindPrivateEngine = Path{"kind-private-engine", []Program{Dockerd, Containerd, Runc}}
	// SystemUpgrade: deploy/system-upgrade's builds (the controller from
	// the module proxy, its image, the upgrade Job's image with the host's
	// static busybox, the Plans).
	SystemUpgrade = Path{"system-upgrade", []Program{Go, Busybox}}
	// Runtime: `make runtime` (runtime/cmd/build-runtime): containerd,
	// runc, crictl and the CNI plugins from the module proxy with their own
	// Go toolchains (copied out with cp and chmod); runc with cgo against
	// Debian's libseccomp; a patched containerd's series applied with patch.
	Runtime = Path{"runtime", []Program{Go, Cp, Chmod, Patch, Gcc, PkgConfig, LibseccompH}}
)

// Paths are all of them, by name (the `ensure-host` command's argument).
var Paths = []Path{RPM, Deb, DebTestReal, Build, Local, LocalAPI, Kind, KindPrivateEngine, SystemUpgrade, Runtime}

// ByName returns the path called name.
func ByName(name string) (Path, bool) {
	for _, p := range Paths {
		if p.Name == name {
			return p, true
		}
	}
	return Path{}, false
}

// Has reports whether the path lists the program called name.
func (p Path) Has(name string) bool {
	for _, prog := range p.Programs {
		if prog.Name == name {
			return true
		}
	}
	return false
}

// Host is what Ensure looks at and changes; tests replace it.
type Host struct {
	// Found reports whether a program is there.
	Found func(name string) bool
	// Install installs Debian packages.
	Install func(ctx context.Context, log io.Writer, pkgs []string) error
}

// Machine is this host: PATH look-ups and apt-get.
var Machine = Host{Found: found, Install: aptInstall}

func found(name string) bool {
	if filepath.IsAbs(name) {
		st, err := os.Stat(name)
		return err == nil && !st.IsDir() && (isDataFile(name) || st.Mode()&0o111 != 0)
	}
	_, err := osexec.LookPath(name)
	return err == nil
}

// Missing returns the Debian packages whose programs the paths need and
// the host lacks, sorted, and the preconditions that are missing (which no
// package of ours installs).
func (h Host) Missing(paths ...Path) (pkgs []string, preconditions []string) {
	seen := map[string]bool{}
	for _, p := range paths {
		for _, prog := range p.Programs {
			if seen[prog.Name] || h.Found(prog.Name) {
				continue
			}
			seen[prog.Name] = true
			if prog.Package == "" {
				preconditions = append(preconditions, prog.Name)
				continue
			}
			if !contains(pkgs, prog.Package) {
				pkgs = append(pkgs, prog.Package)
			}
		}
	}
	sort.Strings(pkgs)
	sort.Strings(preconditions)
	return pkgs, preconditions
}

// Ensure installs the packages of the paths' programs that are missing and
// fails, naming them, when a precondition is missing or the install fails.
func (h Host) Ensure(ctx context.Context, log io.Writer, paths ...Path) error {
	pkgs, pre := h.Missing(paths...)
	if len(pre) > 0 {
		return fmt.Errorf("%s: not found in PATH; install it first (the project needs Go and a Debian base system)", strings.Join(pre, ", "))
	}
	if len(pkgs) == 0 {
		return nil
	}
	var names []string
	for _, p := range paths {
		names = append(names, p.Name)
	}
	fmt.Fprintf(log, "installing Debian packages for %s: %s\n", strings.Join(names, ", "), strings.Join(pkgs, " "))
	if err := h.Install(ctx, log, pkgs); err != nil {
		return err
	}
	if pkgs, _ := h.Missing(paths...); len(pkgs) > 0 {
		return fmt.Errorf("installed %s, yet their programs are still missing", strings.Join(pkgs, " "))
	}
	return nil
}

// Ensure is Machine.Ensure.
func Ensure(ctx context.Context, log io.Writer, paths ...Path) error {
	return Machine.Ensure(ctx, log, paths...)
}

// JournalPath is where aptInstall records what it installed.
var JournalPath = "/var/lib/kubelet-compat/host-packages.log"

// policyRCD refuses every service start while apt-get runs (Debian's
// invoke-rc.d and deb-systemd-invoke ask it, exit 101: action forbidden).
const policyRCD = "/usr/sbin/policy-rc.d"

// aptInstall installs pkgs without starting a service (a policy-rc.d of
// its own, only where none exists) and without leaving one enabled (the
// systemd enablement links that appeared during the install are removed),
// updating the package lists only when the first try fails.
func aptInstall(ctx context.Context, log io.Writer, pkgs []string) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("missing Debian packages %s: install them as root (apt-get install %s)", strings.Join(pkgs, " "), strings.Join(pkgs, " "))
	}
	if _, err := os.Lstat(policyRCD); os.IsNotExist(err) {
		if err := os.WriteFile(policyRCD, []byte("#!/bin/sh\n# kubelet-compat: no service starts while it installs packages\nexit 101\n"), 0o755); err != nil {
			return err
		}
		defer os.Remove(policyRCD)
	}
	before := wantsLinks()
	env := []string{"DEBIAN_FRONTEND=noninteractive"}
	install := &exec.Cmd{Name: "apt-get", Args: append([]string{"install", "-y", "--no-install-recommends"}, pkgs...), Env: env, Log: log}
	err := install.Run(ctx)
	if err != nil {
		if uerr := (&exec.Cmd{Name: "apt-get", Args: []string{"update"}, Env: env, Log: log}).Run(ctx); uerr != nil {
			return fmt.Errorf("apt-get update: %w", uerr)
		}
		err = install.Run(ctx)
	}
	var disabled []string
	for l := range wantsLinks() {
		if !before[l] {
			if os.Remove(l) == nil {
				disabled = append(disabled, l)
			}
		}
	}
	sort.Strings(disabled)
	if len(disabled) > 0 {
		fmt.Fprintf(log, "removed the enablement links the packages created: %s\n", strings.Join(disabled, " "))
	}
	journal(pkgs, disabled, err)
	if err != nil {
		return fmt.Errorf("installing %s: %w", strings.Join(pkgs, " "), err)
	}
	return nil
}

// wantsLinks are systemd's enablement links.
func wantsLinks() map[string]bool {
	links := map[string]bool{}
	for _, glob := range []string{"/etc/systemd/system/*.wants/*", "/etc/systemd/system/*.requires/*"} {
		m, _ := filepath.Glob(glob)
		for _, l := range m {
			links[l] = true
		}
	}
	return links
}

func journal(pkgs, disabled []string, err error) {
	if os.MkdirAll(filepath.Dir(JournalPath), 0o755) != nil {
		return
	}
	f, ferr := os.OpenFile(JournalPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if ferr != nil {
		return
	}
	defer f.Close()
	result := "ok"
	if err != nil {
		result = "failed: " + err.Error()
	}
	fmt.Fprintf(f, "%s installed %s; removed enablement links [%s]; %s\n", time.Now().UTC().Format(time.RFC3339),
		strings.Join(pkgs, " "), strings.Join(disabled, " "), result)
}

// isDataFile says whether an absolute Program name is a file a build reads
// rather than runs (a C header), which is found without an execute bit.
func isDataFile(name string) bool { return strings.HasSuffix(name, ".h") }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
