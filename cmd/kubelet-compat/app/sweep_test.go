package app

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	"gotest.tools/v3/golden"
)

const plainYAML = `apiVersion: v1
kind: Pod
metadata:
  name: plain
  uid: plain-uid
spec:
  containers:
  - name: app
    image: busybox:1.36
`

// upgraded records with a 1.18.19 kubelet, then "swaps" it for 1.19.16
// started at kubeletStart: the pods created before kubeletStart ran when
// record ran, the others are created after the swap.
func upgraded(t *testing.T, apis []string, pods ...pod) *fixture {
	t.Helper()
	return upgradedAt(t, apis, now, now, pods...)
}

// upgradedAt is upgraded with record run at recordAt and the commands
// after the swap at now.
func upgradedAt(t *testing.T, apis []string, recordAt, now time.Time, pods ...pod) *fixture {
	t.Helper()
	f := newFixture(t, apis...)
	f.now = recordAt
	var before []pod
	for _, p := range pods {
		if p.created.Before(kubeletStart) {
			before = append(before, p)
		}
	}
	f.addStaticPods("v1.18.19", before...)
	if code := f.run("record", "--kubelet-binary", f.kubeletBinary("v1.18.19")); code != 0 {
		t.Fatalf("record exit %d: %s", code, f.stderr.String())
	}
	f.addStaticPods("v1.18.19", pods...)
	f.runKubelet("v1.19.16")
	f.now = now
	return f
}

func TestSweep(t *testing.T) {
	etcd := pod{file: "etcd.yaml", yaml: etcdYAML, uid: "etcd-uid", created: beforeStart, ready: true}
	seccomp := pod{file: "seccomp.yaml", yaml: seccompYAML, uid: "pinned-uid", created: beforeStart, ready: true}
	plain := pod{file: "plain.yaml", yaml: plainYAML, uid: "plain-uid", created: beforeStart, ready: true}
	for _, tc := range []struct {
		name     string
		pods     []pod
		tweak    func(f *fixture)
		args     []string
		wantCode int
		wantOut  string
		wantFile bool
	}{
		{name: "hash equal and UID pinned: deleted", pods: []pod{plain}, wantCode: ExitOK, wantOut: "deleted ", wantFile: false},
		{name: "dry run", pods: []pod{plain}, args: []string{"--dry-run"}, wantCode: ExitOK, wantOut: "would delete ", wantFile: true},
		{name: "a field 1.18 did not know changes the hash: kept", pods: []pod{plain, seccomp}, wantCode: ExitKept, wantFile: true,
			wantOut: "container default/seccomp-node-1/app (c-pinned-uid-): stored hash 3934bade is not the kubelet's"},
		{name: "static pod on its recorded UID: kept", pods: []pod{etcd}, wantCode: ExitKept, wantFile: true,
			wantOut: "static pod kube-system/etcd-node-1 runs under the recorded UID etcd-uid"},
		{name: "containers created by this kubelet are not legacy", pods: []pod{{file: "seccomp.yaml", yaml: seccompYAML, uid: "pinned-uid", created: afterStart, ready: true}},
			wantCode: ExitOK, wantOut: "deleted ", wantFile: false},
		{name: "a legacy container without a spec: kept", pods: []pod{plain}, wantCode: ExitKept, wantFile: true,
			tweak:   func(f *fixture) { os.Remove(f.manifestDir + "/plain.yaml") },
			wantOut: "container default/plain-node-1/app (c-plain-uid-a): no pod spec found"},
	} {
		for _, apis := range apiVersions {
			t.Run(tc.name+"/"+apiName(apis), func(t *testing.T) {
				f := upgraded(t, apis, tc.pods...)
				if tc.tweak != nil {
					tc.tweak(f)
				}
				code := f.run(append([]string{"sweep"}, tc.args...)...)
				if code != tc.wantCode {
					t.Fatalf("exit %d, want %d; stdout %s stderr %s", code, tc.wantCode, f.stdout.String(), f.stderr.String())
				}
				if !strings.Contains(f.stdout.String(), tc.wantOut) {
					t.Errorf("stdout %q lacks %q", f.stdout.String(), tc.wantOut)
				}
				if code == ExitKept {
					assertOneErrorLine(t, f.stderr.String(), "still need it")
				}
				_, err := os.Stat(f.compatPath())
				if exists := err == nil; exists != tc.wantFile {
					t.Errorf("file exists = %v, want %v", exists, tc.wantFile)
				}
			})
		}
	}
}

func TestSweepNothingToDoAndErrors(t *testing.T) {
	f := newFixture(t, cri.APIv1)
	if code := f.run("sweep"); code != ExitOK || !strings.Contains(f.stdout.String(), "nothing to do") {
		t.Errorf("no file: exit %d, stdout %q", code, f.stdout.String())
	}

	f.write(f.compatPath(), "{not json")
	f.selectKubelet("v1.19.16")
	if code := f.run("sweep"); code != ExitError {
		t.Errorf("no kubelet: exit %d", code)
	}
	assertOneErrorLine(t, f.stderr.String(), "no running kubelet: no process of the host PID namespace runs")

	f.runKubelet("v1.19.16")
	if code := f.run("sweep"); code != ExitError {
		t.Errorf("invalid file: exit %d", code)
	}
	assertOneErrorLine(t, f.stderr.String(), "is not valid")
	if _, err := os.Stat(f.compatPath()); err != nil {
		t.Errorf("the invalid file was removed: %v", err)
	}

	f2 := upgraded(t, []string{cri.APIv1}, pod{file: "plain.yaml", yaml: plainYAML, uid: "plain-uid", created: beforeStart, ready: true})
	if code := f2.run("sweep", "--runtime-endpoint", "unix:///nonexistent.sock"); code != ExitError {
		t.Errorf("no CRI: exit %d", code)
	}
	assertOneErrorLine(t, f2.stderr.String(), "no CRI socket")
	if _, err := os.Stat(f2.compatPath()); err != nil {
		t.Errorf("the file was removed on a CRI error: %v", err)
	}
}

func TestStatusGolden(t *testing.T) {
	for _, format := range []string{"table", "json"} {
		for _, apis := range apiVersions {
			t.Run(format+"/"+apiName(apis), func(t *testing.T) {
				// record 5 minutes before the swap, status 2 minutes after.
				f := upgradedAt(t, apis, kubeletStart.Add(-5*time.Minute), kubeletStart.Add(2*time.Minute),
					pod{file: "etcd.yaml", yaml: etcdYAML, uid: "etcd-uid", created: beforeStart, ready: true},
					pod{file: "seccomp.yaml", yaml: seccompYAML, uid: "pinned-uid", created: beforeStart, ready: true},
					pod{file: "plain.yaml", yaml: plainYAML, uid: "plain-uid", created: afterStart, ready: true})
				if code := f.run("status", "-o", format); code != 0 {
					t.Fatalf("exit %d: %s", code, f.stderr.String())
				}
				out := strings.ReplaceAll(f.stdout.String(), f.dir, "$DIR")
				out = strings.ReplaceAll(out, `"criAPIVersion": "`+apis[0]+`"`, `"criAPIVersion": "$API"`)
				out = strings.ReplaceAll(out, "CRI "+apis[0]+"\n", "CRI $API\n")
				golden.Assert(t, out, "status."+format+".golden")
			})
		}
	}
}

// Item 2: between record and the swap the file names the running kubelet;
// sweep (the hourly timer) must not delete it, even though nothing running
// needs it yet.
func TestSweepKeepsFileRecordedForPendingSwap(t *testing.T) {
	f := newFixture(t, cri.APIv1)
	f.addStaticPods("v1.18.19", pod{file: "plain.yaml", yaml: plainYAML, uid: "plain-uid", created: beforeStart, ready: true})
	f.runKubelet("v1.18.19")
	if code := f.run("record", "--kubelet-binary", f.kubeletBinary("v1.18.19")); code != 0 {
		t.Fatalf("record exit %d: %s", code, f.stderr.String())
	}
	if code := f.run("sweep"); code != ExitKept {
		t.Fatalf("sweep exit %d, want %d; stdout %q", code, ExitKept, f.stdout.String())
	}
	assertOneErrorLine(t, f.stderr.String(), "the swap it was recorded for has not happened yet")
	if _, err := os.Stat(f.compatPath()); err != nil {
		t.Errorf("the file recorded for the pending swap is gone: %v", err)
	}
}
