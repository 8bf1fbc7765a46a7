package runtimeroad

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/pkg/versions"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func step(from, to string) Step {
	return Step{From: mustRelease(from), To: mustRelease(to)}
}

func mustRelease(s string) versions.Version {
	v, err := versions.ParseRelease(s)
	if err != nil {
		panic(err)
	}
	return v
}

func TestStepCheck(t *testing.T) {
	for _, tt := range []struct {
		from, to string
		wantErr  string
	}{
		{from: "1.6.20", to: "1.7.36+compat.1"},
		{from: "1.7.35", to: "1.7.36+compat.1"},
		{from: "1.7.36+compat.1", to: "2.0.14+compat.1"},
		{from: "2.0.14", to: "2.1.9"},
		{from: "2.2.10", to: "2.3.7"},
		{from: "2.3.7", to: "2.4.2"},
		{from: "2.4.2", to: "2.4.2+compat.1"},
		{from: "1.7.35", to: "2.4.2", wantErr: "containerd 1.7.35 -> 2.4.2 skips 2.0, 2.1, 2.2, 2.3: containerd supports one minor at a time (RELEASES.md: no compatibility guarantees across minors); go through 2.0 first"},
		{from: "1.6.20", to: "2.0.14", wantErr: "skips 1.7:"},
		{from: "2.4.2", to: "2.3.7"},
		{from: "1.7.36+compat.1", to: "1.7.35"},
		{from: "2.0.14", to: "1.7.36+compat.1"},
		{from: "2.4.2", to: "2.2.10", wantErr: "containerd 2.4.2 -> 2.2.10 goes down 2 minors: roll back one minor at a time (2.3 first)"},
		{from: "1.5.18", to: "1.6.20", wantErr: "containerd 1.5.18: minor 1.5 is not on the road this project knows (1.6, 1.7, 2.0, 2.1, 2.2, 2.3, 2.4)"},
		{from: "2.4.2", to: "2.5.0", wantErr: "containerd 2.5.0: minor 2.5 is not on the road"},
	} {
		err := step(tt.from, tt.to).Check()
		if tt.wantErr == "" {
			assert.Check(t, err, "%s -> %s", tt.from, tt.to)
			continue
		}
		assert.Check(t, is.ErrorContains(err, tt.wantErr), "%s -> %s", tt.from, tt.to)
	}
}

func TestRemoved(t *testing.T) {
	inUse := []string{Prefix + "cri-registry-mirrors", Prefix + "runtime-runc-v1", "cri-api-v1alpha2", Prefix + "enable-cdi",
		Prefix + "something-new", Prefix + "runtime-runc-v1", ""}
	for _, tt := range []struct {
		from, to    string
		wantRemoved []string
	}{
		{from: "1.6.20", to: "1.7.36", wantRemoved: nil},
		{from: "1.7.36", to: "2.0.14", wantRemoved: []string{"cri-api-v1alpha2", "runtime-runc-v1"}},
		{from: "2.2.10", to: "2.3.7", wantRemoved: []string{"cri-api-v1alpha2", "runtime-runc-v1"}},
		{from: "2.3.7", to: "2.4.2", wantRemoved: []string{"cri-api-v1alpha2", "enable-cdi", "runtime-runc-v1"}},
	} {
		removed, unknown := step(tt.from, tt.to).Removed(inUse)
		var ids []string
		for _, d := range removed {
			ids = append(ids, d.ID)
		}
		assert.Check(t, is.DeepEqual(ids, tt.wantRemoved), "%s -> %s", tt.from, tt.to)
		assert.Check(t, is.DeepEqual(unknown, []string{Prefix + "something-new"}))
	}
}

// TestParseDeprecations reads ctr's table as 1.7.36's and 2.4.2's
// cmd/ctr/commands/deprecations print it (tabwriter, header "ID").
func TestParseDeprecations(t *testing.T) {
	out := "ID                                              LAST OCCURRENCE                   MESSAGE    \n" +
		"io.containerd.deprecation/cri-registry-mirrors    2026-12-07T10:00:00.123456789Z    The `mirrors` property of ... is deprecated since containerd v1.5 and will be removed in containerd v2.1. Use `config_path` instead.\n" +
		"io.containerd.deprecation/runtime-runc-v1    2026-12-07T10:00:01Z    The `io.containerd.runc.v1` runtime is deprecated\n"
	assert.DeepEqual(t, ParseDeprecations(out), []string{Prefix + "cri-registry-mirrors", Prefix + "runtime-runc-v1"})
	assert.Check(t, is.Len(ParseDeprecations(""), 0))
}

// TestDeprecationsKnown: every ID once, each with the prefix's form.
func TestDeprecationsKnown(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range Deprecations {
		assert.Check(t, !seen[d.ID], "%s twice", d.ID)
		seen[d.ID] = true
		assert.Check(t, d.What != "", d.ID)
		if d.RemovedIn != (Minor{}) {
			assert.Check(t, indexOf(d.RemovedIn) >= 0, "%s removed in %s, not a minor of the road", d.ID, d.RemovedIn)
		}
	}
}

func TestRemovesRuntimeType(t *testing.T) {
	for _, tt := range []struct {
		from, to, runtimeType string
		want                  bool
	}{
		{from: "1.7.36", to: "2.0.14", runtimeType: "io.containerd.runc.v1", want: true},
		{from: "1.7.36", to: "2.0.14", runtimeType: "io.containerd.runtime.v1.linux", want: true},
		{from: "1.7.36", to: "2.0.14", runtimeType: "io.containerd.runc.v2"},
		{from: "1.6.20", to: "1.7.36", runtimeType: "io.containerd.runc.v1"},
		{from: "1.7.36", to: "2.0.14", runtimeType: "io.containerd.kata.v2"},
	} {
		assert.Check(t, is.Equal(step(tt.from, tt.to).RemovesRuntimeType(tt.runtimeType), tt.want), "%s -> %s %s", tt.from, tt.to, tt.runtimeType)
	}
}

func TestTasksOnShimV3(t *testing.T) {
	root := t.TempDir()
	write := func(name, data string) {
		p := filepath.Join(root, filepath.FromSlash(name))
		assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		assert.NilError(t, os.WriteFile(p, []byte(data), 0o600))
	}
	r := HostRoot(root)
	got, err := TasksOnShimV3(r, TaskState)
	assert.NilError(t, err)
	assert.Check(t, is.Len(got, 0), "no task state")
	// containerd 1.7's bundles: an address file, no bootstrap.json.
	write(TaskState+"/k8s.io/c17/address", "unix:///run/containerd/s/abc")
	// containerd 2.x's: bootstrap.json, version 3 (or 2, for a shim binary
	// that answered as a v2 shim).
	write(TaskState+"/k8s.io/c20/bootstrap.json", `{"version":3,"address":"unix:///run/containerd/s/def","protocol":"ttrpc"}`)
	write(TaskState+"/moby/old/bootstrap.json", `{"version":2,"address":"unix:///run/containerd/s/ghi","protocol":"ttrpc"}`)
	got, err = TasksOnShimV3(r, TaskState)
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(got, []string{"k8s.io/c20"}))
	write(TaskState+"/k8s.io/bad/bootstrap.json", `{not json`)
	_, err = TasksOnShimV3(r, TaskState)
	assert.Check(t, is.ErrorContains(err, "k8s.io/bad/bootstrap.json"))
}

// TestTaskShims: every task looked at, and of them those on a v3 shim;
// a file beside the tasks is none.
func TestTaskShims(t *testing.T) {
	root := t.TempDir()
	write := func(name, data string) {
		p := filepath.Join(root, filepath.FromSlash(name))
		assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		assert.NilError(t, os.WriteFile(p, []byte(data), 0o600))
	}
	r := HostRoot(root)
	all, v3, err := TaskShims(r, TaskState)
	assert.NilError(t, err)
	assert.Check(t, is.Len(all, 0))
	assert.Check(t, is.Len(v3, 0))
	write(TaskState+"/k8s.io/c16/address", "unix:///run/containerd/s/abc")
	write(TaskState+"/k8s.io/c17/bootstrap.json", `{"version":2,"address":"unix:///run/containerd/s/def","protocol":"ttrpc"}`)
	write(TaskState+"/k8s.io/stray", "not a task")
	all, v3, err = TaskShims(r, TaskState)
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(all, []string{"k8s.io/c16", "k8s.io/c17"}))
	assert.Check(t, is.Len(v3, 0), "tasks on v2 shims only")
	write(TaskState+"/k8s.io/c20/bootstrap.json", `{"version":3,"address":"unix:///run/containerd/s/ghi","protocol":"ttrpc"}`)
	all, v3, err = TaskShims(r, TaskState)
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(all, []string{"k8s.io/c16", "k8s.io/c17", "k8s.io/c20"}))
	assert.Check(t, is.DeepEqual(v3, []string{"k8s.io/c20"}))
}

func TestStepDirections(t *testing.T) {
	assert.Check(t, step("2.0.14", "1.7.36").Down())
	assert.Check(t, step("2.0.14", "1.7.36").LeavesTaskAPIv3())
	assert.Check(t, !step("2.1.9", "2.0.14").LeavesTaskAPIv3())
	assert.Check(t, !step("1.7.36", "2.0.14").Down())
}
