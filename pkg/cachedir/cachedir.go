// Package cachedir names the cache root that make, the build harness and
// the hack tools share: toolchains, the module cache, Kubernetes sources and
// work trees (layout in build/README.md).
package cachedir

import (
	"os"
	"path/filepath"
)

// Env names the variable that moves the cache. Main packages read it and
// pass its value to Resolve; the Makefile exports it with the same default.
const Env = "KC_CACHE"

// Resolve returns the cache root: kcCache (the value of $KC_CACHE) when set,
// else $HOME/.cache/kubelet-compat.
func Resolve(kcCache string) string {
	if kcCache != "" {
		return kcCache
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "kubelet-compat")
}
