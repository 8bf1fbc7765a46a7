// Package matrix holds the versions the harness knows how to fetch and build:
// one row per Kubernetes minor (matrix.json, embedded). Adding a version means
// adding a row.
package matrix

import (
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/versions"
)

//go:embed matrix.json
var matrixJSON []byte

// Row is one Kubernetes release and what it takes to build it.
type Row struct {
	// Kubernetes is the release without the leading v, e.g. "1.18.19", or
	// a pre-release of the newest minor, e.g. "1.38.0-rc.1": the row a new
	// minor has before its final release, which then replaces it.
	Kubernetes string `json:"kubernetes"`
	// Note explains why this patch release and not a later one.
	Note string `json:"note,omitempty"`
	// Go is the toolchain to build it with, e.g. "1.13.15".
	Go string `json:"go"`
	// GoNote explains a Go that differs from what upstream used.
	GoNote string `json:"goNote,omitempty"`
	// SourceSum is the h1: sum of the k8s.io/kubernetes module zip.
	SourceSum string `json:"sourceSum"`
	// ToolchainSum is the h1: sum of golang.org/toolchain@v0.0.1-go<Go>.linux-amd64.
	ToolchainSum string `json:"toolchainSum"`
	// Stubs are module paths replaced by an empty local module: the proxy
	// does not serve them and nothing the harness builds imports them.
	Stubs []string `json:"stubs,omitempty"`
	// Overrides pin modules (module path -> version) to another version than
	// the release's own, e.g. when the release's own is not served.
	Overrides map[string]string `json:"overrides,omitempty"`
	// Build marks the versions kubelet-compat ships patches for.
	Build bool `json:"build"`
}

type file struct {
	Comment string `json:"comment,omitempty"`
	// Sets name lists of build rows: "default" is what `make` builds,
	// "ci" what CI builds and tests.
	Sets map[string][]string `json:"sets,omitempty"`
	Rows []Row               `json:"rows"`
}

// AllSet names every build row.
const AllSet = "all"

// Tag is the git tag / module version of the release, e.g. "v1.18.19".
func (r Row) Tag() string { return "v" + r.Kubernetes }

// Minor is "major.minor", e.g. "1.18".
func (r Row) Minor() string {
	parts := strings.SplitN(r.Kubernetes, ".", 3)
	return parts[0] + "." + parts[1]
}

// PreRelease is the pre-release of the row, e.g. "rc.1" for 1.38.0-rc.1, or
// "" for a release.
func (r Row) PreRelease() string {
	if i := strings.IndexByte(r.Kubernetes, '-'); i >= 0 {
		return r.Kubernetes[i+1:]
	}
	return ""
}

// StagingVersion is the version the staging modules were published under for
// this release, e.g. "v0.18.19" for 1.18.19 (and "v0.38.0-rc.1" for
// 1.38.0-rc.1).
func (r Row) StagingVersion() string {
	return "v0." + strings.SplitN(r.Kubernetes, ".", 2)[1]
}

// ModuleVersion is the version to use for the staging module path: the
// override if there is one, the release's staging version otherwise.
func (r Row) ModuleVersion(path string) string {
	if v, ok := r.Overrides[path]; ok {
		return v
	}
	return r.StagingVersion()
}

// ToolchainModule is the module that carries this row's Go toolchain.
func (r Row) ToolchainModule() string { return ToolchainModule(r.Go) }

// ToolchainModule is the module path@version of a Go release for linux/amd64.
func ToolchainModule(goVersion string) string {
	return "golang.org/toolchain@v0.0.1-go" + goVersion + ".linux-amd64"
}

var (
	goRE     = regexp.MustCompile(`^1\.[0-9]+(\.[0-9]+)?$`)
	modVerRE = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`)
)

// controlPlaneModules are the staging modules kube-controller-manager
// imports. A stub of one empties openapi-gen's inputs and breaks the build
// of the control plane every kind node image carries.
var controlPlaneModules = map[string]bool{
	"k8s.io/controller-manager":      true,
	"k8s.io/kube-controller-manager": true,
}

// IsRelease says whether s is a Kubernetes 1.x release as the matrix
// writes it: 1.18.19, or a pre-release such as 1.38.0-rc.1 (pkg/versions).
func IsRelease(s string) bool {
	v, err := versions.ParseKubernetes(s)
	return err == nil && v.Major == 1 && v.String() == s
}

// ValidSum reports whether s looks like a go.sum h1: hash (base64 SHA-256).
func ValidSum(s string) bool {
	if !strings.HasPrefix(s, "h1:") {
		return false
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "h1:"))
	return err == nil && len(b) == 32
}

// Validate checks one row on its own.
func (r Row) Validate() error {
	if !IsRelease(r.Kubernetes) {
		return fmt.Errorf("row %q: kubernetes must look like 1.18.19 (or 1.38.0-rc.1, 1.38.0-beta.0, 1.38.0-alpha.3)", r.Kubernetes)
	}
	if !goRE.MatchString(r.Go) {
		return fmt.Errorf("row %s: go %q must look like 1.13.15", r.Kubernetes, r.Go)
	}
	if !ValidSum(r.SourceSum) {
		return fmt.Errorf("row %s: sourceSum %q is not an h1: sum", r.Kubernetes, r.SourceSum)
	}
	if !ValidSum(r.ToolchainSum) {
		return fmt.Errorf("row %s: toolchainSum %q is not an h1: sum", r.Kubernetes, r.ToolchainSum)
	}
	for _, s := range r.Stubs {
		if s == "" || strings.ContainsAny(s, " \t@") || strings.Contains(s, "..") {
			return fmt.Errorf("row %s: bad stub module path %q", r.Kubernetes, s)
		}
		if controlPlaneModules[s] {
			return fmt.Errorf("row %s: %s cannot be a stub: kube-controller-manager imports it (the kind images' control plane); override it with a served patch", r.Kubernetes, s)
		}
		if _, ok := r.Overrides[s]; ok {
			return fmt.Errorf("row %s: %s is both a stub and an override", r.Kubernetes, s)
		}
	}
	for p, v := range r.Overrides {
		if p == "" || strings.ContainsAny(p, " \t@") || !modVerRE.MatchString(v) {
			return fmt.Errorf("row %s: bad override %q => %q", r.Kubernetes, p, v)
		}
	}
	return nil
}

// Parse decodes and validates a matrix document.
func Parse(data []byte) ([]Row, error) {
	f, err := parse(data)
	if err != nil {
		return nil, err
	}
	return f.Rows, nil
}

func parse(data []byte) (*file, error) {
	var f file
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("parsing matrix: %w", err)
	}
	if len(f.Rows) == 0 {
		return nil, fmt.Errorf("matrix has no rows")
	}
	for i, r := range f.Rows {
		if err := r.Validate(); err != nil {
			return nil, err
		}
		if i > 0 && !lessMinor(f.Rows[i-1].Minor(), r.Minor()) {
			return nil, fmt.Errorf("matrix rows must be one per minor in ascending order: %s after %s", r.Kubernetes, f.Rows[i-1].Kubernetes)
		}
		// A pre-release stands for a minor not yet released: every older
		// minor has its final release.
		if r.PreRelease() != "" && i != len(f.Rows)-1 {
			return nil, fmt.Errorf("matrix: pre-release %s must be the newest row (%s follows it): replace it by its final release", r.Kubernetes, f.Rows[len(f.Rows)-1].Kubernetes)
		}
	}
	for name, members := range f.Sets {
		if name == AllSet {
			return nil, fmt.Errorf("matrix set %q is implicit: every build row", AllSet)
		}
		for _, m := range members {
			r, err := lookup(f.Rows, m)
			if err != nil {
				return nil, fmt.Errorf("matrix set %q: %w", name, err)
			}
			if !r.Build {
				return nil, fmt.Errorf("matrix set %q: %s is not a build row", name, r.Kubernetes)
			}
		}
	}
	return &f, nil
}

// ExpandSets replaces the set names in names ("default", "ci", "all") by
// their members; other names are kept as they are.
func ExpandSets(names []string) ([]string, error) {
	f, err := parse(matrixJSON)
	if err != nil {
		return nil, err
	}
	return expandSets(f, names), nil
}

func expandSets(f *file, names []string) []string {
	var out []string
	for _, n := range names {
		switch members, ok := f.Sets[n]; {
		case n == AllSet:
			for _, r := range f.Rows {
				if r.Build {
					out = append(out, r.Kubernetes)
				}
			}
		case ok:
			out = append(out, members...)
		default:
			out = append(out, n)
		}
	}
	return out
}

// Releases expands the set names in names and turns minors ("1.21") into
// their rows' releases ("1.21.14"); releases are kept as they are.
func Releases(names []string) ([]string, error) {
	expanded, err := ExpandSets(names)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range expanded {
		if strings.Count(strings.TrimPrefix(n, "v"), ".") == 1 {
			row, err := Lookup(n)
			if err != nil {
				return nil, err
			}
			n = row.Kubernetes
		}
		out = append(out, n)
	}
	return out, nil
}

// Load returns the embedded matrix.
func Load() ([]Row, error) { return Parse(matrixJSON) }

// Lookup finds the row of a release ("1.18.19" or "v1.18.19") or of a minor
// ("1.18").
func Lookup(version string) (Row, error) {
	rows, err := Load()
	if err != nil {
		return Row{}, err
	}
	return lookup(rows, version)
}

func lookup(rows []Row, version string) (Row, error) {
	v := strings.TrimPrefix(strings.TrimSpace(version), "v")
	for _, r := range rows {
		if r.Kubernetes == v || r.Minor() == v {
			return r, nil
		}
	}
	return Row{}, fmt.Errorf("kubernetes %q is not in pkg/matrix/matrix.json", version)
}

// Select returns the rows named in versions (releases or minors), in matrix
// order; an empty list selects every row.
func Select(rows []Row, versions []string) ([]Row, error) {
	if len(versions) == 0 {
		return rows, nil
	}
	want := map[string]bool{}
	for _, v := range versions {
		r, err := lookup(rows, v)
		if err != nil {
			return nil, err
		}
		want[r.Kubernetes] = true
	}
	var out []Row
	for _, r := range rows {
		if want[r.Kubernetes] {
			out = append(out, r)
		}
	}
	return out, nil
}

// Build returns the rows kubelet-compat ships patches for.
func Build() ([]Row, error) {
	rows, err := Load()
	if err != nil {
		return nil, err
	}
	var out []Row
	for _, r := range rows {
		if r.Build {
			out = append(out, r)
		}
	}
	return out, nil
}

// lessMinor compares "1.9" < "1.10" numerically.
func lessMinor(a, b string) bool {
	an, _ := strconv.Atoi(strings.SplitN(a, ".", 2)[1])
	bn, _ := strconv.Atoi(strings.SplitN(b, ".", 2)[1])
	return an < bn
}
