package update

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// Clusters are the clusters an UpdateMachine call reaches: the management
// cluster's Machine (CAPI's request leaves its status out: its node) and
// the Machine's workload cluster.
type Clusters interface {
	// Machine reads the Machine from the management cluster.
	Machine(ctx context.Context, machine types.NamespacedName) (*clusterv1.Machine, error)
	// Workload is a client of cluster (NAMESPACE/NAME of its Cluster).
	Workload(ctx context.Context, cluster types.NamespacedName) (kubernetes.Interface, error)
}

// machines is CAPI v1.13's Machine resource.
var machines = schema.GroupVersionResource{Group: clusterv1.GroupVersion.Group, Version: clusterv1.GroupVersion.Version, Resource: "machines"}

// Management reaches the workload clusters as CAPI does: with the
// kubeconfig CAPI keeps in the Secret <cluster>-kubeconfig (key value) of
// the Cluster's namespace in the management cluster.
type Management struct {
	Dynamic dynamic.Interface
	Core    kubernetes.Interface
}

func (m Management) Machine(ctx context.Context, machine types.NamespacedName) (*clusterv1.Machine, error) {
	u, err := m.Dynamic.Resource(machines).Namespace(machine.Namespace).Get(ctx, machine.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading Machine %s: %w", machine, err)
	}
	var out clusterv1.Machine
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &out); err != nil {
		return nil, fmt.Errorf("reading Machine %s: %w", machine, err)
	}
	return &out, nil
}

func (m Management) Workload(ctx context.Context, cluster types.NamespacedName) (kubernetes.Interface, error) {
	name := cluster.Name + "-kubeconfig"
	s, err := m.Core.CoreV1().Secrets(cluster.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig of cluster %s: %w", cluster, err)
	}
	kubeconfig, ok := s.Data["value"]
	if !ok {
		return nil, fmt.Errorf("Secret %s/%s has no key value (CAPI's kubeconfig)", cluster.Namespace, name)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("the kubeconfig of cluster %s (Secret %s/%s): %w", cluster, cluster.Namespace, name, err)
	}
	return kubernetes.NewForConfig(cfg)
}
