// Command kc-capi-extension is the Cluster API Runtime Extension that
// updates Machines in place by a Kubernetes version step with kc-roll, the
// fleet's node roll: CanUpdateMachine, CanUpdateMachineSet and
// UpdateMachine over HTTPS (the runtime SDK's server), registered with an
// ExtensionConfig. See deploy/cluster-api/README.md.
//
//	kc-capi-extension [-cert-dir DIR] [-port 9443] [-upgrade-image NAME] [-kubeconfig FILE]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"

	"sigs.k8s.io/cluster-api/exp/runtime/server"

	"github.com/kubelet-compat/kubelet-compat/deploy/cluster-api/extension"
	"github.com/kubelet-compat/kubelet-compat/deploy/cluster-api/update"
	"github.com/kubelet-compat/kubelet-compat/deploy/system-upgrade/manifest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "kc-capi-extension: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	// A flag set of its own: controller-runtime registers -kubeconfig on
	// the default one.
	fs := flag.NewFlagSet("kc-capi-extension", flag.ContinueOnError)
	certDir := fs.String("cert-dir", "/tmp/k8s-webhook-server/serving-certs", "directory with the serving certificate tls.crt and its key tls.key")
	port := fs.Int("port", server.DefaultPort, "HTTPS port")
	image := fs.String("upgrade-image", manifest.UpgradeImageName, "the upgrade image, untagged (the Job tags it with the target version)")
	kubeconfig := fs.String("kubeconfig", "", "the management cluster's kubeconfig (empty: the pod's service account)")
	retry := fs.Int("retry-after", update.DefaultRetryAfterSeconds, "seconds CAPI waits before it asks again while a node's Job runs")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == flag.ErrHelp {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *retry < 1 {
		return fmt.Errorf("-retry-after %d: want at least 1 second", *retry)
	}
	if _, err := update.Options("1.0.0", *image, nil); err != nil {
		return fmt.Errorf("-upgrade-image: %v", err)
	}
	ctrl.SetLogger(textlogger.NewLogger(textlogger.NewConfig()))
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("the management cluster: %v", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	core, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	u := &update.Updater{Clusters: update.Management{Dynamic: dyn, Core: core}, Image: *image, RetryAfterSeconds: int32(*retry)}
	s, err := extension.New(server.Options{CertDir: *certDir, Port: *port}, u)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return s.Start(ctx)
}
