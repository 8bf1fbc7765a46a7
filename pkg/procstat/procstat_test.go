package procstat

import (
	"testing"

	"gotest.tools/v3/assert"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Stat
		err  string
	}{
		{in: "42 (kubelet) S 1 42 42 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 12345 1 1\n", want: Stat{PID: 42, Comm: "kubelet", State: 'S', PPID: 1, StartTicks: 12345}},
		{in: "8 (a b) (c) R 7 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99 1 1", want: Stat{PID: 8, Comm: "a b) (c", State: 'R', PPID: 7, StartTicks: 99}},
		{in: "9 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 -1 1 1", err: "bad starttime"},
		{in: "9 (x) S 1 1", err: "fields after comm"},
		{in: "nothing", err: "no (comm)"},
	} {
		got, err := Parse([]byte(tc.in))
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.in)
			continue
		}
		assert.NilError(t, err, tc.in)
		assert.Equal(t, got, tc.want)
	}
}
