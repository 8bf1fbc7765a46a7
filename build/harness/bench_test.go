package harness

import (
	"fmt"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestParseSyncLoopBench(t *testing.T) {
	const run = `goos: linux
goarch: amd64
pkg: k8s.io/kubernetes/pkg/kubelet/kuberuntime
BenchmarkSyncPodCompat/compat=false-2         	   50000	     %d ns/op	    4000 B/op	      60 allocs/op
BenchmarkSyncPodCompat/compat=true-2          	   50000	     %d ns/op	    4200 B/op	      63 allocs/op
PASS
`
	for _, tc := range []struct {
		name    string
		out     string
		want    SyncLoopCost
		wantStr string
		wantErr string
	}{
		{
			// The load of a noisy machine moves both halves of a run: the
			// ratio is taken per run.
			name:    "three runs, off then on",
			out:     fmt.Sprintf(run, 20000, 20400) + fmt.Sprintf(run, 30000, 30300) + fmt.Sprintf(run, 19000, 19950),
			want:    SyncLoopCost{Off: 20 * time.Microsecond, On: 20400 * time.Nanosecond, OffAllocs: 60, OnAllocs: 63, Ratio: 1.02, Runs: 3},
			wantStr: "SyncPod of an unchanged pod: kubeletcompat on/off 1.020 (+2.0%), median of 3 runs side by side; off 20µs, on 20.4µs; 60 and 63 allocs",
		},
		{
			name: "the kubelet's klog lines between a run's name and its figures",
			out: "BenchmarkSyncPodCompat/compat=false-2         \tE1207 18:51:01.269554   19980 kuberuntime_manager.go:747] \"Missing actuated resource record\" pod=\"foo-ns/foo\"\n" +
				"E1207 18:51:01.269560   19980 kuberuntime_manager.go:747] \"Missing\"\n   29581\t     46000 ns/op\t    9564 B/op\t     259 allocs/op\n" +
				"BenchmarkSyncPodCompat/compat=true-2          \tE1207 18:51:02.269554   19980 kuberuntime_manager.go:747] \"Missing\"\n   29581\t     46920 ns/op\t    9600 B/op\t     262 allocs/op\n",
			want: SyncLoopCost{Off: 46 * time.Microsecond, On: 46920 * time.Nanosecond, OffAllocs: 259, OnAllocs: 262, Ratio: 1.02, Runs: 1},
		},
		{
			// go1.13 prints no -N suffix on one CPU, and no allocation
			// columns without -benchmem.
			name: "go1.13's lines",
			out:  "BenchmarkSyncPodCompat/compat=false \t 10 \t 1000 ns/op\nBenchmarkSyncPodCompat/compat=true \t 10 \t 1100 ns/op\n",
			want: SyncLoopCost{Off: 1000, On: 1100, Ratio: 1.1, Runs: 1},
		},
		{name: "no run", out: "PASS\n", wantErr: "0 runs off and 0 on in the output"},
		{name: "on without off", out: "BenchmarkSyncPodCompat/compat=true-2 \t 10 \t 1100 ns/op\nBenchmarkSyncPodCompat/compat=false-2 \t 10 \t 1000 ns/op\n",
			wantErr: "1 runs off and 1 on in the output, not each off then on"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseSyncLoopBench(tc.out)
			if tc.wantErr != "" {
				assert.Check(t, is.ErrorContains(err, tc.wantErr))
				return
			}
			assert.NilError(t, err)
			c.Ratio = float64(int(c.Ratio*1000+0.5)) / 1000
			assert.Check(t, is.DeepEqual(c, tc.want))
			if tc.wantStr != "" {
				assert.Check(t, is.Equal(c.String(), tc.wantStr))
			}
		})
	}
}
