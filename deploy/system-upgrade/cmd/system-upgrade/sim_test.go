package main

import (
	"bytes"
	"context"
	"testing"

	"gotest.tools/v3/assert"
)

// Bad input ends before anything is built or started, in one line.
func TestSimBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{args: []string{"-nodes", "1"}, err: "nodes 1: want at least 2 (one control plane, one worker)"},
		{args: []string{"-concurrency", "0%"}, err: `concurrency "0%": want a percentage in (0, 100]`},
		{args: []string{"-concurrency", "5000"}, err: "concurrency 5000 (5000 nodes): more than the 999 workers"},
		{args: []string{"-scale", "0"}, err: "scale 0: want at least 1 (durations are divided by it)"},
		{args: []string{"-fail", "1000"}, err: "fail 1000: want 0 to 999 (the workers)"},
		{args: []string{"extra"}, err: `sim: unexpected arguments ["extra"]`},
		{args: []string{"-nodes", "x"}, err: `invalid value "x" for flag -nodes: parse error`},
		{args: []string{"-k8s-bin", "/nonexistent"}, err: "no kube-apiserver in /nonexistent: run make build VERSIONS=1.31.14 PATCHED=false " +
			"BINARIES=kube-apiserver,kube-controller-manager,kube-scheduler"},
	} {
		t.Run(tc.err, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(context.Background(), append([]string{"sim"}, tc.args...), &out, &errOut)
			assert.Error(t, err, tc.err)
			assert.Equal(t, out.String(), "")
		})
	}
}
