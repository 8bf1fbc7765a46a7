package rpm

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"text/template"
)

// Sources holds what the packages are made of besides the binaries:
// templates/*.spec.tmpl and files/*. Config.Sources defaults to it; tests
// give a changed copy.
//
//go:embed templates/*.spec.tmpl files
var Sources embed.FS

// Names of the spec templates under templates/.
const (
	versionedTemplate   = "kubernetes-versioned.spec.tmpl"
	unversionedTemplate = "kubernetes-unversioned.spec.tmpl"
)

// The files under files/ that each kind of package ships, in the order of
// the specs' SourceN (the binaries and the kubectl completion of the
// versioned packages come from the harness output).
var (
	unversionedFiles = []string{
		"kubernetes-select", "kubelet.service", "kubelet.sysconfig",
		"kubelet-compat-sweep.service", "kubelet-compat-sweep.timer", "90-kubelet-compat.preset",
	}
	versionedFiles = []string{"10-kubeadm.conf"}
)

// VersionedSpec fills kubernetes-versioned.spec.tmpl.
type VersionedSpec struct {
	Version string // e.g. 1.21.14
	Release string // e.g. 1; %{?dist} is appended by the spec
	Arch    string // rpm arch of the binaries, e.g. x86_64
}

// UnversionedSpec fills kubernetes-unversioned.spec.tmpl.
type UnversionedSpec struct {
	Version string
	Release string
	Links   []Link
}

// RenderVersioned returns the spec of kubernetes-<ver>-{node,kubeadm,client}
// from the embedded template.
func RenderVersioned(s VersionedSpec) ([]byte, error) { return renderVersioned(Sources, s) }

func renderVersioned(sources fs.FS, s VersionedSpec) ([]byte, error) {
	if err := CheckVersion(s.Version); err != nil {
		return nil, err
	}
	if s.Release == "" || s.Arch == "" {
		return nil, fmt.Errorf("versioned spec %s: release and arch must be set", s.Version)
	}
	return render(sources, versionedTemplate, s)
}

// RenderUnversioned returns the spec of kubernetes-unversioned from the
// embedded template.
func RenderUnversioned(s UnversionedSpec) ([]byte, error) { return renderUnversioned(Sources, s) }

func renderUnversioned(sources fs.FS, s UnversionedSpec) ([]byte, error) {
	if s.Version == "" || s.Release == "" || len(s.Links) == 0 {
		return nil, fmt.Errorf("unversioned spec: version, release and links must be set")
	}
	return render(sources, unversionedTemplate, s)
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

// shippedFile returns one of the files under files/ in sources.
func shippedFile(sources fs.FS, name string) ([]byte, error) {
	b, err := fs.ReadFile(sources, "files/"+name)
	if err != nil {
		return nil, fmt.Errorf("shipped file %s: %w", name, err)
	}
	return b, nil
}
