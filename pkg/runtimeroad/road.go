// Package runtimeroad is the road containerd supports between its
// releases, as this project walks it: one minor at a time (containerd's
// RELEASES.md gives "no compatibility guarantees for upgrades that span
// multiple minor releases"), and the deprecated features each release
// removes, which `ctr deprecations list` on the running containerd names
// before a step. kc-roll's runtime step and `kubelet-compat preflight`
// decide on it; docs/runtime.md ("The road") says why.
package runtimeroad

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/versions"
)

// Minor is a containerd MAJOR.MINOR.
type Minor struct{ Major, Minor int }

func (m Minor) String() string { return fmt.Sprintf("%d.%d", m.Major, m.Minor) }

func minorOf(v versions.Version) Minor { return Minor{v.Major, v.Minor} }

func (m Minor) less(n Minor) bool {
	return m.Major < n.Major || m.Major == n.Major && m.Minor < n.Minor
}

// Minors are containerd's release lines in order, from the oldest a node
// of the matrix runs (Debian 12's 1.6) to the newest the project builds:
// after 1.7 comes 2.0 (there is no 1.8).
var Minors = []Minor{{1, 6}, {1, 7}, {2, 0}, {2, 1}, {2, 2}, {2, 3}, {2, 4}}

func indexOf(m Minor) int {
	for i, x := range Minors {
		if x == m {
			return i
		}
	}
	return -1
}

// Step is a move of the running containerd to another release.
type Step struct {
	From, To versions.Version
}

// Check says whether the step is on the supported road: a patch release
// of the same minor, the next minor up, or (a rollback) the minor before.
// Skipping a minor either way or a minor this package does not know is
// refused with the reason and, for a skip, the minors to go through. A
// step from 2.x down to 1.7 is on the road only while no task runs on a
// shim containerd 2.x started (TasksOnShimV3): the caller checks that.
func (s Step) Check() error {
	from, to := minorOf(s.From), minorOf(s.To)
	i, j := indexOf(from), indexOf(to)
	switch {
	case i < 0:
		return fmt.Errorf("containerd %s: minor %s is not on the road this project knows (%s)", s.From, from, list(Minors))
	case j < 0:
		return fmt.Errorf("containerd %s: minor %s is not on the road this project knows (%s)", s.To, to, list(Minors))
	case j < i-1:
		return fmt.Errorf("containerd %s -> %s goes down %d minors: roll back one minor at a time (%s first)", s.From, s.To, i-j, Minors[i-1])
	case j > i+1:
		return fmt.Errorf("containerd %s -> %s skips %s: containerd supports one minor at a time (RELEASES.md: no compatibility guarantees across minors); go through %s first",
			s.From, s.To, list(Minors[i+1:j]), Minors[i+1])
	}
	return nil
}

// Down says whether the step goes to an older minor (a rollback).
func (s Step) Down() bool { return minorOf(s.To).less(minorOf(s.From)) }

// LeavesTaskAPIv3 says whether the step goes from containerd 2.x, whose
// shims serve the task API v3, down to 1.x, which reaches a shim only
// through v2: a task such a shim runs would be orphaned
// (containerd/containerd#11720).
func (s Step) LeavesTaskAPIv3() bool { return s.From.Major >= 2 && s.To.Major < 2 }

func list(ms []Minor) string {
	var out []string
	for _, m := range ms {
		out = append(out, m.String())
	}
	return strings.Join(out, ", ")
}

// Deprecation is a feature containerd deprecated: the ID `ctr deprecations
// list` prints (io.containerd.deprecation/...), and the minor that removes
// it (zero: no removal decided).
type Deprecation struct {
	ID        string
	RemovedIn Minor
	// What names the feature as containerd's RELEASES.md does.
	What string
}

// Prefix starts every deprecation ID.
const Prefix = "io.containerd.deprecation/"

// Deprecations are containerd's, from pkg/deprecation of 1.7.36 and
// 2.4.2 and the tables of 2.4.2's RELEASES.md (which moved the registry
// properties' removal from 2.1 to 2.4, then to 2.7). Schema 1 pulls are
// off by default in 2.0 and gone in 2.1: removed at 2.0 for a node's pulls.
var Deprecations = []Deprecation{
	{"pull-schema-1-image", Minor{2, 0}, "pulling Schema 1 images (off in 2.0, removed in 2.1)"},
	{"go-plugin-library", Minor{2, 1}, "Go plugin libraries (*.so) as runtime plugins"},
	{"cri-systemd-cgroup-v1", Minor{2, 0}, "the CRI plugin's systemd_cgroup property"},
	{"cri-untrusted-workload-runtime", Minor{2, 0}, "the CRI plugin's untrusted_workload_runtime property"},
	{"cri-default-runtime", Minor{2, 0}, "the CRI plugin's default_runtime property"},
	{"cri-runtime-engine", Minor{2, 0}, "a CRI runtime's runtime_engine property"},
	{"cri-runtime-root", Minor{2, 0}, "a CRI runtime's runtime_root property"},
	{"cri-api-v1alpha2", Minor{2, 0}, "CRI v1alpha2 (kubelets 1.18-1.22 speak only it)"},
	{"aufs-snapshotter", Minor{2, 0}, "the aufs snapshotter"},
	{"restart-logpath", Minor{2, 0}, "the containerd.io/restart.logpath label"},
	{"runtime-v1", Minor{2, 0}, "the io.containerd.runtime.v1.linux runtime"},
	{"runtime-runc-v1", Minor{2, 0}, "the io.containerd.runc.v1 runtime"},
	{"cri-criu-path", Minor{2, 0}, "the runc options' CriuPath property"},
	{"tracing-processor-config", Minor{2, 4}, "the otlp tracing processor's endpoint, protocol, insecure properties"},
	{"tracing-service-config", Minor{2, 4}, "the tracing plugin's service_name, sampling_ratio properties"},
	{"enable-cdi", Minor{2, 4}, "the CRI runtime's enable_cdi property"},
	{"cri-create-container-checkpoint-restore", Minor{2, 4}, "restoring checkpoint data in CRI CreateContainer"},
	{"nri-v010-plugin", Minor{2, 3}, "NRI v0.1.0 plugins (without the v010-adapter)"},
	{"cri-registry-mirrors", Minor{}, "the CRI registry's mirrors property (removal in 2.7)"},
	{"cri-registry-auths", Minor{}, "the CRI registry's auths property (removal in 2.7)"},
	{"cri-registry-configs", Minor{}, "the CRI registry's configs property (removal in 2.7)"},
	{"cgroup-v1", Minor{}, "cgroup v1 (no removal before May 2029)"},
	{"nri-plugin-interface", Minor{}, "a deprecated NRI plugin interface"},
	{"runc-options-task-api-address", Minor{}, "the runc options' task_api_address"},
	{"runc-options-task-api-version", Minor{}, "the runc options' task_api_version"},
}

// Removed are the deprecations in use (the IDs `ctr deprecations list`
// printed on the running containerd, with or without Prefix) that the
// step's target removes: what would stop working after the step. IDs this
// package does not know are returned in unknown, to be named, not judged.
func (s Step) Removed(inUse []string) (removed []Deprecation, unknown []string) {
	to := minorOf(s.To)
	seen := map[string]bool{}
	for _, id := range inUse {
		id = strings.TrimPrefix(strings.TrimSpace(id), Prefix)
		if id == "" || seen[id] {
			continue
		}
		seen[id] = true
		d, ok := find(id)
		switch {
		case !ok:
			unknown = append(unknown, Prefix+id)
		case d.RemovedIn != (Minor{}) && !to.less(d.RemovedIn):
			removed = append(removed, d)
		}
	}
	sort.Slice(removed, func(i, j int) bool { return removed[i].ID < removed[j].ID })
	sort.Strings(unknown)
	return removed, unknown
}

func find(id string) (Deprecation, bool) {
	for _, d := range Deprecations {
		if d.ID == id {
			return d, true
		}
	}
	return Deprecation{}, false
}

// RemovedRuntimeTypes are the runtime types (a CRI runtime handler's
// runtime_type in containerd's configuration) a release removes: a pod
// whose RuntimeClass names such a handler cannot be started again there.
var RemovedRuntimeTypes = map[string]Minor{
	"io.containerd.runtime.v1.linux": {2, 0},
	"io.containerd.runc.v1":          {2, 0},
}

// RemovesRuntimeType says whether the step's target has no runtime of
// that type any more.
func (s Step) RemovesRuntimeType(runtimeType string) bool {
	m, ok := RemovedRuntimeTypes[runtimeType]
	return ok && !minorOf(s.To).less(m)
}

// ParseDeprecations reads `ctr deprecations list`'s table (its first
// column, the IDs under the header "ID"), the form every ctr since 1.7
// prints; `ctr` of 1.6 has no such command, which the caller tells by its
// error.
func ParseDeprecations(out string) []string {
	var ids []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && strings.HasPrefix(f[0], Prefix) {
			ids = append(ids, f[0])
		}
	}
	return ids
}

// DirReader reads the node's files (the roll's Files, or the host's root).
type DirReader interface {
	ReadDir(name string) ([]fs.DirEntry, error)
	ReadFile(name string) ([]byte, error)
}

// HostRoot reads the node's paths under a directory ("": /), as a tool
// that may run with the host mounted elsewhere does.
type HostRoot string

func (h HostRoot) ReadDir(name string) ([]fs.DirEntry, error) {
	return os.ReadDir(filepath.Join(string(h), filepath.FromSlash(name)))
}

func (h HostRoot) ReadFile(name string) ([]byte, error) {
	return os.ReadFile(filepath.Join(string(h), filepath.FromSlash(name)))
}

// TaskState is where containerd keeps its runtime v2 tasks' bundles, a
// directory per namespace.
const TaskState = "/run/containerd/io.containerd.runtime.v2.task"

// TasksOnShimV3 are the tasks (NAMESPACE/ID) whose bundle says its shim
// serves the task API v3: the bootstrap.json containerd 2.x writes for a
// shim it starts, version 3 (containerd 1.x writes none). No task state:
// none.
func TasksOnShimV3(r DirReader, taskState string) ([]string, error) {
	_, v3, err := TaskShims(r, taskState)
	return v3, err
}

// TaskShims are every task (NAMESPACE/ID) with a bundle under taskState,
// and of them those whose shim serves the task API v3 (TasksOnShimV3):
// what a rollback to containerd 1.x looked at, not only what it found.
func TaskShims(r DirReader, taskState string) (all, v3 []string, err error) {
	namespaces, err := r.ReadDir(taskState)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	for _, ns := range namespaces {
		if !ns.IsDir() {
			continue
		}
		tasks, err := r.ReadDir(path.Join(taskState, ns.Name()))
		if err != nil {
			return nil, nil, err
		}
		for _, t := range tasks {
			if !t.IsDir() {
				continue
			}
			all = append(all, ns.Name()+"/"+t.Name())
			data, err := r.ReadFile(path.Join(taskState, ns.Name(), t.Name(), "bootstrap.json"))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, nil, err
			}
			var params struct {
				Version int `json:"version"`
			}
			if err := json.Unmarshal(data, &params); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", path.Join(taskState, ns.Name(), t.Name(), "bootstrap.json"), err)
			}
			if params.Version >= 3 {
				v3 = append(v3, ns.Name()+"/"+t.Name())
			}
		}
	}
	return all, v3, nil
}
