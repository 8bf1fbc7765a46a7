package nodeimage

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
)

// EtcdBridgeVersion is the etcd a control plane runs before kubeadm moves
// it from 3.6 to 3.7. etcd 3.7 wants every member at 3.6.11 or later first
// (its upgrade guide), and it replays the WAL from the newest snapshot
// record, where it cannot parse entries written before 3.6. kubeadm 1.36
// pins 3.6.8, so a cluster born at 3.5 reaches kubeadm 1.37's 3.7.0 with
// neither: etcd 3.7.0 panics "unmarshal should never fail". The newest 3.6
// the module proxy serves.
const EtcdBridgeVersion = "3.6.16"

// etcdBridgeTag is the bridge's image tag, as kubeadm names its etcd
// images.
const etcdBridgeTag = EtcdBridgeVersion + "-0"

// EtcdBridge returns the bridge etcd's image when kubeadm moving etcd from
// the running image to the one it wants crosses 3.6 -> 3.7 (the bridge
// must run first), next to kubeadm's (registry.k8s.io/etcd:3.6.16-0).
func EtcdBridge(running, want string) (bridge string, need bool, err error) {
	_, runningTag, _ := splitRef(running)
	r, err := etcdMinor(runningTag)
	if err != nil {
		return "", false, err
	}
	need, err = bridgeFor(want)
	if err != nil || r != 6 || !need {
		return "", false, err
	}
	return etcdBridgeRef(want), true, nil
}

// bridgeFor says whether the images of a kubeadm that wants the etcd image
// want carry the bridge etcd: any running 3.6 may meet it.
func bridgeFor(want string) (bool, error) {
	_, tag, _ := splitRef(want)
	w, err := etcdMinor(tag)
	return w >= 7, err
}

// etcdMinor is the minor release of a 3.x etcd image tag (3.6.8-0 is 6).
func etcdMinor(tag string) (int, error) {
	v, err := etcdModuleVersion(tag)
	if err != nil {
		return 0, err
	}
	minor, _, _ := strings.Cut(strings.TrimPrefix(v, "v3."), ".")
	return strconv.Atoi(minor)
}

// KubeadmEtcdImage is the etcd image kubeadm of version v (the patched
// build in outputDir) upgrades to.
func KubeadmEtcdImage(ctx context.Context, outputDir, v string) (string, error) {
	list, err := kubeadmImages(ctx, outputDir, v)
	if err != nil {
		return "", err
	}
	return list[compEtcd], nil
}

// kubeadmImages is `kubeadm config images list` of version v.
func kubeadmImages(ctx context.Context, outputDir, v string) (imageList, error) {
	kubeadm := filepath.Join(outputDir, v, "kubeadm")
	out, err := exec.Command(kubeadm, "config", "images", "list", "--kubernetes-version", "v"+v).Output(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing kubeadm's images: %w", err)
	}
	return parseImageList(string(out))
}

// etcdBridgeRef is the bridge etcd's reference next to kubeadm's etcd
// (registry.k8s.io/etcd:3.7.0-0 -> registry.k8s.io/etcd:3.6.16-0).
func etcdBridgeRef(kubeadmRef string) string {
	repo, _, _ := splitRef(kubeadmRef)
	return repo + ":" + etcdBridgeTag
}
