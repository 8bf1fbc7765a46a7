package sim

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Requests are apiserver_request_total summed by "verb resource".
type Requests map[string]float64

// ParseRequests reads apiserver_request_total from the API server's
// /metrics (Prometheus text format) and sums it by verb and resource
// (subresource appended: "PATCH pods/status").
func ParseRequests(metrics []byte) (Requests, error) {
	r := Requests{}
	sc := bufio.NewScanner(bytes.NewReader(metrics))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, "apiserver_request_total{")
		if !ok {
			continue
		}
		end := strings.LastIndex(rest, "} ")
		if end < 0 {
			return nil, fmt.Errorf("apiserver_request_total line %q: no value", line)
		}
		v, err := strconv.ParseFloat(strings.Fields(rest[end+2:])[0], 64)
		if err != nil {
			return nil, fmt.Errorf("apiserver_request_total line %q: %w", line, err)
		}
		l := labels(rest[:end])
		key := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		r[key] += v
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(r) == 0 {
		return nil, fmt.Errorf("no apiserver_request_total in the metrics")
	}
	return r, nil
}

// labels parses `a="x",b="y"` (values without escaped quotes, as the API
// server's request labels are).
func labels(s string) map[string]string {
	out := map[string]string{}
	for s != "" {
		eq := strings.Index(s, `="`)
		if eq < 0 {
			break
		}
		name := s[:eq]
		s = s[eq+2:]
		q := strings.IndexByte(s, '"')
		if q < 0 {
			break
		}
		out[name] = s[:q]
		s = strings.TrimPrefix(s[q+1:], ",")
	}
	return out
}

// Sub is r minus before (counters: what happened in between).
func (r Requests) Sub(before Requests) Requests {
	out := Requests{}
	for k, v := range r {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// Total is the sum of every request.
func (r Requests) Total() float64 {
	var t float64
	for _, v := range r {
		t += v
	}
	return t
}

// Top is the n largest entries, "verb resource count", largest first.
func (r Requests) Top(n int) []string {
	keys := make([]string, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if r[keys[i]] != r[keys[j]] {
			return r[keys[i]] > r[keys[j]]
		}
		return keys[i] < keys[j]
	})
	var out []string
	for i := 0; i < n && i < len(keys); i++ {
		out = append(out, fmt.Sprintf("%s %.0f", keys[i], r[keys[i]]))
	}
	return out
}

// CPUTicks is utime+stime (clock ticks) from /proc/<pid>/stat.
func CPUTicks(stat []byte) (uint64, error) {
	closing := bytes.LastIndexByte(stat, ')')
	if closing < 0 {
		return 0, fmt.Errorf("stat: no (comm)")
	}
	f := strings.Fields(string(stat[closing+1:]))
	// f[0] is field 3 (state): utime is field 14, stime 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("stat: %d fields after comm, want at least 13", len(f))
	}
	u, err := strconv.ParseUint(f[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stat utime: %w", err)
	}
	s, err := strconv.ParseUint(f[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stat stime: %w", err)
	}
	return u + s, nil
}

// StatusKB is a "Name:   N kB" field of /proc/<pid>/status (VmHWM, VmRSS).
func StatusKB(status []byte, name string) (uint64, error) {
	for _, line := range strings.Split(string(status), "\n") {
		rest, ok := strings.CutPrefix(line, name+":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("status %s: %q, want N kB", name, strings.TrimSpace(rest))
		}
		return strconv.ParseUint(f[0], 10, 64)
	}
	return 0, fmt.Errorf("status: no %s", name)
}

// Projection is a roll's time at real durations from one at scaled ones.
type Projection struct {
	// Measured is the roll's time in the simulation (control plane and
	// workers).
	Measured time.Duration
	// Workers is how many workers' Jobs ran (upgraded and failed).
	Workers int
	// Concurrency is the workers Plan's.
	Concurrency int64
	// JobReal/JobScaled and ControlPlaneReal/ControlPlaneScaled are the
	// durations at real and at simulated speed.
	JobReal, JobScaled                   time.Duration
	ControlPlaneReal, ControlPlaneScaled time.Duration
}

// Real is the projection: the measured time (the controller's, the Job
// controller's, the scheduler's and the API's latencies included), plus
// the time each Job lost by the scaling, once for the control plane and
// once per round of workers: ceil(workers / concurrency) rounds. SUC
// refills a slot as soon as its node is done, so rounds are the lower
// bound of what a slot runs one after the other.
func (p Projection) Real() time.Duration {
	if p.Concurrency < 1 {
		return 0
	}
	rounds := int64(math.Ceil(float64(p.Workers) / float64(p.Concurrency)))
	return p.Measured + (p.ControlPlaneReal - p.ControlPlaneScaled) + time.Duration(rounds)*(p.JobReal-p.JobScaled)
}
