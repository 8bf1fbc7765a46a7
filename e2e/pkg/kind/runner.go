package kind

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/cleanup"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind/nodeimage"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
)

// Runner is the kind provider's runner of plans (plan.Runner): kubeadm clusters
// of kind nodes on a Docker engine, installed from our .debs; the controls
// each on a cluster of their own, then the patched chain on one cluster.
type Runner struct {
	// Root is the run's private directory; CacheDir is KC_CACHE; RepoRoot
	// the repository (Options of Up).
	Root, CacheDir, RepoRoot string
	// BuildImages builds, incrementally, the images the plan needs before
	// the clusters; false uses those the engine holds (docker load-ed).
	BuildImages bool
	// Faults runs the first step once more, patched, with faults
	// (ScenarioOptions.Faults).
	Faults  bool
	Workers int
	// NetworkName names the run's network (Options.NetworkName; empty:
	// Network.Name).
	NetworkName string
	// MoreNodeImages are versions that get a node image beyond
	// NodeVersions (Cluster API's replacement machines boot the target's).
	MoreNodeImages []string
}

var _ plan.Runner = (*Runner)(nil)

// Name is "kind".
func (k *Runner) Name() string { return "kind" }

// Describe is the run's header: the clusters' nodes and the state's place.
func (k *Runner) Describe(p plan.Plan) string {
	return fmt.Sprintf("kind provider (1 control-plane node, %d workers per cluster), state in %s", k.Workers, k.Root)
}

// Check refuses rollback steps (kubeadm upgrades the control plane first
// and does not roll it back) and skips beyond upstream's skew policy.
func (k *Runner) Check(p plan.Plan) error {
	if plan.HasRollback(p.Steps) {
		return errors.New(plan.RollbackLocalOnly)
	}
	if p.RecordAfterSwap {
		return errors.New(plan.RecordAfterSwapLocalOnly)
	}
	for _, st := range p.Steps {
		if err := CheckSkew(st); err != nil {
			return err
		}
	}
	return plan.CheckRoadControls(p)
}

// Versions are the versions of the plan's steps (package plan) and,
// patched and unpatched alike, the control plane's intermediate minors of
// skip-level steps (the control-plane node's kubelet follows the control
// plane one minor at a time).
func (k *Runner) Versions(p plan.Plan) (patched, unpatched []string, err error) {
	patched, unpatched = plan.Versions(p.Steps, p.Controls)
	between, err := plan.ControlPlaneVersions(p.Steps)
	if err != nil {
		return nil, nil, err
	}
	patched = plan.Union(patched, between)
	if p.Controls {
		unpatched = plan.Union(unpatched, between)
	}
	return patched, unpatched, nil
}

// NodeVersions are the versions clusters are created on: the first step's
// from, and with controls every step's (each control has a cluster of its
// own; a road's control goes the whole road on one). The others are
// staged on running nodes.
func NodeVersions(p plan.Plan) []string {
	var out []string
	for i, s := range p.Steps {
		if i == 0 || (p.Controls && len(p.RuntimeMoves) == 0) {
			out = plan.Union(out, []string{s.From})
		}
	}
	return out
}

// Up brings the engine up and, with BuildImages, the images of p: what
// Run and Images do first, and the fleet's runner (package fleet).
func (k *Runner) Up(ctx context.Context, p plan.Plan, stack *cleanup.Stack) (*Provider, error) {
	prov, err := Up(ctx, Options{Root: k.Root, CacheDir: k.CacheDir, RepoRoot: k.RepoRoot, LogDir: filepath.Join(p.ReportDir, "logs"), Log: p.Log,
		NetworkName: k.NetworkName}, stack)
	if err != nil {
		return nil, err
	}
	if !k.BuildImages {
		return prov, nil
	}
	patched, unpatched, err := k.Versions(p)
	if err != nil {
		return nil, err
	}
	if err := nodeimage.Build(ctx, nodeimage.Options{Versions: patched, UnpatchedVersions: unpatched, NodeVersions: plan.Union(NodeVersions(p), k.MoreNodeImages), DockerEnv: prov.Engine.Env,
		RepoRoot: k.RepoRoot, OutputDir: p.Output, CacheDir: k.CacheDir, Log: p.Log}); err != nil {
		return nil, fmt.Errorf("kind images: %w", err)
	}
	return prov, nil
}

// Run builds the images (BuildImages), then runs the plan's clusters.
func (k *Runner) Run(ctx context.Context, p plan.Plan, stack *cleanup.Stack, rep *report.Report) error {
	prov, err := k.Up(ctx, p, stack)
	if err != nil {
		return err
	}
	return Run(ctx, prov, ScenarioOptions{Plan: p, Faults: k.Faults, LogDir: filepath.Join(p.ReportDir, "logs"), Workers: k.Workers}, stack, rep)
}

// Images builds the images the plan needs (make kind-images) and, when
// save is set, writes its node images there (docker save) for machines
// with Docker but no build tools.
func (k *Runner) Images(ctx context.Context, p plan.Plan, save string, stack *cleanup.Stack) error {
	prov, err := k.Up(ctx, p, stack)
	if err != nil || save == "" {
		return err
	}
	var refs []string
	for _, v := range NodeVersions(p) {
		refs = append(refs, NodeImage(v))
	}
	fmt.Fprintf(p.Log, "e2e images: saving %s to %s\n", strings.Join(refs, " "), save)
	tmp := save + ".tmp"
	if err := prov.Engine.Command(append([]string{"save", "-o", tmp}, refs...)...).Run(ctx); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, save)
}
