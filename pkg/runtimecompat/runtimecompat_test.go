package runtimecompat

import (
	"strings"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/pkg/runtimebuild"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

var (
	containerd14 = Runtime{Name: "containerd", Version: "v1.4.13", APIs: []string{"v1alpha2"}}
	containerd16 = Runtime{Name: "containerd", Version: "1.6.20~ds1", APIs: []string{"v1", "v1alpha2"}}
	containerd17 = Runtime{Name: "containerd", Version: "v1.7.35", APIs: []string{"v1", "v1alpha2"}}
	containerd2  = Runtime{Name: "containerd", Version: "v2.4.2", APIs: []string{"v1"}}
	criO         = Runtime{Name: "cri-o", Version: "1.30.0", APIs: []string{"v1"}}
)

// TestRefusals are the upgrades preflight refuses, with the runtime step
// that must come first.
func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from, to int
		rt       Runtime
		wantErr  string
		wantStep string
	}{
		{name: "1.26 on a runtime without CRI v1", from: 25, to: 26, rt: containerd14,
			wantErr:  "kubelet 1.26 needs CRI v1, which containerd v1.4.13 does not serve (it answers v1alpha2): first move the runtime to containerd 1.7.36+compat.1",
			wantStep: "containerd@1.7.36+compat.1"},
		{name: "1.37 on a runtime without CRI v1 (from the matrix, no probe)", from: 36, to: 37, rt: Runtime{Name: "containerd", Version: "1.4.13"},
			wantErr:  "kubelet 1.37 needs CRI v1, which containerd 1.4.13 does not serve (it answers v1alpha2): first move the runtime to containerd 1.7.36+compat.1",
			wantStep: "containerd@1.7.36+compat.1"},
		{name: "rollback to 1.22 on containerd 2.x", from: 23, to: 22, rt: containerd2,
			wantErr:  "kubelet 1.22 speaks only CRI v1alpha2, which containerd v2.4.2 does not serve (it answers v1): first move the runtime to containerd 1.7.36+compat.1",
			wantStep: "containerd@1.7.36+compat.1"},
		{name: "1.18 on containerd 2.x", from: 18, to: 19, rt: containerd2,
			wantErr: "kubelet 1.19 speaks only CRI v1alpha2, which containerd v2.4.2 does not serve (it answers v1)", wantStep: "containerd@1.7.36+compat.1"},
		{name: "1.39 on containerd 1.7 (from KEP-4033, not measured)", from: 38, to: 39, rt: containerd17,
			wantErr:  "kubelet 1.39 needs the CRI RuntimeConfig call (KEP-4033, not measured), which containerd v1.7.35 does not implement: first move the runtime to containerd 2.0.14+compat.1",
			wantStep: "containerd@2.0.14+compat.1"},
		{name: "1.39 on a containerd 2.x that answers RuntimeConfig Unimplemented: the probe wins", from: 38, to: 39,
			rt:      Runtime{Name: "containerd", Version: "v2.4.2", APIs: []string{"v1"}, RuntimeConfig: new(bool)},
			wantErr: "kubelet 1.39 needs the CRI RuntimeConfig call (KEP-4033, not measured), which containerd v2.4.2 does not implement: the matrix says containerd 2.x serves it (from source: "},
		{name: "1.22 to 1.39: no runtime serves both", from: 22, to: 39, rt: containerd17,
			wantErr: "no runtime of the matrix serves both kubelet 1.22 and 1.39: upgrade the kubelet in steps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Check(tc.from, tc.to, tc.rt, false)
			err := v.Err()
			assert.ErrorContains(t, err, tc.wantErr)
			assert.Check(t, !strings.Contains(err.Error(), "\n"), "one line: %q", err.Error())
			assert.Check(t, is.Equal(v.Step, tc.wantStep))
		})
	}
}

func TestServed(t *testing.T) {
	for _, tc := range []struct {
		name      string
		from, to  int
		rt        Runtime
		cgroupV1  bool
		wantKnown bool
		wantNote  string
	}{
		{name: "1.18 to 1.19 on containerd 1.6.20", from: 18, to: 19, rt: containerd16, wantKnown: true},
		{name: "1.25 to 1.26 on containerd 1.6.20", from: 25, to: 26, rt: containerd16, wantKnown: true},
		{name: "1.22 to 1.23 on containerd 1.7", from: 22, to: 23, rt: containerd17, wantKnown: true},
		{name: "1.23 to 1.24 on containerd 2.x", from: 23, to: 24, rt: containerd2, wantKnown: true},
		{name: "1.36 to 1.37 on containerd 2.x", from: 36, to: 37, rt: containerd2, wantKnown: true},
		{name: "1.37 to 1.38 on containerd 2.x", from: 37, to: 38, rt: containerd2, wantKnown: true},
		{name: "1.34 to 1.35 on a cgroup v1 host", from: 34, to: 35, rt: containerd17, cgroupV1: true, wantKnown: true,
			wantNote: "kubelet 1.35 refuses to start on this cgroup v1 host unless its config sets failCgroupV1: false (KEP-5573)"},
		{name: "containerd 1.6.20 for 1.32: not what containerd lists", from: 31, to: 32, rt: containerd16, wantKnown: true,
			wantNote: "containerd's RELEASES.md (v2.4.2) lists 2.1.0+, 2.0.1+, 1.7.24+, 1.6.36+ for kubelet 1.32, not 1.6.20~ds1"},
		{name: "containerd 1.7.35 for 1.36: not what containerd lists", from: 35, to: 36, rt: containerd17, wantKnown: true,
			wantNote: "lists 2.3.0+, 2.2.0+ for kubelet 1.36, not v1.7.35"},
		{name: "--from not served is a note", from: 22, to: 23, rt: containerd2, wantKnown: true,
			wantNote: "--from: kubelet 1.22 speaks only CRI v1alpha2, which containerd v2.4.2 does not serve (it answers v1): is the running kubelet on another runtime endpoint?"},
		{name: "the matrix stands in for a probe", from: 25, to: 26, rt: Runtime{Name: "containerd", Version: "2.4.2"}, wantKnown: true,
			wantNote: "containerd 2.4.2 (serves, per the matrix, CRI v1) serves kubelet 1.25 and 1.26"},
		{name: "another runtime is not checked", from: 30, to: 31, rt: criO,
			wantNote: "cri-o 1.30.0 is not in the runtime matrix (containerd): not checked"},
		{name: "another runtime that lacks the target's CRI is not checked either", from: 18, to: 19, rt: criO,
			wantNote: "cri-o 1.30.0 is not in the runtime matrix (containerd): not checked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Check(tc.from, tc.to, tc.rt, tc.cgroupV1)
			assert.NilError(t, v.Err())
			assert.Check(t, is.Equal(v.Known, tc.wantKnown))
			assert.Check(t, is.Equal(v.Step, ""))
			if tc.wantNote != "" {
				assert.Check(t, is.Contains(strings.Join(v.Notes, "\n"), tc.wantNote))
			}
		})
	}
}

func TestRecommendedQuiet(t *testing.T) {
	for _, tc := range []struct {
		minor   int
		version string
	}{
		{32, "v1.7.35"}, {34, "v2.4.2"}, {37, "v2.4.2"}, {35, "1.7.28"}, {31, "1.6.20"},
	} {
		assert.Check(t, is.Equal(recommended(tc.minor, tc.version), ""), "1.%d %s", tc.minor, tc.version)
	}
}

// TestStepsAreBuildable: every runtime step names a component `make
// runtime` builds, of a line the matrix knows.
func TestStepsAreBuildable(t *testing.T) {
	for _, s := range Steps {
		c, err := runtimebuild.ParseRequest(s)
		assert.Check(t, err)
		assert.Check(t, is.Equal(c.String(), s))
		_, ok := LineOf(c.Name, c.Version)
		assert.Check(t, ok, "%s: no line", s)
	}
}

func TestKillsShimsWithoutProcesses(t *testing.T) {
	for _, tc := range []struct {
		name, version string
		want          bool
	}{
		{"containerd", "1.6.20", false},
		{"containerd", "1.6.20~ds1", false},
		{"containerd", "1.7.0", true},
		{"containerd", "v1.7.35", true},
		{"containerd", "2.4.2", true},
		{"cri-o", "1.30.0", false},
		{"containerd", "unknown", false},
	} {
		assert.Equal(t, KillsShimsWithoutProcesses(tc.name, tc.version), tc.want, tc.name+"@"+tc.version)
	}
}
