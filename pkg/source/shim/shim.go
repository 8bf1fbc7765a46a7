// Package shim holds the shims of pkg/source: stub modules with content,
// standing in for modules the Go module proxy does not serve, and whether
// the binaries built with each are upstream's (NotUpstream, which
// cmd/build-packages asks before it packages a version). A package of its
// own, so that what reads the table runs none of pkg/source's programs.
package shim

import (
	"fmt"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/matrix"
)

// Files returns the files of the shim that stands in for module, or false
// when it has none (a stub: only a go.mod).
func Files(module string) (map[string][]byte, bool) {
	s, ok := shims[module]
	return s.files, ok
}

// shim is a stub with content: the files of the module that stands in
// for one the proxy does not serve.
type shim struct {
	files map[string][]byte
	// forwardsTo is the module the shim forwards to, where upstream's
	// code moved: the binaries are upstream's.
	forwardsTo string
	// changes is what the binaries built with the shim do otherwise than
	// upstream's.
	changes string
}

// shims are stubs with content: modules the proxy does not serve whose code
// moved to a module it does serve (forwardsTo: kubectl 1.16-1.19 imports
// vbom.ml/util/sortorder, published today as github.com/fvbommel/sortorder),
// or that kubelet-compat stands in for (changes: the binaries differ from
// upstream's, so NotUpstream keeps them out of packages). Each says which.
var shims = map[string]shim{
	"vbom.ml/util": {files: map[string][]byte{
		"go.mod": []byte("// Shim written by kubelet-compat build/source: the module proxy does not\n" +
			"// serve vbom.ml/util; its sortorder package lives on as github.com/fvbommel/sortorder.\n" +
			"module vbom.ml/util\n\nrequire github.com/fvbommel/sortorder v1.0.1\n"),
		"sortorder/sortorder.go": []byte(`// Package sortorder forwards to github.com/fvbommel/sortorder, where
// vbom.ml/util/sortorder moved.
package sortorder

import upstream "github.com/fvbommel/sortorder"

// Natural sorts strings in natural order.
type Natural = upstream.Natural

// NaturalLess compares two strings in natural order.
func NaturalLess(str1, str2 string) bool { return upstream.NaturalLess(str1, str2) }
`),
	},
		// v1.0.1's natsort.go is vbom.ml/util's at db5cfe13f5cc, which
		// Kubernetes 1.16-1.19 require, but for one comment.
		forwardsTo: "github.com/fvbommel/sortorder"},
	"sigs.k8s.io/iptables-wrappers": {files: map[string][]byte{
		"go.mod": []byte("// Shim written by kubelet-compat build/source: the module proxy serves the\n" +
			"// .info and .mod of sigs.k8s.io/iptables-wrappers v1.0.0 but not its .zip\n" +
			"// (403). Kubelet 1.38 imports its pkg/iptables only to create the\n" +
			"// KUBE-IPTABLES-HINT and KUBE-FIREWALL chains; this shim finds no iptables,\n" +
			"// so the kubelet skips them as upstream's does on a host without iptables.\n" +
			"module sigs.k8s.io/iptables-wrappers\n"),
		"pkg/iptables/iptables.go": []byte(iptablesShim),
	},
		changes: "which finds no iptables (the proxy serves no .zip of v1.0.0), so the kubelet creates no KUBE-IPTABLES-HINT or KUBE-FIREWALL chain, even where iptables is installed"},
}

// iptablesShim is the API of sigs.k8s.io/iptables-wrappers/pkg/iptables
// that kubelet 1.38's kubelet_network_linux.go uses, with no iptables
// behind it: NewBestEffort finds none, the kubelet logs "No iptables support
// on this system" and goes on (its own path on nftables-only hosts).
const iptablesShim = `// Package iptables is kubelet-compat's shim of
// sigs.k8s.io/iptables-wrappers/pkg/iptables: no iptables is found.
package iptables

import (
	"context"
	"errors"
	"time"
)

type (
	// Chain is an iptables chain.
	Chain string
	// Table is an iptables table.
	Table string
	// Protocol is IPv4 or IPv6.
	Protocol string
	// RulePosition is where a rule is added.
	RulePosition string
	// Mode is how the iptables binary is chosen.
	Mode string
)

const (
	TableFilter      Table        = "filter"
	TableMangle      Table        = "mangle"
	TableNAT         Table        = "nat"
	ChainInput       Chain        = "INPUT"
	ChainOutput      Chain        = "OUTPUT"
	Prepend          RulePosition = "-I"
	Append           RulePosition = "-A"
	ProtocolIPv4     Protocol     = "IPv4"
	ProtocolIPv6     Protocol     = "IPv6"
	UseInstalledMode Mode         = "installed"
)

// Interface is the part of the iptables client the kubelet calls.
type Interface interface {
	EnsureChain(ctx context.Context, table Table, chain Chain) (bool, error)
	EnsureRule(ctx context.Context, position RulePosition, table Table, chain Chain, args ...string) (bool, error)
	IsIPv6() bool
	Protocol() Protocol
	Monitor(ctx context.Context, canary Chain, tables []Table, reloadFunc func(), interval time.Duration)
}

// ErrNoIPTables is what a client would answer; none is ever returned.
var ErrNoIPTables = errors.New("kubelet-compat shim: no iptables")

// NewBestEffort returns the iptables clients that work on this host: none.
func NewBestEffort(ctx context.Context, mode Mode) map[Protocol]Interface {
	return map[Protocol]Interface{}
}
`

// NotUpstream fails, in one line naming the module and why, when row's
// tree holds a shim that makes its binaries do otherwise than upstream's:
// they are for the e2e and verify-trees, not for packages. Stubs (nothing
// built imports them) and shims that forward to where upstream's code
// moved leave the binaries upstream's.
func NotUpstream(row matrix.Row) error {
	var why []string
	for _, m := range row.Stubs {
		if s, ok := shims[m]; ok && s.changes != "" {
			why = append(why, m+" is kubelet-compat's shim, "+s.changes)
		}
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("kubernetes %s: not packaged: %s; its binaries are for the e2e and verify-trees, not for packages (package the release whose row needs no such shim)",
		row.Kubernetes, strings.Join(why, "; "))
}
