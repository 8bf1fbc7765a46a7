package runtimecompat

import (
	"fmt"
	"slices"
	"strings"
)

// Matrix columns: the runtimes the project builds or finds on Debian 12.
var matrixLines = []string{"1.6.20", "1.7.35", "2.4.2"}

// Row is one kubelet minor of the matrix.
type Row struct {
	Minor int
	// CRI is what the kubelet speaks.
	CRI string
	// Cells are, per matrixLines, "yes" or "no: why".
	Cells []string
	// CgroupV1 is what a cgroup v1 host needs.
	CgroupV1 string
	// Basis says where the row comes from.
	Basis string
}

// measured are the pairs run on a node by make e2e E2E=runtime
// (docs/results.md, "The container runtime swapped under a running
// kubelet"): kubelet minor -> the containerd versions on which it ran the
// corpus, as the baseline of a run or after the runtime was swapped in
// under it, every pod running, serving and synced by the kubelet.
var measured = map[int][]string{
	// 2026-12-04, the patched kubelet alone (-controls=false): 1.20 to
	// 1.7.35, the others the whole road.
	20: {"1.6.20", "1.7.35"},
	// 2026-12-04, the patched kubelet alone, 1.6.20 -> 1.7.35 (CRI
	// v1alpha2 only: not on 2.x).
	18: {"1.6.20", "1.7.35"},
	19: {"1.6.20", "1.7.35"},
	22: {"1.6.20", "1.7.35"},
	// 2026-12-04: the baseline on 1.6.20, swapped to 1.7.35, where exec,
	// logs, a genuine change and stop worked (CRI v1alpha2 on both).
	21: {"1.6.20", "1.7.35"},
	26: {"1.6.20", "1.7.35", "2.4.2"},
	28: {"1.6.20", "1.7.35", "2.4.2"},
	// 2026-12-04: the road 1.6.20 -> 1.7.35 -> 2.4.2, each step from a
	// baseline on its From; exec, logs, a genuine change and stop on both Tos.
	30: {"1.6.20", "1.7.35", "2.4.2"},
	31: {"1.6.20", "1.7.35", "2.4.2"},
	// 2026-12-04, the patched kubelet alone, the whole road, beside a kind
	// run (23 to 25 speak v1 with a v1alpha2 fallback: v1 on all three).
	23: {"1.6.20", "1.7.35", "2.4.2"},
	24: {"1.6.20", "1.7.35", "2.4.2"},
	25: {"1.6.20", "1.7.35", "2.4.2"},
	27: {"1.6.20", "1.7.35", "2.4.2"},
	// 2026-12-04, the patched kubelet alone, the whole road, beside a kind
	// fleet run.
	29: {"1.6.20", "1.7.35", "2.4.2"},
	32: {"1.6.20", "1.7.35", "2.4.2"},
	33: {"1.6.20", "1.7.35", "2.4.2"},
	34: {"1.6.20", "1.7.35", "2.4.2"},
	35: {"1.6.20", "1.7.35", "2.4.2"},
	// The order runs of 2026-12-04: the baseline on 1.7.35, the runtime
	// first (1.7.35 -> 2.4.2 under 1.36.5); the whole road on 2026-12-04,
	// the patched kubelet alone.
	36: {"1.6.20", "1.7.35", "2.4.2"},
	// The road of 2026-12-04: the baseline on 1.6.20, swapped to 1.7.35
	// and 2.4.2, where exec, logs, a genuine change and stop worked.
	37: {"1.6.20", "1.7.35", "2.4.2"},
	// 2026-12-07: make e2e E2E=steps 1.37.2 <-> 1.38.0-beta.0 on Debian's
	// containerd (no RuntimeConfig: the kubelet fell back to its config's
	// cgroup driver), patched and as released; then make e2e E2E=runtime
	// under 1.38.0-beta.0, the road 1.6.20 -> 1.7.35 -> 2.4.2, where exec,
	// logs, attach, a genuine change and stop worked.
	38: {"1.6.20", "1.7.35", "2.4.2"},
}

// Matrix is kubelet 1.18 to 1.38 against containerd 1.6.20, 1.7.x and 2.x:
// what the sources say, and which pairs were measured on a node (measured).
// The runtimes' CRI APIs are measured (1.6.20) or come from their source.
func Matrix() []Row {
	var rows []Row
	for minor := 18; minor <= 38; minor++ {
		n := KubeletNeeds(minor)
		r := Row{Minor: minor, CRI: strings.Join(n.APIs, ", else "), CgroupV1: "runs", Basis: "from source"}
		if len(n.APIs) == 1 {
			r.CRI += " only"
		}
		if n.RuntimeConfig {
			r.CRI += " + RuntimeConfig"
			r.Basis = "from KEP-4033, not measured"
		}
		if n.FailsOnCgroupV1 {
			r.CgroupV1 = "needs failCgroupV1: false"
		}
		for _, v := range matrixLines {
			l, _ := LineOf("containerd", v)
			ok, why := l.Serves(minor)
			cell := "yes"
			if slices.Contains(measured[minor], v) {
				cell = "yes, measured"
			}
			if !ok {
				cell = "no: " + shortWhy(why)
			} else if rec := recommended(minor, v); rec != "" {
				cell += " (not in containerd's list)"
			}
			r.Cells = append(r.Cells, cell)
		}
		rows = append(rows, r)
	}
	return rows
}

func shortWhy(why string) string {
	switch {
	case strings.Contains(why, "RuntimeConfig"):
		return "no RuntimeConfig"
	case strings.Contains(why, "speaks only CRI v1alpha2"):
		return "no CRI v1alpha2"
	case strings.Contains(why, "needs CRI v1"):
		return "no CRI v1"
	}
	return why
}

// Markdown renders the matrix as the table of docs/runtime.md.
func Markdown() string {
	var b strings.Builder
	b.WriteString("| kubelet | speaks | containerd 1.6.20 | containerd 1.7.x | containerd 2.x | cgroup v1 host | basis |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, r := range Matrix() {
		fmt.Fprintf(&b, "| 1.%d | %s | %s | %s | %s |\n", r.Minor, r.CRI, strings.Join(r.Cells, " | "), r.CgroupV1, r.Basis)
	}
	return b.String()
}
