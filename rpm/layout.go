// Package rpm builds the side-by-side Kubernetes RPMs in the StarlingX
// layout: per version kubernetes-<ver>-node, -kubeadm and -client (and
// -master where the harness output has the control-plane binaries), all
// under /usr/local/kubernetes/<ver>/stage1|stage2, plus one noarch
// kubernetes-unversioned that owns /usr/local/kubernetes/current/stage1|stage2,
// the /usr/bin links into them, the systemd units and kubernetes-select.
// What the packages contain is described once, in pkg/layout; this package
// writes it as RPM specs.
package rpm

import "github.com/kubelet-compat/kubelet-compat/pkg/layout"

// Paths on the node (pkg/layout's), for the tests and other packages.
const (
	KubeRoot        = layout.KubeRoot
	CurrentDir      = layout.CurrentDir
	DefaultUnitDir  = layout.DefaultUnitDir
	PresetDir       = layout.PresetDir
	UnversionedName = layout.UnversionedName
	DropInRel       = layout.DropInRel
	CompletionRel   = layout.CompletionRel
)

// Link is a symlink shipped by kubernetes-unversioned.
type Link = layout.Link

// UnversionedLinks lists the links from the usual places into current/.
func UnversionedLinks(unitDir string) []Link { return layout.UnversionedLinks(unitDir) }
