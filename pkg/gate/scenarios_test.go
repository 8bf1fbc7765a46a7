package gate

import (
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

// TestRuntimeStepWaitsForASyncAfterSince is the runtime step's scenario:
// the kubelet does not restart and resyncs a pod only every 60-90 s, so a
// record whose last sync of the pod is before Since keeps the gate at "not
// yet" even after the fixed wait; the first sync after Since passes it.
func TestRuntimeStepWaitsForASyncAfterSince(t *testing.T) {
	web := pod{name: "web", uid: uidWeb, sandbox: "sb-web", containers: []ctr{run("app", "c-app")}}
	picture := snap(t0, web)
	afterFixedWait := since.Add(fixedWait + 15*time.Second)
	tests := []struct {
		name     string
		lastSync time.Time
		now      time.Time
		want     Result
	}{
		{name: "last sync before Since, fixed wait over", lastSync: since.Add(-10 * time.Second), now: afterFixedWait, want: NotYet},
		{name: "last sync before Since, long after", lastSync: since.Add(-10 * time.Second), now: since.Add(5 * time.Minute), want: NotYet},
		{name: "a sync after Since", lastSync: since.Add(50 * time.Second), now: since.Add(51 * time.Second), want: Passed},
		{name: "a sync after Since, before the fixed wait is over", lastSync: since.Add(5 * time.Second), now: since.Add(6 * time.Second), want: Passed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := record(oldKubelet, synced(uidWeb, tt.lastSync))
			v := Judge(picture, snap(tt.now, web), rec, runtimeStep())
			assert.Equal(t, v.Result, tt.want, "%+v", v)
			assert.Equal(t, v.SyncEvidence, ByRecord)
		})
	}
}

// TestSidecarGoneIsALoss is the sidecar scenario: of a picture pod of two
// containers the second runs no more while the first runs on.
func TestSidecarGoneIsALoss(t *testing.T) {
	before := pod{name: "web", uid: uidWeb, sandbox: "sb-web", containers: []ctr{run("app", "c-app"), run("side", "c-side")}}
	tests := []struct {
		name string
		now  pod
	}{
		{name: "sidecar exited", now: pod{name: "web", uid: uidWeb, sandbox: "sb-web", containers: []ctr{run("app", "c-app"), exited("side", "c-side")}}},
		{name: "sidecar removed", now: pod{name: "web", uid: uidWeb, sandbox: "sb-web", containers: []ctr{run("app", "c-app")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := since.Add(time.Minute)
			rec := record(oldKubelet, synced(uidWeb, now.Add(-time.Second)))
			v := Judge(snap(t0, before), snap(now, tt.now), rec, runtimeStep())
			assert.Equal(t, v.Result, Lost, "%+v", v)
			assert.Equal(t, len(v.Pods), 1)
			assert.Equal(t, v.Pods[0].Outcome, ContainerGone)
		})
	}
}
