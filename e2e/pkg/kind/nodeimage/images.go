package nodeimage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// versionImages is what a node image of one version preloads.
type versionImages struct {
	list imageList
	refs []string // what the tar holds: list's images and any bridge etcd
	tar  string   // <OutputDir>/kind/images/<ver>.tar
	ids  string   // "ref id" lines of the saved images: the tar's identity
}

// imageSpec is one image to build: a Dockerfile and the files of its
// context.
type imageSpec struct {
	ref        string
	dockerfile string
	files      map[string]string // context name -> source path
	inline     map[string][]byte // context name -> content
}

// binaryImage is a control-plane component on the component root (a
// shell, /tmp, glibc, iptables for kube-proxy), run as kubeadm's manifests
// say.
func binaryImage(ref, base, name, binary string) imageSpec {
	return imageSpec{
		ref: ref,
		dockerfile: fmt.Sprintf("FROM %s\nCOPY %s /usr/local/bin/%s\nENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\nSTOPSIGNAL SIGTERM\nENTRYPOINT [\"/usr/local/bin/%s\"]\nCMD []\n",
			base, name, name, name),
		files: map[string]string{name: binary},
	}
}

// scratchImage is a static binary alone, as upstream's pause and CoreDNS.
func scratchImage(ref, name, binary string) imageSpec {
	return imageSpec{
		ref:        ref,
		dockerfile: fmt.Sprintf("FROM scratch\nCOPY %s /%s\nENTRYPOINT [\"/%s\"]\n", name, name, name),
		files:      map[string]string{name: binary},
	}
}

// buildVersionImages builds the images kubeadm of version v lists and saves
// them to <OutputDir>/kind/images/<v>.tar.
func (b *builder) buildVersionImages(ctx context.Context, v string) (versionImages, error) {
	list, err := kubeadmImages(ctx, b.opts.OutputDir, v)
	if err != nil {
		return versionImages{}, err
	}
	base, err := b.importRootfs(ctx, componentRepo, componentPackages)
	if err != nil {
		return versionImages{}, fmt.Errorf("component root file system: %w", err)
	}
	unpatched := filepath.Join(b.opts.OutputDir, v+"-unpatched")
	var specs []imageSpec
	for _, c := range []string{compAPIServer, compController, compScheduler, compProxy} {
		bin := filepath.Join(unpatched, c)
		if err := b.waitForFile(ctx, bin); err != nil {
			return versionImages{}, err
		}
		s := binaryImage(list[c], base, c, bin)
		if c == compProxy {
			// kube-proxy programs the iptables backend the node uses.
			s = binaryImage(list[c], base, "kube-proxy", bin)
			s.dockerfile = strings.Replace(s.dockerfile, "COPY kube-proxy /usr/local/bin/kube-proxy\n",
				"COPY kube-proxy /usr/local/bin/kube-proxy.bin\nCOPY kube-proxy-wrapper /usr/local/bin/kube-proxy\nCOPY kind-iptables-mode /usr/local/bin/kind-iptables-mode\n", 1)
			s.inline = map[string][]byte{"kube-proxy-wrapper": file("kube-proxy-wrapper"), "kind-iptables-mode": file("kind-iptables-mode")}
		}
		specs = append(specs, s)
	}
	etcd, err := b.etcdBinary(ctx, list.tag(compEtcd))
	if err != nil {
		return versionImages{}, fmt.Errorf("etcd: %w", err)
	}
	specs = append(specs, binaryImage(list[compEtcd], base, "etcd", etcd))
	refs := list.refs()
	if bridge, err := bridgeFor(list[compEtcd]); err != nil {
		return versionImages{}, err
	} else if bridge {
		bin, err := b.etcdFromProxy(ctx, "v"+EtcdBridgeVersion)
		if err != nil {
			return versionImages{}, fmt.Errorf("the bridge etcd: %w", err)
		}
		ref := etcdBridgeRef(list[compEtcd])
		specs = append(specs, binaryImage(ref, base, "etcd", bin))
		refs = append(refs, ref)
	}
	coredns, err := b.coreDNSBinary(ctx, list.tag(compCoreDNS), v)
	if err != nil {
		return versionImages{}, fmt.Errorf("CoreDNS: %w", err)
	}
	specs = append(specs, scratchImage(list[compCoreDNS], "coredns", coredns))
	pause, err := b.pauseBinary(ctx)
	if err != nil {
		return versionImages{}, err
	}
	specs = append(specs, scratchImage(list[compPause], "pause", pause))

	return b.saveImages(ctx, v, list, refs, specs)
}

// specHash is the input hash of s: its Dockerfile and the content of each
// file of its context. An image built from s carries it (HashLabel).
func specHash(s imageSpec) (string, error) {
	parts := map[string][]byte{"Dockerfile": []byte(s.dockerfile)}
	for name, src := range s.files {
		sum, err := fileSHA256(src)
		if err != nil {
			return "", err
		}
		parts["file:"+name] = []byte(sum)
	}
	for name, content := range s.inline {
		parts["inline:"+name] = content
	}
	return contentHash(parts), nil
}

// tarInputs is a version's tar's identity: a "ref hash" line per image,
// sorted, from the images' inputs alone. The engine's image IDs change
// with every build (their creation time), so they cannot say a tar is up
// to date once the engine no longer holds the images.
func tarInputs(specs []imageSpec) (string, error) {
	var lines []string
	for _, s := range specs {
		h, err := specHash(s)
		if err != nil {
			return "", fmt.Errorf("image %s: %w", s.ref, err)
		}
		lines = append(lines, s.ref+" "+h)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n") + "\n", nil
}

// buildImage builds s unless an image with its input hash exists.
func (b *builder) buildImage(ctx context.Context, s imageSpec) error {
	hash, err := specHash(s)
	if err != nil {
		return err
	}
	if h, ok := b.docker.imageHash(ctx, s.ref); ok && h == hash {
		b.logf("image %s is up to date", s.ref)
		return nil
	}
	done := b.step("image " + s.ref)
	dir, err := b.tempDir("image")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	content := map[string][]byte{"Dockerfile": []byte(s.dockerfile + fmt.Sprintf("LABEL %s=%q\n", HashLabel, hash))}
	for name, c := range s.inline {
		content[name] = c
	}
	if err := writeContext(dir, content); err != nil {
		return err
	}
	for name, src := range s.files {
		if err := copyFile(src, filepath.Join(dir, name), 0o755); err != nil {
			return err
		}
	}
	if err := b.docker.run(ctx, "build", "--network", "none", "-t", s.ref, dir); err != nil {
		return fmt.Errorf("building %s: %w", s.ref, err)
	}
	done()
	return nil
}

// saveImages writes refs (list's images and any bridge etcd), built from
// specs, to <v>.tar unless the tar holds images of exactly these inputs
// already; then the engine drops them: the nodes import the tar, a node
// image copies it, and a road of twenty versions would otherwise keep
// about 17 GiB of images in the engine besides their tars.
func (b *builder) saveImages(ctx context.Context, v string, list imageList, refs []string, specs []imageSpec) (versionImages, error) {
	sort.Strings(refs)
	inputs, err := tarInputs(specs)
	if err != nil {
		return versionImages{}, err
	}
	dir := filepath.Join(b.kindDir, "images")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return versionImages{}, err
	}
	tar := filepath.Join(dir, v+".tar")
	stamp := tar + ".ids"
	res := versionImages{list: list, refs: refs, tar: tar, ids: inputs}
	if old, err := os.ReadFile(stamp); err == nil && string(old) == inputs {
		if _, err := os.Stat(tar); err == nil {
			b.logf("%s is up to date", tar)
			return res, nil
		}
	}
	for _, s := range specs {
		if err := b.buildImage(ctx, s); err != nil {
			return versionImages{}, err
		}
	}
	done := b.step("saving " + tar)
	os.Remove(stamp)
	tmp := tar + ".tmp"
	if err := b.docker.run(ctx, append([]string{"save", "-o", tmp}, refs...)...); err != nil {
		os.Remove(tmp)
		return versionImages{}, fmt.Errorf("docker save: %w", err)
	}
	if err := os.Rename(tmp, tar); err != nil {
		return versionImages{}, err
	}
	if err := os.WriteFile(stamp, []byte(inputs), 0o644); err != nil {
		return versionImages{}, err
	}
	done()
	if err := b.docker.run(ctx, append([]string{"image", "rm"}, refs...)...); err != nil {
		b.logf("the engine keeps some images of %s (%v): %s holds them all", v, err, tar)
	}
	return res, nil
}

// waitForFile waits for a binary the harness is still building: present
// and not modified for 15 s.
func (b *builder) waitForFile(ctx context.Context, path string) error {
	const settle = 15 * time.Second
	logged := false
	for {
		fi, err := os.Stat(path)
		if err == nil && time.Since(fi.ModTime()) > settle {
			return nil
		}
		if !logged {
			b.logf("waiting for %s (make build PATCHED=false builds it)", path)
			logged = true
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", path, ctx.Err())
		case <-time.After(5 * time.Second):
		}
	}
}

// pauseBinary builds e2e/cmd/e2e-pause once per run.
func (b *builder) pauseBinary(ctx context.Context) (string, error) {
	return b.goBinary(ctx, "pause", "./e2e/cmd/e2e-pause")
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.WriteFile(dst, in, mode); err != nil {
		return err
	}
	return os.Chmod(dst, mode)
}
