package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/cleanup"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind/nodeimage"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/scenario"
	"github.com/kubelet-compat/kubelet-compat/pkg/cachedir"
)

// kindRun is what the kind provider takes of the command line.
type kindRun struct {
	mode                  string
	steps                 []scenario.Step
	controls, skipPatched bool
	faults                bool
	root, repoRoot        string
	output, reportDir     string
	syncFreq              time.Duration
	// readiness: the readiness watchers across each node's swap.
	readiness bool
	// images: build or use; save: -mode images writes the node images
	// there.
	images, save string
}

// runKind runs the plan on kind clusters: the controls, each step on a
// cluster of its own, then the patched chain on one cluster.
func runKind(k kindRun, rep *report.Report, stack *cleanup.Stack, stdout, stderr io.Writer) int {
	cache := cachedir.Resolve(os.Getenv(cachedir.Env))
	steps := k.steps
	var names []string
	for _, s := range k.steps {
		names = append(names, s.String())
	}
	logDir := filepath.Join(k.reportDir, "logs")
	if k.images != "build" && k.images != "use" {
		fmt.Fprintf(stderr, "e2e: -kind-images must be build or use, not %q\n", k.images)
		return 2
	}
	versions, unpatched := plan.Versions(steps, k.controls || k.mode == "images")
	if k.mode == "images" {
		fmt.Fprintf(stdout, "e2e images: kind images of %s (unpatched packages of %s)\n", strings.Join(versions, ", "), strings.Join(unpatched, ", "))
	} else {
		fmt.Fprintf(stdout, "e2e %s: %s, kind provider (1 control-plane node, 2 workers per cluster), state in %s\n", k.mode, strings.Join(names, ", "), k.root)
	}
	runErr, cleanErr := cleanup.Guard(stack, func(ctx context.Context) error {
		p, err := kind.Up(ctx, kind.Options{Root: k.root, CacheDir: cache, RepoRoot: k.repoRoot, LogDir: logDir, Log: stdout}, stack)
		if err != nil {
			return err
		}
		// The images, incrementally, on the engine the clusters use.
		if k.images == "build" {
			if err := nodeimage.Build(ctx, nodeimage.Options{Versions: versions, UnpatchedVersions: unpatched, DockerEnv: p.Engine.Env,
				RepoRoot: k.repoRoot, OutputDir: k.output, CacheDir: cache, Log: stdout}); err != nil {
				return fmt.Errorf("kind images: %w", err)
			}
		}
		if k.mode == "images" {
			if k.save == "" {
				return nil
			}
			var refs []string
			for _, v := range versions {
				refs = append(refs, kind.NodeImage(v))
			}
			fmt.Fprintf(stdout, "e2e images: saving %s to %s\n", strings.Join(refs, " "), k.save)
			tmp := k.save + ".tmp"
			if err := p.Engine.Command(append([]string{"save", "-o", tmp}, refs...)...).Run(ctx); err != nil {
				os.Remove(tmp)
				return err
			}
			return os.Rename(tmp, k.save)
		}
		return kind.Run(ctx, p, kind.ScenarioOptions{Steps: steps, Controls: k.controls, SkipPatched: k.skipPatched, Faults: k.faults,
			Output: k.output, LogDir: logDir, Workers: 2, SyncFrequency: k.syncFreq, Readiness: k.readiness, Log: stdout}, stack, rep)
	})
	if runErr != nil {
		fmt.Fprintf(stderr, "e2e: %v\n", runErr)
	}
	if cleanErr != nil {
		fmt.Fprintf(stderr, "e2e: cleanup: %v\n", cleanErr)
	}
	if k.mode == "images" {
		if runErr != nil || cleanErr != nil {
			return 1
		}
		fmt.Fprintln(stdout, "e2e images: done")
		return 0
	}
	rep.Finish(time.Now(), errors.Join(runErr, cleanErr))
	if err := rep.Write(k.reportDir); err != nil {
		fmt.Fprintf(stderr, "e2e: writing the report: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout)
	rep.Table(stdout)
	fmt.Fprintf(stdout, "report: %s\n", filepath.Join(k.reportDir, "report.json"))
	if !rep.Passed {
		return 1
	}
	return 0
}
