// Package nodeimage builds, without a registry, the Docker images a kind
// cluster of our Kubernetes builds needs: a Debian base with systemd and
// containerd 1.6, each version's control-plane images under the names
// kubeadm asks for, and a node image per version with our .debs installed and
// those images preloaded. See e2e/README.md ("kind node images").
package nodeimage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/hostdeps"
)

// Options says what to build and where.
type Options struct {
	// Versions are the Kubernetes versions (1.20.15) to build node images
	// for: patched .debs from <OutputDir>/<ver>/{kubelet,kubeadm,kubectl}.
	Versions []string
	// NodeVersions, when set, are the versions that get a node image (the
	// versions clusters are created on); the others get their images tar
	// and .debs only, which the e2e stages on running nodes.
	NodeVersions []string
	// UnpatchedVersions also get .debs of their unpatched kubelet
	// (<OutputDir>/<ver>-unpatched/kubelet), the control.
	UnpatchedVersions []string
	// DockerEnv is added to the environment of every docker command
	// (DOCKER_HOST=...).
	DockerEnv []string
	// RepoRoot is the kubelet-compat checkout (go build ./cmd/build-packages,
	// the pause and the CLI are built from it).
	RepoRoot string
	// OutputDir is the harness output (_output); results go to its kind/.
	OutputDir string
	// CacheDir is the harness cache ($KC_CACHE): debootstrap tarballs,
	// toolchains.
	CacheDir string
	// Log receives one line per step.
	Log io.Writer
}

type builder struct {
	opts    Options
	docker  docker
	cmdLog  io.Writer // every command's output
	logPath string
	kindDir string // <OutputDir>/kind
}

// Build makes the base image, then per version its images tar, its .debs and
// its node image kubelet-compat/kind-node:v<ver>. Every step is skipped when
// its inputs did not change; an image is tagged only once complete.
func Build(ctx context.Context, opts Options) error {
	if len(opts.Versions) == 0 {
		return errors.New("no versions to build")
	}
	for _, v := range append(append([]string{}, opts.Versions...), opts.UnpatchedVersions...) {
		if err := checkVersion(v); err != nil {
			return err
		}
	}
	b, done, err := newBuilder(ctx, opts)
	if err != nil {
		return err
	}
	defer done()
	logFile := b.cmdLog
	fmt.Fprintf(logFile, "=== kind-images %s versions %v unpatched %v\n", time.Now().UTC().Format(time.RFC3339), b.opts.Versions, b.opts.UnpatchedVersions)
	b.logf("command output goes to %s", b.logPath)

	base, err := b.buildBase(ctx)
	if err != nil {
		return fmt.Errorf("base image: %w", err)
	}
	pkgs, err := b.buildPackages(ctx)
	if err != nil {
		return fmt.Errorf("packages: %w", err)
	}
	for _, v := range opts.Versions {
		imgs, err := b.buildVersionImages(ctx, v)
		if err != nil {
			return fmt.Errorf("images of %s: %w", v, err)
		}
		if !b.wantsNode(v) {
			continue
		}
		if err := b.buildNode(ctx, v, base, imgs, pkgs); err != nil {
			return fmt.Errorf("node image of %s: %w", v, err)
		}
	}
	return nil
}

// newBuilder is a builder of opts (paths made absolute, the log opened
// in <OutputDir>/kind/logs/build.log) once the kind path's programs are
// installed (debootstrap, dpkg-deb for build-packages -format deb, the
// docker CLI...), whoever calls it; done closes the log.
func newBuilder(ctx context.Context, opts Options) (*builder, func(), error) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	for _, p := range []*string{&opts.RepoRoot, &opts.OutputDir, &opts.CacheDir} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return nil, nil, err
		}
		*p = abs
	}
	b := &builder{opts: opts, kindDir: filepath.Join(opts.OutputDir, "kind")}
	if err := os.MkdirAll(filepath.Join(b.kindDir, "logs"), 0o755); err != nil {
		return nil, nil, err
	}
	b.logPath = filepath.Join(b.kindDir, "logs", "build.log")
	if err := hostdeps.Ensure(ctx, opts.Log, hostdeps.Kind); err != nil {
		return nil, nil, err
	}
	logFile, err := os.OpenFile(b.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	b.cmdLog, b.docker = logFile, docker{env: opts.DockerEnv, log: logFile}
	return b, func() { logFile.Close() }, nil
}

// wantsNode says whether v gets a node image.
func (b *builder) wantsNode(v string) bool {
	if b.opts.NodeVersions == nil {
		return true
	}
	for _, n := range b.opts.NodeVersions {
		if n == v {
			return true
		}
	}
	return false
}

func (b *builder) logf(format string, args ...any) {
	fmt.Fprintf(b.opts.Log, "kind-images: "+format+"\n", args...)
	fmt.Fprintf(b.cmdLog, "### "+format+"\n", args...)
}

// step logs the start of a long step and returns the function that logs
// its end with the time it took.
func (b *builder) step(what string) func() {
	start := time.Now()
	b.logf("%s ...", what)
	return func() { b.logf("%s: done in %s", what, time.Since(start).Round(100*time.Millisecond)) }
}

// tempDir is a scratch directory under <OutputDir>/kind/tmp.
func (b *builder) tempDir(what string) (string, error) {
	dir := filepath.Join(b.kindDir, "tmp")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return os.MkdirTemp(dir, what+"-")
}
