package source

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/matrix"
)

// StubsDir holds the stub modules inside an assembled tree. The leading
// underscore keeps it out of ./... patterns.
const StubsDir = "_kc_stubs"

// StubPath is the tree-relative directory of the stub for module path.
func StubPath(path string) string { return "./" + StubsDir + "/" + path }

// RewriteGoMod points a Kubernetes go.mod at what the module proxy serves:
//   - replaces of staging modules (=> ./staging/src/k8s.io/X) become the
//     published module k8s.io/X at the row's staging version or override,
//   - modules in row.Stubs are replaced by their local stub directory,
//   - other overrides in the row replace their module's version,
//
// adding replace lines for stubs and overrides that had none. The rewrite is
// line based on purpose: Kubernetes go.mod files use one replace per line and
// the repository carries no third-party dependency for this.
func RewriteGoMod(gomod []byte, row matrix.Row) ([]byte, error) {
	stubs := map[string]bool{}
	for _, s := range row.Stubs {
		stubs[s] = true
	}
	done := map[string]bool{}
	lines := strings.Split(string(gomod), "\n")
	inBlock := false
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		var spec, prefix string
		switch {
		case inBlock && trimmed == ")":
			inBlock = false
			continue
		case inBlock:
			spec, prefix = trimmed, "\t"
		case strings.HasPrefix(trimmed, "replace") && strings.TrimSpace(strings.TrimPrefix(trimmed, "replace")) == "(":
			inBlock = true
			continue
		case strings.HasPrefix(trimmed, "replace "):
			spec, prefix = strings.TrimSpace(strings.TrimPrefix(trimmed, "replace ")), "replace "
		default:
			continue
		}
		if c := strings.Index(spec, "//"); c >= 0 {
			spec = strings.TrimSpace(spec[:c])
		}
		if spec == "" {
			continue
		}
		left, right, ok := strings.Cut(spec, "=>")
		if !ok {
			return nil, fmt.Errorf("go.mod line %d: replace without =>: %q", i+1, line)
		}
		lf, rf := strings.Fields(left), strings.Fields(right)
		if len(lf) < 1 || len(lf) > 2 || len(rf) < 1 || len(rf) > 2 {
			return nil, fmt.Errorf("go.mod line %d: malformed replace: %q", i+1, line)
		}
		path := lf[0]
		var target string
		switch {
		case stubs[path]:
			target = StubPath(path)
		case strings.HasPrefix(rf[0], "./staging/"):
			target = path + " " + row.ModuleVersion(path)
		case row.Overrides[path] != "":
			target = path + " " + row.Overrides[path]
		default:
			continue
		}
		done[path] = true
		// Drop a version on the left: the stub or pin must win for any version.
		lines[i] = prefix + path + " => " + target
	}
	if inBlock {
		return nil, fmt.Errorf("go.mod: unterminated replace block")
	}

	var extra []string
	for path := range stubs {
		if !done[path] {
			extra = append(extra, "replace "+path+" => "+StubPath(path))
		}
	}
	for path, v := range row.Overrides {
		if !done[path] {
			extra = append(extra, "replace "+path+" => "+path+" "+v)
		}
	}
	sort.Strings(extra)
	out := strings.TrimRight(strings.Join(lines, "\n"), "\n") + "\n"
	if len(extra) > 0 {
		out += "\n// Added by kubelet-compat build/source: modules the proxy does not serve.\n" + strings.Join(extra, "\n") + "\n"
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "=> ./staging/") {
			return nil, fmt.Errorf("go.mod still replaces with a staging directory: %q", strings.TrimSpace(line))
		}
	}
	return []byte(out), nil
}

// StubGoMod is the whole content of a stub module.
func StubGoMod(path string) []byte {
	return []byte("// Stub written by kubelet-compat build/source: the module proxy does not\n// serve " + path + " and nothing built from this tree imports it.\nmodule " + path + "\n")
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
// moved to a module it does serve. kubectl 1.16-1.19 imports
// vbom.ml/util/sortorder, published today as github.com/fvbommel/sortorder.
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
	}},
	"sigs.k8s.io/iptables-wrappers": {files: map[string][]byte{
		"go.mod": []byte("// Shim written by kubelet-compat build/source: the module proxy serves the\n" +
			"// .info and .mod of sigs.k8s.io/iptables-wrappers v1.0.0 but not its .zip\n" +
			"// (403). Kubelet 1.38 imports its pkg/iptables only to create the\n" +
			"// KUBE-IPTABLES-HINT and KUBE-FIREWALL chains; this shim finds no iptables,\n" +
			"// so the kubelet skips them as upstream's does on a host without iptables.\n" +
			"module sigs.k8s.io/iptables-wrappers\n"),
		"pkg/iptables/iptables.go": []byte(iptablesShim),
	}},
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

// NotUpstream is not written yet.
func NotUpstream(row matrix.Row) error { return nil }
