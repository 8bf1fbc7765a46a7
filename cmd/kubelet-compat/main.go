// Command kubelet-compat records, checks and cleans up the compat file that
// lets a patched kubelet keep running containers across an in-place upgrade.
// See README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/app"
)

// stopGrace is how long a command may take to stop after SIGINT/SIGTERM
// before the process exits anyway. Every wait of the commands follows the
// context; this only bounds a system call that does not.
const stopGrace = 10 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second signal terminates the process at once
		time.Sleep(stopGrace)
		fmt.Fprintf(os.Stderr, "kubelet-compat: interrupted, and not stopped %s later: exiting\n", stopGrace)
		os.Exit(app.ExitError)
	}()
	code := app.Run(ctx, app.DefaultEnv(), os.Args[1:])
	stop()
	os.Exit(code)
}
