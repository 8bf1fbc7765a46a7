// Command system-upgrade builds what deploy/system-upgrade ships: the
// system-upgrade-controller from the Go module proxy, its image and the
// upgrade Job's image as OCI image layouts (tar), and the manifests with the
// Plans. See deploy/system-upgrade/README.md.
//
//	system-upgrade controller                      build (cached), print the binary's path
//	system-upgrade controller-image -o FILE        the controller's image
//	system-upgrade upgrade-image -version V -packages DIR -kubectl BIN -o FILE
//	system-upgrade plans -version V [-concurrency N] [-cordon] [-allow-loss] [-gate-timeout S] [-etcd-bridge-image IMAGE] [-kubeadm-arg ARG]... [-runtime containerd@VERSION] [-o FILE]
//	system-upgrade sim [-nodes 1000] [-concurrency 1%,5%,10%] [-job-seconds 45] [-scale 10] [-fail 3] ...
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	systemupgrade "github.com/kubelet-compat/kubelet-compat/deploy/system-upgrade"
	"github.com/kubelet-compat/kubelet-compat/pkg/cachedir"
	"github.com/kubelet-compat/kubelet-compat/pkg/hostdeps"
	"github.com/kubelet-compat/kubelet-compat/pkg/images"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "system-upgrade: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: system-upgrade controller|controller-image|upgrade-image|plans|sim [flags]")
	}
	if args[0] == "sim" {
		return runSim(ctx, args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	cache := fs.String("cache", cachedir.Resolve(os.Getenv(cachedir.Env)), "the build cache ($KC_CACHE)")
	out := fs.String("o", "", "output file (plans: default stdout)")
	o := systemupgrade.DefaultOptions("")
	fs.StringVar(&o.Version, "version", "", "the target Kubernetes version, e.g. 1.31.14")
	fs.Int64Var(&o.Concurrency, "concurrency", o.Concurrency, "workers upgraded at once (the control plane: 1)")
	fs.BoolVar(&o.Cordon, "cordon", o.Cordon, "cordon each node during its Job (never drain)")
	fs.BoolVar(&o.AllowLoss, "allow-loss", o.AllowLoss, "go on when preflight says the patched kubelet would still lose a pod")
	fs.IntVar(&o.GateTimeout, "gate-timeout", o.GateTimeout, "seconds the health gate waits for the node and its pods")
	fs.Int64Var(&o.JobDeadline, "job-deadline", o.JobDeadline, "seconds each node's Job may run")
	fs.Int64Var(&o.JobTTL, "job-ttl", o.JobTTL, "seconds SUC keeps a finished Job; a failed node's Job runs again after it (0: SUC's 900)")
	fs.StringVar(&o.EtcdBridgeImage, "etcd-bridge-image", o.EtcdBridgeImage, "plans: the bridge etcd's image (a 3.6 of 3.6.11 or later, e.g. registry.k8s.io/etcd:3.6.16-0) the control-plane Jobs run before a kubeadm step that moves etcd from 3.6 to 3.7 (KC_ETCD_BRIDGE_IMAGE; none: such a step is refused)")
	fs.Func("kubeadm-arg", "plans: one more argument for kubeadm upgrade apply and node, repeatable (KC_KUBEADM_ARGS), e.g. --ignore-preflight-errors=SystemVerification for cgroup v1 nodes from 1.35", func(a string) error {
		o.KubeadmArgs = append(o.KubeadmArgs, a)
		return nil
	})
	fs.StringVar(&o.Runtime, "runtime", o.Runtime, "plans: the containerd every node's Job selects, gates and keeps before the kubelet's step, as NAME@VERSION (containerd@1.7.35 or containerd@2.4.2; its runtime-containerd-VERSION package on the nodes; KC_RUNTIME; none: no runtime step)")
	fs.BoolVar(&o.Naive, "naive", o.Naive, "plans, upgrade-image: the naive in-place roll (the e2e's anchor: give the packages as released; no preflight, record, gate or rollback)")
	packages := fs.String("packages", "", "upgrade-image: the directory of the .debs and/or .rpms (make deb / make rpm output)")
	kubectl := fs.String("kubectl", "", "upgrade-image: the target version's kubectl")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected arguments %q", args[0], fs.Args())
	}
	switch args[0] {
	case "controller":
		bin, err := systemupgrade.BuildController(ctx, *cache, stderr)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, bin)
		return nil
	case "controller-image":
		bin, err := systemupgrade.BuildController(ctx, *cache, stderr)
		if err != nil {
			return err
		}
		img, err := systemupgrade.ControllerImage(systemupgrade.ControllerImageRef, bin)
		if err != nil {
			return err
		}
		return writeLayout(*out, stdout, img)
	case "upgrade-image":
		if o.Version == "" || *packages == "" || *kubectl == "" || *out == "" {
			return fmt.Errorf("upgrade-image needs -version, -packages, -kubectl and -o")
		}
		roll := filepath.Join(filepath.Dir(*out), "kc-roll")
		if err := systemupgrade.BuildRoll(ctx, roll, stderr); err != nil {
			return err
		}
		img, err := systemupgrade.UpgradeImage(o.ImageName()+":"+o.Version, o.Version, hostdeps.Busybox.Name, *kubectl, roll, *packages)
		if err != nil {
			return err
		}
		return writeLayout(*out, stdout, img)
	case "plans":
		y, err := systemupgrade.Render(o)
		if err != nil {
			return err
		}
		if *out == "" {
			_, err := stdout.Write(y)
			return err
		}
		return os.WriteFile(*out, y, 0o644)
	}
	return fmt.Errorf("unknown command %q (controller, controller-image, upgrade-image, plans, sim)", args[0])
}

func writeLayout(path string, stdout io.Writer, img images.Image) error {
	if path == "" {
		return fmt.Errorf("give -o FILE for the image layout")
	}
	layout, digests, err := images.Layout(img)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, layout, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %s %s (%d bytes)\n", path, img.Ref, digests[img.Ref], len(layout))
	return nil
}
