package runtimebuild

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubelet-compat/kubelet-compat/pkg/versions"
)

func mustComponent(t *testing.T, req string) Component {
	t.Helper()
	c, err := ParseRequest(req)
	assert.NilError(t, err)
	return c
}

func TestParseRequest(t *testing.T) {
	for _, tc := range []struct {
		in, wantID, wantErr string
	}{
		{in: "containerd@1.7.35", wantID: "containerd-1.7.35"},
		// 2.4.2 as released, beside the project's patched 2.4.2.
		{in: "containerd@v2.4.2", wantID: "containerd-2.4.2"},
		{in: "containerd@2.4.2+compat.1", wantID: "containerd-2.4.2+compat.1"},
		// The newest containerd is the project's: the patched 2.4.2.
		{in: "containerd", wantID: "containerd-2.4.2+compat.1"},
		{in: "containerd@2.0.14+compat.1", wantID: "containerd-2.0.14+compat.1"},
		{in: "containerd@2.1.9+compat.1", wantID: "containerd-2.1.9+compat.1"},
		{in: "containerd@2.2.10+compat.1", wantID: "containerd-2.2.10+compat.1"},
		{in: "containerd@2.3.7+compat.1", wantID: "containerd-2.3.7+compat.1"},
		// 2.0-2.3 are built only with the fixes.
		{in: "containerd@2.3.7", wantErr: `component "containerd@2.3.7" is not known`},
		{in: " runc@1.5.3 ", wantID: "runc-1.5.3"},
		{in: "crictl@1.34.0", wantID: "crictl-1.34.0"},
		{in: "cni-plugins@1.10.0", wantID: "cni-plugins-1.10.0"},
		{in: "containerd@1.7", wantErr: `component "containerd@1.7": version "1.7": want MAJOR.MINOR.PATCH`},
		{in: "containerd@1.7.36+compat.1", wantID: "containerd-1.7.36+compat.1"},
		{in: "containerd@v1.7.36+compat.1", wantID: "containerd-1.7.36+compat.1"},
		// 1.7.36 is built only with the fixes: the name must say so.
		{in: "containerd@1.7.36", wantErr: `component "containerd@1.7.36" is not known (known: cni-plugins@1.10.0, containerd@1.7.35, containerd@1.7.36+compat.1, containerd@2.0.14+compat.1, containerd@2.1.9+compat.1, containerd@2.2.10+compat.1, containerd@2.3.7+compat.1, containerd@2.4.2, containerd@2.4.2+compat.1, `},
		{in: "containerd@1.7.36+compat.2", wantErr: `component "containerd@1.7.36+compat.2" is not known`},
		{in: "docker@1.0.0", wantErr: `component "docker@1.0.0" is not known`},
		{in: "@1.0.0", wantErr: `component "@1.0.0": want NAME@VERSION`},
		{in: "runc@1.5.3-rc.1", wantErr: `want MAJOR.MINOR.PATCH`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			c, err := ParseRequest(tc.in)
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			assert.NilError(t, err)
			assert.Check(t, is.Equal(c.ID(), tc.wantID))
		})
	}
}

func TestParseRequests(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "containerd@1.7.35,runc@1.5.3", want: []string{"containerd@1.7.35", "runc@1.5.3"}},
		{in: "runc@1.5.3,runc@v1.5.3,", want: []string{"runc@1.5.3"}},
		{in: "all", want: []string{"containerd@2.4.2+compat.1", "containerd@2.4.2", "containerd@2.3.7+compat.1", "containerd@2.2.10+compat.1", "containerd@2.1.9+compat.1", "containerd@2.0.14+compat.1", "containerd@1.7.36+compat.1", "containerd@1.7.35", "runc@1.5.3", "crictl@1.37.0", "crictl@1.34.0", "cni-plugins@1.10.0"}},
		{in: "containerd@1.7.35,containerd@1.7.36+compat.1", want: []string{"containerd@1.7.35", "containerd@1.7.36+compat.1"}},
		{in: "", wantErr: "no components given"},
		{in: "runc@1.5.3,nope@1.0.0", wantErr: `"nope@1.0.0" is not known`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseRequests(tc.in)
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			assert.NilError(t, err)
			var names []string
			for _, c := range got {
				names = append(names, c.String())
			}
			assert.DeepEqual(t, names, tc.want)
		})
	}
}

func TestGoToolchain(t *testing.T) {
	for _, tc := range []struct {
		name, gomod, want, wantErr string
	}{
		{name: "go line with patch", gomod: "module x\n\ngo 1.25.0\n", want: "1.25.0"},
		{name: "toolchain line wins", gomod: "module x\ngo 1.24\ntoolchain go1.24.6\n", want: "1.24.6"},
		{name: "1.21+ without patch is .0", gomod: "module x\ngo 1.22\n", want: "1.22.0"},
		{name: "before 1.21 without patch stays", gomod: "module x\ngo 1.20\n", want: "1.20"},
		{name: "comment ignored", gomod: "module x\ngo 1.26.6 // min\n", want: "1.26.6"},
		{name: "toolchain default means the go line", gomod: "module x\ngo 1.25.1\ntoolchain default\n", want: "1.25.1"},
		{name: "no go line", gomod: "module x\n", wantErr: "go.mod has no go line"},
		{name: "not a release", gomod: "module x\ngo 1.26rc1\n", wantErr: `go.mod asks for go "1.26rc1": not a release version`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := GoToolchain([]byte(tc.gomod))
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			assert.NilError(t, err)
			assert.Check(t, is.Equal(got, tc.want))
		})
	}
}

func TestBuildArgs(t *testing.T) {
	for _, tc := range []struct {
		req, binary string
		want        []string
		wantEnv     string
	}{
		{req: "containerd@1.7.35", binary: "containerd", wantEnv: "CGO_ENABLED=0", want: []string{"build", "-trimpath", "-buildvcs=false", "-tags", "urfave_cli_no_docs",
			"-ldflags=-X github.com/containerd/containerd/version.Version=v1.7.35 -X github.com/containerd/containerd/version.Revision=h1:7AU2T1qI2OdNBmKkreWZ7kASHUNFItN5Hgejd9sY938= -X github.com/containerd/containerd/version.Package=github.com/containerd/containerd -s -w -buildid=",
			"-o", "/o/containerd", "github.com/containerd/containerd/cmd/containerd"}},
		{req: "containerd@1.7.36+compat.1", binary: "containerd", wantEnv: "CGO_ENABLED=0", want: []string{"build", "-trimpath", "-buildvcs=false", "-tags", "urfave_cli_no_docs",
			"-ldflags=-X github.com/containerd/containerd/version.Version=v1.7.36+compat.1 -X github.com/containerd/containerd/version.Revision=h1:HyMsOG5kmp1LQsGzqwI6Ts06T4VpYZbszfDZYB0bW5w= -X github.com/containerd/containerd/version.Package=github.com/containerd/containerd -s -w -buildid=",
			"-o", "/o/containerd", "github.com/containerd/containerd/cmd/containerd"}},
		{req: "containerd@2.4.2", binary: "containerd-shim-runc-v2", wantEnv: "CGO_ENABLED=0", want: []string{"build", "-trimpath", "-buildvcs=false", "-tags", "urfave_cli_no_docs no_grpc",
			"-ldflags=-X github.com/containerd/containerd/v2/version.Version=v2.4.2 -X github.com/containerd/containerd/v2/version.Revision=h1:p6Qg+xbEz8lvwdhHDx0U469xENvp4LgGBx+E7djXkGw= -X github.com/containerd/containerd/v2/version.Package=github.com/containerd/containerd/v2 -s -w -buildid=",
			"-o", "/o/containerd-shim-runc-v2", "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"}},
		{req: "containerd@2.0.14+compat.1", binary: "containerd-shim-runc-v2", wantEnv: "CGO_ENABLED=0", want: []string{"build", "-trimpath", "-buildvcs=false", "-tags", "urfave_cli_no_docs no_grpc",
			"-ldflags=-X github.com/containerd/containerd/v2/version.Version=v2.0.14+compat.1 -X github.com/containerd/containerd/v2/version.Revision=h1:f+wIN6XMP+EsDTD8eKc4aCTMxmb184p/ICs0KQYCYBg= -X github.com/containerd/containerd/v2/version.Package=github.com/containerd/containerd/v2 -s -w -buildid=",
			"-o", "/o/containerd-shim-runc-v2", "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"}},
		{req: "runc@1.5.3", binary: "runc", wantEnv: "CGO_ENABLED=1", want: []string{"build", "-trimpath", "-buildvcs=false", "-buildmode=pie", "-tags", "seccomp urfave_cli_no_docs",
			"-ldflags=-X main.gitCommit=h1:y3GUIW7J0Gxd+tCFfWR6L1YDnhHiNR1BGRx1J50+VnA= -buildid=", "-o", "/o/runc", "github.com/opencontainers/runc"}},
		{req: "crictl@1.37.0", binary: "crictl", wantEnv: "CGO_ENABLED=0", want: []string{"build", "-trimpath", "-buildvcs=false",
			"-ldflags=-X sigs.k8s.io/cri-tools/pkg/version.Version=1.37.0 -buildid=", "-o", "/o/crictl", "sigs.k8s.io/cri-tools/cmd/crictl"}},
		{req: "cni-plugins@1.10.0", binary: "host-local", wantEnv: "CGO_ENABLED=0", want: []string{"build", "-trimpath", "-buildvcs=false",
			"-ldflags=-X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=v1.10.0 -buildid=", "-o", "/o/host-local", "github.com/containernetworking/plugins/plugins/ipam/host-local"}},
	} {
		t.Run(tc.req+"/"+tc.binary, func(t *testing.T) {
			c := mustComponent(t, tc.req)
			var b *Binary
			for i := range c.Binaries {
				if c.Binaries[i].BinaryName() == tc.binary {
					b = &c.Binaries[i]
				}
			}
			assert.Assert(t, b != nil, "no binary %s", tc.binary)
			assert.DeepEqual(t, c.BuildArgs(*b, "/o/"+tc.binary), tc.want)
			assert.Check(t, is.Contains(BuildEnv(*b), tc.wantEnv))
		})
	}
}

// TestSpecsAreComplete guards the table: every component has a sum, a
// toolchain with its sum, binaries, and a stamp naming its version.
func TestSpecsAreComplete(t *testing.T) {
	ids := map[string]bool{}
	for _, c := range Components {
		t.Run(c.String(), func(t *testing.T) {
			assert.Check(t, !ids[c.ID()], "twice")
			ids[c.ID()] = true
			assert.Check(t, strings.HasPrefix(c.Sum, "h1:"))
			assert.Check(t, strings.HasPrefix(c.GoSum, "h1:"))
			_, err := versions.ParseRelease(c.Go)
			assert.Check(t, err)
			assert.Check(t, len(c.Binaries) > 0)
			if c.Name != "runc" { // runc embeds its VERSION file (main.go: //go:embed VERSION)
				assert.Check(t, is.Contains(c.LDFlags(), strings.TrimPrefix(c.Version, "v")))
			}
			assert.Check(t, is.Contains(c.LDFlags(), "-buildid="))
			for _, b := range c.Binaries {
				assert.Check(t, b.BinaryName() != "")
			}
			// A patched build names itself as one and has its series.
			assert.Check(t, (c.Build == "") == (c.Patches == ""), "build %q, series %q", c.Build, c.Patches)
			if c.Patches != "" {
				assert.Check(t, c.Name != "runc", "runc's version is embedded: it cannot say it is patched")
				assert.Check(t, is.Contains(c.LDFlags(), c.StampVersion()))
				patches, err := Series(filepath.Join("..", "..", PatchesDir), c)
				assert.Check(t, err)
				assert.Check(t, len(patches) > 0)
				// One series per minor, as hack/update-runtime-patches
				// generates it from the fixes' variants.
				v, err := versions.ParseRelease(c.Version)
				assert.Check(t, err)
				assert.Check(t, is.Equal(c.Patches, fmt.Sprintf("%s/v%d.%d", c.Name, v.Major, v.Minor)))
			}
		})
	}
}

func TestCrictlPerMinor(t *testing.T) {
	for _, tc := range []struct {
		minor int
		want  string
	}{
		{18, "v1.34.0"}, {22, "v1.34.0"}, {26, "v1.34.0"}, {34, "v1.34.0"},
		{35, "v1.37.0"}, {37, "v1.37.0"}, {38, ""},
	} {
		c, ok := Crictl(tc.minor)
		if tc.want == "" {
			assert.Check(t, !ok, "1.%d got %s", tc.minor, c.Version)
			continue
		}
		assert.Check(t, ok, "1.%d", tc.minor)
		assert.Check(t, is.Equal(c.Version, tc.want), "1.%d", tc.minor)
	}
}

// TestCrictlFor: without a served cri-tools release of the kubelet's
// minor, the newest served one stands in, and says so.
func TestCrictlFor(t *testing.T) {
	c, note := CrictlFor(37)
	assert.Check(t, is.Equal(c.Version, "v1.37.0"))
	assert.Check(t, is.Equal(note, ""))
	c, note = CrictlFor(38)
	assert.Check(t, is.Equal(c.Version, "v1.37.0"))
	assert.Check(t, is.Equal(note, "cri-tools v1.38 is not served yet: crictl v1.37.0 stands in (the CRI v1 it speaks is the one kubelet 1.38 serves)"))
}

func TestScratchGoMod(t *testing.T) {
	c := mustComponent(t, "runc@1.5.3")
	assert.Check(t, is.Equal(ScratchGoMod(c), "module kubelet-compat.local/runtime-build\n\ngo 1.25.0\n\nrequire github.com/opencontainers/runc v1.5.3\n"))
	// A patched build compiles the patched copy beside go.mod.
	c = patched(c, "compat.1", "runc/v1.5")
	assert.Check(t, is.Equal(ScratchGoMod(c), "module kubelet-compat.local/runtime-build\n\ngo 1.25.0\n\nrequire github.com/opencontainers/runc v1.5.3\n\nreplace github.com/opencontainers/runc => ./module\n"))
}

// TestPatchedNames: a patched build is named and stamped with its build
// metadata everywhere, the module it is built from keeps its version.
func TestPatchedNames(t *testing.T) {
	stock := mustComponent(t, "containerd@1.7.35")
	c := patched(stock, "compat.1", "containerd/v1.7")
	assert.Check(t, is.Equal(c.Release(), "1.7.35+compat.1"))
	assert.Check(t, is.Equal(c.StampVersion(), "v1.7.35+compat.1"))
	assert.Check(t, is.Equal(c.String(), "containerd@1.7.35+compat.1"))
	assert.Check(t, is.Equal(c.ID(), "containerd-1.7.35+compat.1"))
	assert.Check(t, is.Contains(c.LDFlags(), "-X github.com/containerd/containerd/version.Version=v1.7.35+compat.1 "))
	assert.Check(t, is.Equal(c.Module+"@"+c.Version, "github.com/containerd/containerd@v1.7.35"))
	assert.Check(t, is.Contains(c.Note, "patched: the series runtime/patches/containerd/v1.7"))
	assert.Check(t, is.Equal(stock.Release(), "1.7.35"))
	assert.Check(t, is.Equal(stock.StampVersion(), "v1.7.35"))
}

func TestDiffer(t *testing.T) {
	a := Info{Binaries: []BinaryInfo{{Name: "x", SHA256: "1"}, {Name: "y", SHA256: "2"}, {Name: "gone", SHA256: "3"}}}
	b := Info{Binaries: []BinaryInfo{{Name: "x", SHA256: "1"}, {Name: "y", SHA256: "9"}, {Name: "new", SHA256: "4"}}}
	assert.DeepEqual(t, Differ(a, b), []string{"y", "new", "gone"})
	assert.Check(t, is.Len(Differ(a, a), 0))
}
