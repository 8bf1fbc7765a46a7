package roll

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"
)

// Prog prefixes the Job's log lines and its last word.
const Prog = "kubelet-compat-upgrade"

// Engine runs a node's roll: Upgrade, Naive and
// WaitPlan.
type Engine struct {
	Config Config
	Host   Host
	// Out is the Job's log; Err its standard error (preflight's warnings).
	Out, Err io.Writer
	// WorkDir is the Job's own temporary directory (the kubelet's kubeconfig).
	WorkDir string
	// AfterAction, when set, is called after each action that ended
	// without error, with its name: the tests' kill points.
	AfterAction func(name string)
}

// Failure is how a run ends when the node is not upgraded (refused,
// failed, or rolled back): exit status 1.
type Failure struct{ Msg string }

func (f *Failure) Error() string { return f.Msg }

// stepFailed is a step that failed once the roll changed the node,
// or a failed gate: the node is rolled back.
type stepFailed struct {
	why string
	// gate: the kubelet step's gate failed (its rollback's last word
	// differs from a failed step's).
	gate bool
}

func (s *stepFailed) Error() string { return s.why }

func failRollf(format string, args ...any) error {
	return &stepFailed{why: fmt.Sprintf(format, args...)}
}

func dief(format string, args ...any) error { return &Failure{Msg: fmt.Sprintf(format, args...)} }

// action is one small step of a roll: a transition's unit of work, after
// which a Job may die (AfterAction).
type action struct {
	name string
	do   func(context.Context) error
}

// run is one Job's run: what it read from the node and decided.
type run struct {
	*Engine
	cfg   Config
	files Files
	store store
	st    State
	// target, previous and prevStage1 are the roll's versions (an
	// unfinished roll to another target is rolled back with its own).
	target, previous, prevStage1 string
	// sel is what kubernetes-select status said last.
	sel selection
	// rt is the runtime step's.
	rt runtimeStep
	gp gateParams
	pr probeMemory
	// ready are the pods Ready at the settle before the picture.
	ready []podLine
	// after are the pods the runtime ran at the gate's last look.
	after []runningPod
	naive bool
	// kubeletKubeconfig is the kubeconfig the Job reads the kubelet's own
	// server with, in WorkDir.
	kubeletKubeconfig string
}

func (e *Engine) newRun(ctx context.Context) *run {
	files := guardedFiles{Files: e.Host.Files(), ctx: ctx}
	return &run{Engine: e, cfg: e.Config, files: files, store: store{files}, target: e.Config.Target,
		rt:                runtimeStep{runtime: e.Config.Runtime, version: e.Config.RuntimeVersion},
		kubeletKubeconfig: filepath.Join(e.WorkDir, "kubelet.kubeconfig")}
}

// slowAction is how long an action runs before the log says how long it
// took: where a node's minutes go (kubeadm, the gate), read from the Job's
// log alone.
const slowAction = 10 * time.Second

// do runs actions in order; the first error ends them.
func (r *run) do(ctx context.Context, actions ...action) error {
	for _, a := range actions {
		if err := ctx.Err(); err != nil {
			return err
		}
		start := r.Host.Now()
		if err := a.do(ctx); err != nil {
			return err
		}
		if took := r.Host.Now().Sub(start); took >= slowAction {
			r.log("%s: took %ds", a.name, seconds(took))
		}
		if r.AfterAction != nil {
			r.AfterAction(a.name)
		}
	}
	return nil
}

func actions(lists ...[]action) []action {
	var all []action
	for _, l := range lists {
		all = append(all, l...)
	}
	return all
}

// log writes a line to the Job's log.
func (r *run) log(format string, args ...any) {
	fmt.Fprintf(r.Out, "%s: %s\n", Prog, fmt.Sprintf(format, args...))
}

// logIndented writes text to the Job's log, each line indented by two
// spaces.
func (r *run) logIndented(text string) {
	for _, line := range lines(text) {
		fmt.Fprintf(r.Out, "  %s\n", line)
	}
}

// lines splits text into its lines, without a last empty one.
func lines(text string) []string {
	text = strings.TrimSuffix(text, "\n")
	if text == "" {
		return nil
	}
	return strings.Split(text, "\n")
}

// lastLine is the last line of text ("" when none).
func lastLine(text string) string {
	l := lines(text)
	if len(l) == 0 {
		return ""
	}
	return l[len(l)-1]
}

// firstLine is the first line of text ("" when none).
func firstLine(text string) string {
	l := lines(text)
	if len(l) == 0 {
		return ""
	}
	return l[0]
}

// cliReason is the reason kubelet-compat gave on its standard error, its
// last line without the prefix "kubelet-compat: " ("" when it gave none).
func cliReason(stderr []byte) string {
	r, ok := strings.CutPrefix(lastLine(string(stderr)), "kubelet-compat: ")
	if !ok {
		return ""
	}
	return r
}

// onHost runs a program on the node, its output captured.
func (r *run) onHost(ctx context.Context, argv ...string) Result {
	if err := ctx.Err(); err != nil {
		return Result{Code: -1, Err: err}
	}
	return r.Host.Run(ctx, Cmd{Argv: argv})
}

// onHostLogged runs a program on the node, its output to the Job's log.
func (r *run) onHostLogged(ctx context.Context, argv ...string) Result {
	if err := ctx.Err(); err != nil {
		return Result{Code: -1, Err: err}
	}
	return r.Host.Run(ctx, Cmd{Argv: argv, Stdout: r.Out, Stderr: r.Err})
}

// kubectl runs the Job's kubectl.
func (r *run) kubectl(ctx context.Context, args ...string) Result {
	if err := ctx.Err(); err != nil {
		return Result{Code: -1, Err: err}
	}
	return r.Host.Kubectl(ctx, args...)
}

// stamp is now as the roll's state writes times.
func (r *run) stamp() string { return r.Host.Now().UTC().Format("2006-01-02T15:04:05Z") }

// sleep waits d on the host's clock.
func (r *run) sleep(ctx context.Context, d time.Duration) error { return r.Host.Sleep(ctx, d) }

// save writes the state after change has changed it.
func (r *run) save(change func(*State)) error {
	st := r.st
	change(&st)
	if err := r.store.save(st); err != nil {
		return err
	}
	r.st = st
	return nil
}

// saveAction is an action that writes the state.
func (r *run) saveAction(name string, change func(*State)) action {
	return action{name, func(context.Context) error { return r.save(change) }}
}

// aborted says whether err is the run's context ending: the Job is dying
// and does nothing more.
func aborted(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
