// Package runtimebuild builds the container runtime a node needs next to
// the kubelet (containerd with its runc shim and ctr, runc, crictl, the
// CNI plugins) from the Go module proxy: each project at a recorded module
// sum, with the Go toolchain its go.mod names (pkg/toolchain), stamped with
// the version variables its own Makefile sets, -trimpath and an empty build
// ID so that a rebuild gives the same bytes. The specs below say, per
// component, what its Makefile or release script does and where this build
// deviates from it. A patched component (containerd@1.7.36+compat.1) is
// built from its module's source with this project's patch series applied
// (patches.go), and says so in its version.
package runtimebuild

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/versions"
)

// Binary is one program of a component.
type Binary struct {
	// Name is the file written (the base name of Package unless set).
	Name string
	// Package is the main package, relative to the component's module.
	Package string
	// CGO builds with cgo (runc: libseccomp); everything else is static
	// with CGO_ENABLED=0.
	CGO bool
	// Tags are the build tags.
	Tags []string
	// BuildMode is passed as -buildmode when set (runc: pie).
	BuildMode string
	// VersionArgs and VersionEnv make the binary print its version; the
	// output must contain the component's version.
	VersionArgs []string
	VersionEnv  []string
}

// Component is one project at one version.
type Component struct {
	// Name is what -components names (containerd, runc, crictl, cni-plugins).
	Name string
	// Module and Version are what the proxy serves; Sum is the module's h1:
	// sum, checked after the download.
	Module, Version, Sum string
	// Build is the semver build metadata of a patched build (compat.1):
	// the component is NAME@<version>+<build> and its binaries report
	// v<version>+<build>. Bump its number when the series changes what the
	// binaries do.
	Build string
	// Patches is the patch series applied to the module's source before
	// the build, a directory under PatchesDir (containerd/v1.7); "" builds
	// the module as released.
	Patches string
	// Go is the toolchain the module's go.mod names (its toolchain line,
	// else its go line); GoSum is the toolchain module's h1: sum.
	Go, GoSum string
	// Stamp returns the -X flags the project's own build sets, given the
	// version and the revision (see Revision).
	Stamp func(c Component) []string
	// Strip adds -s -w, as the project's default build does.
	Strip    bool
	Binaries []Binary
	// Note says where this build differs from the project's own.
	Note string
}

// Revision is what the builds stamp where a project stamps its git commit:
// the proxy's .info carries no commit (no Origin), so the module's h1: sum,
// which names the source bytes exactly and which the checksum database
// vouches for, stands in for it.
func (c Component) Revision() string { return c.Sum }

// Release is the version without v, with the build metadata of a patched
// build: 1.7.35, 1.7.36+compat.1. The packages and runtime-select name
// the component's versions so.
func (c Component) Release() string {
	r := strings.TrimPrefix(c.Version, "v")
	if c.Build != "" {
		r += "+" + c.Build
	}
	return r
}

// StampVersion is the version the binaries report: v1.7.35,
// v1.7.36+compat.1.
func (c Component) StampVersion() string { return "v" + c.Release() }

// ID is <name>-<release>, the output directory's name.
func (c Component) ID() string { return c.Name + "-" + c.Release() }

// String is name@release.
func (c Component) String() string { return c.Name + "@" + c.Release() }

// LDFlags is the -ldflags value of a binary: the project's stamps, its
// stripping, and an empty build ID (the link is reproducible without it
// too; an empty one makes that explicit).
func (c Component) LDFlags() string {
	flags := append([]string{}, c.Stamp(c)...)
	if c.Strip {
		flags = append(flags, "-s", "-w")
	}
	flags = append(flags, "-buildid=")
	return strings.Join(flags, " ")
}

// BuildArgs are the arguments of `go build` for b, writing to out.
func (c Component) BuildArgs(b Binary, out string) []string {
	args := []string{"build", "-trimpath", "-buildvcs=false"}
	if b.BuildMode != "" {
		args = append(args, "-buildmode="+b.BuildMode)
	}
	if len(b.Tags) > 0 {
		args = append(args, "-tags", strings.Join(b.Tags, " "))
	}
	return append(args, "-ldflags="+c.LDFlags(), "-o", out, c.ImportPath(b))
}

// ImportPath is b's main package.
func (c Component) ImportPath(b Binary) string {
	if b.Package == "" {
		return c.Module
	}
	return c.Module + "/" + b.Package
}

// BinaryName is b's file name.
func (b Binary) BinaryName() string {
	if b.Name != "" {
		return b.Name
	}
	return b.Package[strings.LastIndex(b.Package, "/")+1:]
}

func containerdStamp(pkg string) func(Component) []string {
	// Makefile: GO_LDFLAGS=-ldflags '-X $(PKG)/version.Version=$(VERSION)
	// -X $(PKG)/version.Revision=$(REVISION) -X $(PKG)/version.Package=$(PACKAGE) ...'
	return func(c Component) []string {
		return []string{"-X", pkg + "/version.Version=" + c.StampVersion(), "-X", pkg + "/version.Revision=" + c.Revision(), "-X", pkg + "/version.Package=" + pkg}
	}
}

// containerd builds containerd, its runc v2 shim and ctr as its Makefile
// does (GO_BUILDTAGS urfave_cli_no_docs; the shim with SHIM_CGO_ENABLED=0,
// and in 2.x with the shim's extra tag no_grpc; -s -w unless GODEBUG), but
// containerd and ctr with CGO_ENABLED=0 too: the btrfs snapshotter, the
// only part that needs cgo (and libbtrfs-dev), is left out.
func containerd(module, version, sum, goVersion, goSum string, shimTags []string) Component {
	tags := []string{"urfave_cli_no_docs"}
	return Component{
		Name: "containerd", Module: module, Version: version, Sum: sum, Go: goVersion, GoSum: goSum,
		Stamp: containerdStamp(module), Strip: true,
		Binaries: []Binary{
			{Package: "cmd/containerd", Tags: tags, VersionArgs: []string{"--version"}},
			{Package: "cmd/containerd-shim-runc-v2", Tags: append(append([]string{}, tags...), shimTags...), VersionArgs: []string{"-v"}},
			{Package: "cmd/ctr", Tags: tags, VersionArgs: []string{"--version"}},
		},
		Note: "CGO_ENABLED=0 for all three binaries: no btrfs snapshotter (upstream's release links containerd with cgo)",
	}
}

// patched is c built from its module's source with the series in
// PatchesDir/<series> applied, as <release>+<build>.
func patched(c Component, build, series string) Component {
	c.Build, c.Patches = build, series
	c.Note += "; patched: the series " + PatchesDir + "/" + series
	return c
}

// containerd242 is built as released and, as the project's 2.4, patched.
var containerd242 = containerd("github.com/containerd/containerd/v2", "v2.4.2", "h1:p6Qg+xbEz8lvwdhHDx0U469xENvp4LgGBx+E7djXkGw=",
	"1.26.6", "h1:owmNw4SPM9h46FGOeGJVUWzFEEDSmO6g7gAtWoXp28s=", []string{"no_grpc"})

// Components are the buildable components, by name, newest first (a
// patched build before the stock one it is compared with). The sums are
// what the proxy served (go mod download -json) when they were added.
var Components = []Component{
	// The project's containerds (docs/runtime.md), one per minor of the
	// road 1.7 -> 2.0 -> ... -> 2.4, the newest release of each the proxy
	// serves, each with the fixes of runtime/patches/containerd/fixes that
	// upstream lacks there; 2.4.2 and 1.7.35 stay beside them as released,
	// to compare with.
	patched(containerd242, "compat.1", "containerd/v2.4"),
	containerd242,
	patched(containerd("github.com/containerd/containerd/v2", "v2.3.7", "h1:7PGbgAVKE4ieQjFPv7+kwAv7f9dCtRpExZwjExHD/Fk=",
		"1.26.8", "h1:ZOmGe1OnfREDMIdb1Qi4G9JSuDPBLGExZMQ4nis1RXM=", []string{"no_grpc"}), "compat.1", "containerd/v2.3"),
	patched(containerd("github.com/containerd/containerd/v2", "v2.2.10", "h1:sZ70S6CLnQHa9tu7xTRJAbJUBl57FqdYYRb7Fh4u73A=",
		"1.25.0", "h1:wVC9wx2XOcP5gHiN8ZzfyTfjlrDLSS7Hu1wjI01n68U=", []string{"no_grpc"}), "compat.1", "containerd/v2.2"),
	patched(containerd("github.com/containerd/containerd/v2", "v2.1.9", "h1:lOQQ3qVEtauZCHKh8S2Xph5fGXFX2uZxMHmaslOZtW0=",
		"1.24.2", "h1:R9IIB2RUnzzL1V20iFM8ThvETQpC28HLmNVkchhyjb0=", []string{"no_grpc"}), "compat.1", "containerd/v2.1"),
	patched(containerd("github.com/containerd/containerd/v2", "v2.0.14", "h1:f+wIN6XMP+EsDTD8eKc4aCTMxmb184p/ICs0KQYCYBg=",
		"1.23.0", "h1:dJ4WHShePJ10jZAlYVrNhSlHddBaYNLcvYjmswtQYLg=", []string{"no_grpc"}), "compat.1", "containerd/v2.0"),
	patched(containerd("github.com/containerd/containerd", "v1.7.36", "h1:HyMsOG5kmp1LQsGzqwI6Ts06T4VpYZbszfDZYB0bW5w=",
		"1.25.0", "h1:wVC9wx2XOcP5gHiN8ZzfyTfjlrDLSS7Hu1wjI01n68U=", nil), "compat.1", "containerd/v1.7"),
	containerd("github.com/containerd/containerd", "v1.7.35", "h1:7AU2T1qI2OdNBmKkreWZ7kASHUNFItN5Hgejd9sY938=",
		"1.25.0", "h1:wVC9wx2XOcP5gHiN8ZzfyTfjlrDLSS7Hu1wjI01n68U=", nil),
	{
		// Makefile: BUILDTAGS seccomp urfave_cli_no_docs libpathrs; the
		// default target is a dynamic PIE with cgo; LDFLAGS_COMMON
		// -X main.gitCommit=$(COMMIT); main.version is embedded from VERSION.
		Name: "runc", Module: "github.com/opencontainers/runc", Version: "v1.5.3", Sum: "h1:y3GUIW7J0Gxd+tCFfWR6L1YDnhHiNR1BGRx1J50+VnA=",
		Go: "1.25.0", GoSum: "h1:wVC9wx2XOcP5gHiN8ZzfyTfjlrDLSS7Hu1wjI01n68U=",
		Stamp:    func(c Component) []string { return []string{"-X", "main.gitCommit=" + c.Revision()} },
		Binaries: []Binary{{Name: "runc", Package: "", CGO: true, Tags: []string{"seccomp", "urfave_cli_no_docs"}, BuildMode: "pie", VersionArgs: []string{"--version"}}},
		Note:     "without the libpathrs tag (libpathrs, a Rust library, is not in Debian 12): runc uses its pure-Go pathrs-lite",
	},
	crictl("v1.37.0", "h1:BmTImEoTX3KPXCLwmIU9mfCC8umUqF4R8WibY9eVU9Y=", "1.26.6", "h1:owmNw4SPM9h46FGOeGJVUWzFEEDSmO6g7gAtWoXp28s="),
	crictl("v1.34.0", "h1:KqL9EJ+WgHtz1HR1exezm91n+o8O2uMLs/eHzHJHAWw=", "1.24.1", "h1:+AbJFFR/Yl0P7OUo47KYyCkJGQwVW2QsKjfJalHZRnM="),
	{
		// build_linux.sh: go build per plugin dir; the release stamps
		// pkg/utils/buildversion.BuildVersion (printed as
		// "CNI <plugin> plugin <version>").
		Name: "cni-plugins", Module: "github.com/containernetworking/plugins", Version: "v1.10.0", Sum: "h1:4lwzpgsn5NdIneXrag/EEfKzhNSriJc1zTxZxfdfPLQ=",
		Go: "1.26.8", GoSum: "h1:ZOmGe1OnfREDMIdb1Qi4G9JSuDPBLGExZMQ4nis1RXM=",
		Stamp: func(c Component) []string {
			return []string{"-X", "github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=" + c.Version}
		},
		Binaries: []Binary{cni("plugins/main/bridge"), cni("plugins/ipam/host-local"), cni("plugins/main/loopback"), cni("plugins/meta/portmap")},
		Note:     "only bridge, host-local, loopback and portmap",
	},
}

// cni plugins print "CNI <name> plugin <version>" when run without
// CNI_COMMAND set to a command.
func cni(pkg string) Binary { return Binary{Package: pkg} }

// crictl as cri-tools' Makefile builds it: CGO_ENABLED=0, -trimpath,
// -X sigs.k8s.io/cri-tools/pkg/version.Version=$(VERSION) with the v cut
// off (git describe | sed 's/^v//'); it builds with -mod=vendor, which a
// module zip lacks: the module graph gives the same versions.
func crictl(version, sum, goVersion, goSum string) Component {
	return Component{
		Name: "crictl", Module: "sigs.k8s.io/cri-tools", Version: version, Sum: sum, Go: goVersion, GoSum: goSum,
		Stamp: func(c Component) []string {
			return []string{"-X", "sigs.k8s.io/cri-tools/pkg/version.Version=" + strings.TrimPrefix(c.Version, "v")}
		},
		Binaries: []Binary{{Package: "cmd/crictl", VersionArgs: []string{"--version"}}},
	}
}

// ParseRequest reads "name@version" (versions.ParseRef: the version with
// or without v; a patched build's with its build metadata,
// containerd@1.7.36+compat.1) and returns the component; a bare name is
// its newest version.
func ParseRequest(s string) (Component, error) {
	name, hasVersion := strings.TrimSpace(s), strings.Contains(s, "@")
	var want versions.Version
	if hasVersion {
		ref, err := versions.ParseRef(s)
		if err != nil && !errors.Is(err, versions.ErrNotRef) {
			return Component{}, fmt.Errorf("component %q: %w", s, err)
		}
		name, want = ref.Name, ref.Version
	}
	if name == "" {
		return Component{}, fmt.Errorf("component %q: want NAME@VERSION (known: %s)", s, knownList())
	}
	for _, c := range Components {
		if c.Name != name {
			continue
		}
		if v, err := versions.ParseRelease(c.Release()); !hasVersion || (err == nil && v == want) {
			return c, nil
		}
	}
	return Component{}, fmt.Errorf("component %q is not known (known: %s)", s, knownList())
}

// ParseRequests reads a comma-separated list; "all" is every component.
func ParseRequests(s string) ([]Component, error) {
	if strings.TrimSpace(s) == "all" {
		return append([]Component{}, Components...), nil
	}
	var out []Component
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		c, err := ParseRequest(part)
		if err != nil {
			return nil, err
		}
		if !seen[c.ID()] {
			seen[c.ID()] = true
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no components given (known: %s, or all)", knownList())
	}
	return out, nil
}

func knownList() string {
	var s []string
	for _, c := range Components {
		s = append(s, c.String())
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}

// GoToolchain is the Go a module's go.mod asks for: its toolchain line
// (go1.X.Y) if any, else its go line, with .0 added to a 1.21+ line
// without a patch ("go 1.25" is released as go1.25.0).
func GoToolchain(gomod []byte) (string, error) {
	var goLine, toolchainLine string
	for _, line := range strings.Split(string(gomod), "\n") {
		f := strings.Fields(strings.TrimSpace(strings.SplitN(line, "//", 2)[0]))
		if len(f) != 2 {
			continue
		}
		switch f[0] {
		case "go":
			goLine = f[1]
		case "toolchain":
			toolchainLine = strings.TrimPrefix(f[1], "go")
		}
	}
	v := toolchainLine
	if v == "" || v == "default" {
		v = goLine
	}
	if v == "" {
		return "", fmt.Errorf("go.mod has no go line")
	}
	parts := strings.Split(v, ".")
	for _, p := range parts {
		if _, err := strconv.Atoi(p); err != nil {
			return "", fmt.Errorf("go.mod asks for go %q: not a release version", v)
		}
	}
	if len(parts) == 2 {
		if minor, _ := strconv.Atoi(parts[1]); parts[0] == "1" && minor >= 21 {
			v += ".0"
		}
	}
	return v, nil
}

// Crictl is the crictl to install next to a kubelet of minor 1.<minor>:
// the oldest served cri-tools release not older than the kubelet (cri-tools'
// README: Kubernetes >= 1.27 with cri-tools >= the same minor; crictl talks
// to the runtime over CRI v1, which every runtime of the matrix serves, so
// v1.34.0 also stands for 1.18-1.26, outside upstream's table). ok is false
// when no served release is that new.
func Crictl(minor int) (c Component, ok bool) {
	best := -1
	for i, cand := range Components {
		if cand.Name != "crictl" {
			continue
		}
		v, _ := versions.ParseRelease(cand.Version)
		if v.Minor >= minor && (best < 0 || v.Minor < mustMinor(Components[best].Version)) {
			best = i
		}
	}
	if best < 0 {
		return Component{}, false
	}
	return Components[best], true
}

// CrictlFor is the crictl to install next to a kubelet of minor 1.<minor>:
// Crictl's, or, before cri-tools publishes that minor (1.38 on its release
// day), the newest served release, with a note saying so. crictl and the
// runtime meet on CRI v1, which has not changed shape between minors.
func CrictlFor(minor int) (c Component, note string) {
	if c, ok := Crictl(minor); ok {
		return c, ""
	}
	for _, cand := range Components {
		if cand.Name == "crictl" && (c.Name == "" || mustMinor(cand.Version) > mustMinor(c.Version)) {
			c = cand
		}
	}
	return c, fmt.Sprintf("cri-tools v1.%d is not served yet: crictl %s stands in (the CRI v1 it speaks is the one kubelet 1.%d serves)", minor, c.Version, minor)
}

func mustMinor(v string) int {
	s, _ := versions.ParseRelease(v)
	return s.Minor
}
