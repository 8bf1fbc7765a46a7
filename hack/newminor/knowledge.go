package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// bumpConst sets `name = <n>` in a Go source (the first such line) and
// reports the value it had.
func bumpConst(src []byte, name string, n int) ([]byte, int, error) {
	re := regexp.MustCompile(`(?m)^(\s*(?:const\s+)?` + regexp.QuoteMeta(name) + `\s*=\s*)(\d+)\b`)
	loc := re.FindSubmatchIndex(src)
	if loc == nil {
		return nil, 0, fmt.Errorf("no %q constant", name)
	}
	old, _ := strconv.Atoi(string(src[loc[4]:loc[5]]))
	out := append([]byte{}, src[:loc[4]]...)
	out = append(out, strconv.Itoa(n)...)
	out = append(out, src[loc[5]:]...)
	return out, old, nil
}

// anchor is a hand-written table or fact about the newest minor that this
// command does not write: it names the line for a human.
type anchor struct {
	file string
	// pattern is a regexp; {prev} stands for the previous newest minor's
	// number and {new} for the new one's.
	pattern string
	what    string
}

// knowledge is what a human measures or looks up for a new minor, where it
// lives. Each is upstream behaviour this project measured, not derived.
var knowledge = []anchor{
	{"pkg/upstream/upstream.go", `^\s*Last\s*=\s*\d+`, "the minors the e2e's unpatched controls measured: run the unpatched control 1.{prev} -> 1.{new}, then raise Last"},
	{"pkg/upstream/upstream.go", `^var staticPodUIDChanges`, "static-pod UID: did the unpatched control 1.{prev} -> 1.{new} recreate the corpus's static pods without metadata.uid? add {new}: true or false (the types 1.{new} changed are generated: zz_generated.podtypes.go, which e2e/pkg/corpus's test holds to it)"},
	{"cmd/kubelet-compat/internal/preflight/declared.go", `^var declaredFeatures`, "re-admission: node-declared features and admission 1.{new} adds or graduates (registry of the minors the CLI predicts re-admission for)"},
	{"pkg/runtimecompat/check.go", `^\s*{prev}: \{`, "containerd releases containerd's RELEASES.md recommends for 1.{new} (add {new}: {...})"},
	{"pkg/runtimebuild/spec.go", `crictl\("v1\.\d+\.\d+"`, "crictl of the runtime images: a cri-tools release for 1.{new} once published"},
	{"go.mod", `^\s*k8s\.io/api v0\.\d+\.\d+`, "the CLI's k8s.io/api (and apimachinery, client-go): 1.{new}'s, so the CLI decodes every field of 1.{new}"},
	{"cmd/kubelet-compat/internal/preflight/preflight.go", `^const TypesMinor = \d+`, "TypesMinor follows go.mod's k8s.io/api minor (TestTypesMinor)"},
	{"pkg/runtimecompat/runtimecompat.go", `^const runtimeConfigMinor = \d+`, "KEP-4033: does 1.{new}'s getCgroupDriverFromCRI (cmd/kubelet/app/server.go) still fall back when the runtime answers RuntimeConfig Unimplemented? if it fails instead, runtimeConfigMinor is {new}"},
	{"e2e/pkg/kind/kind_test.go", `"1\.{prev}\.\d+"`, "kind: kubeadm flags and node image of 1.{new} (make kind-images E2E=...; e2e/README.md \"kind node images\")"},
}

// rangeEnd finds prose that ends a range at the previous newest minor
// ("1.31 .. 1.37", "1.18-1.37", "up to 1.37"): it may have to say 1.{new}.
func rangeEnd(prev int) *regexp.Regexp {
	return regexp.MustCompile(`(\.\. ?|-|–|up to |to |through )1\.` + strconv.Itoa(prev) + `\b`)
}

func (a anchor) expand(s string, prev, next int) string {
	return strings.NewReplacer("{prev}", strconv.Itoa(prev), "{new}", strconv.Itoa(next)).Replace(s)
}

// finding is a line a human must look at.
type finding struct {
	file string
	line int
	text string
	what string
}

func (f finding) String() string {
	return fmt.Sprintf("%s:%d: %s\n      %s", f.file, f.line, f.what, strings.TrimSpace(f.text))
}

// findAnchor returns the lines of src matching the anchor.
func findAnchor(a anchor, src string, prev, next int) []finding {
	re := regexp.MustCompile(a.expand(a.pattern, prev, next))
	var out []finding
	for i, line := range strings.Split(src, "\n") {
		if re.MatchString(line) {
			out = append(out, finding{file: a.file, line: i + 1, text: line, what: a.expand(a.what, prev, next)})
		}
	}
	return out
}

// findRangeEnds returns the lines of src whose prose ends a range at 1.prev.
func findRangeEnds(file, src string, prev int) []finding {
	re := rangeEnd(prev)
	var out []finding
	for i, line := range strings.Split(src, "\n") {
		if re.MatchString(line) {
			out = append(out, finding{file: file, line: i + 1, text: line, what: "names 1." + strconv.Itoa(prev) + " as the newest"})
		}
	}
	return out
}
