package report

import (
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"
)

// fleetReport is three rolls of a fleet as the kind e2e reports them (the
// figures are made up for the table's shape, not measured).
func fleetReport() *Report {
	return &Report{Mode: "fleet", Provider: "kind", StartedAt: time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC),
		Fleet: []FleetRoll{
			{Name: "SUC, concurrency 1", Cluster: "c1", Step: "1.30.14 -> 1.31.14", Variant: Patched, Order: []string{"cp", "w1"},
				Nodes: []FleetNode{{Node: "cp", Outcome: "upgraded", SystemRestarts: 9, Seconds: 95, APIRequests: 2100}, {Node: "w1", Outcome: "upgraded", Seconds: 61, APIRequests: 800}},
				Total: FleetNode{Node: "total", SystemRestarts: 9, Seconds: 170, APIRequests: 3000}, APIBackgroundPerSecond: 7.25},
			{Name: "drain (cordon, kubectl drain, swap, uncordon)", Cluster: "d", Step: "1.30.14 -> 1.31.14", Variant: Unpatched, Order: []string{"cp", "w1"},
				Nodes: []FleetNode{{Node: "cp", Outcome: "upgraded", Restarts: 1, SystemRestarts: 10, Seconds: 120},
					{Node: "w1", Outcome: "upgraded", Restarts: 9, Evicted: 3, Rescheduled: 3, UIDsChanged: 3, SoloUnavailableSeconds: 4.5, EndpointRemovals: 2, Seconds: 80}},
				Total: FleetNode{Node: "total", Restarts: 10, Evicted: 3, Rescheduled: 3, UIDsChanged: 3, SoloUnavailableSeconds: 4.5, EndpointRemovals: 2, SystemRestarts: 10, Seconds: 230}},
			// The naive anchor: restarts and recreated pods in place, nothing evicted.
			{Name: "naive (SUC, concurrency 1, released kubelets, no drain)", Cluster: "n", Step: "1.30.14 -> 1.31.14", Variant: Unpatched, Order: []string{"cp", "w1"},
				Nodes: []FleetNode{{Node: "cp", Outcome: "upgraded", Restarts: 1, SystemRestarts: 10, Seconds: 110, APIRequests: 1900},
					{Node: "w1", Outcome: "upgraded", Restarts: 8, Recreated: 5, UIDsChanged: 5, SoloUnavailableSeconds: 2.5, EndpointRemovals: 4, Seconds: 20, APIRequests: 300}},
				Total: FleetNode{Node: "total", Restarts: 9, Recreated: 5, UIDsChanged: 5, SoloUnavailableSeconds: 2.5, EndpointRemovals: 4, SystemRestarts: 10, Seconds: 150, APIRequests: 2300}, APIBackgroundPerSecond: 3.1},
		},
		Checks: []Check{{Name: "c1: 0 containers restarted", Passed: true, Detail: "..."}},
	}
}

func TestFleetTableGolden(t *testing.T) {
	r := fleetReport()
	r.Finish(r.StartedAt.Add(400*time.Second), nil)
	var sb strings.Builder
	r.Table(&sb)
	golden.Assert(t, sb.String(), "table-fleet.golden")
}

// TestFinishFleet: a fleet report has rolls, not runs: it passes on its
// checks, and fails on a failed one.
func TestFinishFleet(t *testing.T) {
	for _, tt := range []struct {
		name   string
		mutate func(*Report)
		want   bool
	}{
		{name: "rolls and passed checks", mutate: func(*Report) {}, want: true},
		{name: "a failed check", mutate: func(r *Report) { r.Checks[0].Passed = false }, want: false},
		{name: "no rolls", mutate: func(r *Report) { r.Fleet = nil }, want: false},
	} {
		r := fleetReport()
		tt.mutate(r)
		r.Finish(r.StartedAt, nil)
		assert.Equal(t, r.Passed, tt.want, tt.name)
	}
}
