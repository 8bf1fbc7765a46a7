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
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/scenario"
	"github.com/kubelet-compat/kubelet-compat/pkg/cachedir"
)

// kindRun is what the kind provider takes of the command line.
type kindRun struct {
	mode                  string
	steps                 []scenario.Step
	controls, skipPatched bool
	root, repoRoot        string
	output, reportDir     string
	syncFreq              time.Duration
}

// runKind runs the plan on kind clusters: the controls, each step on a
// cluster of its own, then the patched chain on one cluster.
func runKind(k kindRun, rep *report.Report, stack *cleanup.Stack, stdout, stderr io.Writer) int {
	cache := cachedir.Resolve(os.Getenv(cachedir.Env))
	var steps []kind.Step
	var names []string
	for _, s := range k.steps {
		steps = append(steps, kind.Step{From: s.From, To: s.To})
		names = append(names, s.String())
	}
	logDir := filepath.Join(k.reportDir, "logs")
	fmt.Fprintf(stdout, "e2e %s: %s, kind provider (1 control-plane node, 2 workers per cluster), state in %s\n", k.mode, strings.Join(names, ", "), k.root)
	runErr, cleanErr := cleanup.Guard(stack, func(ctx context.Context) error {
		p, err := kind.Up(ctx, kind.Options{Root: k.root, CacheDir: cache, RepoRoot: k.repoRoot, LogDir: logDir, Log: stdout}, stack)
		if err != nil {
			return err
		}
		// The images, incrementally, on the engine the clusters use.
		versions, unpatched := kindVersions(steps, k.controls)
		if err := nodeimage.Build(ctx, nodeimage.Options{Versions: versions, UnpatchedVersions: unpatched, DockerEnv: p.Engine.Env,
			RepoRoot: k.repoRoot, OutputDir: k.output, CacheDir: cache, Log: stdout}); err != nil {
			return fmt.Errorf("kind images: %w", err)
		}
		return kind.Run(ctx, p, kind.ScenarioOptions{Steps: steps, Controls: k.controls, SkipPatched: k.skipPatched,
			Output: k.output, LogDir: logDir, Workers: 2, SyncFrequency: k.syncFreq, Log: stdout}, stack, rep)
	})
	if runErr != nil {
		fmt.Fprintf(stderr, "e2e: %v\n", runErr)
	}
	if cleanErr != nil {
		fmt.Fprintf(stderr, "e2e: cleanup: %v\n", cleanErr)
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

// kindVersions are the versions whose node images, images and RPMs the
// plan needs: every version of the chain; unpatched RPMs of each step's
// target for the controls.
func kindVersions(steps []kind.Step, controls bool) (versions, unpatched []string) {
	for _, s := range steps {
		versions = appendNew(versions, s.From, s.To)
		if controls {
			unpatched = appendNew(unpatched, s.To)
		}
	}
	return versions, unpatched
}

func appendNew(list []string, vs ...string) []string {
	for _, v := range vs {
		found := false
		for _, x := range list {
			found = found || x == v
		}
		if !found {
			list = append(list, v)
		}
	}
	return list
}
