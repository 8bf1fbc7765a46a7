// Package layout is the one description of the side-by-side Kubernetes
// packages (the StarlingX layout): their names, files, modes, links,
// dependencies and scripts, as data. rpm/ generates the RPM specs from it
// and deb/ the Debian control data and maintainer scripts, so the two
// formats cannot drift: what a package contains is said here once.
//
// The only differences between the formats are the ones each format's
// conventions demand, and they are data too (Format): the kubelet's
// environment file (/etc/sysconfig/kubelet, /etc/default/kubelet), the
// names of dependencies (iproute, iproute2; Debian's Essential packages
// are not named), how the sweeper's timer is enabled (a systemd preset,
// deb-systemd-helper), and the documentation Debian's policy puts under
// /usr/share/doc/<package>.
package layout

import (
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/versions"
)

// Paths on the node.
const (
	KubeRoot        = "/usr/local/kubernetes"
	CurrentDir      = KubeRoot + "/current"
	DefaultUnitDir  = "/usr/lib/systemd/system"
	PresetDir       = "/usr/lib/systemd/system-preset"
	UnversionedName = "kubernetes-unversioned"
	// DropInRel is where each version keeps the kubelet drop-in, inside stage2.
	DropInRel = "usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf"
	// CompletionRel is where each version keeps kubectl's bash completion, inside stage2.
	CompletionRel = "usr/share/bash-completion/completions/kubectl"
	// SweepTimer is the unit the unversioned package enables on install.
	SweepTimer = "kubelet-compat-sweep.timer"
)

// Format is a package format.
type Format string

const (
	RPM Format = "rpm"
	Deb Format = "deb"
)

// EnvFile is the kubelet's environment file (KUBELET_EXTRA_ARGS,
// KUBELET_COMPAT_FILE) where each format's distributions keep it, as
// upstream's kubelet packages do.
func EnvFile(f Format) string {
	if f == Deb {
		return "/etc/default/kubelet"
	}
	return "/etc/sysconfig/kubelet"
}

// Type is the type of a packaged path.
type Type int

const (
	Dir Type = iota
	Regular
	Symlink
)

func (t Type) String() string {
	switch t {
	case Dir:
		return "dir"
	case Regular:
		return "file"
	case Symlink:
		return "link"
	}
	return fmt.Sprintf("Type(%d)", int(t))
}

// SourceKind says where a regular file's content comes from.
type SourceKind int

const (
	// Shipped: a file of the repository (pkg/layout/files/<Name>).
	Shipped SourceKind = iota + 1
	// Harness: the build harness's binary <input>/<version>/<Name>.
	Harness
	// CLI: the kubelet-compat CLI.
	CLI
	// Completion: the bash completion the version's kubectl prints.
	Completion
)

// Source is where a regular file's content comes from.
type Source struct {
	Kind SourceKind
	Name string
}

// StageName is the name the source has among a build's inputs (the RPM
// spec's SourceN, the Debian build's staging).
func (s Source) StageName() string {
	switch s.Kind {
	case CLI:
		return "kubelet-compat"
	case Completion:
		return "kubectl.bash"
	}
	return s.Name
}

// File is one packaged path.
type File struct {
	// Path is absolute for the unversioned package; for a versioned one it
	// is relative to the version's directory /usr/local/kubernetes/<ver>
	// (Package.Path makes it absolute).
	Path string
	Type Type
	// Mode holds the permission bits (0755, 0644); links are 0777.
	Mode uint32
	// Target of a symlink, relative to the directory of Path.
	Target string
	// Config: the operator's file, kept on upgrade and removal
	// (%config(noreplace), a Debian conffile).
	Config bool
	Source Source
}

// Dep is one dependency, named in each format. A format whose name is
// empty does not state it: Debian's Essential packages (coreutils,
// util-linux, bash) are always installed, and its policy forbids
// depending on them without a version.
type Dep struct {
	RPM string // as rpm writes it: "iptables >= 1.4.21"
	Deb string // as dpkg writes it: "iptables (>= 1.4.21)"
	// Phase is when RPM needs it (Requires(preun)); empty: always.
	// Debian's Depends covers the maintainer scripts too.
	Phase string
	// Note is a comment written above it in the spec.
	Note string
}

// Guard is the removal guard of a versioned package (the RPM %preun, the
// Debian prerm): removing the version that Stage serves is refused, under
// the lock of kubernetes-select; once the removal goes on, the binary
// Unselectable (relative to the version's directory; empty: none) loses
// its execute bits, so that kubernetes-select refuses the version.
type Guard struct {
	Stage        string
	Unselectable string
	// Whole: current/Stage points at the version's directory itself (the
	// runtime's current/containerd -> ../containerd/<ver>), not at a
	// Stage directory inside it; Stage names the component.
	Whole bool
}

// Package is one package.
type Package struct {
	// Name: the whole name for the unversioned package; for a versioned
	// one the suffix after kubernetes-<ver>- ("node").
	Name string
	// Summary and Description may use the fields of Vars ({{.Version}},
	// {{.KubeDir}}, {{.Current}}); Description is wrapped as written.
	Summary     string
	Description string
	// Provides is a virtual package provided at the package's own
	// version ("kubernetes-node").
	Provides string
	Depends  []Dep
	Files    []File
	Guard    *Guard
	// EnableUnits are enabled on first install and started when systemd
	// runs (if enabled), stopped and disabled on removal.
	EnableUnits []string
}

// Group is the packages made by one RPM spec: they share a release (and
// a Debian revision), given by the release tables for their content.
type Group struct {
	// Key names the group in the release tables and its spec.
	Key string
	// Versioned groups are built for every Kubernetes version; the other
	// one (kubernetes-unversioned) once, architecture-independent.
	Versioned bool
	// Optional groups are built for the versions whose harness output has
	// all of their Harness binaries (the control-plane binaries are built
	// for the e2e only), and skipped for the others.
	Optional bool
	// Description of the spec's main package, which has no files.
	Description string
	Packages    []Package

	// The fields below are unset for the Kubernetes groups and set for the
	// runtime's (Runtime): a group's versions live in Root/<version>
	// (unset: KubeRoot), its versioned packages are named
	// Prefix<version>[-<name>] (unset: "kubernetes-"), and Component names
	// it in -versions (component@version) and names its input directory
	// <input>/<Component>-<version> (unset: <input>/<version>).
	Root      string
	Prefix    string
	Component string
	// Upstream is the project whose software the group ships (unset:
	// Kubernetes).
	Upstream Upstream
}

// Upstream is the project a group's binaries come from: the packages'
// homepage and Debian copyright file.
type Upstream struct {
	Name, Homepage, Copyright string
}

// Kubernetes is the upstream of the Kubernetes groups.
var Kubernetes = Upstream{Name: "Kubernetes", Homepage: "https://kubernetes.io", Copyright: "2014 The Kubernetes Authors"}

// Project returns the group's upstream.
func (g Group) Project() Upstream {
	if g.Upstream.Name == "" {
		return Kubernetes
	}
	return g.Upstream
}

// RootDir is the directory of the group's versions.
func (g Group) RootDir() string {
	if g.Root == "" {
		return KubeRoot
	}
	return g.Root
}

// VersionDir is the directory of one version of the group.
func (g Group) VersionDir(version string) string { return g.RootDir() + "/" + version }

// NamePrefix is what the names of the group's versioned packages start with.
func (g Group) NamePrefix() string {
	if g.Prefix == "" {
		return "kubernetes-"
	}
	return g.Prefix
}

// Input is the directory of the input of version: the harness output of
// a Kubernetes version, make runtime's output of a runtime component.
func (g Group) Input(inputDir, version string) string {
	if g.Component == "" {
		return filepath.Join(inputDir, version)
	}
	return filepath.Join(inputDir, g.Component+"-"+version)
}

// Layout is the description of every package.
type Layout struct {
	// Set names the packages in cmd/build-packages -set (SetKubernetes,
	// SetRuntime).
	Set     string
	UnitDir string
	// Current is the directory of the selection points, which the
	// selection tool locks (CurrentDir, RuntimeCurrent).
	Current string
	// Selector is the selection tool (kubernetes-select, runtime-select).
	Selector string
	Groups   []Group
	// GuardScript is the text of the removal guard (Guard), with the
	// fields of ScriptVars; each format wraps it in its own condition for
	// "the package is being removed, not upgraded".
	GuardScript string
}

// Unversioned returns the group built once (kubernetes-unversioned,
// runtime-unversioned).
func (l Layout) Unversioned() (Group, bool) {
	for _, g := range l.Groups {
		if !g.Versioned {
			return g, true
		}
	}
	return Group{}, false
}

// UsesCLI tells whether a package ships the kubelet-compat CLI.
func (l Layout) UsesCLI() bool {
	for _, g := range l.Groups {
		for _, s := range g.Sources() {
			if s.Kind == CLI {
				return true
			}
		}
	}
	return false
}

// Job is one version of one versioned group to build.
type Job struct {
	Group   Group
	Version string
}

// Jobs returns the versioned groups to build for versions, in order: every
// versioned group for each Kubernetes version (an optional group where
// inputDir has its binaries); for component@version, the group of that
// component.
func (l Layout) Jobs(inputDir string, vs []string) ([]Job, error) {
	var jobs []Job
	for _, v := range vs {
		component, version, isComponent := versions.SplitRef(v)
		if !isComponent {
			version, component = v, ""
		}
		found := false
		for _, g := range l.Groups {
			if !g.Versioned || g.Component != component {
				continue
			}
			found = true
			if g.Optional {
				has, err := g.HasInput(inputDir, version)
				if err != nil {
					return nil, err
				}
				if !has {
					continue
				}
			}
			jobs = append(jobs, Job{g, version})
		}
		if !found {
			return nil, fmt.Errorf("%s: no package of the %s set for it", v, l.Set)
		}
	}
	return jobs, nil
}

// Group returns the group called key.
func (l Layout) Group(key string) (Group, bool) {
	for _, g := range l.Groups {
		if g.Key == key {
			return g, true
		}
	}
	return Group{}, false
}

// Keys of the groups of New.
const (
	UnversionedKey = "kubernetes-unversioned"
	VersionedKey   = "kubernetes-versioned"
	MasterKey      = "kubernetes-master"
)

// VersionDir is /usr/local/kubernetes/<version>.
func VersionDir(version string) string { return KubeRoot + "/" + version }

// PackageName is the package's name for version (ignored for the
// unversioned group).
func (g Group) PackageName(p Package, version string) string {
	if !g.Versioned {
		return p.Name
	}
	if p.Name == "" {
		return g.NamePrefix() + version
	}
	return g.NamePrefix() + version + "-" + p.Name
}

// AbsPath returns the absolute path of f in group g for version.
func (g Group) AbsPath(f File, version string) string {
	if !g.Versioned {
		return f.Path
	}
	return path.Join(g.VersionDir(version), f.Path)
}

// HarnessBinaries returns the harness binaries the group's packages ship.
func (g Group) HarnessBinaries() []string {
	var out []string
	for _, p := range g.Packages {
		for _, f := range p.Files {
			if f.Type == Regular && f.Source.Kind == Harness {
				out = append(out, f.Source.Name)
			}
		}
	}
	return out
}

// Sources returns every regular file's source in the group, in package
// and file order, once each: the order of the RPM spec's SourceN.
func (g Group) Sources() []Source {
	var out []Source
	seen := map[Source]bool{}
	for _, p := range g.Packages {
		for _, f := range p.Files {
			if f.Type == Regular && !seen[f.Source] {
				seen[f.Source] = true
				out = append(out, f.Source)
			}
		}
	}
	return out
}

// Entry is one packaged path as both formats must install it.
type Entry struct {
	Path   string
	Type   Type
	Mode   uint32
	Target string
	Config bool
}

// Entries returns the paths package p of group g installs for version in
// format f, sorted: its files, and for a versioned package every directory
// from the version's directory down to them (each version owns its tree);
// an unversioned package owns only the directories it lists. The
// environment file is at the format's place.
func (g Group) Entries(p Package, version string, f Format) []Entry {
	byPath := map[string]Entry{}
	for _, file := range p.Files {
		abs := g.AbsPath(file, version)
		if file.Config && abs == EnvFile(RPM) {
			abs = EnvFile(f)
		}
		mode := file.Mode
		if file.Type == Symlink {
			mode = 0o777
		}
		byPath[abs] = Entry{Path: abs, Type: file.Type, Mode: mode, Target: file.Target, Config: file.Config}
		if g.Versioned {
			top := g.VersionDir(version)
			for d := path.Dir(abs); strings.HasPrefix(d, top); d = path.Dir(d) {
				if _, ok := byPath[d]; !ok {
					byPath[d] = Entry{Path: d, Type: Dir, Mode: 0o755}
				}
			}
		}
	}
	out := make([]Entry, 0, len(byPath))
	for _, e := range byPath {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Vars are the fields of the texts of the description (summaries,
// descriptions, scripts). Each format fills them its way: the RPM spec
// with its macros (%{kube_version}), Debian with the values.
type Vars struct {
	Version string // the Kubernetes version (the component's)
	KubeDir string // /usr/local/kubernetes/<ver> (the group's VersionDir)
	Current string // /usr/local/kubernetes/current (the layout's Current)
	EnvFile string // the kubelet's environment file
}

// Map returns the fields by name.
func (v Vars) Map() map[string]string {
	return map[string]string{"Version": v.Version, "KubeDir": v.KubeDir, "Current": v.Current, "EnvFile": v.EnvFile}
}

// ScriptVars fill GuardScript.
type ScriptVars struct {
	Vars
	// Removing is the shell condition, in the format's terms, that the
	// package is being removed rather than upgraded.
	Removing     string
	Stage        string
	Unselectable string
	// This is the directory current/Stage points at when this version is
	// selected; What names the version in messages ("Kubernetes 1.21.14");
	// Selector is the selection tool.
	This, What, Selector string
}

// Map returns the fields by name.
func (v ScriptVars) Map() map[string]string {
	m := v.Vars.Map()
	m["Removing"], m["Stage"], m["Unselectable"] = v.Removing, v.Stage, v.Unselectable
	m["This"], m["What"], m["Selector"] = v.This, v.What, v.Selector
	return m
}

// relativeTo returns target relative to dir; both are absolute paths.
func relativeTo(dir, target string) string {
	rel, err := filepath.Rel(dir, target)
	if err != nil {
		// Unreachable for two absolute paths; a visible marker beats a panic.
		return "INVALID-" + target
	}
	return rel
}

// Link is a symlink of the unversioned package.
type Link struct {
	Path   string // absolute path on the node
	Target string // relative to the directory of Path
}

// UnversionedLinks lists the links from the usual places into current/.
// They are relative so that they resolve the same in an image tree
// (rpm --root, dpkg --root) as on the node.
func UnversionedLinks(unitDir string) []Link {
	stage := func(n int, rel string) string { return fmt.Sprintf("%s/stage%d/%s", CurrentDir, n, rel) }
	abs := []struct{ path, target string }{
		{"/usr/bin/kubeadm", stage(1, "usr/bin/kubeadm")},
		{"/usr/bin/kubelet", stage(2, "usr/bin/kubelet")},
		{"/usr/bin/kubelet-compat", stage(2, "usr/bin/kubelet-compat")},
		{"/usr/bin/kubectl", stage(2, "usr/bin/kubectl")},
		{"/usr/share/bash-completion/completions/kubectl", stage(2, CompletionRel)},
		{path.Join(unitDir, "kubelet.service.d/10-kubeadm.conf"), stage(2, DropInRel)},
	}
	links := make([]Link, 0, len(abs))
	for _, l := range abs {
		links = append(links, Link{Path: l.path, Target: relativeTo(path.Dir(l.path), l.target)})
	}
	return links
}
