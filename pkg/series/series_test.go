package series

import (
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		want          []string
	}{
		{name: "empty", content: ""},
		{name: "comments and blank lines only", content: "# Apply in order\n\n  \n"},
		{name: "in order, trimmed", content: "# Apply in order\n0001-a.patch\n\n  0002-b.patch  \r\n0003-c.patch",
			want: []string{"0001-a.patch", "0002-b.patch", "0003-c.patch"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.DeepEqual(t, Parse(tc.content), tc.want)
		})
	}
}

func TestRead(t *testing.T) {
	dir := t.TempDir()
	_, err := Read(dir)
	assert.Assert(t, os.IsNotExist(err), "Read of a directory without series: %v", err)
	assert.NilError(t, os.WriteFile(filepath.Join(dir, File), []byte("0001-a.patch\n"), 0o644))
	names, err := Read(dir)
	assert.NilError(t, err)
	assert.DeepEqual(t, names, []string{"0001-a.patch"})
}
