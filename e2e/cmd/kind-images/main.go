// Command kind-images builds the kind node images of our Kubernetes builds
// without a registry (see e2e/README.md, "kind node images"):
//
//	kind-images -versions 1.20.15,1.21.14 [-unpatched 1.20.15,1.21.14]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind/nodeimage"
	"github.com/kubelet-compat/kubelet-compat/pkg/cachedir"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kind-images:", err)
		os.Exit(1)
	}
}

func run() error {
	var versions, unpatched, dockerHost string
	opts := nodeimage.Options{Log: os.Stderr}
	flag.StringVar(&versions, "versions", "", "Kubernetes versions, comma separated (e.g. 1.20.15,1.21.14)")
	flag.StringVar(&unpatched, "unpatched", "", "versions that also get unpatched-kubelet RPMs (default: -versions)")
	flag.StringVar(&opts.RepoRoot, "repo", ".", "the kubelet-compat checkout")
	flag.StringVar(&opts.OutputDir, "output", "_output", "harness output; results go to its kind/")
	flag.StringVar(&dockerHost, "docker-host", os.Getenv("DOCKER_HOST"), "the Docker engine (default $DOCKER_HOST)")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	opts.Versions = splitList(versions)
	opts.UnpatchedVersions = splitList(unpatched)
	if unpatched == "" {
		opts.UnpatchedVersions = opts.Versions
	}
	if dockerHost != "" {
		opts.DockerEnv = []string{"DOCKER_HOST=" + dockerHost}
	}
	opts.CacheDir = cachedir.Resolve(os.Getenv(cachedir.Env))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return nodeimage.Build(ctx, opts)
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		out = append(out, f)
	}
	return out
}
