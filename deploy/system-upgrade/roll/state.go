package roll

import (
	"strings"
)

// Phase is where a node's roll stands, the state's phase key: what a Job
// that finds it does next (README.md, "The roll's state on the node").
type Phase string

const (
	// PhaseNone: no roll on the node (no state).
	PhaseNone Phase = ""
	// PhaseRuntimeSwapping: the runtime step began; its picture, switch
	// and gate are under way.
	PhaseRuntimeSwapping Phase = "runtime-swapping"
	// PhaseRuntimePassed: the runtime step's gate passed; the kubelet's
	// step is next.
	PhaseRuntimePassed Phase = "runtime-passed"
	// PhaseRuntimeRollingBack: the previous containerd is being selected back.
	PhaseRuntimeRollingBack Phase = "runtime-rolling-back"
	// PhaseBegun: the backup is taken; the packages, stage1 and kubeadm,
	// the record and the picture are under way.
	PhaseBegun Phase = "begun"
	// PhaseSwapping: the picture is saved; the swap and the gate are under way.
	PhaseSwapping Phase = "swapping"
	// PhasePassed: the gate passed (a verdict).
	PhasePassed Phase = "passed"
	// PhaseRollingBack: the kubelet's rollback is under way.
	PhaseRollingBack Phase = "rolling-back"
	// PhaseRolledBack: a rollback is done (a verdict).
	PhaseRolledBack Phase = "rolled-back"
)

// Phases are every phase a state can hold, in the order a roll meets them.
var Phases = []Phase{PhaseRuntimeSwapping, PhaseRuntimePassed, PhaseRuntimeRollingBack,
	PhaseBegun, PhaseSwapping, PhasePassed, PhaseRollingBack, PhaseRolledBack}

// Known says whether p is a phase this engine (or the previous release's
// Job) writes.
func (p Phase) Known() bool {
	for _, q := range Phases {
		if p == q {
			return true
		}
	}
	return false
}

// Verdict says whether p is a verdict: the roll is over.
func (p Phase) Verdict() bool { return p == PhasePassed || p == PhaseRolledBack }

// State is the roll's state on the node, the key=value lines of
// /var/lib/kubelet-compat/roll/state, as the previous release's Job
// (upgrade.sh) wrote it too: a roll it began is continued by this one.
// Times are UTC, 2006-01-02T15:04:05Z, compared as text.
type State struct {
	Target   string // target: the version rolled to
	Previous string // previous: stage2 before the roll
	Stage1   string // stage1: stage1 before the roll
	// JobPods are the roll's Job pods (SYSTEM_UPGRADE_POD_UID), space-separated.
	JobPods string
	Phase   Phase
	Reason  string // reason: why the rollback
	// Kubeadm is apply on the first control-plane node (kubeadm upgrade apply).
	Kubeadm string
	// EtcdBridge is begun before kubelet-compat etcd-bridge, done once it ended 0.
	EtcdBridge string
	// Runtime is KC_RUNTIME of a roll with a runtime step; RuntimePrevious
	// containerd's selection before it (a version or system).
	Runtime, RuntimePrevious string
	// RuntimeRejections is the kubelet's admission rejections count at the
	// runtime step's picture.
	RuntimeRejections string
	// RuntimeConfigBackup is where the runtime step kept containerd's
	// configuration before migrating it, set before either file is
	// written; the runtime's rollback puts it back.
	RuntimeConfigBackup string

	BeganAt, SwappedAt, PassedAt, RolledBackAt       string
	RuntimeSwappedAt, RuntimeBackAt, RuntimePassedAt string

	// lines are the file's lines as read, in order: Format keeps their
	// order and the keys this engine does not know.
	lines []string
}

// stateKeys maps the file's keys to State's fields, in the order a new
// file lists them.
var stateKeys = []struct {
	key   string
	field func(*State) *string
}{
	{"target", func(s *State) *string { return &s.Target }},
	{"previous", func(s *State) *string { return &s.Previous }},
	{"stage1", func(s *State) *string { return &s.Stage1 }},
	{"jobpods", func(s *State) *string { return &s.JobPods }},
	{"runtime", func(s *State) *string { return &s.Runtime }},
	{"runtime_previous", func(s *State) *string { return &s.RuntimePrevious }},
	{"phase", func(s *State) *string { return (*string)(&s.Phase) }},
	{"began_at", func(s *State) *string { return &s.BeganAt }},
	{"runtime_rejections", func(s *State) *string { return &s.RuntimeRejections }},
	{"runtime_config_backup", func(s *State) *string { return &s.RuntimeConfigBackup }},
	{"runtime_swapped_at", func(s *State) *string { return &s.RuntimeSwappedAt }},
	{"runtime_back_at", func(s *State) *string { return &s.RuntimeBackAt }},
	{"runtime_passed_at", func(s *State) *string { return &s.RuntimePassedAt }},
	{"etcd_bridge", func(s *State) *string { return &s.EtcdBridge }},
	{"kubeadm", func(s *State) *string { return &s.Kubeadm }},
	{"swapped_at", func(s *State) *string { return &s.SwappedAt }},
	{"passed_at", func(s *State) *string { return &s.PassedAt }},
	{"reason", func(s *State) *string { return &s.Reason }},
	{"rolled_back_at", func(s *State) *string { return &s.RolledBackAt }},
}

func stateField(s *State, key string) *string {
	for _, k := range stateKeys {
		if k.key == key {
			return k.field(s)
		}
	}
	return nil
}

// ParseState reads the state file's text. A key's first line counts
// (the Job writes each key once).
func ParseState(text string) State {
	var s State
	seen := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		if line == "" {
			continue
		}
		s.lines = append(s.lines, line)
		key, value, ok := strings.Cut(line, "=")
		if !ok || seen[key] {
			continue
		}
		seen[key] = true
		if f := stateField(&s, key); f != nil {
			*f = value
		}
	}
	return s
}

// Format writes the state as the file holds it: the lines it was read
// from, in their order, with the values set since; then the keys set
// since, in stateKeys' order. A key never set is not written.
func (s State) Format() string {
	var b strings.Builder
	written := map[string]bool{}
	for _, line := range s.lines {
		key, _, ok := strings.Cut(line, "=")
		if ok && written[key] {
			continue
		}
		if f := stateField(&s, key); ok && f != nil {
			written[key] = true
			b.WriteString(key + "=" + *f + "\n")
			continue
		}
		b.WriteString(line + "\n")
	}
	for _, k := range stateKeys {
		if v := *k.field(&s); !written[k.key] && v != "" {
			b.WriteString(k.key + "=" + v + "\n")
		}
	}
	return b.String()
}

// JobPodUIDs are the roll's Job pods.
func (s State) JobPodUIDs() []string { return strings.Fields(s.JobPods) }
