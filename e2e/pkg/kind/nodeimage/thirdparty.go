package nodeimage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
	"github.com/kubelet-compat/kubelet-compat/pkg/matrix"
	"github.com/kubelet-compat/kubelet-compat/pkg/modfetch"
	"github.com/kubelet-compat/kubelet-compat/pkg/toolchain"
)

// oldGo is the cached toolchain CoreDNS releases of the 1.20/1.21 era build
// with when the machine's Go refuses them.
const oldGo = "1.16.15"

// etcdBinary returns Debian's etcd (package etcd-server), downloaded and
// unpacked into the cache once; nothing is installed on the machine (the
// package would start an etcd service).
func (b *builder) etcdBinary(ctx context.Context) (string, error) {
	dir := filepath.Join(b.opts.CacheDir, "kind", "etcd-server")
	bin := filepath.Join(dir, "usr", "bin", "etcd")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	done := b.step("downloading Debian's etcd-server")
	debs := filepath.Join(b.opts.CacheDir, "kind", "debs")
	if err := os.MkdirAll(debs, 0o755); err != nil {
		return "", err
	}
	dl := exec.Command("apt-get", "download", "etcd-server")
	dl.Dir, dl.Log = debs, b.cmdLog
	if err := dl.Run(ctx); err != nil {
		up := exec.Command("apt-get", "update")
		up.Log = b.cmdLog
		if err := up.Run(ctx); err != nil {
			return "", fmt.Errorf("apt-get update: %w", err)
		}
		if err := dl.Run(ctx); err != nil {
			return "", fmt.Errorf("apt-get download etcd-server: %w", err)
		}
	}
	m, _ := filepath.Glob(filepath.Join(debs, "etcd-server_*.deb"))
	if len(m) == 0 {
		return "", fmt.Errorf("apt-get download left no etcd-server_*.deb in %s", debs)
	}
	tmp := dir + ".tmp"
	os.RemoveAll(tmp)
	x := exec.Command("dpkg-deb", "-x", m[len(m)-1], tmp)
	x.Log = b.cmdLog
	if err := x.Run(ctx); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	done()
	return bin, nil
}

// coreDNSBinary builds github.com/coredns/coredns at the release kubeadm
// names (from the Go module proxy, static), cached per version.
func (b *builder) coreDNSBinary(ctx context.Context, tag string) (string, error) {
	version, err := coreDNSModuleVersion(tag)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(b.opts.CacheDir, "kind", "coredns-"+version)
	bin := filepath.Join(dir, "coredns")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	done := b.step("building CoreDNS " + version)
	work, err := b.tempDir("coredns")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	mod, err := modfetch.Download(ctx, b.opts.CacheDir, "github.com/coredns/coredns", version, "")
	if err != nil {
		return "", err
	}
	src := filepath.Join(work, "src")
	// The module cache is read-only; the build may have to complete go.sum.
	if err := exec.Command("cp", "-r", mod.Dir, src).Run(ctx); err != nil {
		return "", err
	}
	if err := exec.Command("chmod", "-R", "u+w", src).Run(ctx); err != nil {
		return "", err
	}
	tmpBin := filepath.Join(work, "coredns")
	env := []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64"}
	build := func(goBin string, extraEnv ...string) error {
		c := exec.Command(goBin, "build", "-trimpath", "-ldflags=-s -w", "-o", tmpBin, ".")
		c.Dir, c.Env, c.Log = src, append(append([]string{}, env...), extraEnv...), b.cmdLog
		return c.Run(ctx)
	}
	if err := build("go", modfetch.Env(b.opts.CacheDir)...); err != nil {
		b.logf("CoreDNS %s does not build with the machine's Go (%v); trying go%s", version, firstLineOf(err.Error()), oldGo)
		goroot, err := b.oldToolchain(ctx)
		if err != nil {
			return "", err
		}
		if err := build(filepath.Join(goroot, "bin", "go"), toolchain.Env(goroot, oldGo, b.opts.CacheDir)...); err != nil {
			return "", fmt.Errorf("building CoreDNS %s with go%s: %w", version, oldGo, err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(tmpBin, bin); err != nil {
		return "", err
	}
	done()
	return bin, nil
}

// oldToolchain is the harness's go<oldGo>, installed into the cache with
// the sum the matrix records for it.
func (b *builder) oldToolchain(ctx context.Context) (string, error) {
	rows, err := matrix.Load()
	if err != nil {
		return "", err
	}
	for _, r := range rows {
		if r.Go == oldGo {
			return toolchain.Ensure(ctx, b.opts.CacheDir, oldGo, r.ToolchainSum, "", b.cmdLog)
		}
	}
	return "", fmt.Errorf("go%s is in no row of the matrix", oldGo)
}

func firstLineOf(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
