// Package journal is the e2e's record of what a run makes on the machine,
// kept as <root>/journal.json and rewritten atomically whenever it grows.
// Each thing is recorded before it is made (a process's PID and start time
// right after it starts, while it cannot have been reaped), so that after
// a SIGKILL, when nothing in-process can run, `e2e -mode cleanup` can
// undo exactly what the journal lists and nothing else (package
// leftovers).
package journal

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/cgroups"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/cleanup"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/local/iptables"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/rootdir"
	"github.com/kubelet-compat/kubelet-compat/pkg/procfs"
	"github.com/kubelet-compat/kubelet-compat/pkg/regularfile"
)

// File is the journal's name under the root.
const File = "journal.json"

// Format is the journal's format version.
const Format = 1

// maxSize bounds what Load reads.
const maxSize = 16 << 20

// Process is a process the run started. PID 0: it was being started.
type Process struct {
	Seq    int    `json:"seq"`
	Name   string `json:"name"`
	Binary string `json:"binary"`
	procfs.ID
}

// Containerd is the run's containerd: its state dir names its tasks'
// bundles, and so their shims, containers, shim sockets and netns.
type Containerd struct {
	Config string `json:"config"`
	Root   string `json:"root"`
	State  string `json:"state"`
	Socket string `json:"socket"`
}

// Sysctl is a value as it was before the run.
type Sysctl struct {
	Name   string `json:"name"`
	Before string `json:"before"`
}

// KubeletSysctls are the host-global sysctls a kubelet writes when it
// starts (setupKernelTunables): a kubelet on the host, and as well one in a
// privileged kind node, which sees the host's /proc/sys.
var KubeletSysctls = []string{"vm.overcommit_memory", "vm.panic_on_oom", "kernel.panic", "kernel.panic_on_oops",
	"kernel.keys.root_maxkeys", "kernel.keys.root_maxbytes"}

// ReadSysctls reads the named sysctls under dir (/proc/sys); a name this
// kernel lacks is left out (nothing can set it either).
func ReadSysctls(dir string, names []string) []Sysctl {
	var out []Sysctl
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(dir, strings.ReplaceAll(name, ".", "/")))
		if err != nil {
			continue
		}
		out = append(out, Sysctl{Name: name, Before: strings.TrimSpace(string(b))})
	}
	return out
}

// Iptables are one binary's rules before the run.
type Iptables struct {
	Binary string         `json:"binary"`
	Before iptables.Rules `json:"before"`
}

// Glob names files the run's tools write outside the root (pod logs, the
// CNI result cache); the matches that existed before are not the run's.
type Glob struct {
	Pattern string   `json:"pattern"`
	Before  []string `json:"before,omitempty"`
	// Saved holds the bytes of matches that existed before and that the
	// run's tools rewrite in place (the device manager's checkpoint): they
	// are written back, never removed.
	Saved map[string][]byte `json:"saved,omitempty"`
}

// Undo removes the matches that did not exist before and writes back the
// saved ones that changed.
func (g Glob) Undo() error {
	before := map[string]bool{}
	for _, b := range g.Before {
		before[b] = true
	}
	matches, err := filepath.Glob(g.Pattern)
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range matches {
		if !before[m] {
			if err := os.RemoveAll(m); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for path, data := range g.Saved {
		// Only a file the pattern names and that was there before.
		if ok, _ := filepath.Match(g.Pattern, path); !ok || !before[path] {
			errs = append(errs, fmt.Errorf("not writing back %s: not a file of %s that existed before the run", path, g.Pattern))
			continue
		}
		if now, err := os.ReadFile(path); err == nil && bytes.Equal(now, data) {
			continue
		}
		if err := WriteFileMode(path, data, 0o600); err != nil {
			errs = append(errs, fmt.Errorf("writing back %s: %w", path, err))
		}
	}
	return errors.Join(errs...)
}

// State is what the journal holds.
type State struct {
	Format int    `json:"format"`
	Root   string `json:"root"`
	// BootID and Since (the e2e's start, in clock ticks since boot) date
	// the run: start times compare only within one boot, and nothing that
	// started before Since is the run's.
	BootID  string    `json:"bootID"`
	Since   uint64    `json:"sinceTicks"`
	Started time.Time `json:"started"`
	// RunID names the run on what it tags (Tag: a bridge's ifalias;
	// RunLabel: a docker network's label): the undo removes a recorded
	// link or network only when its tag names this run. Empty in the
	// journals of runs that tag nothing (the local provider, and kind runs
	// from before the tags): their links are deleted by name.
	RunID string `json:"runID,omitempty"`

	Processes   []Process   `json:"processes,omitempty"`
	Containerd  *Containerd `json:"containerd,omitempty"`
	Shims       []procfs.ID `json:"shims,omitempty"`
	Netns       []string    `json:"netns,omitempty"`
	ShimSockets []string    `json:"shimSockets,omitempty"`
	// Bridge is the CNI bridge, recorded before the CNI can create it
	// (the run refuses to start when it exists).
	Bridge string `json:"bridge,omitempty"`
	// Subnet is the bridge network's private subnet: connection tracking
	// entries from or to it are the run's.
	Subnet   string            `json:"subnet,omitempty"`
	Sysctls  []Sysctl          `json:"sysctls,omitempty"`
	Iptables []Iptables        `json:"iptables,omitempty"`
	Cgroups  *cgroups.Recorded `json:"cgroups,omitempty"`
	Files    []Glob            `json:"files,omitempty"`
	// Dirs did not exist before the run and are made by its tools outside
	// the root (/run/containerd, /var/log/pods, ...): removed when empty.
	Dirs []string `json:"dirs,omitempty"`
	// Docker is what a kind run made through a Docker engine.
	Docker *Docker `json:"docker,omitempty"`
}

// Docker labels the kind provider puts on what it creates through an
// engine: RunLabel's value is the run's RunID, RootLabel's its root.
const (
	RunLabel  = "io.kubelet-compat.e2e.run"
	RootLabel = "io.kubelet-compat.e2e.root"
)

// maxIfalias is the kernel's bound on an ifalias (IFALIASZ - 1).
const maxIfalias = 255

// Tag is the ifalias the run puts on the links it makes: its run ID and,
// when that fits, its root; "" for a run without an ID.
func (s State) Tag() string {
	if s.RunID == "" {
		return ""
	}
	t := "kubelet-compat-e2e run " + s.RunID + " root " + s.Root
	if len(t) > maxIfalias {
		t = "kubelet-compat-e2e run " + s.RunID
	}
	return t
}

// NewRunID is a run's random ID (16 hex digits).
func NewRunID() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// Docker is what a kind run made through a Docker engine: the user's, or
// the private dockerd the run started (then in Processes, with its
// containerd as Containerd).
type Docker struct {
	// Host is the engine's DOCKER_HOST ("" for the user's default).
	Host string `json:"host"`
	// Clusters are the kind clusters the run creates, recorded before:
	// their containers carry the label io.x-k8s.kind.cluster=<name>.
	Clusters []string `json:"clusters,omitempty"`
	// Network is the docker network the run creates for them (recorded
	// before, with the label RunLabel=<RunID> from its creation) and
	// NetworkID its ID once made: the clusters' containers are the run's
	// only on that network (kind puts no label of the run's on them).
	Network   string `json:"network,omitempty"`
	NetworkID string `json:"networkID,omitempty"`
	// DefaultBridge is the bridge a private dockerd gets as its default
	// network, made by the run (so that dockerd neither creates nor, as
	// --bridge=none would, deletes a docker0 of someone else's).
	DefaultBridge string `json:"defaultBridge,omitempty"`
	// DataRoot is a private dockerd's image store, kept between runs: what
	// is still mounted under it once that dockerd is gone is the run's.
	DataRoot string `json:"dataRoot,omitempty"`
	// ExecRoot is a private dockerd's exec root (under the run's root):
	// dockerd writes unmount-on-shutdown there when it made the data
	// root a mount of its own.
	ExecRoot string `json:"execRoot,omitempty"`
}

// DataRootLock is the flock a run holds while its private dockerd uses
// the data root.
func (d Docker) DataRootLock() string { return d.DataRoot + ".lock" }

// Journal is a run's open journal; safe for concurrent use.
type Journal struct {
	mu   sync.Mutex
	path string
	st   State
	seq  int
}

// Path is the journal of a root.
func Path(root string) string { return filepath.Join(root, File) }

// Create writes a new journal under st.Root; it fails when one exists (an
// earlier run's leftovers are not undone yet).
func Create(st State) (*Journal, error) {
	p := Path(st.Root)
	if _, err := os.Lstat(p); err == nil {
		return nil, fmt.Errorf("%s exists: an earlier run was killed before it could undo its changes; run `make e2e-cleanup` (e2e -mode cleanup -root %s) first", p, st.Root)
	}
	st.Format = Format
	j := &Journal{path: p, st: st}
	return j, j.write()
}

// Load reads a root's journal (os.ErrNotExist when there is none).
func Load(root string) (*State, error) {
	data, err := regularfile.Read(Path(root), maxSize, true)
	if err != nil {
		return nil, err
	}
	if len(data) > maxSize {
		return nil, fmt.Errorf("%s: not a journal (larger than %d bytes)", Path(root), maxSize)
	}
	var st State
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("%s: %w", Path(root), err)
	}
	if st.Format != Format {
		return nil, fmt.Errorf("%s: format %d, this e2e reads %d", Path(root), st.Format, Format)
	}
	return &st, nil
}

// State returns a copy of what the journal holds.
func (j *Journal) State() State {
	j.mu.Lock()
	defer j.mu.Unlock()
	b, _ := json.Marshal(j.st)
	var c State
	_ = json.Unmarshal(b, &c)
	return c
}

// Update changes the journal and writes it.
func (j *Journal) Update(f func(*State)) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	f(&j.st)
	return j.write()
}

// Starting records a process about to start (proc.Recorder).
func (j *Journal) Starting(name, binary string) (int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.seq++
	j.st.Processes = append(j.st.Processes, Process{Seq: j.seq, Name: name, Binary: binary})
	return j.seq, j.write()
}

// Started records the PID and start time of a started process.
func (j *Journal) Started(seq int, id procfs.ID) error {
	return j.Update(func(st *State) {
		for i := range st.Processes {
			if st.Processes[i].Seq == seq {
				st.Processes[i].ID = id
			}
		}
	})
}

// Ended forgets a process that has exited (and was reaped).
func (j *Journal) Ended(seq int) {
	_ = j.Update(func(st *State) {
		out := st.Processes[:0]
		for _, p := range st.Processes {
			if p.Seq != seq {
				out = append(out, p)
			}
		}
		st.Processes = out
	})
}

func (j *Journal) write() error {
	b, err := json.MarshalIndent(j.st, "", "  ")
	if err != nil {
		return err
	}
	return WriteFile(j.path, append(b, '\n'))
}

// WriteFile replaces path atomically: a reader (or a crash) sees the old
// content or the new, never a mix. It writes a new file next to it,
// syncs it, renames it over path and syncs the directory.
func WriteFile(path string, data []byte) error { return WriteFileMode(path, data, 0o644) }

// WriteFileMode is WriteFile with the file's permissions.
func WriteFileMode(path string, data []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(mode); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	ok = true
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}

// TakeRoot claims and locks a run's root (package rootdir) and pushes on
// stack the lock's release and, for a run that wrote no journal (written
// reports false when the cleanup runs), the root's removal: a run with a
// journal leaves the root to the journal's undo, and a root holding an
// earlier run's journal to `make e2e-cleanup`.
func TakeRoot(path string, stack *cleanup.Stack, written func() bool) (string, error) {
	root, err := rootdir.Claim(path)
	if err != nil {
		return "", err
	}
	release, err := rootdir.Lock(root)
	if err != nil {
		return "", err
	}
	stack.Push("release the lock on "+root, func(context.Context) error { release(); return nil })
	stack.Push("remove "+root+" if this run wrote no journal", func(context.Context) error {
		if written() {
			return nil
		}
		if _, err := os.Lstat(Path(root)); err == nil {
			return nil
		}
		if err := rootdir.Owned(root); err != nil {
			return err
		}
		return os.RemoveAll(root)
	})
	return root, nil
}
