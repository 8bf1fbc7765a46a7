// Package rpm builds the side-by-side Kubernetes RPMs in the StarlingX
// layout: per version kubernetes-<ver>-node, -kubeadm and -client, all under
// /usr/local/kubernetes/<ver>/stage1|stage2, plus one noarch
// kubernetes-unversioned that owns /usr/local/kubernetes/current/stage1|stage2,
// the /usr/bin links into them, the systemd units and kubernetes-select.
package rpm

import (
	"fmt"
	"path"
	"path/filepath"
)

// Paths on the node, shared by the spec templates and the tests.
const (
	KubeRoot        = "/usr/local/kubernetes"
	CurrentDir      = KubeRoot + "/current"
	DefaultUnitDir  = "/usr/lib/systemd/system"
	PresetDir       = "/usr/lib/systemd/system-preset"
	UnversionedName = "kubernetes-unversioned"
	// DropInRel is where each version keeps the kubelet drop-in, inside stage2.
	DropInRel = "usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf"
	// CompletionRel is where each version keeps kubectl's bash completion, inside stage2.
	CompletionRel = "usr/share/bash-completion/completions/kubectl"
)

// Link is a symlink shipped by kubernetes-unversioned.
type Link struct {
	Path   string // absolute path on the node
	Target string // relative to the directory of Path
}

// UnversionedLinks lists the links from the usual places into current/.
// They are relative so that they resolve the same in an image tree
// (rpm --root) as on the node.
func UnversionedLinks(unitDir string) []Link {
	stage := func(n int, rel string) string { return fmt.Sprintf("%s/stage%d/%s", CurrentDir, n, rel) }
	abs := []struct{ path, target string }{
		{"/usr/bin/kubeadm", stage(1, "usr/bin/kubeadm")},
		{"/usr/bin/kubelet", stage(2, "usr/bin/kubelet")},
		{"/usr/bin/kubelet-compat", stage(2, "usr/bin/kubelet-compat")},
		{"/usr/bin/kubectl", stage(2, "usr/bin/kubectl")},
		{"/usr/share/bash-completion/completions/kubectl", stage(2, CompletionRel)},
		{path.Join(unitDir, "kubelet.service.d/10-kubeadm.conf"), stage(2, DropInRel)},
	}
	links := make([]Link, 0, len(abs))
	for _, l := range abs {
		links = append(links, Link{Path: l.path, Target: relativeTo(path.Dir(l.path), l.target)})
	}
	return links
}

// relativeTo returns target relative to dir; both are absolute paths.
func relativeTo(dir, target string) string {
	rel, err := filepath.Rel(dir, target)
	if err != nil {
		// Unreachable for two absolute paths; a visible marker beats a panic.
		return "INVALID-" + target
	}
	return rel
}
