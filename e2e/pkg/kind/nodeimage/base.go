package nodeimage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/gotool"
	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
)

// Crictl is the CRI command line kubeadm needs on a node, from the Go
// module proxy (v1.34 speaks CRI v1, which containerd 1.6 serves).
var Crictl = gotool.Tool{Name: "crictl", Package: "sigs.k8s.io/cri-tools/cmd/crictl", Version: "v1.34.0"}

const (
	suite      = "bookworm"
	baseRepo   = "kubelet-compat/kind-base"
	rootfsRepo = "kubelet-compat/kind-rootfs"
	// the control-plane images' root: small, without systemd or containerd
	componentRepo = "kubelet-compat/kind-component-rootfs"
	nodeRepo      = "kubelet-compat/kind-node"
	pauseBinName  = "pause"
)

// basePackages is what a node runs besides Kubernetes: systemd as init,
// containerd 1.6 (it still serves CRI v1alpha2 for the 1.18-1.22 kubelets),
// the CNI plugins, what the kubelet and kube-proxy call (dpkg installs our
// packages: Essential).
var basePackages = []string{
	"bash", "ca-certificates", "conntrack", "containerd", "containernetworking-plugins",
	"coreutils", "dbus", "ebtables", "ethtool", "iproute2", "iptables", "kmod", "mount",
	"procps", "runc", "socat", "systemd", "systemd-sysv", "util-linux",
}

// baseFiles are the embedded files Dockerfile.base copies.
var baseFiles = []string{"entrypoint", "kind-iptables-mode", "kind-kubelet-cgroup", "containerd.service", "10-kind-network.conf", "crictl.yaml", "20-kind.conf"}

// componentPackages is what the control-plane images need besides their
// binary: iptables and conntrack for kube-proxy; Debian's minbase gives the
// shell, glibc (Debian's etcd) and /tmp.
var componentPackages = []string{"conntrack", "ebtables", "iptables"}

// rootfsKey names a debootstrap tarball: it depends on the suite and the
// package list only.
func rootfsKey(packages []string) string {
	return shortHash(contentHash(map[string][]byte{
		"suite":    []byte(suite + " minbase"),
		"packages": []byte(strings.Join(packages, ",")),
	}))
}

// importRootfs makes <repo>:<key> from the debootstrap of packages, unless
// it exists, and returns its reference.
func (b *builder) importRootfs(ctx context.Context, repo string, packages []string) (string, error) {
	key := rootfsKey(packages)
	ref := repo + ":" + key
	if _, ok := b.docker.imageHash(ctx, ref); ok {
		return ref, nil
	}
	tarball, err := b.rootfsTarball(ctx, key, packages)
	if err != nil {
		return "", err
	}
	b.logf("importing %s as %s", tarball, ref)
	if err := b.docker.run(ctx, "import", tarball, ref); err != nil {
		return "", fmt.Errorf("importing the root file system: %w", err)
	}
	return ref, nil
}

// buildBase makes kubelet-compat/kind-base:<hash> unless it exists and
// returns its reference.
func (b *builder) buildBase(ctx context.Context) (string, error) {
	rootfsRef := rootfsRepo + ":" + rootfsKey(basePackages)
	parts := map[string][]byte{"rootfs": []byte(rootfsRef)}
	for _, n := range append([]string{"Dockerfile.base", "containerd-config.toml.tmpl"}, baseFiles...) {
		parts[n] = file(n)
	}
	// kubeadm drives a CRI runtime through crictl (kubeadm upgrade's
	// preflight and image checks): the pinned release, built once.
	parts["crictl"] = []byte(Crictl.String())
	hash := contentHash(parts)
	ref := baseRepo + ":" + shortHash(hash)
	if h, ok := b.docker.imageHash(ctx, ref); ok && h == hash {
		b.logf("base image %s is up to date", ref)
		return ref, nil
	}
	done := b.step("base image " + ref)
	if _, err := b.importRootfs(ctx, rootfsRepo, basePackages); err != nil {
		return "", err
	}
	ctxDir, err := b.tempDir("base-context")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(ctxDir)
	dockerfile, err := render("Dockerfile.base", map[string]string{"Rootfs": rootfsRef, "HashLabel": HashLabel, "Hash": hash})
	if err != nil {
		return "", err
	}
	// The base carries a containerd config for completeness; every node
	// image replaces it with its version's sandbox image.
	cfg, err := containerdConfig("k8s.gcr.io/pause:3.2", false)
	if err != nil {
		return "", err
	}
	crictlPath, err := gotool.Ensure(ctx, b.opts.CacheDir, Crictl, b.cmdLog)
	if err != nil {
		return "", err
	}
	crictl, err := os.ReadFile(crictlPath)
	if err != nil {
		return "", err
	}
	files := map[string][]byte{"Dockerfile": dockerfile, "containerd-config.toml": cfg, "crictl": crictl}
	for _, n := range baseFiles {
		files[n] = file(n)
	}
	if err := writeContext(ctxDir, files); err != nil {
		return "", err
	}
	if err := b.docker.run(ctx, "build", "--network", "none", "-t", ref, ctxDir); err != nil {
		return "", fmt.Errorf("building the base image: %w", err)
	}
	done()
	return ref, nil
}

// rootfsTarball returns the cached debootstrap tarball of packages (key is
// rootfsKey(packages)), making it when missing.
func (b *builder) rootfsTarball(ctx context.Context, key string, packages []string) (string, error) {
	tarball := filepath.Join(b.opts.CacheDir, "kind", "rootfs-"+key+".tar")
	if _, err := os.Stat(tarball); err == nil {
		b.logf("debootstrap tarball %s is cached", tarball)
		return tarball, nil
	}
	done := b.step("debootstrap " + suite + " (" + strings.Join(packages, ",") + ")")
	mirror, err := findMirror(suite)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(tarball), 0o755); err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(filepath.Dir(tarball), ".rootfs-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "root")
	cmd := exec.Command("debootstrap", "--variant=minbase", "--components=main",
		"--include="+strings.Join(packages, ","), suite, root, mirror)
	cmd.Log = b.cmdLog
	if err := cmd.Run(ctx); err != nil {
		return "", fmt.Errorf("debootstrap (log: %s): %w", b.logPath, err)
	}
	// Downloaded packages and indexes are not part of a node.
	for _, glob := range []string{"var/cache/apt/archives/*.deb", "var/cache/apt/*.bin", "var/lib/apt/lists/*", "var/log/*.log"} {
		m, _ := filepath.Glob(filepath.Join(root, glob))
		for _, p := range m {
			os.RemoveAll(p)
		}
	}
	tmp := filepath.Join(dir, "rootfs.tar")
	tar := exec.Command("tar", "--numeric-owner", "--xattrs", "-C", root, "-cf", tmp, ".")
	tar.Log = b.cmdLog
	if err := tar.Run(ctx); err != nil {
		return "", fmt.Errorf("packing the root file system: %w", err)
	}
	if err := os.Rename(tmp, tarball); err != nil {
		return "", err
	}
	done()
	return tarball, nil
}
