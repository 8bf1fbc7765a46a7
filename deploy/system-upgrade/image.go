package systemupgrade

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/images"
	"github.com/kubelet-compat/kubelet-compat/pkg/versions"
)

// Script is upgrade.sh, the upgrade Job's program.
//
//go:embed upgrade.sh
var Script []byte

// ScriptPath is where the upgrade image holds Script.
const ScriptPath = "/upgrade.sh"

// PackagesDir is where the upgrade image holds the target version's packages.
const PackagesDir = "/packages"

// UpgradeApplets are the busybox applets upgrade.sh runs in its container
// (everything on the node runs there, through chroot).
var UpgradeApplets = []string{"sh", "awk", "cat", "chroot", "cmp", "cp", "date", "grep", "head", "mkdir", "mktemp", "mv", "rm", "sed", "sleep", "sync", "tr", "wc"}

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

// UpgradeImage is the upgrade Job's image for one target version: Debian's
// static busybox for the shell and the applets upgrade.sh runs, the target's
// kubectl (the image's entrypoint, so that the controller's cordon step can
// use the image as its kubectl image), upgrade.sh, and the packages of
// packageDir (`make deb` / `make rpm` output) that upgrade.sh installs: the
// target version's (kubernetes-<version>-*) and kubernetes-unversioned, both
// formats when both are there.
func UpgradeImage(ref, version, busybox, kubectl, packageDir string) (images.Image, error) {
	bb, err := os.ReadFile(busybox)
	if err != nil {
		return images.Image{}, fmt.Errorf("reading busybox (Debian package busybox-static): %w", err)
	}
	kc, err := os.ReadFile(kubectl)
	if err != nil {
		return images.Image{}, fmt.Errorf("reading kubectl: %w", err)
	}
	files := []images.File{{Path: "bin", Dir: true}, {Path: "tmp", Dir: true, Mode: 0o1777}, {Path: "packages", Dir: true},
		{Path: "bin/busybox", Mode: 0o755, Data: bb}, {Path: "bin/kubectl", Mode: 0o755, Data: kc},
		{Path: strings.TrimPrefix(ScriptPath, "/"), Mode: 0o755, Data: Script}}
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
