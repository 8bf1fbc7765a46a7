package proc

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/procfs"
	"gotest.tools/v3/assert"
)

type recorder struct {
	mu     sync.Mutex
	events []string
	ids    map[int]procfs.ID
}

func (r *recorder) Starting(name, binary string) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, "starting "+name)
	return 7, nil
}

func (r *recorder) Started(seq int, id procfs.ID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, "started")
	r.ids[seq] = id
	return nil
}

func (r *recorder) Ended(seq int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, "ended")
}

func TestStartRecords(t *testing.T) {
	rec := &recorder{ids: map[int]procfs.ID{}}
	p, err := Start(rec, "sleeper", "sleep", []string{"300"}, nil, filepath.Join(t.TempDir(), "log"))
	assert.NilError(t, err)
	defer p.Kill(context.Background())
	rec.mu.Lock()
	assert.DeepEqual(t, rec.events, []string{"starting sleeper", "started"})
	assert.Equal(t, rec.ids[7], p.ID)
	rec.mu.Unlock()
	assert.Assert(t, procfs.Host.Alive(p.ID))
	assert.NilError(t, p.Stop(context.Background(), 5*time.Second))
	rec.mu.Lock()
	defer rec.mu.Unlock()
	assert.DeepEqual(t, rec.events, []string{"starting sleeper", "started", "ended"})
}
