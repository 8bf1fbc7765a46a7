// Package iptables saves the rules of iptables and ip6tables before the
// kubelet runs and undoes what the run added.
package iptables

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/build/exec"
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

// Plan returns the `-A` rules (without "-A ") and `-N` chains present in
// now but not in before, rules first in reverse order.
func Plan(before, now []string) (rules, chains []string) {
	had := map[string]bool{}
	for _, l := range before {
		had[l] = true
	}
	for i := len(now) - 1; i >= 0; i-- {
		l := now[i]
		if had[l] {
			continue
		}
		switch {
		case strings.HasPrefix(l, "-A "):
			rules = append(rules, strings.TrimPrefix(l, "-A "))
		case strings.HasPrefix(l, "-N "):
			chains = append(chains, strings.TrimPrefix(l, "-N "))
		}
	}
	sort.Strings(chains)
	return rules, chains
}

// Restore deletes what Plan finds in every table.
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
