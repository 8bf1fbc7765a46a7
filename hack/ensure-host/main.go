// Command ensure-host installs, from Debian's packages, the programs of
// the named paths of pkg/hostdeps that this host lacks (`make test` and
// `make rpm` run it; the e2e providers and build-packages call the same
// package themselves).
//
//	go run ./hack/ensure-host rpm build
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/kubelet-compat/kubelet-compat/pkg/hostdeps"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "ensure-host: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: ensure-host PATH... (paths: %s)", names())
	}
	var paths []hostdeps.Path
	for _, a := range args {
		p, ok := hostdeps.ByName(a)
		if !ok {
			return fmt.Errorf("unknown path %q (paths: %s)", a, names())
		}
		paths = append(paths, p)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return hostdeps.Ensure(ctx, os.Stderr, paths...)
}

func names() string {
	s := ""
	for i, p := range hostdeps.Paths {
		if i > 0 {
			s += ", "
		}
		s += p.Name
	}
	return s
}
