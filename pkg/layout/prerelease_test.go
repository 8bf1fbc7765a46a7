package layout

import (
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubelet-compat/kubelet-compat/pkg/packaging/packagingtest"
)

// debianName is what Debian allows in a package name (deb-src-control(5)):
// lower-case letters, digits, + - and ., at least two, starting with a
// letter or digit. rpm refuses a ~ in a Name ("Illegal char '~'").
var debianName = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+$`)

// TestPreReleaseNames: a pre-release of the matrix (1.38.0-rc.1) keeps its
// Kubernetes spelling in the package names and the directory, and turns
// into 1.38.0~rc.1 in the packages' Version, where rpm and dpkg order it
// before 1.38.0. A release is unchanged.
func TestPreReleaseNames(t *testing.T) {
	g, _ := Default().Group(VersionedKey)
	node := g.Packages[0]
	assert.Assert(t, node.Name == "node")
	for _, tc := range []struct {
		version, wantErr     string
		pkgVersion, nodeName string
	}{
		{version: "1.21.14", pkgVersion: "1.21.14", nodeName: "kubernetes-1.21.14-node"},
		{version: "1.38.0-beta.0", pkgVersion: "1.38.0~beta.0", nodeName: "kubernetes-1.38.0-beta.0-node"},
		{version: "1.38.0-rc.1", pkgVersion: "1.38.0~rc.1", nodeName: "kubernetes-1.38.0-rc.1-node"},
		{version: "1.38.0-alpha.12", pkgVersion: "1.38.0~alpha.12", nodeName: "kubernetes-1.38.0-alpha.12-node"},
		{version: "1.38.0~rc.1", wantErr: "invalid Kubernetes version"},
		{version: "1.38.0-rc", wantErr: "invalid Kubernetes version"},
		{version: "1.38.0-rc.01", wantErr: "invalid Kubernetes version"},
		{version: "1.38.0-gamma.1", wantErr: "invalid Kubernetes version"},
		{version: "1.38.0-rc.1+compat.1", wantErr: "invalid Kubernetes version"},
		{version: "v1.38.0-rc.1", wantErr: "invalid Kubernetes version"},
	} {
		err := CheckVersion(tc.version)
		if tc.wantErr != "" {
			assert.Check(t, is.ErrorContains(err, tc.wantErr), tc.version)
			continue
		}
		assert.Check(t, err, tc.version)
		assert.Check(t, is.Equal(PackageVersion(tc.version), tc.pkgVersion))
		name := g.PackageName(node, tc.version)
		assert.Check(t, is.Equal(name, tc.nodeName))
		assert.Check(t, debianName.MatchString(name), "%s is no Debian package name", name)
		assert.Check(t, is.Equal(g.VersionDir(tc.version), "/usr/local/kubernetes/"+tc.version))
		dir := "/usr/local/kubernetes/" + tc.version
		for _, e := range g.Entries(node, tc.version, RPM) {
			assert.Check(t, e.Path == dir || strings.HasPrefix(e.Path, dir+"/"), e.Path)
		}
	}
}

// TestPackageVersionsSortAsKubernetes: rpm and dpkg order the packages'
// Versions (with a release, a revision) as Kubernetes orders its
// versions: alpha, beta, rc, then the release.
func TestPackageVersionsSortAsKubernetes(t *testing.T) {
	packagingtest.RequireTools(t, "make rpm-deps", "rpm", "dpkg")
	ordered := []string{"1.37.2", "1.38.0-alpha.3", "1.38.0-beta.0", "1.38.0-beta.2", "1.38.0-rc.1", "1.38.0", "1.38.1"}
	for i := 1; i < len(ordered); i++ {
		older, newer := PackageVersion(ordered[i-1])+"-1", PackageVersion(ordered[i])+"-1"
		assert.Check(t, exec.Command("dpkg", "--compare-versions", older, "lt", newer).Run(), "dpkg: %s < %s", older, newer)
		out, err := exec.Command("rpm", "--eval", fmt.Sprintf("%%{lua: print(rpm.vercmp(%q, %q))}", older, newer)).Output()
		assert.NilError(t, err)
		assert.Check(t, is.Equal(strings.TrimSpace(string(out)), "-1"), "rpm: %s < %s", older, newer)
	}
}

// TestReportsVersion: the binary must name exactly the version, so the
// binaries of a pre-release do not pass for its release's, nor the other
// way round.
func TestReportsVersion(t *testing.T) {
	for _, tc := range []struct {
		output, version string
		want            bool
	}{
		{"Kubernetes v1.21.14+compat.1\n", "1.21.14", true},
		{"Kubernetes v1.38.0-beta.0+compat.1\n", "1.38.0-beta.0", true},
		{`GitVersion:"v1.38.0-rc.1", GitCommit:"abc"`, "1.38.0-rc.1", true},
		{"Kubernetes v1.38.0-beta.0+compat.1\n", "1.38.0", false},
		{"Kubernetes v1.38.0-beta.0\n", "1.38.0", false},
		{"Kubernetes v1.38.0\n", "1.38.0-beta.0", false},
		{"Kubernetes v1.38.0-beta.0\n", "1.38.0-beta.01", false},
		{"Kubernetes v1.38.0-beta.01\n", "1.38.0-beta.0", false},
	} {
		assert.Check(t, is.Equal(ReportsVersion([]byte(tc.output), tc.version), tc.want), "%q %s", tc.output, tc.version)
	}
}
