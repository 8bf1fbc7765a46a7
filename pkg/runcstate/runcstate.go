// Package runcstate reads runc's state of a container (state.json under
// runc's root, root-owned) and tells whether its init process still runs:
// the same PID and start time in /proc (package procstat), never what a
// process calls itself.
package runcstate

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/kubelet-compat/kubelet-compat/pkg/procstat"
)

// State is what this project reads of runc's state.json.
type State struct {
	ID    string            `json:"id"`
	Pid   int               `json:"init_process_pid"`
	Start uint64            `json:"init_process_start"`
	Paths map[string]string `json:"cgroup_paths"`
}

// Host is the root of the file system runc's root and /proc are under
// ("/" on a node; a directory in tests).
type Host struct{ FSRoot string }

func (h Host) path(p string) string { return filepath.Join(h.FSRoot, p) }

// IDs lists the containers under runc's root; none when it is missing.
func (h Host) IDs(root string) ([]string, error) {
	entries, err := os.ReadDir(h.path(root))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}

// Read reads container id's state under root; ok is false when it has
// none (being created or deleted).
func (h Host) Read(root, id string) (st State, ok bool, err error) {
	data, err := os.ReadFile(h.path(filepath.Join(root, id, "state.json")))
	if errors.Is(err, os.ErrNotExist) {
		return State{}, false, nil
	}
	if err != nil {
		return State{}, false, err
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return State{}, false, fmt.Errorf("runc state of %s: %w", id, err)
	}
	return st, true, nil
}

// Init is the init process of st as /proc shows it, when pid still names
// the process runc started (a recycled PID has another start time).
func (h Host) Init(pid int, start uint64) (procstat.Stat, bool) {
	if pid <= 0 {
		return procstat.Stat{}, false
	}
	data, err := os.ReadFile(h.path(filepath.Join("/proc", strconv.Itoa(pid), "stat")))
	if err != nil {
		return procstat.Stat{}, false
	}
	st, err := procstat.Parse(data)
	return st, err == nil && st.PID == pid && st.StartTicks == start
}
