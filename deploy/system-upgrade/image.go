package systemupgrade

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
	"github.com/kubelet-compat/kubelet-compat/pkg/images"
	"github.com/kubelet-compat/kubelet-compat/pkg/versions"
)

// RollPackage is kc-roll's main package.
const RollPackage = "github.com/kubelet-compat/kubelet-compat/deploy/system-upgrade/cmd/kc-roll"

// PackagesDir is where the upgrade image holds the target version's packages.
const PackagesDir = "/packages"

// UpgradeApplets are the busybox applets of the upgrade image: kc-roll
// runs the node's programs through chroot (the node's PATH, its binaries,
// never the image's); sh is for an operator's kubectl exec.
var UpgradeApplets = []string{"chroot", "sh"}

// BuildRoll builds kc-roll into out, static (the image has no libc), from
// this module: the go command must run inside it (make and the e2e run
// from the repository's root).
func BuildRoll(ctx context.Context, out string, log io.Writer) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	c := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, RollPackage)
	c.Env, c.Log = []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64"}, log
	if err := c.Run(ctx); err != nil {
		return fmt.Errorf("building kc-roll: %w", err)
	}
	return nil
}

// ControllerImage is the controller's image: the static binary alone, as
// SUC's own image is (FROM scratch; it runs as 65534 by the Deployment's
// securityContext).
func ControllerImage(ref, binary string) (images.Image, error) {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return images.Image{}, fmt.Errorf("reading the controller: %w", err)
	}
	return images.Image{Ref: ref, Entrypoint: []string{"/bin/system-upgrade-controller"},
		Files: []images.File{{Path: "bin", Dir: true}, {Path: "bin/system-upgrade-controller", Mode: 0o755, Data: bin}}}, nil
}

// ofPreRelease says whether package file name, which starts
// kubernetes-<version>-, is a pre-release's of that version
// (kubernetes-1.38.0-rc.1-node_... for 1.38.0).
func ofPreRelease(version, name string) bool {
	pre, _, _ := strings.Cut(strings.TrimPrefix(name, "kubernetes-"+version+"-"), "-")
	_, err := versions.ParseKubernetes(version + "-" + pre)
	return err == nil
}

// UpgradeImage is the upgrade Job's image for one target version: kc-roll
// (BuildRoll's), the Job's program; the target's kubectl (the image's
// entrypoint, so that the controller's cordon step can use the image as
// its kubectl image, and kc-roll's client of the API); Debian's static
// busybox for chroot; and the packages of packageDir (`make deb` /
// `make rpm` output) that kc-roll installs: the target version's
// (kubernetes-<version>-*) and kubernetes-unversioned, both formats when
// both are there.
func UpgradeImage(ref, version, busybox, kubectl, roll, packageDir string) (images.Image, error) {
	bb, err := os.ReadFile(busybox)
	if err != nil {
		return images.Image{}, fmt.Errorf("reading busybox (Debian package busybox-static): %w", err)
	}
	kc, err := os.ReadFile(kubectl)
	if err != nil {
		return images.Image{}, fmt.Errorf("reading kubectl: %w", err)
	}
	engine, err := os.ReadFile(roll)
	if err != nil {
		return images.Image{}, fmt.Errorf("reading kc-roll: %w", err)
	}
	files := []images.File{{Path: "bin", Dir: true}, {Path: "tmp", Dir: true, Mode: 0o1777}, {Path: "packages", Dir: true},
		{Path: "bin/busybox", Mode: 0o755, Data: bb}, {Path: "bin/kubectl", Mode: 0o755, Data: kc},
		{Path: strings.TrimPrefix(RollPath, "/"), Mode: 0o755, Data: engine}}
	for _, a := range UpgradeApplets {
		files = append(files, images.File{Path: "bin/" + a, Link: "busybox"})
	}
	var pkgs []string
	versioned := 0
	for _, pattern := range []string{"kubernetes-" + version + "-*.deb", "kubernetes-" + version + "-*.rpm",
		"kubernetes-unversioned_*.deb", "kubernetes-unversioned-*.rpm"} {
		m, err := filepath.Glob(filepath.Join(packageDir, pattern))
		if err != nil {
			return images.Image{}, err
		}
		if strings.HasPrefix(pattern, "kubernetes-"+version) {
			m = slices.DeleteFunc(m, func(p string) bool { return ofPreRelease(version, filepath.Base(p)) })
			versioned += len(m)
		}
		pkgs = append(pkgs, m...)
	}
	if versioned == 0 {
		return images.Image{}, fmt.Errorf("no package of Kubernetes %s in %s", version, packageDir)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		data, err := os.ReadFile(p)
		if err != nil {
			return images.Image{}, err
		}
		files = append(files, images.File{Path: "packages/" + filepath.Base(p), Mode: 0o644, Data: data})
	}
	return images.Image{Ref: ref, Entrypoint: []string{"/bin/kubectl"}, Env: []string{"PATH=/bin"}, Files: files}, nil
}
