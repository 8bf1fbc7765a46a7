package preflight

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// ---- 7. flags and feature gates the target refuses ----

// mayNotStart is the verdict for a feature gate --help does not list.
const mayNotStart = "kubelet may not start (node NotReady: pods evicted after their tolerationSeconds)"

// Help is what `kubelet --help` lists: flag names and feature gates with
// their stage ("BETA - default=true").
type Help struct {
	Flags map[string]bool
	Gates map[string]string
}

var (
	helpFlag = regexp.MustCompile(`^\s+(?:-[A-Za-z], )?--([A-Za-z0-9][A-Za-z0-9._-]*)`)
	helpGate = regexp.MustCompile(`^\s+([A-Za-z0-9]+)=true\|false \(([^)]*)\)`)
)

// ParseHelp reads the output of `kubelet --help`.
func ParseHelp(out string) Help {
	h := Help{Flags: map[string]bool{}, Gates: map[string]string{}}
	for _, line := range strings.Split(out, "\n") {
		if m := helpGate.FindStringSubmatch(line); m != nil {
			h.Gates[m[1]] = m[2]
			continue
		}
		if m := helpFlag.FindStringSubmatch(line); m != nil {
			h.Flags[m[1]] = true
		}
	}
	return h
}

// DryParse is the answer of the target binary run as
// `<target> <node flags> --version`: the kubelet parses all its flags, then
// prints the version and exits before it reads the config file or touches
// the node (cmd/kubelet/app/server.go: cleanFlagSet.Parse, the help
// short-circuit, then verflag.PrintAndExitIfRequested; read in the 1.18 to
// 1.21 trees, assumed for the other minors).
type DryParse struct {
	// Ran is false when the binary was not run (Why says why).
	Ran    bool
	OK     bool
	Output string
	Why    string
}

// PrintedVersion says whether a kubelet's output has its version line
// ("Kubernetes v1.21.14"): deprecated flags are warned about first, on
// stderr ("Flag --network-plugin has been deprecated, ...").
func PrintedVersion(out string) bool {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "Kubernetes v") {
			return true
		}
	}
	return false
}

var klogPrefix = regexp.MustCompile(`^[FEWI]\d{4} [0-9:.]+\s+\d+ [^\]]+\] `)

// firstError picks the line that says what the kubelet refused.
func firstError(out string) string {
	for _, line := range strings.Split(out, "\n") {
		l := klogPrefix.ReplaceAllString(strings.TrimSpace(line), "")
		low := strings.ToLower(l)
		if strings.Contains(low, "unknown flag") || strings.Contains(low, "invalid argument") || strings.Contains(low, "unknown shorthand") ||
			strings.Contains(low, "flag needs an argument") || strings.HasPrefix(low, "error:") || strings.Contains(low, "failed to parse") {
			return l
		}
	}
	out = strings.TrimSpace(out)
	if i := strings.IndexByte(out, '\n'); i >= 0 {
		out = out[:i]
	}
	return out
}

// TargetFlags reports the node's flags and feature gates (from the flags and
// the config file) that the target kubelet refuses: the dry parse (the
// target itself; stops at the first bad flag), every flag --help does not
// list (removed, or deprecated and hidden from --help: the dry parse tells
// which), and the feature gates --help does not list (GA gates, which are
// accepted only at their locked value, deprecated or removed ones: the
// kubelet refuses unknown gates when it starts, after the dry parse). help
// is nil when --help could not be run.
func TargetFlags(target string, flags []FlagArg, gates map[string]bool, dry DryParse, help *Help) ([]Finding, []string) {
	var out []Finding
	var notes []string
	bad := func(why, patched string) {
		out = append(out, Finding{Pod: NodeRow, Check: CheckFlags, Unpatched: noStart, Patched: noStart, Why: why, PatchedReason: patched})
	}
	const fix = sameAsUpstream + ": the patches add no flag; change the node's flags or config before the swap"
	switch {
	case !dry.Ran:
		notes = append(notes, "flags: the target's flag parsing not checked: "+dry.Why)
	case !dry.OK:
		bad(fmt.Sprintf("%s refuses the node's flags: %s (`%s <flags> --version`)", target, firstError(dry.Output), target), fix)
	default:
		notes = append(notes, fmt.Sprintf("flags: %s parses the node's %d flag(s) (`<flags> --version`)", target, len(flags)))
	}
	if help == nil {
		notes = append(notes, "flags: feature gates not checked: the target's --help could not be read")
		return out, notes
	}
	seen := map[string]bool{}
	for _, f := range flags {
		if f.Name == "" || seen[f.Name] || help.Flags[f.Name] {
			continue
		}
		seen[f.Name] = true
		if dry.Ran && dry.OK {
			notes = append(notes, fmt.Sprintf("flags: --%s is not listed by %s --help but is accepted (deprecated?)", f.Name, target))
			continue
		}
		bad(fmt.Sprintf("--%s is not listed by %s --help: removed (refused at start) or deprecated and hidden", f.Name, target), fix)
	}
	var names []string
	for g := range gates {
		names = append(names, g)
	}
	sort.Strings(names)
	for _, g := range names {
		if _, ok := help.Gates[g]; ok || g == "AllAlpha" || g == "AllBeta" {
			continue
		}
		out = append(out, Finding{Pod: NodeRow, Check: CheckFlags, Unpatched: mayNotStart, Patched: mayNotStart,
			Why:           fmt.Sprintf("feature gate %s=%t is not listed by %s --help: GA (--help lists no GA gate; refused only when locked to the other value) or removed (refused: \"unrecognized feature gate\")", g, gates[g], target),
			PatchedReason: sameAsUpstream + ": check the gate in the target's release notes, or remove it from --feature-gates / featureGates before the swap"})
	}
	return out, notes
}
