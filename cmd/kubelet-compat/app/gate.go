package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/gate"
	"github.com/spf13/cobra"
)

// Exit codes of gate besides ExitOK (passed) and ExitError.
const (
	ExitGateLost     = 2
	ExitGateNotYet   = 3
	ExitGateGoneOnly = 4
)

// Defaults of gate's flags.
const (
	defaultGateTimeout   = 5 * time.Minute
	defaultGatePoll      = 2 * time.Second
	defaultGateFixedWait = 30 * time.Second
)

type gateOptions struct {
	nodeOptions
	picture       string
	step          string
	since         string
	timeout       time.Duration
	poll          time.Duration
	fixedWait     time.Duration
	record        string
	requireRecord bool
	output        string
}

func newGateCommand(env Env) *cobra.Command {
	o := &gateOptions{}
	cmd := &cobra.Command{
		Use:   "gate --picture FILE --step kubelet|runtime",
		Short: "After a kubelet or runtime swap: judge the node against its picture, until the verdict is final",
		Long:  gateHelp,
		Example: `  kubelet-compat picture -o /var/lib/kubelet-compat/picture.json
  (swap the kubelet and restart it)
  kubelet-compat gate --picture /var/lib/kubelet-compat/picture.json --step kubelet

  kubelet-compat gate --picture picture.json --step runtime --since 2026-01-02T03:04:05Z -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runGate(cmd.Context(), env, o) },
	}
	fs := cmd.Flags()
	fs.StringVar(&o.picture, "picture", "", "the picture file picture wrote before the swap (required)")
	fs.StringVar(&o.step, "step", "", "what was swapped: kubelet or runtime (required)")
	fs.StringVar(&o.since, "since", "", "RFC3339 time from which a sync counts (runtime step: when the runtime came back; default: the gate's start; kubelet step: default the picture's time, and never before the running kubelet's start)")
	positiveDurationVar(fs, &o.timeout, "timeout", defaultGateTimeout, "how long to poll for a final verdict (positive)")
	positiveDurationVar(fs, &o.poll, "poll", defaultGatePoll, "how often to judge the node again (positive)")
	nonNegativeDurationVar(fs, &o.fixedWait, "fixed-wait", defaultGateFixedWait, "without a sync record of the running kubelet (an unpatched kubelet): pods count as synced this long after --since")
	fs.BoolVar(&o.requireRecord, "require-record", false, "never fall back to --fixed-wait: without a sync record of the running kubelet the verdict stays not yet")
	fs.StringVar(&o.record, "record", "", "the kubelet's sync record (default: "+kubeletcompat.RecordFileName+" beside the compat file, see --file and --root-dir)")
	fs.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	o.addPictureRuntimeFlags(fs)
	o.addFileFlags(fs)
	o.addKubeletFlags(fs)
	return cmd
}

const gateHelp = `gate judges the node after a kubelet or runtime swap against the picture
taken before it (kubelet-compat picture), by pod UID and container ID, and
polls (--poll) until the verdict is final or --timeout passes (the first
look runs to its end, up to 30s, even past --timeout). Per pod of the
picture:

  kept            same UID and sandbox, every container that ran at the
                  picture runs under the same ID
  restarted       a container runs under another ID, or the kubelet's sync
                  record says it killed one (its reason is named)
  container-gone  a container runs no more while the pod runs on (a
                  sidecar, a restartPolicy Never container)
  recreated       another sandbox, or the same namespace/name under
                  another UID (a static pod)
  gone            no ready sandbox any more (a Job that completed, a
                  deletion): for the caller to adjudicate
  stopping        nothing runs in a sandbox still ready: not final

A kept pod counts only once the kubelet is known to have synced it since
the swap. The evidence is the kubelet's sync record (--record, written by a
patched kubelet beside the compat file): a sync of the pod after --since
without error (a back-off, such as CrashLoopBackOff, counts: the sync
decided and chose to wait). The record counts only when it is the running kubelet's
(its PID and start time, read from /proc as the other commands find the
kubelet); in the kubelet step that kubelet must have started after the
picture. A record that fails the ownership checks (root-owned, not
writable by group or others, a regular file) is ignored with a warning.
Without a record of the running kubelet (an unpatched kubelet, or one that
has written none yet) pods count as synced --fixed-wait after --since,
unless --require-record; the verdict says which evidence it used.

Pods created after the picture are judged only for a kill the running
kubelet's record shows since --since, and otherwise listed.

A loss is final at once; passed once every pod of the picture is kept and
synced; gone-only once it has held for 10s.

Exit codes:
  0  passed: every pod of the picture kept and synced
  1  error (a missing or corrupt picture, another node's picture, a bad
     flag; or no verdict at all within --timeout, the last error named)
  2  lost: a pod restarted, was recreated or lost a container, or a pod
     created after the picture had a container killed
  3  not yet: --timeout passed with a pod not known to be synced
  4  gone only: nothing lost and every pod synced, but pods of the
     picture run no more at all`

func runGate(ctx context.Context, env Env, o *gateOptions) error {
	if o.output != "text" && o.output != "json" {
		return fmt.Errorf("unknown output format %q (want text or json)", o.output)
	}
	opts, err := o.options(env)
	if err != nil {
		return err
	}
	pic, err := readPicture(o.picture)
	if err != nil {
		return err
	}
	node, err := o.node(env)
	if err != nil {
		return err
	}
	if pic.Node != node {
		return fmt.Errorf("picture %s is of node %q, this is node %q", o.picture, pic.Node, node)
	}
	r, err := o.pollVerdict(ctx, env, pic, opts)
	if err != nil {
		return err
	}
	if o.output == "json" {
		err = writeJSON(env.Stdout, r)
	} else {
		err = writeGateText(env.Stdout, r)
	}
	if err != nil {
		return err
	}
	return gateExit(r.Verdict, o.timeout)
}

// options are Judge's options from the flags.
func (o *gateOptions) options(env Env) (gate.Options, error) {
	opts := gate.Options{FixedWait: o.fixedWait, RequireRecord: o.requireRecord}
	switch o.step {
	case string(gate.StepKubelet), string(gate.StepRuntime):
		opts.Step = gate.Step(o.step)
	case "":
		return opts, errors.New("--step is required: kubelet or runtime")
	default:
		return opts, fmt.Errorf("--step: unknown step %q (want kubelet or runtime)", o.step)
	}
	if o.picture == "" {
		return opts, errors.New("--picture is required: the file kubelet-compat picture wrote before the swap")
	}
	switch {
	case o.since != "":
		t, err := time.Parse(time.RFC3339Nano, o.since)
		if err != nil {
			return opts, fmt.Errorf("--since: invalid time %q (want RFC3339, e.g. 2026-01-02T03:04:05Z)", o.since)
		}
		opts.Since = t
	case opts.Step == gate.StepRuntime:
		// When the runtime came back is not known: a sync after the gate
		// started is surely after it.
		opts.Since = env.Now()
	}
	return opts, nil
}

// recordPath is --record, else the record beside the compat file.
func (o *gateOptions) recordPath() string {
	if o.record != "" {
		return o.record
	}
	return kubeletcompat.DefaultRecordPath(o.compatPath())
}

// gateExit is the exit of a printed verdict: nil when it passed.
func gateExit(v gate.Verdict, timeout time.Duration) error {
	lost, waiting, gone := 0, 0, 0
	for _, p := range v.Pods {
		switch {
		case p.Outcome.Lost():
			lost++
		case p.Waiting != "":
			waiting++
		case p.Outcome == gate.Gone:
			gone++
		}
	}
	switch v.Result {
	case gate.Passed:
		return nil
	case gate.Lost:
		return &exitError{code: ExitGateLost, err: fmt.Errorf("lost: %d pod(s) lost containers across the %s swap", lost, v.Step)}
	case gate.GoneOnly:
		return &exitError{code: ExitGateGoneOnly, err: fmt.Errorf("gone only: nothing lost, but %d pod(s) of the picture run no more", gone)}
	}
	why := fmt.Sprintf("%d pod(s) not known to be synced since %s", waiting, stamp(v.Since))
	if v.Waiting != "" {
		why = v.Waiting
	}
	return &exitError{code: ExitGateNotYet, err: fmt.Errorf("not yet after %s: %s", timeout, why)}
}
