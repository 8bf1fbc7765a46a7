package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	systemupgrade "github.com/kubelet-compat/kubelet-compat/deploy/system-upgrade"
	"github.com/kubelet-compat/kubelet-compat/deploy/system-upgrade/sim"
	"github.com/kubelet-compat/kubelet-compat/pkg/cachedir"
)

// runSim is `system-upgrade sim`: SUC and our Plans against kwok nodes,
// one fresh cluster per concurrency (deploy/system-upgrade/sim).
func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cache := fs.String("cache", cachedir.Resolve(os.Getenv(cachedir.Env)), "the build cache ($KC_CACHE)")
	o := sim.Options{Version: "1.31.14"}
	fs.IntVar(&o.Nodes, "nodes", 1000, "the fleet: one control-plane node and nodes-1 workers")
	conc := fs.String("concurrency", "1%,5%,10%", "the workers Plan's concurrency of each run: nodes or a percentage of -nodes")
	fs.Float64Var(&o.JobSeconds, "job-seconds", 45, "a worker's Job at real duration (kind: 44-48 s)")
	fs.Float64Var(&o.ControlPlaneSeconds, "control-plane-seconds", 236, "the control-plane node's Job at real duration (kind: 219-241 s)")
	fs.Float64Var(&o.Scale, "scale", 10, "divide both durations by this in the simulation (1: real time)")
	fs.IntVar(&o.Fail, "fail", 3, "workers whose Job's pod ends Failed (the health gate failing)")
	fs.DurationVar(&o.Stall, "stall", 0, "no worker upgraded or failed for this long ends a run as stopped (0: 5 Jobs, at least 1m)")
	k8s := fs.String("k8s-bin", "_output/1.31.14-unpatched", "kube-apiserver, kube-controller-manager, kube-scheduler "+
		"(make build VERSIONS=1.31.14 PATCHED=false BINARIES=kube-apiserver,kube-controller-manager,kube-scheduler)")
	prepare := fs.Bool("prepare", false, "only build (cached) system-upgrade-controller, kwok and etcd")
	dir := fs.String("dir", "", "work directory: logs and results.json (default _output/system-upgrade/sim/<UTC time>)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("sim: unexpected arguments %q", fs.Args())
	}
	var err error
	if o.Concurrency, err = sim.ParseConcurrency(*conc, o.Nodes); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return err
	}
	if *k8s, err = filepath.Abs(*k8s); err != nil {
		return err
	}
	b := sim.Binaries{K8s: *k8s}
	for _, name := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		if _, err := os.Stat(filepath.Join(*k8s, name)); err != nil && !*prepare {
			return fmt.Errorf("no %s in %s: run make build VERSIONS=1.31.14 PATCHED=false BINARIES=kube-apiserver,kube-controller-manager,kube-scheduler", name, *k8s)
		}
	}
	if b.SUC, err = systemupgrade.BuildController(ctx, *cache, stderr); err != nil {
		return err
	}
	if b.Kwok, err = sim.Kwok.Build(ctx, *cache, stderr); err != nil {
		return err
	}
	if b.Etcd, err = sim.Etcd.Build(ctx, *cache, stderr); err != nil {
		return err
	}
	if *prepare {
		fmt.Fprintf(stdout, "%s\n%s\n%s\n", b.SUC, b.Kwok, b.Etcd)
		return nil
	}
	if *dir == "" {
		*dir = filepath.Join("_output", "system-upgrade", "sim", time.Now().UTC().Format("20060102T150405Z"))
	}
	if *dir, err = filepath.Abs(*dir); err != nil {
		return err
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	results, err := sim.Run(ctx, o, b, *dir, stderr)
	for _, r := range results {
		fmt.Fprintln(stdout, r.Summary())
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "results: %s\n", filepath.Join(*dir, "results.json"))
	return nil
}
