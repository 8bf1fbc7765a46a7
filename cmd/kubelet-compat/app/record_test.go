package app

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestRecord(t *testing.T) {
	for _, apis := range apiVersions {
		t.Run(apiName(apis), func(t *testing.T) {
			f := newFixture(t, apis...)
			f.addStaticPods("v1.18.19",
				pod{file: "etcd.yaml", yaml: etcdYAML, uid: "etcd-uid", created: beforeStart, ready: true},
				pod{file: "seccomp.yaml", yaml: seccompYAML, uid: "pinned-uid", created: beforeStart, ready: true})
			f.write(filepath.Join(f.manifestDir, ".etcd.yaml.swp"), "not a manifest") // skipped like the kubelet does
			if code := f.run("record", "--kubelet-binary", f.kubeletBinary("v1.18.19")); code != 0 {
				t.Fatalf("record exit %d: %s", code, f.stderr.String())
			}
			got, fi, err := kubeletcompat.ReadFile(f.compatPath(), os.Getuid())
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0644 {
				t.Errorf("mode %v, want 0644", fi.Mode().Perm())
			}
			if got.PreviousVersion != "v1.18.19" || !got.RecordedAt.Equal(now) || len(got.StaticPods) != 2 {
				t.Fatalf("recorded %+v", got)
			}
			etcd, _ := os.ReadFile(filepath.Join(f.manifestDir, "etcd.yaml"))
			want := kubeletcompat.StaticPod{ManifestPath: filepath.Join(f.manifestDir, "etcd.yaml"), SHA256: kubeletcompat.ManifestSHA256(etcd), UID: "etcd-uid"}
			if !reflect.DeepEqual(got.StaticPods[0], want) || got.StaticPods[1].UID != "pinned-uid" {
				t.Errorf("static pods %+v, want first %+v", got.StaticPods, want)
			}
			wantContainers := []kubeletcompat.Container{{ID: "c-etcd-uid-etcd", HashVersion: "v1.18.19"}, {ID: "c-pinned-uid-app", HashVersion: "v1.18.19"}}
			if len(got.Containers) != 2 || got.Containers[0] != wantContainers[0] || got.Containers[1] != wantContainers[1] {
				t.Errorf("containers %+v, want %+v", got.Containers, wantContainers)
			}
			for _, s := range []string{"previous kubelet v1.18.19", "2 container(s), 2 static pod(s)", "kube-system/etcd-node-1  uid etcd-uid"} {
				if !strings.Contains(f.stdout.String(), s) {
					t.Errorf("stdout %q lacks %q", f.stdout.String(), s)
				}
			}
		})
	}
}

// TestRecordCarriesHashVersions: a container kept through the 1.18 -> 1.19
// upgrade still carries 1.18's hash at 1.19 -> 1.20, so the new record keeps
// what the file it replaces says of it; record run again before the swap
// must not lose it either.
func TestRecordCarriesHashVersions(t *testing.T) {
	const etcd = "c-etcd-uid-etcd"
	for _, tc := range []struct {
		name, existing, recorded string
		mode                     os.FileMode
		want                     string // etcd's hash version
		wantOlder, wantWarning   string
	}{
		{name: "no file before", recorded: "v1.19.16", want: "v1.19.16"},
		{name: "one upgrade before", existing: `"previousVersion":"v1.18.19","containers":[{"id":"` + etcd + `","hashVersion":"v1.18.19"}]`,
			recorded: "v1.19.16", want: "v1.18.19", wantOlder: "carry hashes of v1.18.19"},
		{name: "two upgrades before", existing: `"previousVersion":"v1.19.16","containers":[{"id":"` + etcd + `","hashVersion":"v1.18.19"},{"id":"gone","hashVersion":"v1.19.16"}]`,
			recorded: "v1.20.15", want: "v1.18.19"},
		{name: "recorded again before the swap", existing: `"previousVersion":"v1.19.16","containers":[{"id":"` + etcd + `","hashVersion":"v1.18.19"}]`,
			recorded: "v1.19.16", want: "v1.18.19"},
		{name: "not listed before", existing: `"previousVersion":"v1.18.19","containers":[{"id":"other","hashVersion":"v1.18.19"}]`,
			recorded: "v1.19.16", want: "v1.19.16"},
		{name: "existing file the kubelet ignores", existing: `"previousVersion":"v1.18.19","containers":[{"id":"` + etcd + `","hashVersion":"v1.18.19"}]`,
			mode: 0666, recorded: "v1.19.16", want: "v1.19.16", wantWarning: "the kubelet ignores the existing file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, cri.APIv1)
			f.addStaticPods(tc.recorded, pod{file: "etcd.yaml", yaml: etcdYAML, uid: "etcd-uid", created: beforeStart, ready: true})
			if tc.existing != "" {
				f.write(f.compatPath(), `{"apiVersion":"kubelet-compat.io/v1alpha2","kind":"UpgradeCompat",`+tc.existing+`,"recordedAt":"2025-01-01T00:00:00Z"}`+"\n")
				if tc.mode != 0 {
					if err := os.Chmod(f.compatPath(), tc.mode); err != nil {
						t.Fatal(err)
					}
				}
			}
			if code := f.run("record", "--kubelet-binary", f.kubeletBinary(tc.recorded)); code != 0 {
				t.Fatalf("record exit %d: %s", code, f.stderr.String())
			}
			got, _, err := kubeletcompat.ReadFile(f.compatPath(), os.Getuid())
			if err != nil {
				t.Fatal(err)
			}
			want := []kubeletcompat.Container{{ID: etcd, HashVersion: tc.want}}
			if got.PreviousVersion != tc.recorded || len(got.Containers) != 1 || got.Containers[0] != want[0] {
				t.Errorf("recorded %s with %+v, want %s with %+v", got.PreviousVersion, got.Containers, tc.recorded, want)
			}
			if tc.wantOlder != "" && !strings.Contains(f.stdout.String(), tc.wantOlder) {
				t.Errorf("stdout %q lacks %q", f.stdout.String(), tc.wantOlder)
			}
			if tc.wantWarning != "" && !strings.Contains(f.stderr.String(), tc.wantWarning) {
				t.Errorf("stderr %q lacks %q", f.stderr.String(), tc.wantWarning)
			}
		})
	}
}

func TestRecordFromRunningKubelet(t *testing.T) {
	f := newFixture(t, cri.APIv1alpha2)
	f.addStaticPods("v1.20.15", pod{file: "etcd.yaml", yaml: etcdYAML, uid: "etcd-uid", created: beforeStart, ready: true})
	f.runKubelet("v1.20.15")
	if code := f.run("record"); code != 0 {
		t.Fatalf("record exit %d: %s", code, f.stderr.String())
	}
	got, _, err := kubeletcompat.ReadFile(f.compatPath(), os.Getuid())
	if err != nil || got.PreviousVersion != "v1.20.15" {
		t.Fatalf("recorded %+v, %v", got, err)
	}
}

func TestRecordSandboxMatching(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pods    []pod
		wantUID string
		wantErr string
		warn    string
	}{
		{name: "ready wins over an old not-ready sandbox", wantUID: "new",
			pods: []pod{{file: "etcd.yaml", yaml: etcdYAML, uid: "old", created: beforeStart}, {file: "etcd.yaml", yaml: etcdYAML, uid: "new", created: beforeStart, ready: true}}},
		{name: "only not-ready sandboxes of one UID", wantUID: "old",
			pods: []pod{{file: "etcd.yaml", yaml: etcdYAML, uid: "old", created: beforeStart}}},
		{name: "two ready UIDs are ambiguous", wantErr: "matches sandboxes of 2 UIDs (a, b); refusing to guess",
			pods: []pod{{file: "etcd.yaml", yaml: etcdYAML, uid: "a", created: beforeStart, ready: true}, {file: "etcd.yaml", yaml: etcdYAML, uid: "b", created: beforeStart, ready: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, cri.APIv1)
			f.addStaticPods("v1.18.19", tc.pods...)
			code := f.run("record", "--kubelet-binary", f.kubeletBinary("v1.18.19"))
			if tc.wantErr != "" {
				if code != ExitError {
					t.Fatalf("exit %d, want 1", code)
				}
				assertOneErrorLine(t, f.stderr.String(), tc.wantErr)
				if _, err := os.Stat(f.compatPath()); !os.IsNotExist(err) {
					t.Errorf("a compat file was written: %v", err)
				}
				return
			}
			if code != 0 {
				t.Fatalf("exit %d: %s", code, f.stderr.String())
			}
			got, _, err := kubeletcompat.ReadFile(f.compatPath(), os.Getuid())
			if err != nil || len(got.StaticPods) != 1 || got.StaticPods[0].UID != tc.wantUID {
				t.Errorf("recorded %+v, %v; want uid %s", got, err, tc.wantUID)
			}
		})
	}
}

func TestRecordSkipsManifestWithoutSandbox(t *testing.T) {
	f := newFixture(t, cri.APIv1)
	f.write(filepath.Join(f.manifestDir, "etcd.yaml"), etcdYAML)
	if code := f.run("record", "--kubelet-binary", f.kubeletBinary("v1.18.19")); code != 0 {
		t.Fatalf("exit %d: %s", code, f.stderr.String())
	}
	if !strings.Contains(f.stderr.String(), "warning: ") || !strings.Contains(f.stderr.String(), "no sandbox of static pod kube-system/etcd-node-1") {
		t.Errorf("stderr %q lacks the warning", f.stderr.String())
	}
	got, _, err := kubeletcompat.ReadFile(f.compatPath(), os.Getuid())
	if err != nil || len(got.StaticPods) != 0 {
		t.Errorf("recorded %+v, %v", got, err)
	}
}

// record must fail as a whole: no file when there was none, the old file
// byte for byte when there was one.
func TestRecordFailuresLeaveNoPartialFile(t *testing.T) {
	previous := []byte(`{"apiVersion":"kubelet-compat.io/v1alpha2","kind":"UpgradeCompat","previousVersion":"v1.17.17","recordedAt":"2025-01-01T00:00:00Z"}` + "\n")
	for _, tc := range []struct {
		name    string
		setup   func(f *fixture) []string
		wantErr string
	}{
		{name: "CRI error midway", wantErr: "CRI ListPodSandbox at unix://", setup: func(f *fixture) []string {
			f.srv.Fail("ListPodSandbox", status.Error(codes.Internal, "disk on fire"))
			return nil
		}},
		{name: "no CRI socket", wantErr: "no CRI socket at /nonexistent/containerd.sock", setup: func(f *fixture) []string {
			return []string{"--runtime-endpoint", "unix:///nonexistent/containerd.sock"}
		}},
		{name: "malformed manifest", wantErr: "bad.yaml: not YAML or JSON", setup: func(f *fixture) []string {
			f.write(filepath.Join(f.manifestDir, "bad.yaml"), "kind: [Pod\n")
			return nil
		}},
		{name: "manifest of another kind", wantErr: "want a v1 Pod, got apps/v1 Deployment", setup: func(f *fixture) []string {
			f.write(filepath.Join(f.manifestDir, "deploy.yaml"), "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n")
			return nil
		}},
		{name: "unknown kubelet version", wantErr: "kubelet v1.39.0 is not a version kubelet-compat knows", setup: func(f *fixture) []string {
			return []string{"--kubelet-binary", f.kubeletBinary("v1.39.0")}
		}},
		{name: "unparsable kubelet version", wantErr: "unexpected `--version` output", setup: func(f *fixture) []string {
			return []string{"--kubelet-binary", f.kubeletBinary("")}
		}},
		{name: "no kubelet running and no binary", wantErr: "no running kubelet: no process of the host PID namespace runs", setup: func(f *fixture) []string {
			f.selectKubelet("v1.18.19")
			return []string{"--kubelet-binary", ""}
		}},
		{name: "no kubelet binary", wantErr: "/usr/bin/kubelet does not exist (give --kubelet-binary)", setup: func(f *fixture) []string {
			return []string{"--kubelet-binary", ""}
		}},
		{name: "file records a newer kubelet", wantErr: "already records kubelet v1.21.14, newer than v1.18.19: refusing", setup: func(f *fixture) []string {
			f.write(f.compatPath(), `{"apiVersion":"kubelet-compat.io/v1alpha2","kind":"UpgradeCompat","previousVersion":"v1.21.14","recordedAt":"2025-01-01T00:00:00Z"}`+"\n")
			return nil
		}},
	} {
		for _, existing := range []bool{false, true} {
			name := tc.name + map[bool]string{false: ", no file before", true: ", file before"}[existing]
			t.Run(name, func(t *testing.T) {
				f := newFixture(t, cri.APIv1)
				f.addStaticPods("v1.18.19", pod{file: "etcd.yaml", yaml: etcdYAML, uid: "etcd-uid", created: beforeStart, ready: true})
				if existing {
					f.write(f.compatPath(), string(previous))
				}
				args := append([]string{"record", "--kubelet-binary", f.kubeletBinary("v1.18.19")}, tc.setup(f)...)
				before, _ := os.ReadFile(f.compatPath())
				if code := f.run(args...); code != ExitError {
					t.Fatalf("exit %d, want 1; stderr %s", code, f.stderr.String())
				}
				assertOneErrorLine(t, f.stderr.String(), tc.wantErr)
				after, err := os.ReadFile(f.compatPath())
				if len(before) == 0 {
					if !os.IsNotExist(err) {
						t.Errorf("a compat file appeared: %q", after)
					}
				} else if string(after) != string(before) {
					t.Errorf("the existing file changed:\n%s\nwas\n%s", after, before)
				}
				entries, _ := os.ReadDir(f.rootDir)
				for _, e := range entries {
					if strings.Contains(e.Name(), ".tmp-") {
						t.Errorf("temporary file left behind: %s", e.Name())
					}
				}
			})
		}
	}
}

func TestRecordManifestDir(t *testing.T) {
	f := newFixture(t, cri.APIv1)
	if code := f.run("record", "--kubelet-binary", f.kubeletBinary("v1.18.19"), "--manifest-dir", f.dir+"/missing"); code != ExitError {
		t.Errorf("an explicit missing --manifest-dir: exit %d", code)
	}
	assertOneErrorLine(t, f.stderr.String(), "reading manifest directory")
}
