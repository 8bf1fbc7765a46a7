package kubeletcompat

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Item 1: record run again before the swap names the running kubelet as
// previous; the history must keep protecting the containers kept before.
func TestRecordAgainKeepsHistory(t *testing.T) {
	spec := seccompContainer()
	n := newNode(t)
	n.recordContainers("v1.21.14", map[string]string{"c1": "v1.20.15", "c2": "v1.21.14"})
	running := RunningContainer{ID: "c1", Hash: mustHash(t, "v1.20.15", spec), CreatedAt: beforeStart}
	if d := n.compat("v1.21.14", time.Hour).Decide(spec, running); !d.Keep {
		t.Errorf("container kept from the last upgrade restarted after record ran again: %+v", d)
	}
}

// Item 5: a restarted patched kubelet must not treat containers created by
// the patched kubelet before its restart as legacy.
func TestRestartedKubeletDoesNotHideChange(t *testing.T) {
	old := seccompContainer()
	old.SecurityContext = nil
	old.LivenessProbe.TerminationGracePeriodSeconds = nil
	changed := old.DeepCopy()
	changed.LivenessProbe.TerminationGracePeriodSeconds = int64Ptr(10) // a field 1.20 does not know
	created := RunningContainer{ID: "c-new", Hash: mustHash(t, "v1.21.14", old), CreatedAt: afterStart}
	n := newNode(t)
	n.record("v1.20.15")
	restarted := New(Config{Path: n.path, KubeletVersion: "v1.21.14", StartTime: afterStart.Add(time.Hour), OwnerUID: os.Getuid()})
	if d := restarted.Decide(changed, created); d.Keep {
		t.Errorf("genuine change hidden after a kubelet restart: %+v", d)
	}
}

// Item 9: an ancient history entry must not switch off hash checking for
// containers of JSON-era kubelets.
func TestAncientHistoryKeepsHashCheck(t *testing.T) {
	spec := seccompContainer()
	running := RunningContainer{ID: "c1", Hash: mustHash(t, "v1.20.15", spec), CreatedAt: beforeStart, Image: spec.Image}
	changed := spec.DeepCopy()
	changed.Command = []string{"rm", "-rf", "/data"}
	n := newNode(t)
	n.recordContainers("v1.20.15", map[string]string{"c1": "v1.20.15", "c2": "v1.15.12"})
	if d := n.compat("v1.21.14", time.Hour).Decide(changed, running); d.Keep {
		t.Errorf("command change kept: %+v", d)
	}
}

// Item 4: a failure to open the file (EMFILE) must be retried, not cached.
func TestTransientReadFailureRetried(t *testing.T) {
	spec := seccompContainer()
	running := RunningContainer{ID: "c1", Hash: mustHash(t, "v1.20.15", spec), CreatedAt: beforeStart}
	n := newNode(t)
	n.record("v1.20.15")
	c := n.compat("v1.21.14", time.Nanosecond)

	var lim syscall.Rlimit
	must(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	low := lim
	low.Cur = 0 // no descriptor may be opened: the next open fails with EMFILE
	must(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low))
	d := c.Decide(spec, running)
	must(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim))
	if d.Keep {
		t.Skip("the open did not fail under the lowered limit")
	}
	if d := c.Decide(spec, running); !d.Keep {
		t.Errorf("a read failure was cached until the file changes: %+v", d)
	}
}

// Item 10: a FIFO swapped in between check and open must never block.
func TestFIFOSwapNeverBlocks(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, DefaultFileName)
	must(t, WriteFile(path, testFile()))
	data, err := os.ReadFile(path)
	must(t, err)
	stop := make(chan struct{})
	swapped := make(chan struct{})
	go func() {
		defer close(swapped)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			tmp := filepath.Join(dir, fmt.Sprintf("tmp%d", i))
			if i%2 == 0 {
				if syscall.Mkfifo(tmp, 0644) != nil {
					continue
				}
			} else if os.WriteFile(tmp, data, 0644) != nil {
				continue
			}
			os.Rename(tmp, path)
		}
	}()
	defer func() {
		close(stop)
		<-swapped
	}()
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		done := make(chan struct{})
		go func() {
			ReadFile(path, os.Getuid())
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			// Unblock the reader so the test binary can exit.
			if fh, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				fh.Close()
			}
			t.Fatal("ReadFile blocked on a FIFO swapped in after the check")
		}
	}
}

// Item 11: what encoding/json quietly accepts must be refused.
func TestParseStrictKeys(t *testing.T) {
	tests := []struct {
		name, edit, want string
	}{
		{name: "duplicate key", edit: `"previousVersion": "v1.21.14", "previousVersion"`, want: "twice"},
		{name: "case-variant key", edit: `"PreviousVersion"`, want: "previousVersion"},
		{name: "case-variant duplicate", edit: `"previousversion": "v1.21.14", "previousVersion"`, want: "previousVersion"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := strings.Replace(validFileJSON, `"previousVersion"`, tt.edit, 1)
			if _, err := Parse([]byte(data)); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	nested := strings.Replace(validFileJSON, `"uid": "0f1e2d3c"`, `"uid": "0f1e2d3c", "uid": "other"`, 1)
	if _, err := Parse([]byte(nested)); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("Parse(duplicate key in a static pod) = %v", err)
	}
}

func TestValidateStaticPodUIDs(t *testing.T) {
	for _, tt := range []struct {
		name string
		uids []string
		want string
	}{
		{name: "duplicate", uids: []string{"a1", "a1"}, want: "uid"},
		{name: "path", uids: []string{"../../etc"}, want: "uid"},
		{name: "slash", uids: []string{"a/b"}, want: "uid"},
		{name: "dot", uids: []string{"."}, want: "uid"},
		{name: "control character", uids: []string{"a\nb"}, want: "uid"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := testFile()
			f.StaticPods = nil
			for i, uid := range tt.uids {
				f.StaticPods = append(f.StaticPods, StaticPod{ManifestPath: fmt.Sprintf("/etc/kubernetes/manifests/p%d.yaml", i), SHA256: testSHA, UID: uid})
			}
			if err := f.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestWriteFileRefusesWhatReadFileRefuses(t *testing.T) {
	f := testFile()
	f.StaticPods = nil
	for i := 0; len(f.StaticPods)*150 < MaxFileSize+1024; i++ {
		f.StaticPods = append(f.StaticPods, StaticPod{ManifestPath: fmt.Sprintf("/etc/kubernetes/manifests/pod-with-a-long-name-%08d.yaml", i), SHA256: testSHA, UID: fmt.Sprintf("uid-%08d", i)})
	}
	path := filepath.Join(t.TempDir(), DefaultFileName)
	err := WriteFile(path, f)
	if err == nil {
		if _, _, rerr := ReadFile(path, os.Getuid()); rerr != nil {
			t.Fatalf("WriteFile wrote a file that ReadFile refuses: %v", rerr)
		}
	}
	if err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("WriteFile = %v, want a size refusal", err)
	}
	if _, serr := os.Stat(path); !os.IsNotExist(serr) {
		t.Errorf("an oversized file was left at %s", path)
	}
}

// Majors other than 1 are refused outright.
func TestValidateRefusesOtherMajors(t *testing.T) {
	for _, v := range []string{"v0.9.9", "v2.0.0"} {
		f := testFile()
		f.PreviousVersion = v
		if err := f.Validate(); err == nil || !strings.Contains(err.Error(), "major") {
			t.Errorf("previousVersion %s: Validate = %v", v, err)
		}
		f = testFile()
		f.Containers = []Container{{ID: "c1", HashVersion: v}}
		if err := f.Validate(); err == nil || !strings.Contains(err.Error(), "major") {
			t.Errorf("hashVersion %s: Validate = %v", v, err)
		}
	}
}

// Decide answers for the running kubelet's minor, not for the newer types
// the CLI decodes specs with: a field the running kubelet does not know
// (a newer API server may set it) does not enter its hash.
func TestDecideHashesAsTheRunningMinor(t *testing.T) {
	spec := seccompContainer() // its probe sets terminationGracePeriodSeconds, unknown to 1.20
	running := RunningContainer{ID: "c9", Hash: mustHash(t, "v1.20.15", spec), CreatedAt: beforeStart}
	n := newNode(t)
	if d := n.compat("v1.20.15", time.Hour).Decide(spec, running); !d.Keep || d.Reason != "hash matches" {
		t.Errorf("Decide = %+v, want the running 1.20 kubelet's own hash to match", d)
	}
}
