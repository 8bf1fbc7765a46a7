// Command kc-capi-manifests writes what a management cluster needs for the
// in-place update extension, built here without clusterctl, Docker, a
// registry or cert-manager: CAPI's core, kubeadm bootstrap and kubeadm
// control-plane managers and CAPD built from the Go module proxy (cached in
// $KC_CACHE/cluster-api), the extension built from this module, each as an
// OCI layout tar in DIR/images, and one YAML stream DIR/cluster-api.yaml of
// all their objects with certificates of a self-signed CA (DIR/ca.crt,
// DIR/ca.key, reused when there). Run it in deploy/cluster-api (`make
// capi-images`). See deploy/cluster-api/README.md.
//
//	kc-capi-manifests -out DIR [-namespace NS]... [-upgrade-image NAME] [-setting KEY=VALUE]...
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/kubelet-compat/kubelet-compat/deploy/cluster-api/providers"
	"github.com/kubelet-compat/kubelet-compat/pkg/cachedir"
	"github.com/kubelet-compat/kubelet-compat/pkg/ocilayout"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "kc-capi-manifests: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	fset := flag.NewFlagSet("kc-capi-manifests", flag.ContinueOnError)
	out := fset.String("out", "", "output directory (required)")
	upgrade := fset.String("upgrade-image", "", "the extension's -upgrade-image (empty: its default)")
	var namespaces, settings list
	fset.Var(&namespaces, "namespace", "a namespace of the workload Clusters (repeatable; default: default)")
	fset.Var(&settings, "setting", "an ExtensionConfig setting KEY=VALUE (repeatable)")
	if err := fset.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if *out == "" || fset.NArg() > 0 {
		return errors.New("usage: kc-capi-manifests -out DIR [-namespace NS]... [-upgrade-image NAME] [-setting KEY=VALUE]...")
	}
	if len(namespaces) == 0 {
		namespaces = list{"default"}
	}
	opts := providers.ExtensionOptions{UpgradeImage: *upgrade, Namespaces: namespaces, Settings: map[string]string{}}
	for _, s := range settings {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return fmt.Errorf("-setting %q: want KEY=VALUE", s)
		}
		opts.Settings[k] = v
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cache := cachedir.Resolve(os.Getenv(cachedir.Env))
	if err := os.MkdirAll(filepath.Join(*out, "images"), 0o755); err != nil {
		return err
	}
	ca, err := loadOrMakeCA(*out)
	if err != nil {
		return err
	}

	var imgs []ocilayout.Image
	for _, p := range providers.All {
		t := time.Now()
		bin, err := p.Build(ctx, cache, os.Stderr)
		if err != nil {
			return err
		}
		img, err := providers.Image(p.Image(), "manager", bin, "")
		if err != nil {
			return err
		}
		imgs = append(imgs, img)
		fmt.Printf("%s %s (%s)\n", p.Name, bin, time.Since(t).Round(time.Second))
	}
	t := time.Now()
	extBin := filepath.Join(*out, "kc-capi-extension")
	tag, err := providers.BuildExtension(ctx, extBin, os.Stderr)
	if err != nil {
		return err
	}
	opts.Image = providers.ExtensionImage(tag)
	img, err := providers.Image(opts.Image, "kc-capi-extension", extBin, "")
	if err != nil {
		return err
	}
	imgs = append(imgs, img)
	fmt.Printf("kc-capi-extension %s (%s)\n", extBin, time.Since(t).Round(time.Second))
	for _, img := range imgs {
		layout, _, err := ocilayout.Layout(img)
		if err != nil {
			return err
		}
		name := filepath.Join(*out, "images", strings.NewReplacer("/", "_", ":", "_").Replace(strings.TrimPrefix(img.Ref, providers.ImageRepository+"/"))+".tar")
		if err := os.WriteFile(name, layout, 0o644); err != nil {
			return err
		}
		fmt.Printf("%s %s (%d MB)\n", img.Ref, name, len(layout)>>20)
	}

	dirs := map[string]string{}
	for _, p := range providers.All {
		if _, ok := dirs[p.Module]; ok {
			continue
		}
		if dirs[p.Module], err = p.ModuleDir(ctx, cache); err != nil {
			return err
		}
	}
	objs, err := providers.Render(dirs, ca, opts)
	if err != nil {
		return err
	}
	y, err := providers.Encode(objs)
	if err != nil {
		return err
	}
	manifest := filepath.Join(*out, "cluster-api.yaml")
	if err := os.WriteFile(manifest, y, 0o644); err != nil {
		return err
	}
	fmt.Printf("%s: %d objects\n", manifest, len(objs))
	return nil
}

// loadOrMakeCA reads DIR/ca.crt and DIR/ca.key, or makes and writes them.
func loadOrMakeCA(dir string) (*providers.CA, error) {
	crt, errCrt := os.ReadFile(filepath.Join(dir, "ca.crt"))
	key, errKey := os.ReadFile(filepath.Join(dir, "ca.key"))
	if errCrt == nil && errKey == nil {
		return providers.LoadCA(crt, key)
	}
	if !errors.Is(errCrt, fs.ErrNotExist) || !errors.Is(errKey, fs.ErrNotExist) {
		return nil, fmt.Errorf("the CA in %s: want both ca.crt and ca.key or neither", dir)
	}
	ca, err := providers.NewCA()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), ca.CertPEM, 0o644); err != nil {
		return nil, err
	}
	return ca, os.WriteFile(filepath.Join(dir, "ca.key"), ca.KeyPEM, 0o600)
}
