package nodeimage

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/kubelet-compat/kubelet-compat/pkg/etcdbridge"
	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
)

// EtcdBridgeVersion is the etcd a control plane runs before kubeadm moves
// it from 3.6 to 3.7: the product's (pkg/etcdbridge.Version, which says
// why). The node images carry it next to kubeadm's etcd 3.7.
const EtcdBridgeVersion = etcdbridge.Version

// bridgeFor says whether the images of a kubeadm that wants the etcd image
// want carry the bridge etcd: any running 3.6 may meet it.
func bridgeFor(want string) (bool, error) { return etcdbridge.Carries(want) }

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
func etcdBridgeRef(kubeadmRef string) string { return etcdbridge.Ref(kubeadmRef) }
