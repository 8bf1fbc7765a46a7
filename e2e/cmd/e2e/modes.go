package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/cleanup"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/local/scenario"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
)

// imagesMode builds the kind images of the plan (make kind-images), its
// controls' unpatched packages included, and with save writes its node
// images to that file.
func imagesMode(k *kind.Runner, p plan.Plan, save string, stack *cleanup.Stack, stdout, stderr io.Writer) int {
	patched, unpatched, err := k.Versions(p)
	if err != nil {
		fmt.Fprintf(stderr, "e2e: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "e2e images: kind images of %s (unpatched packages of %s)\n", strings.Join(patched, ", "), strings.Join(unpatched, ", "))
	return guarded(stack, func(ctx context.Context) error { return k.Images(ctx, p, save, stack) }, "e2e images: done", stdout, stderr)
}

// nodeMode brings the local node up and down again, without kubelets: a
// quick check of the provider and its cleanup.
func nodeMode(l *scenario.Local, p plan.Plan, stack *cleanup.Stack, stdout, stderr io.Writer) int {
	o := l.Options
	o.Plan = p
	return guarded(stack, func(ctx context.Context) error { return scenario.NodeOnly(ctx, o, stack) }, "e2e node: up and down again: ok", stdout, stderr)
}

// tryMode holds a kind cluster of the plan's first step for a person to
// upgrade a node by hand (make e2e-try), until SIGINT or SIGTERM.
func tryMode(k *kind.Runner, p plan.Plan, stack *cleanup.Stack, stdout, stderr io.Writer) int {
	return guarded(stack, func(ctx context.Context) error { return k.Try(ctx, p, stack, stdout) }, "e2e try: the cluster is gone", stdout, stderr)
}

// guarded runs fn under the cleanup guard of a mode without a report: its
// error and the cleanup's on stderr and exit 1, else done on stdout.
func guarded(stack *cleanup.Stack, fn func(context.Context) error, done string, stdout, stderr io.Writer) int {
	runErr, cleanErr := cleanup.Guard(stack, fn)
	if runErr != nil {
		fmt.Fprintf(stderr, "e2e: %v\n", runErr)
	}
	if cleanErr != nil {
		fmt.Fprintf(stderr, "e2e: cleanup: %v\n", cleanErr)
	}
	if runErr != nil || cleanErr != nil {
		return 1
	}
	fmt.Fprintln(stdout, done)
	return 0
}
