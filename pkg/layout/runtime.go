package layout

import (
	"fmt"
	"path"
)

// The package sets cmd/build-packages builds (-set).
const (
	SetKubernetes = "kubernetes"
	SetRuntime    = "runtime"
)

// Sets are the package sets, in the order the release tables list them.
var Sets = []string{SetKubernetes, SetRuntime}

// ForSet returns the description of a set, with the units in unitDir.
func ForSet(set, unitDir string) (Layout, error) {
	switch set {
	case "", SetKubernetes:
		return New(unitDir), nil
	case SetRuntime:
		return Runtime(unitDir), nil
	}
	return Layout{}, fmt.Errorf("package set %q: want %s or %s", set, SetKubernetes, SetRuntime)
}

// Paths of the runtime on the node: each component's versions side by side
// in RuntimeRoot/<component>/<version>/bin, as each Kubernetes version in
// KubeRoot/<version>; RuntimeCurrent/<component> is the selection point
// (a symlink to ../<component>/<version>, or absent: the distribution's).
const (
	RuntimeRoot            = "/usr/local/runtime"
	RuntimeCurrent         = RuntimeRoot + "/current"
	RuntimeUnversionedName = "runtime-unversioned"
	RuntimeUnversionedKey  = RuntimeUnversionedName
)

// RuntimeComponent is one component of the runtime as packaged.
type RuntimeComponent struct {
	// Name is the selection's (runtime-select NAME VERSION) and the
	// directory's under RuntimeRoot.
	Name string
	// Build is make runtime's name (pkg/runtimebuild), which -versions
	// takes (Build@version) and its output directory carries.
	Build    string
	Binaries []string
	Upstream Upstream
	Summary  string
	About    string
	Depends  []Dep
}

// RuntimeComponents are the packaged components. The binaries are the
// ones pkg/runtimebuild builds; the first one marks a version as installed
// for runtime-select (the removal guard clears its execute bits).
var RuntimeComponents = []RuntimeComponent{
	{Name: "containerd", Build: "containerd", Binaries: []string{"containerd", "containerd-shim-runc-v2", "ctr"},
		Upstream: Upstream{Name: "containerd", Homepage: "https://containerd.io", Copyright: "2015 The containerd Authors"},
		Summary:  "containerd {{.Version}} with its runc shim and ctr",
		About: `containerd, containerd-shim-runc-v2 and ctr of containerd {{.Version}},
under {{.KubeDir}}/bin. Select it with "runtime-select containerd
{{.Version}}": containerd.service then runs it (through a drop-in that
runtime-select writes); "runtime-select containerd system" goes back to the
distribution's containerd, which this package neither replaces nor changes.`},
	{Name: "runc", Build: "runc", Binaries: []string{"runc"},
		Upstream: Upstream{Name: "runc", Homepage: "https://github.com/opencontainers/runc", Copyright: "2014 Docker, Inc. and the runc authors"},
		Summary:  "runc {{.Version}}",
		About: `runc {{.Version}}, under {{.KubeDir}}/bin. Select it with "runtime-select
runc {{.Version}}": containerd and its shims then find it first in PATH.`,
		// runc is built with cgo, against Debian 12's libseccomp and glibc
		// (dpkg-shlibdeps' answer for make runtime's runc: the newest
		// symbol versions it needs). rpmbuild adds the libraries' sonames
		// itself.
		Depends: []Dep{
			{RPM: "libseccomp", Deb: "libseccomp2 (>= 2.5.0)"},
			{Deb: "libc6 (>= 2.34)"},
		}},
	{Name: "crictl", Build: "crictl", Binaries: []string{"crictl"},
		Upstream: Upstream{Name: "cri-tools", Homepage: "https://github.com/kubernetes-sigs/cri-tools", Copyright: "2016 The Kubernetes Authors"},
		Summary:  "crictl {{.Version}}",
		About: `crictl {{.Version}} (cri-tools), under {{.KubeDir}}/bin, matched to the
Kubernetes minor it serves (docs/runtime.md). Select it with
"runtime-select crictl {{.Version}}"; /usr/bin/crictl follows the selection.`},
	{Name: "cni", Build: "cni-plugins", Binaries: []string{"loopback", "bridge", "host-local", "portmap"},
		Upstream: Upstream{Name: "CNI plugins", Homepage: "https://github.com/containernetworking/plugins", Copyright: "2015 The CNI Authors"},
		Summary:  "CNI plugins {{.Version}}: bridge, host-local, loopback, portmap",
		About: `The CNI plugins bridge, host-local, loopback and portmap of
containernetworking/plugins {{.Version}}, under {{.KubeDir}}/bin. Select
them with "runtime-select cni {{.Version}}"; the runtime's CNI bin_dir
must name {{.Current}}/cni/bin to use them.`},
}

// Runtime returns the description of the runtime's packages: per
// component and version runtime-<component>-<version>, and
// runtime-unversioned with runtime-select, the selection points and
// /usr/bin/crictl.
func Runtime(unitDir string) Layout {
	l := Layout{
		Set:         SetRuntime,
		Current:     RuntimeCurrent,
		Selector:    "runtime-select",
		UnitDir:     unitDir,
		GuardScript: guardScript,
	}
	l.Groups = append(l.Groups, runtimeUnversioned())
	for _, c := range RuntimeComponents {
		l.Groups = append(l.Groups, runtimeGroup(c))
	}
	return l
}

func runtimeUnversioned() Group {
	dir := func(p string) File { return File{Path: p, Type: Dir, Mode: 0o755} }
	files := []File{dir(RuntimeRoot), dir(RuntimeCurrent)}
	for _, c := range RuntimeComponents {
		files = append(files, dir(RuntimeRoot+"/"+c.Name))
	}
	files = append(files,
		File{Path: "/usr/bin/runtime-select", Type: Regular, Mode: 0o755, Source: Source{Shipped, "runtime-select"}},
		File{Path: "/usr/bin/crictl", Type: Symlink, Target: relativeTo("/usr/bin", RuntimeCurrent+"/crictl/bin/crictl")},
	)
	return Group{
		Key:      RuntimeUnversionedKey,
		Root:     RuntimeRoot,
		Upstream: Upstream{Name: "kubelet-compat", Homepage: "https://kubernetes.io", Copyright: "2026 The kubelet-compat authors"},
		Packages: []Package{{
			Name:    RuntimeUnversionedName,
			Summary: "Selects the current version of the side-by-side container runtime packages",
			Description: `Owns {{.Current}}, where runtime-select points
current/containerd, runc, crictl and cni at an installed
runtime-<component>-<version>, or at nothing: the distribution's
containerd and runc. Also runtime-select and /usr/bin/crictl, which follows
the selection.`,
			// runtime-select is a bash script; coreutils (stat, mktemp, ln,
			// mv) and util-linux (flock) are Essential on Debian.
			Depends: []Dep{{RPM: "bash"}, {RPM: "coreutils"}, {RPM: "util-linux"}},
			Files:   files,
		}},
	}
}

func runtimeGroup(c RuntimeComponent) Group {
	var files []File
	for _, b := range c.Binaries {
		files = append(files, File{Path: "bin/" + b, Type: Regular, Mode: 0o755, Source: Source{Harness, b}})
	}
	deps := append([]Dep{{RPM: RuntimeUnversionedName, Deb: RuntimeUnversionedName}}, guardDeps...)
	deps = append(deps, c.Depends...)
	return Group{
		Key:       "runtime-" + c.Name,
		Versioned: true,
		Root:      path.Join(RuntimeRoot, c.Name),
		Prefix:    "runtime-" + c.Name + "-",
		Component: c.Build,
		Upstream:  c.Upstream,
		Description: c.Upstream.Name + ` {{.Version}} in the side-by-side runtime layout: every file under
{{.KubeDir}}.`,
		Packages: []Package{{
			Summary:     c.Summary,
			Description: c.About,
			Provides:    "runtime-" + c.Name,
			Depends:     deps,
			Files:       files,
			Guard:       &Guard{Stage: c.Name, Unselectable: "bin/" + c.Binaries[0], Whole: true},
		}},
	}
}
