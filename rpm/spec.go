package rpm

import (
	"bytes"
	"embed"
	"fmt"
	"text/template"
)

//go:embed templates/*.spec.tmpl
var templateFS embed.FS

//go:embed files
var filesFS embed.FS

var templates = template.Must(template.New("").Option("missingkey=error").ParseFS(templateFS, "templates/*.spec.tmpl"))

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

// RenderVersioned returns the spec of kubernetes-<ver>-{node,kubeadm,client}.
func RenderVersioned(s VersionedSpec) ([]byte, error) {
	if err := CheckVersion(s.Version); err != nil {
		return nil, err
	}
	if s.Release == "" || s.Arch == "" {
		return nil, fmt.Errorf("versioned spec %s: release and arch must be set", s.Version)
	}
	return render("kubernetes-versioned.spec.tmpl", s)
}

// RenderUnversioned returns the spec of kubernetes-unversioned.
func RenderUnversioned(s UnversionedSpec) ([]byte, error) {
	if s.Version == "" || s.Release == "" || len(s.Links) == 0 {
		return nil, fmt.Errorf("unversioned spec: version, release and links must be set")
	}
	return render("kubernetes-unversioned.spec.tmpl", s)
}

func render(name string, data any) ([]byte, error) {
	var b bytes.Buffer
	if err := templates.ExecuteTemplate(&b, name, data); err != nil {
		return nil, fmt.Errorf("render %s: %w", name, err)
	}
	return b.Bytes(), nil
}

// shippedFile returns one of the files under rpm/files.
func shippedFile(name string) ([]byte, error) {
	b, err := filesFS.ReadFile("files/" + name)
	if err != nil {
		return nil, fmt.Errorf("shipped file %s: %w", name, err)
	}
	return b, nil
}
