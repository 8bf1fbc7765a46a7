// Command e2e-pause is the e2e's pod sandbox process (the pause image): it
// sleeps until SIGINT or SIGTERM and reaps orphaned children, as upstream's
// pause does. As upstream's, `-v` prints its version and exits 0: kubeadm
// upgrade apply's health check runs a Job of the pause image with that
// argument and waits 15 s for it to complete.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// version is what -v prints.
const version = "kubelet-compat e2e-pause 1"

func main() {
	if len(os.Args) > 1 && strings.EqualFold(os.Args[1], "-v") {
		fmt.Println(version)
		return
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s == syscall.SIGCHLD {
			for {
				var ws syscall.WaitStatus
				pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
			continue
		}
		os.Exit(0)
	}
}
