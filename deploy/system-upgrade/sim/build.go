package sim

import (
	"fmt"
	"strings"

	systemupgrade "github.com/kubelet-compat/kubelet-compat/deploy/system-upgrade"
)

// The programs built from the Go module proxy, each as a dependency of a
// scratch main module (the way suc.go builds SUC and e2e/pkg/kind/nodeimage
// builds etcd), cached in <cache>/system-upgrade/<name>-<version>/<name>.
const (
	KwokModule  = "sigs.k8s.io/kwok"
	KwokVersion = "v0.8.0"
	EtcdModule  = "go.etcd.io/etcd/server/v3"
	// EtcdVersion is the etcd kubeadm 1.31 runs (registry.k8s.io/etcd:3.5.15-0).
	EtcdVersion = "v3.5.15"
)

// Kwok is kwok's cmd/kwok.
var Kwok = scratch("kwok", KwokModule, KwokVersion, KwokModule+"/cmd/kwok", "1.26.0", KwokVersion)

// Etcd is etcd's server.
var Etcd = scratch("etcd", EtcdModule, EtcdVersion, EtcdModule, "1.22", "etcd Version: "+strings.TrimPrefix(EtcdVersion, "v"))

// scratch is a program whose scratch main module only requires it.
func scratch(name, module, version, pkg, goVersion, says string) systemupgrade.GoProgram {
	return systemupgrade.GoProgram{Name: name, Module: module, Version: version, Package: pkg, Says: says, Download: true,
		GoMod: fmt.Sprintf("module kubelet-compat.local/%s\n\ngo %s\n\nrequire %s %s\n", name, goVersion, module, version)}
}
