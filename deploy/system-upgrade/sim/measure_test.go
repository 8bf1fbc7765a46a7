package sim

import (
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

const metrics = `# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="status",verb="PATCH",version="v1"} 120
apiserver_request_total{code="201",component="apiserver",dry_run="",group="batch",resource="jobs",scope="namespace",subresource="",verb="POST",version="v1"} 10
apiserver_request_total{code="409",component="apiserver",dry_run="",group="batch",resource="jobs",scope="namespace",subresource="",verb="POST",version="v1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="nodes",scope="cluster",subresource="",verb="LIST",version="v1"} 3.5e+01
apiserver_request_duration_seconds_bucket{verb="GET",le="0.005"} 7
`

func TestParseRequests(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Requests
		err      string
	}{
		{name: "metrics", in: metrics, want: Requests{"PATCH pods/status": 120, "POST jobs": 12, "LIST nodes": 35}},
		{name: "none", in: "# nothing\nfoo 1\n", err: "no apiserver_request_total in the metrics"},
		{name: "no value", in: `apiserver_request_total{verb="GET"}` + "\n", err: `apiserver_request_total line "apiserver_request_total{verb=\"GET\"}": no value`},
		{name: "bad value", in: `apiserver_request_total{verb="GET"} x` + "\n", err: `apiserver_request_total line "apiserver_request_total{verb=\"GET\"} x": strconv.ParseFloat: parsing "x": invalid syntax`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRequests([]byte(tc.in))
			if tc.err != "" {
				assert.Error(t, err, tc.err)
				return
			}
			assert.NilError(t, err)
			assert.DeepEqual(t, got, tc.want)
		})
	}
}

func TestRequestsArithmetic(t *testing.T) {
	before := Requests{"PATCH pods/status": 100, "POST jobs": 2, "GET leases": 5}
	after := Requests{"PATCH pods/status": 400, "POST jobs": 102, "GET leases": 5, "PUT nodes": 50}
	d := after.Sub(before)
	assert.DeepEqual(t, d, Requests{"PATCH pods/status": 300, "POST jobs": 100, "PUT nodes": 50})
	assert.Equal(t, d.Total(), 450.0)
	assert.DeepEqual(t, d.Top(2), []string{"PATCH pods/status 300", "POST jobs 100"})
	assert.DeepEqual(t, Requests{"b": 1, "a": 1}.Top(5), []string{"a 1", "b 1"})
}

func TestCPUTicks(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		want       uint64
		err        string
	}{
		{name: "plain", stat: "4242 (system-upgrad) S 1 4242 4242 0 -1 4194560 5000 0 0 0 731 129 0 0 20 0 12 0 2210 800000000 9000 18446744073709551615",
			want: 860},
		{name: "comm with spaces and parens", stat: "7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 5 0 0", want: 7},
		{name: "short", stat: "7 (x) R 1 2", err: "stat: 3 fields after comm, want at least 13"},
		{name: "no comm", stat: "7 x R", err: "stat: no (comm)"},
		{name: "bad utime", stat: "7 (x) R 1 7 7 0 -1 0 0 0 0 0 u 4 0", err: `stat utime: strconv.ParseUint: parsing "u": invalid syntax`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CPUTicks([]byte(tc.stat))
			if tc.err != "" {
				assert.Error(t, err, tc.err)
				return
			}
			assert.NilError(t, err)
			assert.Equal(t, got, tc.want)
		})
	}
}

func TestStatusKB(t *testing.T) {
	status := "Name:\tsystem-upgrade\nVmPeak:\t 1300000 kB\nVmHWM:\t   61234 kB\nVmRSS:\t   58000 kB\nThreads:\t12\n"
	for _, tc := range []struct {
		name, field string
		want        uint64
		err         string
	}{
		{name: "hwm", field: "VmHWM", want: 61234},
		{name: "rss", field: "VmRSS", want: 58000},
		{name: "missing", field: "VmSwap", err: "status: no VmSwap"},
		{name: "not kB", field: "Threads", err: `status Threads: "12", want N kB`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := StatusKB([]byte(status), tc.field)
			if tc.err != "" {
				assert.Error(t, err, tc.err)
				return
			}
			assert.NilError(t, err)
			assert.Equal(t, got, tc.want)
		})
	}
}

func TestProjection(t *testing.T) {
	base := Projection{JobReal: 45 * time.Second, JobScaled: 4500 * time.Millisecond,
		ControlPlaneReal: 236 * time.Second, ControlPlaneScaled: 23600 * time.Millisecond}
	for _, tc := range []struct {
		name        string
		measured    time.Duration
		workers     int
		concurrency int64
		want        time.Duration
	}{
		// 999 workers at 100: 10 rounds, each 40.5 s longer; the control plane 212.4 s longer.
		{name: "10%", measured: 120 * time.Second, workers: 999, concurrency: 100, want: 120*time.Second + 212400*time.Millisecond + 405*time.Second},
		{name: "1%", measured: 600 * time.Second, workers: 999, concurrency: 10, want: 600*time.Second + 212400*time.Millisecond + 100*40500*time.Millisecond},
		{name: "exact rounds", measured: 60 * time.Second, workers: 100, concurrency: 50, want: 60*time.Second + 212400*time.Millisecond + 81*time.Second},
		{name: "no concurrency", measured: time.Second, workers: 1, concurrency: 0, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := base
			p.Measured, p.Workers, p.Concurrency = tc.measured, tc.workers, tc.concurrency
			assert.Equal(t, p.Real(), tc.want)
		})
	}
	unscaled := Projection{Measured: time.Minute, Workers: 10, Concurrency: 1, JobReal: time.Second, JobScaled: time.Second,
		ControlPlaneReal: time.Second, ControlPlaneScaled: time.Second}
	assert.Equal(t, unscaled.Real(), time.Minute)
}

func TestEnvList(t *testing.T) {
	assert.DeepEqual(t, envList(map[string]string{"B": "2", "A": "1"}), []string{"A=1", "B=2"})
}
