// Package runtimecompat is the matrix of which kubelet minor runs on which
// container runtime, and the check preflight makes against the node's:
// whether the runtime serves the target kubelet and, when it does not,
// which runtime (one of pkg/runtimebuild's) to move to first.
//
// What each kubelet needs, read from the kubelet sources
// (~/.cache/kubelet-compat/src/<version>/):
//   - 1.18-1.22 speak CRI v1alpha2 only: pkg/kubelet/cri/remote/remote_runtime.go
//     (pkg/kubelet/remote/ in 1.18.19) imports k8s.io/cri-api/pkg/apis/runtime/v1alpha2
//     and no other runtime API (1.18.19, 1.20.15, 1.22.17).
//   - 1.23-1.25 try v1 and fall back to v1alpha2 when v1 is Unimplemented:
//     determineAPIVersion in pkg/kubelet/cri/remote/remote_runtime.go (1.23.17, 1.25.16).
//   - 1.26 and later speak v1 only: validateServiceConnection fails when v1
//     is Unimplemented (1.26.15); from 1.31 the client is k8s.io/cri-client,
//     whose validateServiceConnection fails on any v1 Version error
//     (k8s.io/cri-client@v0.31.14 and v0.36.1 pkg/remote_runtime.go).
//   - KEP-4033 makes the kubelet take its cgroup driver from the RuntimeConfig
//     CRI call and fail without it (runtimeConfigMinor). 1.37.2's and
//     1.38.0-beta.0's cmd/kubelet/app/server.go getCgroupDriverFromCRI still
//     fall back on Unimplemented (counting CRILosingSupport "1.38.0"), and
//     1.38.0-beta.0 ran the e2e's corpus on containerd 1.6.20, which lacks
//     the call (2026-12-07): the removal (kubernetes#136731) is not in 1.38's
//     tree.
//   - From 1.35 failCgroupV1 defaults to true (KEP-5573;
//     pkg/kubelet/apis/config/v1beta1/defaults.go: false in 1.34.12, true in
//     1.35.8): on a cgroup v1 host the kubelet refuses to start unless its
//     config sets failCgroupV1: false, whatever the runtime.
package runtimecompat

import (
	"fmt"
	"strconv"
	"strings"
)

// The CRI API versions.
const (
	V1       = "v1"
	V1alpha2 = "v1alpha2"
)

// Runtime is a node's runtime as CRI Version reports it.
type Runtime struct {
	Name, Version string
	// APIs are the CRI API versions it answered Version on; nil means not
	// probed (the matrix decides).
	APIs []string
	// RuntimeConfig says whether it answered the RuntimeConfig call; nil
	// means not probed (the matrix decides).
	RuntimeConfig *bool
}

func (r Runtime) String() string { return r.Name + " " + r.Version }

// Line is a release line of a runtime and what it serves.
type Line struct {
	Label string
	// Major and Minor select the line; Minor < 0 is the whole major,
	// MinorBelow > 0 every minor below it.
	Major, Minor, MinorBelow int
	V1, V1alpha2             bool
	// RuntimeConfig: the runtime implements the RuntimeConfig CRI call.
	RuntimeConfig bool
	// Source says where the row comes from (measured, source, release notes).
	Source string
}

// Lines are the containerd lines the matrix knows.
var Lines = []Line{
	{Label: "containerd < 1.6", Major: 1, MinorBelow: 6, V1alpha2: true,
		Source: "from containerd v1.7.35 RELEASES.md (v1.1-v1.4: v1alpha2; late v1.5 patches also v1, which the node's probe sees)"},
	{Label: "containerd 1.6", Major: 1, Minor: 6, V1: true, V1alpha2: true,
		Source: "measured: Debian 12's containerd 1.6.20 answers Version on v1 and v1alpha2 (pkg/cri real test)"},
	{Label: "containerd 1.7", Major: 1, Minor: 7, V1: true, V1alpha2: true,
		Source: "from source: containerd v1.7.35 pkg/cri/server/service.go registers runtime v1 and v1alpha2; no RuntimeConfig in pkg/cri/server"},
	{Label: "containerd 2.x", Major: 2, Minor: -1, V1: true, RuntimeConfig: true,
		Source: "from source: containerd v2.4.2 imports no runtime/v1alpha2 (RELEASES.md: not present in 2.0); internal/cri/server/runtime_config.go implements RuntimeConfig"},
}

// LineOf finds the line of a containerd version such as v1.7.35 or
// 1.6.20~ds1.
func LineOf(name, version string) (Line, bool) {
	if name != "containerd" {
		return Line{}, false
	}
	major, minor, ok := majorMinor(version)
	if !ok {
		return Line{}, false
	}
	for _, l := range Lines {
		if l.Major != major {
			continue
		}
		if l.Minor < 0 || (l.MinorBelow > 0 && minor < l.MinorBelow) || (l.MinorBelow == 0 && l.Minor == minor) {
			return l, true
		}
	}
	return Line{}, false
}

// majorMinor reads the leading MAJOR.MINOR of v1.7.35, 1.6.20~ds1, 2.4.2-1.
func majorMinor(v string) (int, int, bool) {
	v = strings.TrimPrefix(v, "v")
	end := strings.IndexFunc(v, func(r rune) bool { return r != '.' && (r < '0' || r > '9') })
	if end >= 0 {
		v = v[:end]
	}
	parts := strings.Split(v, ".")
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	return major, minor, err1 == nil && err2 == nil
}

// runtimeConfigMinor is the first minor that fails without the CRI
// RuntimeConfig call (KEP-4033): none up to 1.38 (see the package comment);
// assumed the next, and read from its tree by hack/new-minor's checklist.
const runtimeConfigMinor = 39

// Needs is what a kubelet minor needs of its runtime.
type Needs struct {
	// APIs are the CRI versions the kubelet can use (any one suffices).
	APIs []string
	// RuntimeConfig: it fails without the RuntimeConfig call (KEP-4033).
	RuntimeConfig bool
	// FailsOnCgroupV1: failCgroupV1 defaults to true (1.35+).
	FailsOnCgroupV1 bool
}

// KubeletNeeds is what kubelet 1.<minor> needs; see the package comment.
func KubeletNeeds(minor int) Needs {
	n := Needs{RuntimeConfig: minor >= runtimeConfigMinor, FailsOnCgroupV1: minor >= 35}
	switch {
	case minor <= 22:
		n.APIs = []string{V1alpha2}
	case minor <= 25:
		n.APIs = []string{V1, V1alpha2}
	default:
		n.APIs = []string{V1}
	}
	return n
}

// problem says why the runtime (serving apis, with or without
// RuntimeConfig) cannot run kubelet 1.<minor>, or "".
func problem(minor int, who string, apis []string, runtimeConfig bool) string {
	n := KubeletNeeds(minor)
	if !anyOf(n.APIs, apis) {
		answers := strings.Join(apis, ", ")
		if answers == "" {
			answers = "none"
		}
		switch {
		case minor <= 22:
			return fmt.Sprintf("kubelet 1.%d speaks only CRI v1alpha2, which %s does not serve (it answers %s)", minor, who, answers)
		case minor <= 25:
			return fmt.Sprintf("kubelet 1.%d needs CRI v1 or v1alpha2, which %s does not serve (it answers %s)", minor, who, answers)
		}
		return fmt.Sprintf("kubelet 1.%d needs CRI v1, which %s does not serve (it answers %s)", minor, who, answers)
	}
	if n.RuntimeConfig && !runtimeConfig {
		return fmt.Sprintf("kubelet 1.%d needs the CRI RuntimeConfig call (KEP-4033, not measured), which %s does not implement", minor, who)
	}
	return ""
}

func anyOf(want, have []string) bool {
	for _, w := range want {
		for _, h := range have {
			if w == h {
				return true
			}
		}
	}
	return false
}

// lineAPIs are the APIs a line serves.
func lineAPIs(l Line) []string {
	var apis []string
	if l.V1 {
		apis = append(apis, V1)
	}
	if l.V1alpha2 {
		apis = append(apis, V1alpha2)
	}
	return apis
}

// Serves says whether a line runs kubelet 1.<minor>, and if not why.
func (l Line) Serves(minor int) (bool, string) {
	p := problem(minor, l.Label, lineAPIs(l), l.RuntimeConfig)
	return p == "", p
}

// KillsShimsWithoutProcesses says whether containerd name@version, at its
// start, kills a running shim whose task reports no process and whose
// sandbox its own store does not hold, as leaked: containerd 1.7 and later
// (runtime/v2/shim_load.go, "cleaning leaked shim process", containerd
// #6866). Every sandbox containerd 1.6 started is outside that store, and
// a container's task is never in it; so before such a containerd starts
// on a node, no running task may report no process
// (pkg/taskcgroups).
func KillsShimsWithoutProcesses(name, version string) bool {
	major, minor, ok := majorMinor(version)
	return name == "containerd" && ok && (major > 1 || major == 1 && minor >= 7)
}
