package main

import (
	"bytes"
	"context"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestRun(t *testing.T) {
	env := map[string]string{"SYSTEM_UPGRADE_NODE_NAME": "node-1", "SYSTEM_UPGRADE_PLAN_LATEST_VERSION": "v1.31.14", "KC_HOST": t.TempDir()}
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		code    int
		wantErr string
	}{
		{name: "an unknown mode", args: []string{"rollout"}, env: env, code: 2, wantErr: usage},
		{name: "wait-plan without its Plan", args: []string{"wait-plan"}, env: env, code: 2, wantErr: usage},
		{name: "no node", args: []string{"upgrade"}, env: map[string]string{"SYSTEM_UPGRADE_PLAN_LATEST_VERSION": "1.31.14"}, code: 1,
			wantErr: "kubelet-compat-upgrade: SYSTEM_UPGRADE_NODE_NAME is not set\n"},
		{name: "a bad role", env: map[string]string{"SYSTEM_UPGRADE_NODE_NAME": "n", "SYSTEM_UPGRADE_PLAN_LATEST_VERSION": "1.31.14", "KC_ROLE": "etcd"},
			code: 1, wantErr: "KC_ROLE must be control-plane or worker, not etcd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), tc.args, func(k string) string { return tc.env[k] }, &out, &errOut)
			assert.Check(t, is.Equal(code, tc.code))
			assert.Check(t, is.Contains(errOut.String(), tc.wantErr))
		})
	}
}
