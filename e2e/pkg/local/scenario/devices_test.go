package scenario

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestCheckpointSummary(t *testing.T) {
	for _, tc := range []struct {
		name, data, want string
	}{
		{name: "none", data: "", want: "none"},
		{name: "v1 (1.18, 1.19)", data: `{"Data":{"PodDeviceEntries":[{"PodUID":"0123456789ab","ContainerName":"httpd","ResourceName":"kubelet-compat.io/dev","DeviceIDs":["dev-0"],"AllocResp":""}],"RegisteredDevices":{"kubelet-compat.io/dev":["dev-0","dev-1"]}},"Checksum":1}`,
			want: "v1, 1 allocations (01234567/httpd=[dev-0]), 2 registered devices"},
		{name: "v2 (1.20 and later)", data: `{"Data":{"PodDeviceEntries":[{"PodUID":"u1","ContainerName":"httpd","ResourceName":"kubelet-compat.io/dev","DeviceIDs":{"-1":["dev-1"]},"AllocResp":""}],"RegisteredDevices":{"kubelet-compat.io/dev":["dev-0","dev-1"]}},"Checksum":1}`,
			want: "v2, 1 allocations (u1/httpd={-1:[dev-1]}), 2 registered devices"},
		{name: "registered, nothing allocated", data: `{"Data":{"PodDeviceEntries":null,"RegisteredDevices":{"kubelet-compat.io/dev":["dev-0","dev-1"]}},"Checksum":1}`,
			want: "no allocation, 0 allocations (), 2 registered devices"},
		{name: "not JSON", data: "{", want: "unreadable: unexpected end of JSON input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, checkpointSummary([]byte(tc.data)), tc.want)
		})
	}
}

func TestAssertDevices(t *testing.T) {
	for _, tc := range []struct {
		name       string
		run        report.Run
		failed     int
		admitLines int
		expect     map[string]string
		passed     bool
		verdict    string
	}{
		{name: "control: upstream keeps them too", run: report.Run{Variant: report.Unpatched, Pods: 4}, passed: true, verdict: "pass: upstream also keeps"},
		{name: "control: a pod not as measured", run: report.Run{Variant: report.Unpatched, Pods: 4}, failed: 1, verdict: "FAIL: 1 checks not as upstream was measured"},
		{name: "control: upstream loses one, as measured", run: report.Run{Variant: report.Unpatched, Pods: 4}, expect: map[string]string{"devpod-0": "UnexpectedAdmissionError"}, passed: true, verdict: "pass: 1 device pods lost as upstream"},
		{name: "patched: all kept", run: report.Run{Variant: report.Patched, Pods: 4}, passed: true, verdict: "device pods kept, 0 admitted despite a rejection"},
		{name: "patched: a restart", run: report.Run{Variant: report.Patched, Pods: 4, Restarts: 1}, verdict: "FAIL"},
		{name: "patched: a failed check", run: report.Run{Variant: report.Patched, Pods: 4}, failed: 1, verdict: "FAIL: 1 checks failed"},
		{name: "patched: a rejection upstream without its log line", run: report.Run{Variant: report.Patched, Pods: 4}, expect: map[string]string{"devpod-0": "OutOfkubelet-compat.io/dev"}, verdict: "0 \"Admitting a pod started before this kubelet\" lines for 1 rejections"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := tc.run
			assertDevices(&run, tc.failed, tc.admitLines, tc.expect)
			assert.Check(t, is.Equal(run.Passed, tc.passed), run.Verdict)
			assert.Check(t, is.Contains(run.Verdict, tc.verdict))
		})
	}
}

func TestPluginCounts(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		log                  string
		registrations, alloc int
		last                 string
	}{
		{name: "empty", log: ""},
		{name: "registrations, allocations and the noise between",
			log: "\n===== 2026-11-30T18:32:27Z: e2e-device-plugin [-dir x]\n" +
				"18:32:32.523 registered with the kubelet as kubelet-compat.io/dev (registration 1, 2 devices, socket s)\n" +
				"18:32:32.523 ListAndWatch: sent 2 healthy devices\n" +
				"18:32:40.001 Allocate: dev-0\n" +
				"18:33:01.100 register: connection refused; retrying\n" +
				"18:33:02.250 registered with the kubelet as kubelet-compat.io/dev (registration 2, 2 devices, socket s)\n",
			registrations: 2, alloc: 1, last: "18:33:02.25"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "device-plugin.log")
			assert.NilError(t, os.WriteFile(log, []byte(tc.log), 0o644))
			s := &Scenario{pluginLog: log}
			regs, allocs, last, err := s.pluginCounts()
			assert.NilError(t, err)
			assert.Check(t, is.Equal(regs, tc.registrations))
			assert.Check(t, is.Equal(allocs, tc.alloc))
			if tc.last != "" {
				assert.Check(t, is.Equal(last.Format("15:04:05.00"), tc.last))
			}
		})
	}
}
