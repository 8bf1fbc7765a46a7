package journal

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/cgroups"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/local/iptables"
	"github.com/kubelet-compat/kubelet-compat/pkg/procfs"
	"gotest.tools/v3/assert"
)

func TestRoundTrip(t *testing.T) {
	root := t.TempDir()
	j, err := Create(State{Root: root, BootID: "b", Since: 7})
	assert.NilError(t, err)
	seq, err := j.Starting("containerd", "containerd")
	assert.NilError(t, err)
	st, err := Load(root)
	assert.NilError(t, err)
	assert.DeepEqual(t, st.Processes, []Process{{Seq: seq, Name: "containerd", Binary: "containerd"}})
	assert.NilError(t, j.Started(seq, procfs.ID{PID: 42, StartTicks: 99}))
	assert.NilError(t, j.Update(func(s *State) {
		s.Containerd = &Containerd{Socket: "/r/c.sock", State: "/r/state"}
		s.Sysctls = []Sysctl{{Name: "kernel.panic", Before: "0"}}
		s.Iptables = []Iptables{{Binary: "iptables", Before: iptables.Rules{"filter": {"-P INPUT ACCEPT"}}}}
		s.Cgroups = &cgroups.Recorded{Mode: cgroups.V1, Name: "kubepods", Created: []string{"/sys/fs/cgroup/cpu/kubepods"}}
		s.Files = []Glob{{Pattern: "/var/log/pods/kc-e2e_*"}}
		s.Bridge = "kce2e0"
	}))
	st, err = Load(root)
	assert.NilError(t, err)
	assert.DeepEqual(t, *st, j.State())
	assert.Equal(t, st.Processes[0].PID, 42)
	assert.Equal(t, st.Format, Format)
	j.Ended(seq)
	st, err = Load(root)
	assert.NilError(t, err)
	assert.Equal(t, len(st.Processes), 0)

	_, err = Create(State{Root: root})
	assert.Assert(t, err != nil && strings.Contains(err.Error(), "e2e-cleanup"), "a second journal over the first: %v", err)
}

func TestWriteIsAtomic(t *testing.T) {
	root := t.TempDir()
	j, err := Create(State{Root: root})
	assert.NilError(t, err)
	// Readers racing the writers always see a whole journal.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 50; n++ {
				_ = j.Update(func(s *State) { s.Netns = append(s.Netns, strings.Repeat("x", 100)) })
			}
		}()
	}
	readErr := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				readErr <- nil
				return
			default:
			}
			if _, err := Load(root); err != nil {
				readErr <- err
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	assert.NilError(t, <-readErr)
	entries, err := os.ReadDir(root)
	assert.NilError(t, err)
	assert.Equal(t, len(entries), 1, "temporary files left: %v", entries)
	st, err := Load(root)
	assert.NilError(t, err)
	assert.Equal(t, len(st.Netns), 200)
}

func TestLoadRefuses(t *testing.T) {
	tests := []struct {
		name, content string
	}{
		{"truncated", `{"format":1,"root":"/x"`},
		{"unknown field", `{"format":1,"root":"/x","rmrf":"/"}`},
		{"other format", `{"format":2,"root":"/x"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			assert.NilError(t, os.WriteFile(filepath.Join(root, File), []byte(tt.content), 0o644))
			_, err := Load(root)
			assert.Assert(t, err != nil)
		})
	}
	_, err := Load(t.TempDir())
	assert.Assert(t, os.IsNotExist(err), "%v", err)
}

func TestGlobUndo(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before are the files before the run, saved those Glob.Saved
		// holds, now the files at the undo.
		before, saved, now map[string]string
		want               map[string]string
		err                string
	}{
		{name: "a file the run made is removed", now: map[string]string{"kubelet_internal_checkpoint": "run"}, want: map[string]string{}},
		{name: "a file that was there stays", before: map[string]string{"kubelet_internal_checkpoint": "theirs"},
			now: map[string]string{"kubelet_internal_checkpoint": "run"}, want: map[string]string{"kubelet_internal_checkpoint": "run"}},
		{name: "a saved file is written back", before: map[string]string{"kubelet_internal_checkpoint": "theirs"}, saved: map[string]string{"kubelet_internal_checkpoint": "theirs"},
			now: map[string]string{"kubelet_internal_checkpoint": "run"}, want: map[string]string{"kubelet_internal_checkpoint": "theirs"}},
		{name: "a saved file outside the pattern is refused", before: map[string]string{"other": "x"}, saved: map[string]string{"other": "theirs"},
			want: map[string]string{}, err: "not writing back"},
		{name: "a saved file the run removed comes back", before: map[string]string{"kubelet_internal_checkpoint": "theirs"}, saved: map[string]string{"kubelet_internal_checkpoint": "theirs"},
			want: map[string]string{"kubelet_internal_checkpoint": "theirs"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := func(name string) string { return filepath.Join(dir, name) }
			g := Glob{Pattern: path("kubelet_internal_checkpoint*")}
			for name := range tc.before {
				g.Before = append(g.Before, path(name))
			}
			for name, data := range tc.saved {
				if g.Saved == nil {
					g.Saved = map[string][]byte{}
				}
				g.Saved[path(name)] = []byte(data)
			}
			for name, data := range tc.now {
				assert.NilError(t, os.WriteFile(path(name), []byte(data), 0o600))
			}
			if err := g.Undo(); tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
			} else {
				assert.NilError(t, err)
			}
			got := map[string]string{}
			matches, _ := filepath.Glob(g.Pattern)
			for _, m := range matches {
				b, err := os.ReadFile(m)
				assert.NilError(t, err)
				got[filepath.Base(m)] = string(b)
			}
			assert.DeepEqual(t, got, tc.want)
		})
	}
}

func TestTag(t *testing.T) {
	long := "/var/lib/" + strings.Repeat("x", 300)
	tests := []struct {
		name string
		st   State
		want string
	}{
		{"no run ID: no tag", State{Root: "/var/lib/kubelet-compat-e2e"}, ""},
		{"ID and root", State{RunID: "0123456789abcdef", Root: "/var/lib/kubelet-compat-e2e"}, "kubelet-compat-e2e run 0123456789abcdef root /var/lib/kubelet-compat-e2e"},
		{"a root too long for an ifalias: the ID alone", State{RunID: "0123456789abcdef", Root: long}, "kubelet-compat-e2e run 0123456789abcdef"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.st.Tag(), tt.want)
			assert.Assert(t, len(tt.st.Tag()) <= 255)
		})
	}
	a, err := NewRunID()
	assert.NilError(t, err)
	b, err := NewRunID()
	assert.NilError(t, err)
	assert.Assert(t, len(a) == 16 && a != b, "%s %s", a, b)
}
