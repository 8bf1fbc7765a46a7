// Command e2e-device-plugin is the e2e's device plugin (package
// deviceplugin): fake devices of one extended resource, registered with
// every kubelet that starts on the node, until SIGTERM or SIGINT.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/local/deviceplugin"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

func main() {
	cfg := deviceplugin.Config{Log: os.Stderr}
	flag.StringVar(&cfg.Dir, "dir", pluginapi.DevicePluginPath, "the kubelet's device plugin directory (kubelets 1.18-1.21: fixed, whatever --root-dir)")
	flag.StringVar(&cfg.Socket, "socket", deviceplugin.Socket, "this plugin's socket name in -dir")
	flag.StringVar(&cfg.Resource, "resource", deviceplugin.Resource, "the extended resource it advertises")
	flag.IntVar(&cfg.Devices, "devices", 2, "how many devices it advertises")
	flag.Parse()
	p, err := deviceplugin.New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e-device-plugin:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := p.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "e2e-device-plugin:", err)
		os.Exit(1)
	}
}
