// Package gate judges a node after a kubelet or runtime swap against the
// picture taken before it: per pod of the picture, by pod UID and container
// ID, whether every container that ran then runs now, and whether the
// kubelet is known to have synced the pod since the swap (its sync record,
// or for a kubelet that writes none, a fixed wait). Judge is pure: the
// caller reads the runtime, the record and /proc, and polls.
package gate

import (
	"time"
)

// Step is what the roll swapped.
type Step string

const (
	// StepKubelet: the kubelet restarted into another binary.
	StepKubelet Step = "kubelet"
	// StepRuntime: the container runtime restarted; the kubelet did not
	// and resyncs each pod on its own period (60-90 s).
	StepRuntime Step = "runtime"
)

// Kubelet names a kubelet process: its PID and when it started, as the
// node's /proc says (never the API).
type Kubelet struct {
	PID       int       `json:"pid"`
	StartedAt time.Time `json:"startedAt"`
}

// DefaultStartSlack is how far the start time a sync record names may be
// from the running kubelet's start read from /proc: the kubelet takes its
// own at its package initialisation, a moment after the process started.
const DefaultStartSlack = 10 * time.Second

// Options are what the caller knows besides the pictures and the record.
type Options struct {
	Step Step
	// Since is when the swap was over (runtime step: when the runtime came
	// back); a sync counts only after it. Zero: the picture's time. The
	// kubelet step counts from the running kubelet's start when later.
	Since time.Time
	// FixedWait stands in for the evidence of a sync when the running
	// kubelet writes no record: pods count as synced FixedWait after Since.
	FixedWait time.Duration
	// Kubelet is the running kubelet, from /proc: a record counts only when
	// it is that kubelet's.
	Kubelet Kubelet
	// StartSlack bounds the difference between the record's kubelet start
	// and Kubelet.StartedAt (0: DefaultStartSlack).
	StartSlack time.Duration
	// RequireRecord refuses the fixed wait: without a record of the running
	// kubelet, pods are never counted as synced.
	RequireRecord bool
}

// Result is the overall verdict.
type Result string

const (
	// Passed: every pod of the picture kept every container and was synced
	// since the swap.
	Passed Result = "passed"
	// Lost: a pod restarted a container, was recreated, or lost a container
	// while it runs on; or a pod created after the picture had a container
	// killed. Final.
	Lost Result = "lost"
	// NotYet: nothing lost so far, but some pod is not known to be synced
	// since the swap: poll again.
	NotYet Result = "not-yet"
	// GoneOnly: nothing lost and every pod synced, but some pods of the
	// picture run no more at all (a Job that completed, a deletion): the
	// caller adjudicates.
	GoneOnly Result = "gone-only"
)

// Outcome is what became of one pod.
type Outcome string

const (
	// Kept: same UID and sandbox, every container of the picture runs
	// under the same ID.
	Kept Outcome = "kept"
	// Restarted: a container of the picture runs under another ID, or the
	// kubelet's record says it killed one.
	Restarted Outcome = "restarted"
	// ContainerGone: a container of the picture runs no more while the pod
	// runs on (a sidecar, a restartPolicy Never container).
	ContainerGone Outcome = "container-gone"
	// Recreated: the pod runs in another sandbox, or under another UID
	// with the same namespace and name (a static pod).
	Recreated Outcome = "recreated"
	// Gone: the pod runs no more at all.
	Gone Outcome = "gone"
	// Stopping: none of the pod's containers runs, but its sandbox is still
	// ready: it completes (gone next) or the kubelet starts a container
	// again (restarted next). Not final.
	Stopping Outcome = "stopping"
	// New: created after the picture, nothing recorded lost (logged only).
	New Outcome = "new"
	// NewKilled: created after the picture, and the kubelet's record says it
	// killed one of its containers since the swap.
	NewKilled Outcome = "new-killed"
)

// Lost says whether the outcome is a loss.
func (o Outcome) Lost() bool {
	switch o {
	case Restarted, ContainerGone, Recreated, NewKilled:
		return true
	}
	return false
}

// SyncEvidence is what the verdict took as the proof that the kubelet
// synced the pods.
type SyncEvidence string

const (
	// ByRecord: the running kubelet's sync record.
	ByRecord SyncEvidence = "record"
	// ByFixedWait: no record of the running kubelet; the fixed wait.
	ByFixedWait SyncEvidence = "fixed-wait"
	// ByNothing: no record of the running kubelet and no fixed wait
	// allowed (Options.RequireRecord).
	ByNothing SyncEvidence = "none"
)

// PodVerdict is the judgement of one pod.
type PodVerdict struct {
	// Pod is namespace/name; UID the pod's UID at the picture (for a pod
	// created after it, now).
	Pod     string  `json:"pod"`
	UID     string  `json:"uid"`
	Outcome Outcome `json:"outcome"`
	// Synced says that the kubelet is known to have synced the pod since
	// the swap; Waiting, when not final, what the gate waits for. Only kept
	// and stopping pods wait: a loss is final, and a gone pod is not synced
	// any more.
	Synced  bool   `json:"synced"`
	Waiting string `json:"waiting,omitempty"`
	// Evidence are the lines the outcome rests on.
	Evidence []string `json:"evidence"`
}

// Verdict is the judgement of the node.
type Verdict struct {
	Result Result `json:"result"`
	Step   Step   `json:"step"`
	// Since is when syncs start counting; Now is the runtime's view's time.
	Since time.Time `json:"since"`
	Now   time.Time `json:"now"`
	// SyncEvidence is what the sync of the pods was judged on, Record the
	// record's kubelet or why no record counted.
	SyncEvidence SyncEvidence `json:"syncEvidence"`
	Record       string       `json:"record"`
	// Waiting is what the node as a whole waits for (the kubelet has not
	// restarted since the picture), empty when nothing.
	Waiting string       `json:"waiting,omitempty"`
	Pods    []PodVerdict `json:"pods"`
}

// Final says whether polling may stop: every result but NotYet.
func (v Verdict) Final() bool { return v.Result != NotYet }
