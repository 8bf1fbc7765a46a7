package source

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/matrix"
)

// StubsDir holds the stub modules inside an assembled tree. The leading
// underscore keeps it out of ./... patterns.
const StubsDir = "_kc_stubs"

// StubPath is the tree-relative directory of the stub for module path.
func StubPath(path string) string { return "./" + StubsDir + "/" + path }

// RewriteGoMod points a Kubernetes go.mod at what the module proxy serves:
//   - replaces of staging modules (=> ./staging/src/k8s.io/X) become the
//     published module k8s.io/X at the row's staging version or override,
//   - modules in row.Stubs are replaced by their local stub directory,
//   - other overrides in the row replace their module's version,
//
// adding replace lines for stubs and overrides that had none. The rewrite is
// line based on purpose: Kubernetes go.mod files use one replace per line and
// the repository carries no third-party dependency for this.
func RewriteGoMod(gomod []byte, row matrix.Row) ([]byte, error) {
	stubs := map[string]bool{}
	for _, s := range row.Stubs {
		stubs[s] = true
	}
	done := map[string]bool{}
	lines := strings.Split(string(gomod), "\n")
	inBlock := false
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		var spec, prefix string
		switch {
		case inBlock && trimmed == ")":
			inBlock = false
			continue
		case inBlock:
			spec, prefix = trimmed, "\t"
		case strings.HasPrefix(trimmed, "replace") && strings.TrimSpace(strings.TrimPrefix(trimmed, "replace")) == "(":
			inBlock = true
			continue
		case strings.HasPrefix(trimmed, "replace "):
			spec, prefix = strings.TrimSpace(strings.TrimPrefix(trimmed, "replace ")), "replace "
		default:
			continue
		}
		if c := strings.Index(spec, "//"); c >= 0 {
			spec = strings.TrimSpace(spec[:c])
		}
		if spec == "" {
			continue
		}
		left, right, ok := strings.Cut(spec, "=>")
		if !ok {
			return nil, fmt.Errorf("go.mod line %d: replace without =>: %q", i+1, line)
		}
		lf, rf := strings.Fields(left), strings.Fields(right)
		if len(lf) < 1 || len(lf) > 2 || len(rf) < 1 || len(rf) > 2 {
			return nil, fmt.Errorf("go.mod line %d: malformed replace: %q", i+1, line)
		}
		path := lf[0]
		var target string
		switch {
		case stubs[path]:
			target = StubPath(path)
		case strings.HasPrefix(rf[0], "./staging/"):
			target = path + " " + row.ModuleVersion(path)
		case row.Overrides[path] != "":
			target = path + " " + row.Overrides[path]
		default:
			continue
		}
		done[path] = true
		// Drop a version on the left: the stub or pin must win for any version.
		lines[i] = prefix + path + " => " + target
	}
	if inBlock {
		return nil, fmt.Errorf("go.mod: unterminated replace block")
	}

	var extra []string
	for path := range stubs {
		if !done[path] {
			extra = append(extra, "replace "+path+" => "+StubPath(path))
		}
	}
	for path, v := range row.Overrides {
		if !done[path] {
			extra = append(extra, "replace "+path+" => "+path+" "+v)
		}
	}
	sort.Strings(extra)
	out := strings.TrimRight(strings.Join(lines, "\n"), "\n") + "\n"
	if len(extra) > 0 {
		out += "\n// Added by kubelet-compat build/source: modules the proxy does not serve.\n" + strings.Join(extra, "\n") + "\n"
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "=> ./staging/") {
			return nil, fmt.Errorf("go.mod still replaces with a staging directory: %q", strings.TrimSpace(line))
		}
	}
	return []byte(out), nil
}

// StubGoMod is the whole content of a stub module.
func StubGoMod(path string) []byte {
	return []byte("// Stub written by kubelet-compat build/source: the module proxy does not\n// serve " + path + " and nothing built from this tree imports it.\nmodule " + path + "\n")
}
