// Package extension serves the in-place update hooks over the runtime SDK's
// HTTPS server: CanUpdateMachine and CanUpdateMachineSet (package inplace)
// and UpdateMachine (package update), under the names an ExtensionConfig
// registers (README.md).
package extension

import (
	"context"

	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimecatalog "sigs.k8s.io/cluster-api/exp/runtime/catalog"
	"sigs.k8s.io/cluster-api/exp/runtime/server"

	"github.com/kubelet-compat/kubelet-compat/deploy/cluster-api/inplace"
	"github.com/kubelet-compat/kubelet-compat/deploy/cluster-api/update"
)

// The handlers' names: CAPI calls them <name>.<ExtensionConfig's name>.
const (
	CanUpdateMachine    = "can-update-machine"
	CanUpdateMachineSet = "can-update-machineset"
	UpdateMachine       = "update-machine"
)

// updateTimeout is UpdateMachine's timeout, CAPI's longest: a call reads
// the management cluster and reads or writes the workload cluster's API.
const updateTimeout int32 = 30

// Catalog is the hooks' catalog (runtime.cluster.x-k8s.io/v1alpha1).
func Catalog() *runtimecatalog.Catalog {
	c := runtimecatalog.New()
	_ = runtimehooksv1.AddToCatalog(c)
	return c
}

// New is the runtime SDK's server with the three hooks (Discovery is the
// server's own).
func New(o server.Options, u *update.Updater) (*server.Server, error) {
	o.Catalog = Catalog()
	s, err := server.New(o)
	if err != nil {
		return nil, err
	}
	timeout := updateTimeout
	for _, h := range []server.ExtensionHandler{
		{Hook: runtimehooksv1.CanUpdateMachine, Name: CanUpdateMachine,
			HandlerFunc: func(_ context.Context, req *runtimehooksv1.CanUpdateMachineRequest, resp *runtimehooksv1.CanUpdateMachineResponse) {
				inplace.CanUpdateMachine(req, resp)
			}},
		{Hook: runtimehooksv1.CanUpdateMachineSet, Name: CanUpdateMachineSet,
			HandlerFunc: func(_ context.Context, req *runtimehooksv1.CanUpdateMachineSetRequest, resp *runtimehooksv1.CanUpdateMachineSetResponse) {
				inplace.CanUpdateMachineSet(req, resp)
			}},
		{Hook: runtimehooksv1.UpdateMachine, Name: UpdateMachine, HandlerFunc: u.UpdateMachine, TimeoutSeconds: &timeout},
	} {
		if err := s.AddExtensionHandler(h); err != nil {
			return nil, err
		}
	}
	return s, nil
}
