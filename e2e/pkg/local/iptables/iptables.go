// Package iptables saves the rules of iptables and ip6tables before the
// kubelet runs and undoes what the run added.
package iptables

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
)

// Runner runs an iptables binary and returns its standard output.
type Runner func(ctx context.Context, bin string, args ...string) ([]byte, error)

// Exec runs the real binary.
func Exec(ctx context.Context, bin string, args ...string) ([]byte, error) {
	return exec.Command(bin, args...).Output(ctx)
}

// Tables are the tables the kubelet adds chains to.
var Tables = []string{"filter", "nat", "mangle"}

// Rules are `-S` lines by table.
type Rules map[string][]string

// Save reads every table's rules.
func Save(ctx context.Context, run Runner, bin string) (Rules, error) {
	rs := Rules{}
	for _, t := range Tables {
		out, err := run(ctx, bin, "-w", "5", "-t", t, "-S")
		if err != nil {
			return nil, fmt.Errorf("%s -t %s -S: %w", bin, t, err)
		}
		rs[t] = strings.Split(strings.TrimSpace(string(out)), "\n")
	}
	return rs, nil
}

// Prefixes name the chains the kubelet (KUBE-) and the CNI plugins (CNI-)
// create: the only chains a run may remove.
var Prefixes = []string{"KUBE-", "CNI-"}

// Plan returns what undoes the run in one table, from its `-S` lines
// before the run and now: the rules to delete (without "-A ", last listed
// first) and the chains to delete (sorted).
//
// A chain is the run's when it exists now, did not before and is named
// KUBE-* or CNI-*. A rule is the run's when it was not there before and it
// is in such a chain or jumps (-j, -g) to one. Everything else stays:
// chains and rules others added meanwhile, KUBE-* chains that existed
// before and the rules added to them. Nothing is ever flushed.
func Plan(before, now []string) (rules, chains []string) {
	had := map[string]int{}
	existed := map[string]bool{}
	for _, l := range before {
		had[l]++
		if name, ok := chainOf(l); ok {
			existed[name] = true
		}
	}
	ours := map[string]bool{}
	for _, l := range now {
		if name, ok := chainOf(l); ok && !existed[name] && hasPrefix(name) {
			ours[name] = true
			chains = append(chains, name)
		}
	}
	var added []string
	for _, l := range now {
		if had[l] > 0 {
			had[l]--
			continue
		}
		if !strings.HasPrefix(l, "-A ") {
			continue
		}
		r := strings.TrimPrefix(l, "-A ")
		args := SplitRule(r)
		if len(args) > 0 && (ours[args[0]] || ours[target(args)]) {
			added = append(added, r)
		}
	}
	for i := len(added) - 1; i >= 0; i-- {
		rules = append(rules, added[i])
	}
	sort.Strings(chains)
	return rules, chains
}

// chainOf returns the chain a `-N` (user chain) or `-P` (built-in chain)
// line declares.
func chainOf(line string) (string, bool) {
	f := strings.Fields(line)
	if len(f) >= 2 && (f[0] == "-N" || f[0] == "-P") {
		return f[1], true
	}
	return "", false
}

// target is the chain a rule jumps or goes to ("" when none).
func target(args []string) string {
	for i := 1; i+1 < len(args); i++ {
		switch args[i] {
		case "-j", "--jump", "-g", "--goto":
			return args[i+1]
		}
	}
	return ""
}

func hasPrefix(chain string) bool {
	for _, p := range Prefixes {
		if strings.HasPrefix(chain, p) {
			return true
		}
	}
	return false
}

// Restore deletes what Plan finds in every table: the run's rules one by
// one, then its (then empty) chains.
func Restore(ctx context.Context, run Runner, bin string, before Rules) error {
	now, err := Save(ctx, run, bin)
	if err != nil {
		return err
	}
	var errs []string
	for _, t := range Tables {
		rules, chains := Plan(before[t], now[t])
		for _, r := range rules {
			args := append([]string{"-w", "5", "-t", t, "-D"}, SplitRule(r)...)
			if _, err := run(ctx, bin, args...); err != nil {
				errs = append(errs, err.Error())
			}
		}
		for _, c := range chains {
			if _, err := run(ctx, bin, "-w", "5", "-t", t, "-X", c); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("restoring %s: %s", bin, strings.Join(errs, "; "))
	}
	return nil
}

// SplitRule splits an `iptables -S` rule into arguments, honouring the
// double quotes iptables puts around comments.
func SplitRule(r string) []string {
	var out []string
	var cur strings.Builder
	inQuote, has := false, false
	for _, ch := range r {
		switch {
		case ch == '"':
			inQuote, has = !inQuote, true
		case ch == ' ' && !inQuote:
			if has {
				out = append(out, cur.String())
				cur.Reset()
				has = false
			}
		default:
			cur.WriteRune(ch)
			has = true
		}
	}
	if has {
		out = append(out, cur.String())
	}
	return out
}
