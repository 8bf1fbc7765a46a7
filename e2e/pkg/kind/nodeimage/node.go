package nodeimage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// nodeRef is the node image of version v.
func nodeRef(v string) string { return nodeRepo + ":v" + v }

// buildNode makes kubelet-compat/kind-node:v<v>: the base, v's patched
// .debs installed and selected, /kind/version, v's images preloaded. It runs a
// build container (entrypoint sleep), and commits it with the base's
// entrypoint only once everything succeeded.
func (b *builder) buildNode(ctx context.Context, v, base string, imgs versionImages, pkgs packageSet) error {
	debs, err := pkgs.forVersion(v)
	if err != nil {
		return err
	}
	cfg, err := containerdConfig(imgs.list[compPause], systemdCgroup(v))
	if err != nil {
		return err
	}
	setup := file("node-setup.sh")
	parts := map[string][]byte{"base": []byte(base), "images": []byte(imgs.ids), "containerd": cfg, "setup": setup}
	for _, f := range debs {
		sum, err := fileSHA256(f)
		if err != nil {
			return err
		}
		parts["deb:"+filepath.Base(f)] = []byte(sum)
	}
	hash := contentHash(parts)
	ref := nodeRef(v)
	if h, ok := b.docker.imageHash(ctx, ref); ok && h == hash {
		b.logf("node image %s is up to date", ref)
		return nil
	}
	done := b.step("node image " + ref)
	stage, err := b.tempDir("node")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	files := map[string][]byte{"containerd-config.toml": cfg, "image-refs": []byte(strings.Join(imgs.refs, "\n") + "\n"), "node-setup.sh": setup}
	if err := writeContext(stage, files); err != nil {
		return err
	}
	if err := os.Chmod(filepath.Join(stage, "node-setup.sh"), 0o755); err != nil {
		return err
	}
	for _, f := range append(debs, imgs.tar) {
		name := filepath.Base(f)
		if f == imgs.tar {
			name = "images.tar"
		}
		if err := linkOrCopy(f, filepath.Join(stage, name)); err != nil {
			return err
		}
	}

	var rnd [4]byte
	rand.Read(rnd[:])
	name := "kc-nodeimage-build-" + strings.ReplaceAll(v, ".", "-") + "-" + hex.EncodeToString(rnd[:])
	if err := b.docker.run(ctx, "run", "-d", "--name", name, "--privileged", "--network", "none",
		"--entrypoint", "sleep", base, "infinity"); err != nil {
		return fmt.Errorf("starting the build container: %w", err)
	}
	defer func() {
		// a fresh context: the build's may be cancelled already
		if err := b.docker.run(context.Background(), "rm", "-f", "-v", name); err != nil {
			b.logf("removing the build container %s: %v", name, err)
		}
	}()
	if err := b.docker.run(ctx, "cp", stage+"/.", name+":/kind/build"); err != nil {
		return fmt.Errorf("copying the packages and images into the build container: %w", err)
	}
	if err := b.docker.run(ctx, "exec", name, "/kind/build/node-setup.sh", v); err != nil {
		return fmt.Errorf("setting up the node (log: %s): %w", b.logPath, err)
	}
	// STOPSIGNAL (SIGRTMIN+3 for systemd) is inherited from the base:
	// docker 20.10 refuses it as a commit change.
	if err := b.docker.run(ctx, "commit",
		"--change", `ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]`,
		"--change", `CMD []`,
		"--change", fmt.Sprintf("LABEL %s=%q", HashLabel, hash),
		name, ref); err != nil {
		return fmt.Errorf("committing %s: %w", ref, err)
	}
	done()
	return nil
}

// linkOrCopy hard-links src to dst, copying across file systems.
func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	return copyFile(src, dst, fi.Mode().Perm())
}
