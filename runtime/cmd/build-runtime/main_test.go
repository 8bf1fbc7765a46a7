package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// Bad input is one clear error before anything is installed or built.
func TestRunBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "usage: build-runtime build|verify|list"},
		{[]string{"frob"}, `unknown command "frob"`},
		{[]string{"build"}, "no components given"},
		{[]string{"build", "-components", "containerd@1.7"}, `version "1.7": want MAJOR.MINOR.PATCH`},
		{[]string{"verify", "-components", "docker@1.0.0"}, `component "docker@1.0.0" is not known`},
		{[]string{"build", "-components", "containerd@1.7.36"}, `component "containerd@1.7.36" is not known (known: `},
		{[]string{"build", "-components", "runc@1.5.3", "extra"}, `unexpected argument "extra"`},
		{[]string{"build", "-nope"}, "flag provided but not defined: -nope; usage: build-runtime"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(context.Background(), tc.args, &out, &errOut)
			assert.ErrorContains(t, err, tc.want)
			assert.Check(t, !strings.Contains(err.Error(), "\n"))
			assert.Check(t, is.Equal(out.String(), ""))
		})
	}
}

func TestList(t *testing.T) {
	var out bytes.Buffer
	assert.NilError(t, run(context.Background(), []string{"list"}, &out, &out))
	for _, want := range []string{
		"containerd@1.7.35\tgithub.com/containerd/containerd@v1.7.35\tgo1.25.0\tcontainerd containerd-shim-runc-v2 ctr\n",
		"containerd@1.7.36+compat.1\tgithub.com/containerd/containerd@v1.7.36\tgo1.25.0\tcontainerd containerd-shim-runc-v2 ctr\tpatched: runtime/patches/containerd/v1.7\n",
		"containerd@2.0.14+compat.1\tgithub.com/containerd/containerd/v2@v2.0.14\tgo1.23.0\tcontainerd containerd-shim-runc-v2 ctr\tpatched: runtime/patches/containerd/v2.0\n",
		"containerd@2.4.2+compat.1\tgithub.com/containerd/containerd/v2@v2.4.2\tgo1.26.6\tcontainerd containerd-shim-runc-v2 ctr\tpatched: runtime/patches/containerd/v2.4\n",
		"containerd@2.4.2\tgithub.com/containerd/containerd/v2@v2.4.2\tgo1.26.6\tcontainerd containerd-shim-runc-v2 ctr\n",
		"runc@1.5.3\tgithub.com/opencontainers/runc@v1.5.3\tgo1.25.0\trunc\n",
		"kubernetes 1.26\tcrictl v1.34.0\n",
		"kubernetes 1.35\tcrictl v1.37.0\n",
		"kubernetes 1.38\tcrictl v1.37.0\tcri-tools v1.38 is not served yet: crictl v1.37.0 stands in",
	} {
		assert.Check(t, is.Contains(out.String(), want))
	}
}
