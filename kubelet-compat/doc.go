// Package kubeletcompat lets a kubelet keep the containers that its
// predecessor created when the kubelet binary is upgraded in place.
//
// Upstream kubelets restart a container whenever the hash stored on it
// (CRI annotation io.kubernetes.container.hash) differs from the hash they
// compute from the current spec, and recreate a static pod whenever the UID
// they derive from its manifest changes. Both change across minor versions,
// so an in-place upgrade restarts workloads that did not change at all.
//
// A local compat file, written before the binary is swapped, records the
// previous kubelet version and the UIDs the static pods run under. While it
// is active, a container created before this kubelet process started is kept
// when its stored hash equals the hash the previous version computes for the
// current spec; every genuine change still restarts it. A pod the file shows
// was started before this kubelet is admitted despite a node affinity,
// taint, resource fit or eviction rejection (AdmitDespite), as upstream's
// later NotEvictPodOnKubeletRestart does for affinity and taints. A missing
// or bad file makes the kubelet behave exactly like upstream.
//
// This package is compiled into kubelet trees from 1.18 on: it may import only
// the standard library, k8s.io/api, k8s.io/apimachinery and go-spew, must
// build with go1.13, and logs only through the function it is given.
package kubeletcompat
