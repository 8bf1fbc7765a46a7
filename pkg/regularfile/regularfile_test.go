package regularfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "regular")
	assert.NilError(t, os.WriteFile(regular, []byte("0123456789"), 0o644))
	link := filepath.Join(dir, "link")
	assert.NilError(t, os.Symlink(regular, link))
	fifo := filepath.Join(dir, "fifo")
	assert.NilError(t, syscall.Mkfifo(fifo, 0o644))

	for _, tc := range []struct {
		name     string
		path     string
		limit    int64
		noFollow bool
		want     string
		wantMode os.FileMode // a NotRegularError of this type
	}{
		{name: "whole file", path: regular, limit: 100, want: "0123456789"},
		{name: "limit+1 bytes", path: regular, limit: 4, want: "01234"},
		{name: "symlink followed", path: link, limit: 100, want: "0123456789"},
		{name: "symlink refused", path: link, limit: 100, noFollow: true, wantMode: os.ModeSymlink},
		{name: "directory", path: dir, limit: 100, wantMode: os.ModeDir},
		{name: "FIFO, never blocking", path: fifo, limit: 100, wantMode: os.ModeNamedPipe},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan struct{})
			var data []byte
			var err error
			go func() {
				data, err = Read(tc.path, tc.limit, tc.noFollow)
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Read blocked")
			}
			if tc.wantMode == 0 {
				assert.NilError(t, err)
				assert.Equal(t, string(data), tc.want)
				return
			}
			var nr *NotRegularError
			assert.Assert(t, errors.As(err, &nr), "err = %v", err)
			assert.Equal(t, nr.Mode.Type(), tc.wantMode)
		})
	}
}
