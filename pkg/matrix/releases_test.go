package matrix_test

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubelet-compat/kubelet-compat/pkg/matrix"
)

func TestReleases(t *testing.T) {
	for _, tc := range []struct {
		names   []string
		want    []string
		wantErr string
	}{
		{names: nil, want: nil},
		{names: []string{"1.21.14"}, want: []string{"1.21.14"}},
		{names: []string{"1.21", "v1.37"}, want: []string{"1.21.14", "1.37.2"}},
		{names: []string{"default"}, want: []string{"1.18.19", "1.19.16", "1.20.15", "1.21.14"}},
		// A release outside the matrix is packaged as it is.
		{names: []string{"1.21.99"}, want: []string{"1.21.99"}},
		{names: []string{"1.99"}, wantErr: `kubernetes "1.99" is not in pkg/matrix/matrix.json`},
	} {
		got, err := matrix.Releases(tc.names)
		if tc.wantErr != "" {
			assert.Error(t, err, tc.wantErr)
			continue
		}
		assert.NilError(t, err)
		assert.Check(t, is.DeepEqual(got, tc.want), "names %q", tc.names)
	}
	rows, err := matrix.Load()
	assert.NilError(t, err)
	var buildRows []string
	for _, r := range rows {
		if r.Build {
			buildRows = append(buildRows, r.Kubernetes)
		}
	}
	all, err := matrix.Releases([]string{"all"})
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(all, buildRows))
}
