// Command kc-roll is the upgrade Job's program (the engine of package
// roll), /bin/kc-roll in the upgrade image: the Plans run it in each
// node's Job. See deploy/system-upgrade/README.md.
//
//	kc-roll upgrade            upgrade this node to $SYSTEM_UPGRADE_PLAN_LATEST_VERSION
//	kc-roll wait-plan PLAN     wait until the Plan PLAN is Complete for that version
//	kc-roll naive              the naive in-place roll (the e2e's anchor)
//
// Exit status: 0 upgraded and gated; 1 refused, failed, or rolled back; 2 usage.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/kubelet-compat/kubelet-compat/deploy/system-upgrade/roll"
)

func main() {
	// SIGTERM (the Job's deadline, its pod deleted): the engine stops once
	// the node's program it runs has ended, and does nothing more.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

const usage = "usage: kc-roll [upgrade | wait-plan PLAN | naive]"

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, err := roll.ConfigFromEnv(getenv)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", roll.Prog, err)
		return 1
	}
	mode := "upgrade"
	if len(args) > 0 {
		mode = args[0]
	}
	switch {
	case mode == "wait-plan" && len(args) == 2:
	case (mode == "upgrade" || mode == "naive") && len(args) <= 1:
	default:
		fmt.Fprintln(stderr, usage)
		return 2
	}
	work, err := os.MkdirTemp("", "kc-roll")
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", roll.Prog, err)
		return 1
	}
	defer os.RemoveAll(work)
	h := roll.NewNodeHost(cfg)
	defer h.Close()
	e := &roll.Engine{Config: cfg, Host: h, Out: stdout, Err: stderr, WorkDir: work}
	switch mode {
	case "upgrade":
		err = e.Upgrade(ctx)
	case "naive":
		err = e.Naive(ctx)
	case "wait-plan":
		err = e.WaitPlan(ctx, args[1])
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", roll.Prog, err)
		return 1
	}
	return 0
}
