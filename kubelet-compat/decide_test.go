package kubeletcompat

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestDeciderStates: the activation rule, in one place for the kubelet and
// the CLI.
func TestDeciderStates(t *testing.T) {
	own := Version{Major: 1, Minor: 21, Patch: 14}
	for _, tt := range []struct {
		name, previous string
		want           FileState
		wantWhy        string
		wantLegacy     bool // c1, listed with 1.20's hash, can be kept
	}{
		{name: "no file", want: FileAbsent},
		{name: "older kubelet", previous: "v1.20.15", want: FileActive, wantLegacy: true},
		{name: "this kubelet's version: pending swap", previous: "v1.21.14+compat.1", want: FilePending, wantWhy: "has not happened yet", wantLegacy: true},
		{name: "newer kubelet: a rollback", previous: "v1.22.0", want: FileActive, wantWhy: "rollback: recorded by the newer kubelet v1.22.0", wantLegacy: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var f *File
			if tt.previous != "" {
				f = testFile()
				f.PreviousVersion = tt.previous
				f.Containers = []Container{{ID: "c1", HashVersion: "v1.20.15"}, {ID: "c2", HashVersion: tt.previous}}
				must(t, f.Validate())
			}
			d := NewDecider(f, own, kubeletStart)
			state, why := d.State()
			if state != tt.want || !strings.Contains(why, tt.wantWhy) {
				t.Errorf("State() = %s %q, want %s %q", state, why, tt.want, tt.wantWhy)
			}
			if _, ok := d.LegacyHashVersion("c1"); ok != tt.wantLegacy {
				t.Errorf("LegacyHashVersion(c1) = %v, want %v", ok, tt.wantLegacy)
			}
			// c2 carries the recording kubelet's hash: another kubelet's
			// unless it is this one's own version.
			if _, ok := d.LegacyHashVersion("c2"); ok != (tt.previous != "" && mustVersion(t, tt.previous).Compare(own) != 0) {
				t.Errorf("LegacyHashVersion(c2) = %v for a container carrying %s's hash", ok, tt.previous)
			}
		})
	}
}

func mustVersion(t *testing.T, s string) Version {
	t.Helper()
	v, err := ParseVersion(s)
	must(t, err)
	return v
}

// TestKeepChangedRollback: an older kubelet keeps what the newer kubelet that
// recorded the file created when it reads the same spec; a container that
// sets a field the older kubelet does not know, or changed, restarts.
func TestKeepChangedRollback(t *testing.T) {
	grace := int64(10)
	plain := func() *v1.Container {
		return &v1.Container{Name: "app", Image: "busybox:1", Command: []string{"sleep", "inf"}}
	}
	// resources.claims[].request is new in 1.31; the probe's
	// terminationGracePeriodSeconds in 1.21.
	withClaimRequest := func() *v1.Container {
		c := plain()
		c.Resources.Claims = []v1.ResourceClaim{{Name: "gpu", Request: "one"}}
		return c
	}
	withProbeGrace := func() *v1.Container {
		c := plain()
		c.LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, TerminationGracePeriodSeconds: &grace}
		return c
	}
	for _, tt := range []struct {
		name, own, previous string
		hashVersion         string // default previous
		recorded            func() *v1.Container
		noSpecHash          bool
		running             func() *v1.Container // the spec now (default recorded)
		createdAfterStart   bool
		wantKeep            bool
		wantWhy             string
	}{
		{name: "1.31 -> 1.30: same spec", own: "v1.30.14", previous: "v1.31.14", recorded: plain, wantKeep: true, wantWhy: "the spec is the one recorded (rollback)"},
		{name: "1.31 -> 1.30: a field 1.30 does not know", own: "v1.30.14", previous: "v1.31.14", recorded: withClaimRequest, wantWhy: "sets fields this kubelet does not know"},
		{name: "1.31 -> 1.30: no spec recorded", own: "v1.30.14", previous: "v1.31.14", recorded: plain, noSpecHash: true, wantWhy: "records no spec"},
		{name: "1.31 -> 1.30: changed since recorded", own: "v1.30.14", previous: "v1.31.14", recorded: plain,
			running: func() *v1.Container { c := plain(); c.Args = []string{"x"}; return c }, wantWhy: "it changed"},
		{name: "1.31 -> 1.30: image changed", own: "v1.30.14", previous: "v1.31.14", recorded: plain,
			running: func() *v1.Container { c := plain(); c.Image = "busybox:2"; return c }, wantWhy: "stored hash"},
		{name: "1.31 -> 1.30: created by this kubelet", own: "v1.30.14", previous: "v1.31.14", recorded: plain, createdAfterStart: true, wantWhy: "created by this kubelet"},
		{name: "1.37 -> 1.28: same spec", own: "v1.28.15", previous: "v1.37.2", recorded: withProbeGrace, wantKeep: true, wantWhy: "rollback"},
		// Both hash the container's JSON, which is the same without 1.21's fields.
		{name: "1.21 -> 1.20: same spec", own: "v1.20.15", previous: "v1.21.14", recorded: plain, noSpecHash: true, wantKeep: true, wantWhy: "hash matches"},
		{name: "1.21 -> 1.20: a field 1.20 does not know", own: "v1.20.15", previous: "v1.21.14", recorded: withProbeGrace, wantWhy: "stored hash"},
		{name: "1.21 -> 1.20: changed", own: "v1.20.15", previous: "v1.21.14", recorded: plain,
			running: func() *v1.Container { c := plain(); c.Args = []string{"x"}; return c }, wantWhy: "stored hash"},
		// record ran again on the rolled-back 1.30.14: the file is 1.30.14's
		// own and still says 1.31 created the container.
		{name: "recorded again after the rollback: same spec", own: "v1.30.14", previous: "v1.30.14", hashVersion: "v1.31.14", recorded: plain, wantKeep: true, wantWhy: "the spec is the one recorded (rollback)"},
		{name: "recorded again after the rollback: a field 1.30 does not know", own: "v1.30.14", previous: "v1.30.14", hashVersion: "v1.31.14", recorded: withClaimRequest, wantWhy: "sets fields this kubelet does not know"},
		{name: "recorded again after the rollback: the next patch release", own: "v1.30.15", previous: "v1.30.14", hashVersion: "v1.31.14", recorded: plain, wantKeep: true, wantWhy: "the spec is the one recorded (rollback)"},
		{name: "recorded again after the rollback: 1.21 -> 1.20", own: "v1.20.15", previous: "v1.20.15", hashVersion: "v1.21.14", recorded: plain, noSpecHash: true, wantKeep: true, wantWhy: "hash matches"},
		{name: "a hash of this kubelet's own version", own: "v1.30.14", previous: "v1.31.14", hashVersion: "v1.30.14", recorded: plain,
			running: func() *v1.Container { c := plain(); c.Args = []string{"x"}; return c }, wantWhy: "this kubelet's own"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			own, prev := mustVersion(t, tt.own), mustVersion(t, tt.previous)
			hashVersion := tt.previous
			if tt.hashVersion != "" {
				hashVersion = tt.hashVersion
			}
			creator := mustVersion(t, hashVersion)
			recorded := tt.recorded()
			stored, err := ContainerHash(creator, recorded)
			must(t, err)
			f := testFile()
			f.PreviousVersion = prev.String()
			entry := Container{ID: "c1", HashVersion: hashVersion}
			if !tt.noSpecHash {
				spec, err := SpecHash(creator, recorded)
				must(t, err)
				entry.SpecHash = FormatSpecHash(spec)
			}
			f.Containers = []Container{entry}
			must(t, f.Validate())
			running := recorded
			if tt.running != nil {
				running = tt.running()
			}
			created := kubeletStart.Add(-time.Hour)
			if tt.createdAfterStart {
				created = kubeletStart.Add(time.Second)
			}
			d := NewDecider(f, own, kubeletStart)
			got := d.Decide(running, RunningContainer{ID: "c1", Hash: stored, CreatedAt: created, Image: running.Image})
			if got.Keep != tt.wantKeep || !strings.Contains(got.Reason, tt.wantWhy) {
				t.Errorf("Decide = %v %q, want %v %q", got.Keep, got.Reason, tt.wantKeep, tt.wantWhy)
			}
		})
	}
}

// TestNoLayoutGainsAlwaysWrittenField: a rollback compares a newer kubelet's
// JSON of a container with an older kubelet's. That holds only while no
// minor adds a field encoding/json writes even when empty to a struct that
// existed before (it would be in every newer JSON and in no older one).
func TestNoLayoutGainsAlwaysWrittenField(t *testing.T) {
	always := func(minor int) map[string]map[string]bool {
		out := map[string]map[string]bool{}
		for _, i := range containerSchemas[minor] {
			layout := schemaTypes[i]
			name := layout[:strings.Index(layout, "(")]
			out[name] = map[string]bool{}
			for _, f := range strings.Fields(strings.Trim(layout[len(name):], "()")) {
				if f = strings.SplitN(f, ":", 2)[0]; strings.HasSuffix(f, "!") {
					out[name][f] = true
				}
			}
		}
		return out
	}
	for minor := firstJSONMinor + 1; minor <= lastKnownMinor; minor++ {
		older, newer := always(minor-1), always(minor)
		for typ, fields := range newer {
			if _, existed := older[typ]; !existed {
				continue
			}
			for f := range fields {
				if !older[typ][f] {
					t.Errorf("1.%d: %s gains the always-written field %s", minor, typ, f)
				}
			}
		}
	}
}
