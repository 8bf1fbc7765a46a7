package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/matrix"
)

// The hook set: patches/hooks/<hook>/v<minor>.patch. Hooks apply in the
// order of their directory names. A variant applies from its minor up to the
// minor of the hook's next variant, so a new variant is added only where the
// tree's code around the hook changed; a hook applies from its oldest variant
// on (a later feature, such as sidecars, starts with a later variant) up to
// the minor of an end marker, v1.<minor>.end (an empty file), if it has one:
// from there on upstream does what the hook did.
const hooksDir = "hooks"

// versionPlaceholder in a variant stands for the tree's own release
// (row.Tag()), which its in-tree tests run as.
const versionPlaceholder = "@KUBE_VERSION@"

var variantName = regexp.MustCompile(`^v1\.(\d+)\.(patch|end)$`)

// hook is one hook directory and its variants, oldest first.
type hook struct {
	name     string
	variants []variant
}

type variant struct {
	minor int // the first minor the variant applies to, e.g. 21 for v1.21
	path  string
	end   bool // an end marker: the hook does not apply from minor on
}

// loadHooks reads the hook set under dir.
func loadHooks(dir string) ([]hook, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var hooks []hook
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		h := hook{name: e.Name()}
		files, err := os.ReadDir(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			m := variantName.FindStringSubmatch(f.Name())
			if m == nil {
				return nil, fmt.Errorf("%s: %s is not a variant (want v1.<minor>.patch or v1.<minor>.end)", filepath.Join(dir, e.Name()), f.Name())
			}
			minor, _ := strconv.Atoi(m[1])
			h.variants = append(h.variants, variant{minor: minor, path: filepath.Join(dir, e.Name(), f.Name()), end: m[2] == "end"})
		}
		if len(h.variants) == 0 {
			return nil, fmt.Errorf("hook %s has no variant", filepath.Join(dir, e.Name()))
		}
		sort.Slice(h.variants, func(i, j int) bool { return h.variants[i].minor < h.variants[j].minor })
		if h.variants[0].end {
			return nil, fmt.Errorf("hook %s ends before its first variant", filepath.Join(dir, e.Name()))
		}
		hooks = append(hooks, h)
	}
	if len(hooks) == 0 {
		return nil, fmt.Errorf("%s holds no hooks", dir)
	}
	return hooks, nil
}

// variantFor returns the variant that applies to the row's minor: the newest
// not newer than it. ok is false when the hook starts after that minor or
// an end marker not newer than it ends the hook.
func (h hook) variantFor(row matrix.Row) (v variant, ok bool) {
	minor := rowMinor(row)
	for _, c := range h.variants {
		if c.minor <= minor {
			v, ok = c, true
		}
	}
	if v.end {
		return variant{}, false
	}
	return v, ok
}

// renderVariant returns the variant's patch as it applies to row.
func renderVariant(v variant, row matrix.Row) ([]byte, error) {
	data, err := os.ReadFile(v.path)
	if err != nil {
		return nil, err
	}
	return bytes.ReplaceAll(data, []byte(versionPlaceholder), []byte(row.Tag())), nil
}

func rowMinor(row matrix.Row) int {
	n, _ := strconv.Atoi(strings.SplitN(row.Minor(), ".", 2)[1])
	return n
}
