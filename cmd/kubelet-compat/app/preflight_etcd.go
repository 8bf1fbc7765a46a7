package app

import (
	"fmt"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/internal/preflight"
	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/etcdbridge"
)

// kubeadm137Etcd is the etcd kubeadm 1.37 moves to: the first 3.7.
const kubeadm137Etcd = "3.7.0-0"

// etcdBridgeNotes names the etcd bridge when the step's kubeadm takes the
// node's etcd (a static pod's container named etcd, of an image named etcd)
// from 3.6 to 3.7 (kubeadm 1.37, etcd 3.7.0): etcd-bridge must run first on
// each control-plane node. One note per etcd pod, each one line.
func etcdBridgeNotes(from, to kubeletcompat.Version, pods []preflight.Pod) []string {
	if from.Minor >= etcdbridge.FirstKubeadmMinor37 || to.Minor < etcdbridge.FirstKubeadmMinor37 {
		return nil
	}
	var notes []string
	for _, p := range pods {
		image := etcdImage(p)
		if image == "" {
			continue
		}
		repo, _, _ := etcdbridge.SplitRef(image)
		if need, err := etcdbridge.Needed(image, repo+":"+kubeadm137Etcd); err != nil || !need {
			continue
		}
		why := "its WAL may still hold entries of the 3.5 era"
		if rel, err := etcdbridge.ImageRelease(image); err == nil && rel.Below(etcdbridge.MinRelease) {
			why = fmt.Sprintf("%s is below %s, which etcd 3.7 requires before it, and its WAL may still hold entries of the 3.5 era", rel, etcdbridge.MinRelease)
		}
		notes = append(notes, fmt.Sprintf("etcd: kubeadm v1.%d moves etcd %s (%s/%s) to 3.7, which needs the bridge etcd first "+
			"(%s; without it etcd 3.7.0 panics on a cluster born at 1.33 or earlier and kubeadm rolls back): "+
			"run kubelet-compat etcd-bridge --target-etcd-image <kubeadm's etcd> --bridge-image %s on each control-plane node before its kubeadm upgrade; "+
			"deploy/system-upgrade's roll runs it when the Plan sets KC_ETCD_BRIDGE_IMAGE, and refuses the step without it",
			to.Minor, image, p.Namespace, p.Name, why, etcdbridge.Ref(image)))
	}
	return notes
}

// etcdImage is the image of a pod's etcd container: its spec's, else the
// one the runtime runs.
func etcdImage(p preflight.Pod) string {
	if p.Object != nil {
		for _, c := range p.Object.Spec.Containers {
			if c.Name == "etcd" && isEtcdImage(c.Image) {
				return c.Image
			}
		}
		return ""
	}
	if r, ok := p.Running["etcd"]; ok && isEtcdImage(r.Image) {
		return r.Image
	}
	return ""
}

func isEtcdImage(ref string) bool {
	repo, _, ok := etcdbridge.SplitRef(ref)
	return ok && repo[strings.LastIndex(repo, "/")+1:] == "etcd"
}
