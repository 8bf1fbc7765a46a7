package scenario

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
)

// metricsText is a patched kubelet's /metrics after a swap that kept two
// containers of one pod and restarted one for a changed definition.
const metricsText = `# HELP kubelet_compat_containers_kept_total [ALPHA] Running containers the compat file kept across an in-place kubelet upgrade, by the kubelet whose container hash they carry.
# TYPE kubelet_compat_containers_kept_total counter
kubelet_compat_containers_kept_total{created_by="v1.30.14"} 2
# TYPE kubelet_compat_containers_restarted_total counter
kubelet_compat_containers_restarted_total 1
kubelet_compat_file_state{state="absent"} 0
kubelet_compat_file_state{state="active"} 1
kubelet_compat_file_state{state="ignored"} 0
kubelet_compat_file_state{state="pending"} 0
kubelet_pod_worker_duration_seconds_count{operation_type="create"} 3
`

func TestCompatMetricsVerdict(t *testing.T) {
	kept := &kubeletcompat.KeptContainer{ID: "c1", CreatedBy: "v1.30.14"}
	rec := &kubeletcompat.SyncRecord{CompatFile: "active", Pods: []kubeletcompat.PodRecord{
		{UID: "u1", Containers: []kubeletcompat.ContainerRecord{{Name: "a", Kept: kept}, {Name: "b", Kept: kept}}},
		{UID: "u2", Containers: []kubeletcompat.ContainerRecord{{Name: "c", KillCount: 1,
			Kills: []kubeletcompat.KilledContainer{{ID: "c3", Reason: "Container c definition changed, will be restarted"}}}}},
	}}
	admitted := *rec
	admitted.Pods = append(append([]kubeletcompat.PodRecord{}, rec.Pods...), kubeletcompat.PodRecord{UID: "u3", AdmittedDespite: "OutOfcpu"})
	pending := *rec
	pending.CompatFile = "pending"
	for _, tc := range []struct {
		name       string
		rec        *kubeletcompat.SyncRecord
		text       string
		wantPassed bool
		wantDetail string
	}{
		{name: "the counters and the state match the record", rec: rec, text: metricsText, wantPassed: true,
			wantDetail: `kept 2 (record 2), restarted for a change 1 (record 1), admitted despite a rejection 0 (record 0), file state [kubelet_compat_file_state{state="active"}]`},
		{name: "a pod admitted in the record, not counted", rec: &admitted, text: metricsText,
			wantDetail: "kubelet_compat_pods_admitted_total is 0, the record says 1"},
		{name: "the gauge names another state", rec: &pending, text: metricsText,
			wantDetail: `the file-state gauge is 1 for [kubelet_compat_file_state{state="active"}], the record says "pending"`},
		{name: "no metric from the patched kubelet", rec: rec, text: "kubelet_running_pods 3\n",
			wantDetail: "kubelet_compat_containers_kept_total is 0, the record says 2"},
		{name: "the unpatched kubelet serves none", text: "kubelet_running_pods 3\n", wantPassed: true, wantDetail: "no kubelet_compat_* metric"},
		{name: "the unpatched kubelet serves one", text: metricsText,
			wantDetail: "the unpatched kubelet serves kubelet_compat_containers_kept_total"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := compatMetricsVerdict(tc.rec, parseCompatMetrics(tc.text))
			assert.Check(t, is.Equal(c.Passed, tc.wantPassed), c.Detail)
			assert.Check(t, is.Contains(c.Detail, tc.wantDetail))
		})
	}
}
