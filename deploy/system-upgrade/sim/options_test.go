package sim

import (
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestParseConcurrency(t *testing.T) {
	for _, tc := range []struct {
		list  string
		nodes int
		want  []Concurrency
		err   string
	}{
		{list: "1%,5%,10%", nodes: 1000, want: []Concurrency{{"1%", 10}, {"5%", 50}, {"10%", 100}}},
		{list: " 1% , 3 ", nodes: 250, want: []Concurrency{{"1%", 3}, {"3", 3}}},
		{list: "0.1%", nodes: 100, want: []Concurrency{{"0.1%", 1}}},
		{list: "100%", nodes: 7, want: []Concurrency{{"100%", 7}}},
		{list: "", nodes: 10, err: "concurrency: empty list, want e.g. 1%,5%,10%"},
		{list: "0%", nodes: 10, err: `concurrency "0%": want a percentage in (0, 100]`},
		{list: "101%", nodes: 10, err: `concurrency "101%": want a percentage in (0, 100]`},
		{list: "x%", nodes: 10, err: `concurrency "x%": want a percentage in (0, 100]`},
		{list: "0", nodes: 10, err: `concurrency "0": want a positive number of nodes or a percentage`},
		{list: "5,", nodes: 10, err: `concurrency "": want a positive number of nodes or a percentage`},
	} {
		t.Run(tc.list, func(t *testing.T) {
			got, err := ParseConcurrency(tc.list, tc.nodes)
			if tc.err != "" {
				assert.Error(t, err, tc.err)
				return
			}
			assert.NilError(t, err)
			assert.DeepEqual(t, got, tc.want)
		})
	}
}

func TestValidate(t *testing.T) {
	good := Options{Nodes: 1000, Concurrency: []Concurrency{{"10%", 100}}, JobSeconds: 45, ControlPlaneSeconds: 236, Scale: 10, Fail: 3}
	for _, tc := range []struct {
		name string
		edit func(*Options)
		err  string
	}{
		{name: "good", edit: func(*Options) {}},
		{name: "one node", edit: func(o *Options) { o.Nodes = 1 }, err: "nodes 1: want at least 2 (one control plane, one worker)"},
		{name: "no concurrency", edit: func(o *Options) { o.Concurrency = nil }, err: "no concurrency given"},
		{name: "zero job", edit: func(o *Options) { o.JobSeconds = 0 }, err: "job seconds 0, control-plane seconds 236: want both above 0"},
		{name: "scale below 1", edit: func(o *Options) { o.Scale = 0.5 }, err: "scale 0.5: want at least 1 (durations are divided by it)"},
		{name: "too many failing", edit: func(o *Options) { o.Fail = 1000 }, err: "fail 1000: want 0 to 999 (the workers)"},
		{name: "negative fail", edit: func(o *Options) { o.Fail = -1 }, err: "fail -1: want 0 to 999 (the workers)"},
		{name: "negative stall", edit: func(o *Options) { o.Stall = -time.Second }, err: "stall -1s: want 0 (derived) or more"},
		{name: "concurrency above workers", edit: func(o *Options) { o.Concurrency = []Concurrency{{"1000", 1000}} },
			err: "concurrency 1000 (1000 nodes): more than the 999 workers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := good
			tc.edit(&o)
			err := o.Validate()
			if tc.err == "" {
				assert.NilError(t, err)
				return
			}
			assert.Error(t, err, tc.err)
		})
	}
}

func TestDurations(t *testing.T) {
	for _, tc := range []struct {
		name           string
		o              Options
		job, cp, stall time.Duration
	}{
		{name: "x10", o: Options{JobSeconds: 45, ControlPlaneSeconds: 236, Scale: 10}, job: 4500 * time.Millisecond, cp: 23600 * time.Millisecond, stall: time.Minute},
		{name: "real", o: Options{JobSeconds: 45, ControlPlaneSeconds: 236, Scale: 1}, job: 45 * time.Second, cp: 236 * time.Second, stall: 225 * time.Second},
		{name: "stall given", o: Options{JobSeconds: 45, ControlPlaneSeconds: 236, Scale: 1, Stall: 10 * time.Second}, job: 45 * time.Second, cp: 236 * time.Second, stall: 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.o.ScaledJob(), tc.job)
			assert.Equal(t, tc.o.ScaledControlPlane(), tc.cp)
			assert.Equal(t, tc.o.StallAfter(), tc.stall)
		})
	}
}

func TestFailNodes(t *testing.T) {
	for _, tc := range []struct {
		n, workers int
		want       []string
	}{
		{n: 0, workers: 999},
		{n: 3, workers: 999, want: []string{"kwok-worker-0250", "kwok-worker-0500", "kwok-worker-0750"}},
		{n: 1, workers: 1, want: []string{"kwok-worker-0001"}},
		{n: 3, workers: 3, want: []string{"kwok-worker-0001", "kwok-worker-0002", "kwok-worker-0003"}},
		{n: 2, workers: 9, want: []string{"kwok-worker-0003", "kwok-worker-0006"}},
		{n: 4, workers: 3},
	} {
		got := FailNodes(tc.n, tc.workers)
		assert.DeepEqual(t, got, tc.want)
	}
}

func TestNode(t *testing.T) {
	cp, w := Node(0), Node(12)
	assert.Equal(t, cp.Name, "kwok-control-plane")
	assert.Check(t, is.Contains(cp.Labels, "node-role.kubernetes.io/control-plane"))
	assert.Equal(t, len(cp.Spec.Taints), 1)
	assert.Equal(t, w.Name, "kwok-worker-0012")
	assert.Equal(t, w.Labels["kubernetes.io/hostname"], "kwok-worker-0012")
	assert.Check(t, !is.Contains(w.Labels, "node-role.kubernetes.io/control-plane")().Success())
	assert.Equal(t, len(w.Spec.Taints), 0)
}
