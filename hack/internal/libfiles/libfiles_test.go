package libfiles

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCopySkipsTestsAndOtherFiles(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "pkg")
	for name, data := range map[string]string{"a.go": "package a\n", "a_test.go": "package a\n", "README.md": "x\n"} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := Copy(src, dst); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dst)
	if len(entries) != 1 || entries[0].Name() != "a.go" {
		t.Errorf("copied %v, want only a.go", entries)
	}
	if err := Copy(t.TempDir(), dst); err == nil {
		t.Error("Copy of a directory without Go files succeeded")
	}
}
