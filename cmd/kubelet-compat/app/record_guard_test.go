package app

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
)

const recordedV11817 = `{"apiVersion":"kubelet-compat.io/v1alpha2","kind":"UpgradeCompat","previousVersion":"v1.17.17","recordedAt":"2025-01-01T00:00:00Z"}` + "\n"

// TestRecordRefusesATargetThatIsNotARegularFile: record --file <fifo>
// blocked for ever (and ignored SIGTERM); a symlink was replaced.
func TestRecordRefusesATargetThatIsNotARegularFile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		make    func(f *fixture, path string) error
		wantErr string
	}{
		{name: "FIFO", wantErr: "is a named pipe, not a regular file", make: func(f *fixture, path string) error { return syscall.Mkfifo(path, 0644) }},
		{name: "directory", wantErr: "is a directory, not a regular file", make: func(f *fixture, path string) error { return os.Mkdir(path, 0755) }},
		{name: "symlink to a compat file", wantErr: "is a symlink, not a regular file", make: func(f *fixture, path string) error {
			f.write(path+".real", recordedV11817)
			return os.Symlink(path+".real", path)
		}},
		{name: "dangling symlink", wantErr: "is a symlink, not a regular file", make: func(f *fixture, path string) error { return os.Symlink(path+".nowhere", path) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, cri.APIv1)
			f.addStaticPods("v1.18.19", pod{file: "etcd.yaml", yaml: etcdYAML, uid: "etcd-uid", created: beforeStart, ready: true})
			path := filepath.Join(f.dir, "target")
			if err := tc.make(f, path); err != nil {
				t.Fatal(err)
			}
			before, _ := os.Lstat(path)
			record := f.start("record", "--kubelet-binary", f.kubeletBinary("v1.18.19"), "--file", path)
			code := record.wait(5 * time.Second)
			if code == -1 {
				// Unblock the reader so that the test process can go on.
				if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					w.Close()
				}
				record.wait(5 * time.Second)
				t.Fatal("record still blocked after 5s")
			}
			if code != ExitError {
				t.Fatalf("exit %d, want 1; stdout %q stderr %q", code, record.stdout.String(), record.stderr.String())
			}
			assertOneErrorLine(t, record.stderr.String(), tc.wantErr)
			after, err := os.Lstat(path)
			if err != nil || !os.SameFile(before, after) || before.Mode() != after.Mode() {
				t.Errorf("the target was replaced: %v", err)
			}
		})
	}
}

// TestRecordRefusesToReplaceAForeignFile: record --file X replaced whatever
// was at X (a KubeletConfiguration was overwritten, with a warning).
func TestRecordRefusesToReplaceAForeignFile(t *testing.T) {
	for _, tc := range []struct {
		name, content, what string
	}{
		{name: "a KubeletConfiguration", content: "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: systemd\n", what: "unparsable"},
		{name: "empty", content: "", what: "unparsable"},
		{name: "JSON of another kind", content: `{"apiVersion":"v1","kind":"ConfigMap"}`, what: `unknown apiVersion/kind "v1"/"ConfigMap"`},
		{name: "a compat file of an unknown format", content: `{"apiVersion":"kubelet-compat.io/v1alpha2","kind":"UpgradeCompat","previousVersion":"v1.17.17","recordedAt":"2025-01-01T00:00:00Z","fromTheFuture":1}`, what: "unparsable: json: unknown field"},
		{name: "a compat file without previousVersion", content: `{"apiVersion":"kubelet-compat.io/v1alpha2","kind":"UpgradeCompat","recordedAt":"2025-01-01T00:00:00Z"}`, what: "previousVersion"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, cri.APIv1)
			f.addStaticPods("v1.18.19", pod{file: "etcd.yaml", yaml: etcdYAML, uid: "etcd-uid", created: beforeStart, ready: true})
			path := filepath.Join(f.dir, "config.yaml")
			f.write(path, tc.content)
			args := []string{"record", "--kubelet-binary", f.kubeletBinary("v1.18.19"), "--file", path}
			if code := f.run(args...); code != ExitError {
				t.Fatalf("exit %d, want 1; stdout %q stderr %q", code, f.stdout.String(), f.stderr.String())
			}
			assertOneErrorLine(t, f.stderr.String(), "/config.yaml exists and is not a compat file ("+tc.what)
			assertOneErrorLine(t, f.stderr.String(), "refusing to replace it: move it away, or give --force")
			if data, _ := os.ReadFile(path); string(data) != tc.content {
				t.Errorf("the file changed: %q", data)
			}

			if code := f.run(append(args, "--force")...); code != ExitOK {
				t.Fatalf("--force: exit %d: %s", code, f.stderr.String())
			}
			if !strings.Contains(f.stderr.String(), "/config.yaml, which is not a compat file (") || !strings.Contains(f.stderr.String(), "warning: replacing ") {
				t.Errorf("--force: stderr %q lacks the warning", f.stderr.String())
			}
			if got, _, err := kubeletcompat.ReadFile(path, os.Getuid()); err != nil || got.PreviousVersion != "v1.18.19" {
				t.Errorf("--force: recorded %+v, %v", got, err)
			}
		})
	}
}

// TestRecordRemovesStaleTemporaries: a record killed while writing left
// .upgrade-compat.json.tmp-* behind for good.
func TestRecordRemovesStaleTemporaries(t *testing.T) {
	f := newFixture(t, cri.APIv1)
	f.addStaticPods("v1.18.19", pod{file: "etcd.yaml", yaml: etcdYAML, uid: "etcd-uid", created: beforeStart, ready: true})
	tmp := func(name string) string { return filepath.Join(f.rootDir, name) }
	stale := []string{tmp(".upgrade-compat.json.tmp-123456"), tmp(".upgrade-compat.json.tmp-9")}
	for _, p := range stale {
		f.write(p, `{"apiVersion":`)
	}
	kept := []string{tmp(".upgrade-compat.json.tmp-"), tmp("upgrade-compat.json.tmp-1"), tmp(".other.json.tmp-1"),
		tmp(".upgrade-compat.json.tmp-link"), tmp(".upgrade-compat.json.tmp-dir"), tmp(".upgrade-compat.json.lock")}
	for _, p := range kept[:3] {
		f.write(p, "not ours")
	}
	os.Symlink(tmp(".other.json.tmp-1"), kept[3])
	os.Mkdir(kept[4], 0755)
	if os.Getuid() == 0 {
		foreign := tmp(".upgrade-compat.json.tmp-foreign")
		f.write(foreign, "someone else's")
		os.Chown(foreign, 4321, 4321)
		kept = append(kept, foreign)
	}
	if code := f.run("record", "--kubelet-binary", f.kubeletBinary("v1.18.19")); code != ExitOK {
		t.Fatalf("exit %d: %s", code, f.stderr.String())
	}
	for _, p := range stale {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there: %v", filepath.Base(p), err)
		}
		if !strings.Contains(f.stderr.String(), "warning: removed "+p+", the temporary file of an interrupted record") {
			t.Errorf("stderr %q does not mention %s", f.stderr.String(), filepath.Base(p))
		}
	}
	for _, p := range kept {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(p), err)
		}
	}
	if _, _, err := kubeletcompat.ReadFile(f.compatPath(), os.Getuid()); err != nil {
		t.Errorf("the compat file: %v", err)
	}
}
