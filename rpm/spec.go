package rpm

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"text/template"

	"github.com/kubelet-compat/kubelet-compat/pkg/layout"
)

// Templates holds templates/*.spec.tmpl, the RPM format of the packages
// that pkg/layout describes (the files both formats ship are
// pkg/layout/files). Config.Templates defaults to it; tests give a changed
// copy.
//
//go:embed templates/*.spec.tmpl
var Templates embed.FS

// Names of the spec templates under templates/.
const (
	versionedTemplate   = "kubernetes-versioned.spec.tmpl"
	unversionedTemplate = "kubernetes-unversioned.spec.tmpl"
)

// VersionedSpec fills kubernetes-versioned.spec.tmpl for one versioned
// group of the description (Group: layout.VersionedKey when empty).
type VersionedSpec struct {
	Version string // e.g. 1.21.14
	Release string // e.g. 1; %{?dist} is appended by the spec
	Arch    string // rpm arch of the binaries, e.g. x86_64
	Group   string
}

// UnversionedSpec fills kubernetes-unversioned.spec.tmpl.
type UnversionedSpec struct {
	Version string
	Release string
	// UnitDir is where the units go (layout.DefaultUnitDir when empty).
	UnitDir string
}

// RenderVersioned returns the spec of kubernetes-<ver>-{node,kubeadm,client}
// (or of another versioned group) from the embedded template and the
// default description.
func RenderVersioned(s VersionedSpec) ([]byte, error) {
	return renderVersioned(Templates, layout.Default(), s)
}

func renderVersioned(sources fs.FS, l layout.Layout, s VersionedSpec) ([]byte, error) {
	key := s.Group
	if key == "" {
		key = layout.VersionedKey
	}
	g, ok := l.Group(key)
	if !ok || !g.Versioned {
		return nil, fmt.Errorf("no versioned group %s in the description", key)
	}
	// A runtime component's version is its release, or a patched build
	// of it (1.7.36+compat.1); a Kubernetes version may be a pre-release.
	check := layout.CheckVersion
	if g.Component != "" {
		check = layout.CheckComponentVersion
	}
	if err := check(s.Version); err != nil && s.Version != placeholderVersion {
		return nil, err
	}
	if s.Release == "" || s.Arch == "" {
		return nil, fmt.Errorf("versioned spec %s: release and arch must be set", s.Version)
	}
	data, err := specData(l, g, s.Version, s.Release)
	if err != nil {
		return nil, err
	}
	data.Arch = s.Arch
	return render(sources, versionedTemplate, data)
}

// RenderUnversioned returns the spec of kubernetes-unversioned from the
// embedded template and the default description.
func RenderUnversioned(s UnversionedSpec) ([]byte, error) {
	unitDir := s.UnitDir
	if unitDir == "" {
		unitDir = layout.DefaultUnitDir
	}
	return renderUnversioned(Templates, layout.New(unitDir), s)
}

func renderUnversioned(sources fs.FS, l layout.Layout, s UnversionedSpec) ([]byte, error) {
	if s.Version == "" || s.Release == "" {
		return nil, fmt.Errorf("unversioned spec: version and release must be set")
	}
	g, ok := l.Unversioned()
	if !ok {
		return nil, fmt.Errorf("no unversioned group in the description of %s", l.Set)
	}
	data, err := specData(l, g, "", s.Release)
	if err != nil {
		return nil, err
	}
	data.Version = s.Version
	return render(sources, unversionedTemplate, data)
}

// placeholderVersion stands for the version in the spec whose digest the
// release table records.
const placeholderVersion = "@VERSION@"

// The spec's view of the description.
type spec struct {
	Version, Release, Arch string
	// PackageVersion is the Version tag: %{kube_version}, but for a
	// pre-release its layout.PackageVersion (1.38.0-rc.1: 1.38.0~rc.1),
	// since rpm allows no - there; the name and directory keep the
	// version as Kubernetes spells it.
	PackageVersion string
	// Root holds the versions, Current the selection points; MainName is
	// the spec's Name, Title and URL the upstream's; Component is empty for
	// the Kubernetes packages, else the runtime component (the runtime's
	// unversioned spec: "runtime").
	Root, Current, MainName, Title, URL, Component string
	Subs                                           string // "{node,kubeadm,client}", or the one package's name
	Description                                    string
	Sources                                        []string
	InstallDirs                                    []string
	Installs                                       []string
	Packages                                       []specPackage
}

type specPackage struct {
	Name, Summary, Description, Provides string
	Requires                             []string
	Preun                                string
	Files                                []string
	EnableUnits                          []string
}

// rpmVars are the description's fields as the spec's macros.
var rpmVars = layout.Vars{Version: "%{kube_version}", KubeDir: "%{kube_dir}", Current: "%{current}", EnvFile: layout.EnvFile(layout.RPM)}

// escapePercent makes a literal % survive rpm's macro expansion.
func escapePercent(s string) string { return strings.ReplaceAll(s, "%", "%%") }

func specData(l layout.Layout, g layout.Group, version, release string) (spec, error) {
	d := spec{Version: version, Release: release, Root: g.RootDir(), Current: l.Current,
		MainName: "kubernetes-%{kube_version}", Title: g.Project().Name, URL: g.Project().Homepage,
		PackageVersion: "%{kube_version}"}
	if v := layout.PackageVersion(version); v != version {
		d.PackageVersion = v
	}
	if l.Current == "" {
		d.Current = layout.CurrentDir
	}
	if g.Prefix != "" {
		d.MainName = strings.TrimSuffix(g.Prefix, "-")
	}
	if l.Set == layout.SetRuntime {
		d.Component = l.Set
		if g.Versioned {
			d.Component = strings.TrimPrefix(g.Key, "runtime-")
		}
	}
	vars := rpmVars
	if !g.Versioned {
		vars = layout.Vars{Current: "%{current}", EnvFile: layout.EnvFile(layout.RPM)}
	}
	expand := func(text string) (string, error) { return layout.Expand(text, vars.Map(), nil) }
	var err error
	if d.Description, err = expand(g.Description); err != nil {
		return d, err
	}
	// In the spec, the version's directory is %{kube_dir}.
	where := func(abs string) string {
		if g.Versioned {
			return "%{kube_dir}" + strings.TrimPrefix(abs, g.VersionDir(version))
		}
		return abs
	}
	sources := g.Sources()
	index := map[layout.Source]int{}
	for i, s := range sources {
		index[s] = i
		d.Sources = append(d.Sources, s.StageName())
	}
	var names []string
	dirs := map[string]bool{}
	for _, p := range g.Packages {
		names = append(names, p.Name)
		sp := specPackage{Name: p.Name, Provides: p.Provides, EnableUnits: p.EnableUnits}
		if p.Name == "" {
			// A package named after the group and version alone: a
			// subpackage with its whole name (the spec's Name, without the
			// version, is never built).
			sp.Name = "-n " + g.NamePrefix() + "%{kube_version}"
		}
		if sp.Summary, err = expand(p.Summary); err != nil {
			return d, err
		}
		if sp.Description, err = expand(p.Description); err != nil {
			return d, err
		}
		sp.Requires = specRequires(p.Depends, g.Versioned)
		if p.Guard != nil {
			if sp.Preun, err = l.GuardText(*p.Guard, vars, "[ $1 -eq 0 ]", escapePercent); err != nil {
				return d, err
			}
		}
		for _, f := range p.Files {
			abs := g.AbsPath(f, version)
			switch f.Type {
			case layout.Dir:
				dirs[where(abs)] = true
			case layout.Regular:
				dirs[where(path.Dir(abs))] = true
				d.Installs = append(d.Installs, fmt.Sprintf("install -m %04o %%{SOURCE%d} %%{buildroot}%s", f.Mode, index[f.Source], where(abs)))
			case layout.Symlink:
				dirs[where(path.Dir(abs))] = true
			}
		}
		for _, f := range p.Files {
			if f.Type == layout.Symlink {
				d.Installs = append(d.Installs, fmt.Sprintf("ln -s %s %%{buildroot}%s", f.Target, where(g.AbsPath(f, version))))
			}
		}
		for _, e := range g.Entries(p, version, layout.RPM) {
			sp.Files = append(sp.Files, filesLine(e, where(e.Path)))
		}
		d.Packages = append(d.Packages, sp)
	}
	if len(names) == 1 {
		d.Subs = names[0]
		if names[0] == "" {
			d.Subs = strings.TrimPrefix(g.NamePrefix(), "kubernetes-")
		}
	} else {
		d.Subs = "{" + strings.Join(names, ",") + "}"
	}
	d.InstallDirs = deepestDirs(dirs)
	return d, nil
}

// specRequires are a package's Requires lines (with their notes as
// comments); the unversioned package's tags are padded as its spec aligns
// them.
func specRequires(deps []layout.Dep, versioned bool) []string {
	var out []string
	for _, dep := range deps {
		if dep.RPM == "" {
			continue
		}
		if dep.Note != "" {
			out = append(out, "# "+strings.ReplaceAll(dep.Note, "\n", "\n# "))
		}
		tag := "Requires:"
		if dep.Phase != "" {
			tag = "Requires(" + dep.Phase + "):"
		}
		if !versioned {
			tag = fmt.Sprintf("%-10s", tag)
		}
		out = append(out, tag+" "+dep.RPM)
	}
	return out
}

// deepestDirs are the directories of dirs no other one is under, sorted:
// install -d makes their parents.
func deepestDirs(dirs map[string]bool) []string {
	var out []string
	for dir := range dirs {
		deepest := true
		for other := range dirs {
			if strings.HasPrefix(other, dir+"/") {
				deepest = false
				break
			}
		}
		if deepest {
			out = append(out, dir)
		}
	}
	sort.Strings(out)
	return out
}

// filesLine is the %files line of e, at spec path p; %defattr(0644,root,root,0755)
// covers the usual modes.
func filesLine(e layout.Entry, p string) string {
	switch {
	case e.Type == layout.Dir && e.Mode == 0o755:
		return "%dir " + p
	case e.Type == layout.Dir:
		return fmt.Sprintf("%%dir %%attr(%04o,root,root) %s", e.Mode, p)
	case e.Config:
		return "%config(noreplace) " + p
	case e.Type == layout.Regular && e.Mode != 0o644:
		return fmt.Sprintf("%%attr(%04o,root,root) %s", e.Mode, p)
	}
	return p
}

func render(sources fs.FS, name string, data any) ([]byte, error) {
	templates, err := template.New("").Option("missingkey=error").ParseFS(sources, "templates/*.spec.tmpl")
	if err != nil {
		return nil, fmt.Errorf("spec templates: %w", err)
	}
	var b bytes.Buffer
	if err := templates.ExecuteTemplate(&b, name, data); err != nil {
		return nil, fmt.Errorf("render %s: %w", name, err)
	}
	return b.Bytes(), nil
}
