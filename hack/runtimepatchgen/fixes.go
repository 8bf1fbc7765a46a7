package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
)

// The fix set of a component: <patches>/<name>/fixes/<n-fix>/ holds one
// fix, applied in the order of the directory names. Its variants are
// v<major>.<minor>.patch, git format-patch mails: a variant applies to
// the component's releases of its major from its minor on, up to the
// minor of the fix's next variant; an empty v<major>.<minor>.end ends the
// fix from that minor on (upstream carries it there).
const fixesDir = "fixes"

var variantName = regexp.MustCompile(`^v(\d+)\.(\d+)\.(patch|end)$`)

// fix is one fix directory and its variants, oldest first.
type fix struct {
	name     string
	variants []variant
}

type variant struct {
	major, minor int
	path         string
	end          bool
}

// loadFixes reads the fix set under dir.
func loadFixes(dir string) ([]fix, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var fixes []fix
	for _, e := range entries {
		if !e.IsDir() {
			return nil, fmt.Errorf("%s is not a fix directory", filepath.Join(dir, e.Name()))
		}
		f := fix{name: e.Name()}
		files, err := os.ReadDir(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		for _, file := range files {
			m := variantName.FindStringSubmatch(file.Name())
			if m == nil {
				return nil, fmt.Errorf("%s: %s is not a variant (want v<major>.<minor>.patch or v<major>.<minor>.end)", filepath.Join(dir, e.Name()), file.Name())
			}
			major, _ := strconv.Atoi(m[1])
			minor, _ := strconv.Atoi(m[2])
			f.variants = append(f.variants, variant{major: major, minor: minor, path: filepath.Join(dir, e.Name(), file.Name()), end: m[3] == "end"})
		}
		if len(f.variants) == 0 {
			return nil, fmt.Errorf("fix %s has no variant", filepath.Join(dir, e.Name()))
		}
		sort.Slice(f.variants, func(i, j int) bool {
			a, b := f.variants[i], f.variants[j]
			return a.major < b.major || a.major == b.major && a.minor < b.minor
		})
		fixes = append(fixes, f)
	}
	if len(fixes) == 0 {
		return nil, fmt.Errorf("%s holds no fix", dir)
	}
	return fixes, nil
}

// variantFor returns the variant that applies to a release of major.minor:
// the newest of that major not newer than it. ok is false when the fix has
// none, or an end marker ends it there.
func (f fix) variantFor(major, minor int) (v variant, ok bool) {
	for _, c := range f.variants {
		if c.major == major && c.minor <= minor {
			v, ok = c, true
		}
	}
	if v.end {
		return variant{}, false
	}
	return v, ok
}
