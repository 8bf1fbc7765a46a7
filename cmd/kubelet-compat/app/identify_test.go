package app

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
)

const impostorPID = 666

// runImpostor makes the fake /proc show a process named kubelet whose
// executable is a script that, if anyone ran it, would leave a marker file.
// uid is its real and effective uid, hostNS whether it shares PID 1's PID
// namespace. It returns the marker's path.
func (f *fixture) runImpostor(uid int, hostNS bool) string {
	f.t.Helper()
	marker := filepath.Join(f.dir, "impostor-was-executed")
	script := filepath.Join(f.dir, "pod-rootfs", "kubelet")
	f.write(script, "#!/bin/sh\ntouch "+marker+"\necho Kubernetes v1.19.16\n")
	os.Chmod(script, 0755)
	pd := filepath.Join(f.procRoot, strconv.Itoa(impostorPID))
	f.write(filepath.Join(pd, "comm"), "kubelet\n")
	f.write(filepath.Join(pd, "stat"), strconv.Itoa(impostorPID)+" (kubelet) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100000 1 1\n")
	u := strconv.Itoa(uid)
	f.write(filepath.Join(pd, "status"), "Name:\tkubelet\nUid:\t"+u+"\t"+u+"\t"+u+"\t"+u+"\n")
	ns := "pid:[4026532999]"
	if hostNS {
		ns = hostPIDNamespace
	}
	os.MkdirAll(filepath.Join(pd, "ns"), 0755)
	os.Symlink(ns, filepath.Join(pd, "ns", "pid"))
	if err := os.Symlink(script, filepath.Join(pd, "exe")); err != nil {
		f.t.Fatal(err)
	}
	return marker
}

// TestImpostorKubeletIsNeverExecuted: sweep, run as the shipped service
// runs it (no --kubelet-pid), executed /proc/<pid>/exe --version of any
// process named kubelet, as root.
func TestImpostorKubeletIsNeverExecuted(t *testing.T) {
	for _, tc := range []struct {
		name        string
		uid         int
		hostNS      bool
		realKubelet bool
		args        []string
		wantErr     string // "" when the real kubelet is found
	}{
		{name: "a pod's process, the kubelet down", uid: 1000, wantErr: "no running kubelet"},
		{name: "a root process in the host PID namespace running another binary", uid: 0, hostNS: true, wantErr: "no running kubelet"},
		{name: "a pod's process next to the real kubelet", uid: 1000, realKubelet: true},
		{name: "a host root process next to the real kubelet", uid: 0, hostNS: true, realKubelet: true},
		{name: "--kubelet-pid naming it", uid: 0, hostNS: true, args: []string{"--kubelet-pid", strconv.Itoa(impostorPID)}, wantErr: "is not the kubelet binary"},
	} {
		for _, command := range []string{"sweep", "status", "record"} {
			t.Run(tc.name+"/"+command, func(t *testing.T) {
				f := newFixture(t, cri.APIv1)
				f.addStaticPods("v1.18.19", pod{file: "plain.yaml", yaml: plainYAML, uid: "plain-uid", created: afterStart, ready: true})
				f.write(f.compatPath(), `{"apiVersion":"kubelet-compat.io/v1alpha2","kind":"UpgradeCompat","previousVersion":"v1.18.19","recordedAt":"2025-01-01T00:00:00Z"}`+"\n")
				f.selectKubelet("v1.19.16") // installed, maybe not running
				if tc.realKubelet {
					f.runKubelet("v1.19.16")
				}
				marker := f.runImpostor(tc.uid, tc.hostNS)
				code := f.run(append([]string{command}, tc.args...)...)
				if _, err := os.Stat(marker); err == nil {
					t.Fatalf("the impostor's executable was run (exit %d, stderr %q)", code, f.stderr.String())
				}
				if tc.wantErr != "" {
					if code != ExitError {
						t.Fatalf("exit %d, want 1; stdout %q", code, f.stdout.String())
					}
					assertOneErrorLine(t, f.stderr.String(), tc.wantErr)
					return
				}
				if code == ExitError {
					t.Fatalf("exit 1: %s", f.stderr.String())
				}
				if command == "status" && !strings.Contains(f.stdout.String(), "(pid "+strconv.Itoa(kubeletPID)+")") {
					t.Errorf("status chose another process: %q", f.stdout.String())
				}
			})
		}
	}
}

const hostPIDNamespace = "pid:[4026531836]"

// TestKubeletIdentification: how status, sweep and record find the kubelet
// and its version through the CLI's flags.
func TestKubeletIdentification(t *testing.T) {
	for _, tc := range []struct {
		name     string
		setup    func(f *fixture) []string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{name: "the default binary, found by the process scan", wantOut: "kubelet v1.19.16 (pid 4242)",
			setup: func(f *fixture) []string { return nil }},
		{name: "a pidfile", wantOut: "kubelet v1.19.16 (pid 4242)", setup: func(f *fixture) []string {
			f.write(filepath.Join(f.dir, "kubelet.pid"), strconv.Itoa(kubeletPID)+"\n")
			return []string{"--kubelet-pidfile", filepath.Join(f.dir, "kubelet.pid")}
		}},
		{name: "systemd's main PID", wantOut: "kubelet v1.19.16 (pid 4242)", setup: func(f *fixture) []string {
			os.MkdirAll(filepath.Join(f.dir, "run", "systemd", "system"), 0755)
			f.write(filepath.Join(f.dir, "bin", "systemctl"), "#!/bin/sh\necho "+strconv.Itoa(kubeletPID)+"\n")
			os.Chmod(filepath.Join(f.dir, "bin", "systemctl"), 0755)
			return nil
		}},
		{name: "systemd runs, systemctl fails", wantCode: ExitError, setup: func(f *fixture) []string {
			os.MkdirAll(filepath.Join(f.dir, "run", "systemd", "system"), 0755)
			return nil // the fixture's systemctl does not exist
		}, wantErr: "asking systemd for the main PID of kubelet.service"},
		{name: "binary replaced, kubelet not restarted", wantCode: ExitError, setup: func(f *fixture) []string {
			f.selectKubelet("v1.20.15")
			return nil
		}, wantErr: "no running kubelet: no process of the host PID namespace runs " + "$DIR/bin/kubelet-v1.20.15 as root"},
		{name: "binary replaced, --kubelet-pid", wantCode: ExitError, setup: func(f *fixture) []string {
			f.selectKubelet("v1.20.15")
			return []string{"--kubelet-pid", strconv.Itoa(kubeletPID)}
		}, wantErr: `kubelet pid 4242 (--kubelet-pid) runs "$DIR/bin/kubelet-v1.19.16", which is not the kubelet binary $DIR/bin/kubelet-v1.20.15 (replaced without restarting the kubelet?)`},
		{name: "the binary the kubelet runs, given", wantOut: "kubelet v1.19.16 (pid 4242)", setup: func(f *fixture) []string {
			f.selectKubelet("v1.20.15")
			return []string{"--kubelet-binary", f.kubeletBinary("v1.19.16")}
		}},
		{name: "a group-writable binary", wantCode: ExitError, setup: func(f *fixture) []string {
			os.Chmod(f.kubeletBinary("v1.19.16"), 0775)
			return nil
		}, wantErr: "writable by group or others (mode -rwxrwxr-x): refusing to run it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, cri.APIv1)
			f.runKubelet("v1.19.16")
			args := append([]string{"status"}, tc.setup(f)...)
			code := f.run(args...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stdout %q stderr %q", code, tc.wantCode, f.stdout.String(), f.stderr.String())
			}
			if tc.wantErr != "" {
				assertOneErrorLine(t, strings.ReplaceAll(f.stderr.String(), f.dir, "$DIR"), tc.wantErr)
			}
			if !strings.Contains(f.stdout.String(), tc.wantOut) {
				t.Errorf("stdout %q lacks %q", f.stdout.String(), tc.wantOut)
			}
		})
	}
}

// TestSweepKeepsTheFileWhenTheKubeletRunsAnotherBinary: between the swap of
// /usr/bin/kubelet and the kubelet's restart, sweep cannot know the version
// that runs, and deletes nothing.
func TestSweepKeepsTheFileWhenTheKubeletRunsAnotherBinary(t *testing.T) {
	f := upgraded(t, []string{cri.APIv1}, pod{file: "plain.yaml", yaml: plainYAML, uid: "plain-uid", created: beforeStart, ready: true})
	f.selectKubelet("v1.20.15")
	if code := f.run("sweep"); code != ExitError {
		t.Fatalf("exit %d, want 1: %s", code, f.stdout.String())
	}
	assertOneErrorLine(t, f.stderr.String(), "no running kubelet")
	if _, err := os.Stat(f.compatPath()); err != nil {
		t.Errorf("the file was removed: %v", err)
	}
}
