// Package libfiles copies what a kubelet tree receives of the library: its
// non-test Go files. The go1.13 check and the patch generator must agree on
// that set, so both use this.
package libfiles

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Copy copies the non-test Go files of src into dst, creating dst.
func Copy(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	n := 0
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			return err
		}
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, name), data, 0o644); err != nil {
			return err
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("no library files in %s", src)
	}
	return nil
}
