package nodeimage

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
)

// etcdBridgeVersion is the etcd a control plane runs before kubeadm moves
// it from 3.6 to 3.7. etcd 3.7 wants every member at 3.6.11 or later first
// (its upgrade guide), and it replays the WAL from the newest snapshot
// record, where it cannot parse entries written before 3.6. kubeadm 1.36
// pins 3.6.8, so a cluster born at 3.5 reaches kubeadm 1.37's 3.7.0 with
// neither: etcd 3.7.0 panics "unmarshal should never fail". The newest 3.6
// the module proxy serves.
const etcdBridgeVersion = "3.6.16"

// EtcdBridgeTag is the image tag of the bridge etcd, as kubeadm names its
// etcd images.
const EtcdBridgeTag = etcdBridgeVersion + "-0"

// EtcdNeedsBridge says whether kubeadm moving etcd from the running image
// tag to the one it wants crosses 3.6 -> 3.7, so the bridge etcd must run
// first.
func EtcdNeedsBridge(running, want string) (bool, error) {
	r, err := etcdMinor(running)
	if err != nil {
		return false, err
	}
	w, err := etcdMinor(want)
	if err != nil {
		return false, err
	}
	return r == 6 && w >= 7, nil
}

// bridgeFor says whether the images of a kubeadm that wants etcd tag want
// carry the bridge etcd: any running 3.6 may meet it.
func bridgeFor(want string) (bool, error) {
	w, err := etcdMinor(want)
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

// KubeadmEtcdTag is the etcd image tag kubeadm of version v (the patched
// build in outputDir) upgrades to.
func KubeadmEtcdTag(ctx context.Context, outputDir, v string) (string, error) {
	list, err := kubeadmImages(ctx, outputDir, v)
	if err != nil {
		return "", err
	}
	return list.tag(compEtcd), nil
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
	return repo + ":" + EtcdBridgeTag
}
