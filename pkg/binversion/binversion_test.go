package binversion

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
)

func TestArgs(t *testing.T) {
	for _, tc := range []struct {
		binary string
		want   []string
	}{
		{"kubelet", []string{"--version"}},
		{"/opt/k8s/1.21.14/kube-apiserver", []string{"--version"}},
		{"kubeadm", []string{"version", "-o", "short"}},
		{"_output/v1.21.14/kubectl", []string{"version", "--client"}},
	} {
		assert.DeepEqual(t, Args(tc.binary), tc.want)
	}
}

func TestAsk(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, script string
		args         []string
		want         string
		wantErr      string
	}{
		{name: "answers", script: "#!/bin/sh\necho \"Kubernetes v1.21.14 ($*)\"\n", args: []string{"--version"}, want: "Kubernetes v1.21.14 (--version)"},
		{name: "fails", script: "#!/bin/sh\necho 'unknown flag' >&2\nexit 1\n", args: []string{"version"}, wantErr: "unknown flag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := filepath.Join(dir, tc.name)
			assert.NilError(t, os.WriteFile(bin, []byte(tc.script), 0o755))
			got, err := Ask(context.Background(), bin, tc.args...)
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			assert.NilError(t, err)
			assert.Equal(t, got, tc.want)
		})
	}
}
