// Command kubelet-compat records, checks and cleans up the compat file that
// lets a patched kubelet keep running containers across an in-place upgrade.
// See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := app.Run(ctx, app.DefaultEnv(), os.Args[1:])
	stop()
	os.Exit(code)
}
