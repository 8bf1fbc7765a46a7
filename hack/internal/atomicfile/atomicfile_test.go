package atomicfile

import (
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestWriteIfChanged(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	for _, tc := range []struct {
		data      string
		wantWrote bool
	}{{"a", true}, {"a", false}, {"b", true}} {
		wrote, err := WriteIfChanged(p, []byte(tc.data))
		assert.NilError(t, err)
		assert.Check(t, is.Equal(wrote, tc.wantWrote), "writing %q", tc.data)
		got, err := os.ReadFile(p)
		assert.NilError(t, err)
		assert.Check(t, is.Equal(string(got), tc.data))
	}
	entries, err := os.ReadDir(dir)
	assert.NilError(t, err)
	assert.Check(t, is.Len(entries, 1), "no temporary file is left")
	// A directory that does not exist: an error, nothing written.
	_, err = WriteIfChanged(filepath.Join(dir, "missing", "f"), []byte("x"))
	assert.Check(t, err != nil)
}
