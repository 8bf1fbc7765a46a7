package nodeimage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
	"github.com/kubelet-compat/kubelet-compat/pkg/matrix"
	"github.com/kubelet-compat/kubelet-compat/pkg/modfetch"
	"github.com/kubelet-compat/kubelet-compat/pkg/toolchain"
)

// oldGo is the cached toolchain CoreDNS releases of the 1.20/1.21 era build
// with when the machine's Go refuses them.
const oldGo = "1.16.15"

// coreDNSGo is the Go CoreDNS of kubeadm v builds with when the machine's
// Go refuses it: v's own Go (CoreDNS 1.9.3 of 1.25 needs go1.17 or later
// and links what go1.23+ refuses), oldGo for the releases whose Go is
// older (1.18 to 1.22).
func coreDNSGo(v string) (string, error) {
	r, err := matrix.Lookup(v)
	if err != nil {
		return "", err
	}
	if plan.VersionLess(oldGo, r.Go) {
		return r.Go, nil
	}
	return oldGo, nil
}

// etcdBinary returns the etcd of kubeadm's image tag (3.5.15-0): from 3.5
// on built from the Go module proxy at that release, so that kubeadm
// upgrade meets the etcd it expects and upgrades it as on a real cluster;
// for 3.4 (kubeadm 1.18 to 1.21 name 3.4.3 and 3.4.13, whose module is not
// served) Debian's 3.4.23 under kubeadm's tag.
func (b *builder) etcdBinary(ctx context.Context, tag string) (string, error) {
	version, err := etcdModuleVersion(tag)
	if err != nil {
		return "", err
	}
	if strings.HasPrefix(version, "v3.4.") {
		return b.debianEtcd(ctx)
	}
	return b.etcdFromProxy(ctx, version)
}

// etcdModuleVersion is the release of an etcd image tag: 3.5.15-0 is
// v3.5.15.
func etcdModuleVersion(tag string) (string, error) {
	v, _, _ := strings.Cut(tag, "-")
	if !versionPattern.MatchString(v) || !strings.HasPrefix(v, "3.") {
		return "", fmt.Errorf("etcd tag %q is not a 3.x release", tag)
	}
	return "v" + v, nil
}

// etcdFromProxy builds go.etcd.io/etcd/server/v3 at version (static),
// cached per version. The server module's go.mod replaces its sibling
// modules with relative paths, so it is built as a dependency of a main
// module of our own: the siblings resolve to the same release.
func (b *builder) etcdFromProxy(ctx context.Context, version string) (string, error) {
	return b.cachedBuild(ctx, "etcd", version, func(work, out string) error {
		gomod := fmt.Sprintf("module kubelet-compat.local/etcd\n\ngo 1.22\n\nrequire go.etcd.io/etcd/server/v3 %s\n", version)
		if err := os.WriteFile(filepath.Join(work, "go.mod"), []byte(gomod), 0o644); err != nil {
			return err
		}
		c := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "go.etcd.io/etcd/server/v3")
		c.Dir, c.Log = work, b.cmdLog
		c.Env = append([]string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64"}, modfetch.Env(b.opts.CacheDir)...)
		if err := c.Run(ctx); err != nil {
			return err
		}
		said, err := exec.Command(out, "--version").Output(ctx)
		if err != nil {
			return err
		}
		if want := "etcd Version: " + strings.TrimPrefix(version, "v"); !strings.Contains(string(said), want) {
			return fmt.Errorf("it says %q, want %q", firstLineOf(string(said)), want)
		}
		return nil
	})
}

// cachedBuild returns <cache>/kind/<name>-<version>/<name>, which build
// writes (to out, in the scratch directory work) unless it exists; a
// failed build leaves nothing in the cache.
func (b *builder) cachedBuild(ctx context.Context, name, version string, build func(work, out string) error) (string, error) {
	dir := filepath.Join(b.opts.CacheDir, "kind", name+"-"+version)
	bin := filepath.Join(dir, name)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	done := b.step("building " + name + " " + version)
	work, err := b.tempDir(name)
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	tmpBin := filepath.Join(work, "bin", name)
	if err := os.MkdirAll(filepath.Dir(tmpBin), 0o755); err != nil {
		return "", err
	}
	if err := build(work, tmpBin); err != nil {
		return "", fmt.Errorf("building %s %s: %w", name, version, err)
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

// debianEtcd returns Debian's etcd (package etcd-server), downloaded and
// unpacked into the cache once; nothing is installed on the machine (the
// package would start an etcd service).
func (b *builder) debianEtcd(ctx context.Context) (string, error) {
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
func (b *builder) coreDNSBinary(ctx context.Context, tag, kubernetes string) (string, error) {
	version, err := coreDNSModuleVersion(tag)
	if err != nil {
		return "", err
	}
	return b.cachedBuild(ctx, "coredns", version, func(work, out string) error {
		mod, err := modfetch.Download(ctx, b.opts.CacheDir, "github.com/coredns/coredns", version, "")
		if err != nil {
			return err
		}
		src := filepath.Join(work, "src")
		// The module cache is read-only; the build may have to complete go.sum.
		if err := exec.Command("cp", "-r", mod.Dir, src).Run(ctx); err != nil {
			return err
		}
		if err := exec.Command("chmod", "-R", "u+w", src).Run(ctx); err != nil {
			return err
		}
		env := []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64"}
		build := func(goBin string, extraEnv ...string) error {
			c := exec.Command(goBin, "build", "-trimpath", "-ldflags=-s -w", "-o", out, ".")
			c.Dir, c.Env, c.Log = src, append(append([]string{}, env...), extraEnv...), b.cmdLog
			return c.Run(ctx)
		}
		if err := build("go", modfetch.Env(b.opts.CacheDir)...); err != nil {
			goVersion, lerr := coreDNSGo(kubernetes)
			if lerr != nil {
				return lerr
			}
			b.logf("CoreDNS %s does not build with the machine's Go (%v); trying go%s", version, firstLineOf(err.Error()), goVersion)
			goroot, err := b.matrixToolchain(ctx, goVersion)
			if err != nil {
				return err
			}
			if err := build(filepath.Join(goroot, "bin", "go"), toolchain.Env(goroot, goVersion, b.opts.CacheDir)...); err != nil {
				return fmt.Errorf("with go%s: %w", goVersion, err)
			}
		}
		return nil
	})
}

// matrixToolchain is the harness's go<goVersion>, installed into the cache
// with the sum the matrix records for it.
func (b *builder) matrixToolchain(ctx context.Context, goVersion string) (string, error) {
	rows, err := matrix.Load()
	if err != nil {
		return "", err
	}
	for _, r := range rows {
		if r.Go == goVersion {
			return toolchain.Ensure(ctx, b.opts.CacheDir, goVersion, r.ToolchainSum, "", b.cmdLog)
		}
	}
	return "", fmt.Errorf("go%s is in no row of the matrix", goVersion)
}

func firstLineOf(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
