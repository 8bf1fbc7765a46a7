package filehash

import (
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
)

func TestSHA256(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	assert.NilError(t, os.WriteFile(p, []byte("abc"), 0o644))
	got, err := SHA256(p)
	assert.NilError(t, err)
	assert.Equal(t, got, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
	_, err = SHA256(filepath.Join(t.TempDir(), "missing"))
	assert.ErrorContains(t, err, "no such file")
}
