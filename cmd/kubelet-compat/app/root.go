// Package app holds the kubelet-compat commands: record, status, sweep,
// preflight, etcd-bridge, cgroups, picture and gate. The logic lives in the library and in small
// packages; the commands wire flags, the runtime and the output together.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/internal/kubelet"
	"github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/internal/preflight"
	"github.com/kubelet-compat/kubelet-compat/pkg/shimgroups"
	"github.com/spf13/cobra"
)

// Exit codes shared by every command.
const (
	ExitOK    = 0
	ExitError = 1
	// ExitKept is sweep's answer when the compat file is still needed.
	ExitKept = 2
)

// Env is what the commands take from the machine; tests replace it.
type Env struct {
	Stdout, Stderr io.Writer
	// ProcRoot is where processes are looked up (/proc).
	ProcRoot string
	// FSRoot is the root the cgroups command reads /proc, runc's state and
	// the cgroup files under ("" or "/": the machine's).
	FSRoot   string
	Now      func() time.Time
	Hostname func() (string, error)
	// OwnerUID is the owner the kubelet requires of the compat file (root).
	OwnerUID int
	// Geteuid decides whether record chowns the file to root.
	Geteuid func() int
	// KubeletBinary is the default of --kubelet-binary (/usr/bin/kubelet).
	KubeletBinary string
	// Systemd is asked for the kubelet unit's main PID.
	Systemd kubelet.Systemd
	// RootUID must own the kubelet binary and run the kubelet (root).
	RootUID int
	// Clocks gives the boot time the kubelet's start time counts from.
	Clocks kubelet.Clocks
	// UnixListeners lists the host's listening unix sockets (nil: the
	// kernel's, shimgroups.UnixListeners).
	UnixListeners func() ([]shimgroups.Listener, error)
	// SubIDs answers the kubelet's look-up of its user namespace range
	// (nil: getent and getsubids on this host, hostSubIDs).
	SubIDs func(ctx context.Context) preflight.SubIDs
}

// DefaultEnv is the real machine.
func DefaultEnv() Env {
	return Env{Stdout: os.Stdout, Stderr: os.Stderr, ProcRoot: "/proc", Now: time.Now,
		Hostname: os.Hostname, OwnerUID: 0, Geteuid: os.Geteuid,
		KubeletBinary: kubelet.DefaultBinary, Systemd: kubelet.DefaultSystemd, RootUID: 0, Clocks: kubelet.SystemClocks}
}

// exitError carries an exit code other than ExitError.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

// NewCommand returns the kubelet-compat root command.
func NewCommand(env Env) *cobra.Command {
	root := &cobra.Command{
		Use:   "kubelet-compat",
		Short: "Make in-place kubelet upgrades keep the running containers",
		Long: `kubelet-compat prepares and checks in-place kubelet upgrades with a kubelet
built with the kubelet-compat patches.

  record     before swapping the kubelet binary: write the compat file
  status     after the swap: which containers the compat file keeps
  sweep      delete the compat file once nothing needs it
  preflight  predict what an upgrade restarts, with and without the patches
  etcd-bridge  on a control-plane node, before kubeadm moves etcd 3.6 -> 3.7:
             the bridge etcd until a snapshot covers what etcd applied
  cgroups    before containerd moves to 1.7 or later: the containers out of
             their cgroups, which it would kill (--repair puts them back)
  picture    before a kubelet or runtime swap: what the runtime runs and
             which kubelet runs, for gate
  gate       after the swap: judge the node against its picture until
             every pod is kept and synced, or something is lost

The running kubelet is --kubelet-pid, else the PID in --kubelet-pidfile, else
the MainPID of systemd's kubelet.service, else the only root process of the
host PID namespace whose executable is --kubelet-binary (default
/usr/bin/kubelet). Process names are never trusted, and the only program run
for the version is --kubelet-binary, a root-owned file only root may write.

Errors are one line on stderr prefixed "kubelet-compat: " and exit 1.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(flagError)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(newRecordCommand(env), newStatusCommand(env), newSweepCommand(env), newPreflightCommand(env), newEtcdBridgeCommand(env), newCgroupsCommand(env),
		newPictureCommand(env), newGateCommand(env))
	return root
}

// Run executes the command line and returns the process exit code, printing
// any error as one line.
func Run(ctx context.Context, env Env, args []string) int {
	cmd := NewCommand(env)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	code := ExitError
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	msg := shortenEchoes(oneLine(err.Error()), args)
	if ctx.Err() != nil {
		msg = "interrupted: " + msg
	}
	fmt.Fprintf(env.Stderr, "kubelet-compat: %s\n", msg)
	return code
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

func warnf(env Env, format string, args ...interface{}) {
	fmt.Fprintf(env.Stderr, "kubelet-compat: warning: "+format+"\n", args...)
}
