package kubeletcompat

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const validFileJSON = `{
  "apiVersion": "kubelet-compat.io/v1alpha2",
  "kind": "UpgradeCompat",
  "previousVersion": "v1.20.15",
  "recordedAt": "2026-11-29T10:00:00Z",
  "containers": [
    {"id": "4f1c7a", "hashVersion": "v1.20.15"},
    {"id": "9e2b10", "hashVersion": "v1.19.16"}
  ],
  "staticPods": [
    {"manifestPath": "/etc/kubernetes/manifests/web.yaml", "sha256": "` + testSHA + `", "uid": "0f1e2d3c"}
  ]
}
`

const testSHA = "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(string) string
		wantErr string
	}{
		{name: "valid"},
		{name: "no static pods", edit: func(s string) string {
			return `{"apiVersion":"kubelet-compat.io/v1alpha2","kind":"UpgradeCompat","previousVersion":"v1.18.19","recordedAt":"2026-11-29T10:00:00Z"}`
		}},
		{name: "build metadata", edit: replace(`"v1.20.15"`, `"v1.20.15+compat.1"`)},
		{name: "container of an older kubelet", edit: replace(`"v1.19.16"`, `"v1.18.19+compat.1"`)},
		// Recorded again on a kubelet rolled back from a newer one.
		{name: "container of a newer kubelet", edit: replace(`"v1.19.16"`, `"v1.21.14"`)},
		{name: "container of a newer major", edit: replace(`"v1.19.16"`, `"v2.0.0"`), wantErr: "containers[1]: hashVersion: v2.0.0: major version 2"},
		{name: "container hash version unparsable", edit: replace(`"v1.19.16"`, `"1.19"`), wantErr: "containers[1]: hashVersion"},
		{name: "spec hash", edit: replace(`"hashVersion": "v1.19.16"}`, `"hashVersion": "v1.19.16", "specHash": "00ff00ff00ff00ff"}`)},
		{name: "spec hash uppercase", edit: replace(`"hashVersion": "v1.19.16"}`, `"hashVersion": "v1.19.16", "specHash": "00FF00FF00FF00FF"}`), wantErr: "containers[1]: specHash"},
		{name: "spec hash short", edit: replace(`"hashVersion": "v1.19.16"}`, `"hashVersion": "v1.19.16", "specHash": "ff"}`), wantErr: "containers[1]: specHash"},
		{name: "container listed twice", edit: replace(`"9e2b10"`, `"4f1c7a"`), wantErr: "listed twice"},
		{name: "container id with a slash", edit: replace(`"9e2b10"`, `"../9e2b10"`), wantErr: "containers[1]: id"},
		{name: "container id empty", edit: replace(`"9e2b10"`, `""`), wantErr: "containers[1]: id"},
		{name: "v1alpha1", edit: replace("v1alpha2", "v1alpha1"), wantErr: "unknown apiVersion"},
		{name: "not json", edit: func(string) string { return "apiVersion: v1" }, wantErr: "unparsable"},
		{name: "empty", edit: func(string) string { return "" }, wantErr: "unparsable"},
		{name: "trailing data", edit: func(s string) string { return s + "{}" }, wantErr: "trailing data"},
		{name: "unknown field", edit: replace(`"kind"`, `"extra": 1, "kind"`), wantErr: "unknown field"},
		{name: "unknown apiVersion", edit: replace("v1alpha2", "v2"), wantErr: "unknown apiVersion"},
		{name: "unknown kind", edit: replace(`"UpgradeCompat"`, `"Other"`), wantErr: "unknown apiVersion/kind"},
		{name: "bad previous version", edit: replace(`"v1.20.15"`, `"1.20"`), wantErr: "previousVersion"},
		{name: "missing recordedAt", edit: replace(`"recordedAt": "2026-11-29T10:00:00Z",`, ``), wantErr: "recordedAt"},
		{name: "bad recordedAt", edit: replace(`2026-11-29T10:00:00Z`, `yesterday`), wantErr: "unparsable"},
		{name: "relative manifest path", edit: replace(`/etc/kubernetes/manifests/web.yaml`, `manifests/web.yaml`), wantErr: "absolute clean path"},
		{name: "unclean manifest path", edit: replace(`/etc/kubernetes/manifests/web.yaml`, `/etc/kubernetes/../kubernetes/manifests/web.yaml`), wantErr: "absolute clean path"},
		{name: "uppercase sha", edit: replace(testSHA, strings.ToUpper(testSHA)), wantErr: "sha256"},
		{name: "short sha", edit: replace(testSHA, testSHA[:10]), wantErr: "sha256"},
		{name: "empty uid", edit: replace(`"0f1e2d3c"`, `""`), wantErr: "uid"},
		{name: "static pod status", edit: replace(`"uid": "0f1e2d3c"}`, `"uid": "0f1e2d3c", "ready": true, "containers": [{"name": "app", "containerID": "containerd://4f1c7a", "ready": true, "started": true}, {"name": "side-1", "containerID": "cri-o://9e2b10"}]}`)},
		{name: "static container name not a DNS label", edit: replace(`"uid": "0f1e2d3c"}`, `"uid": "0f1e2d3c", "containers": [{"name": "App", "containerID": "containerd://4f1c7a"}]}`), wantErr: "staticPods[0]: containers[0]: name"},
		{name: "static container listed twice", edit: replace(`"uid": "0f1e2d3c"}`, `"uid": "0f1e2d3c", "containers": [{"name": "app", "containerID": "containerd://4f1c7a"}, {"name": "app", "containerID": "containerd://9e2b10"}]}`), wantErr: "staticPods[0]: containers[1]: name app listed twice"},
		{name: "static container id without runtime", edit: replace(`"uid": "0f1e2d3c"}`, `"uid": "0f1e2d3c", "containers": [{"name": "app", "containerID": "4f1c7a"}]}`), wantErr: "staticPods[0]: containers[0]: containerID"},
		{name: "static container id with a slash", edit: replace(`"uid": "0f1e2d3c"}`, `"uid": "0f1e2d3c", "containers": [{"name": "app", "containerID": "containerd://../4f1c7a"}]}`), wantErr: "staticPods[0]: containers[0]: containerID"},
		{name: "static container unknown field", edit: replace(`"uid": "0f1e2d3c"}`, `"uid": "0f1e2d3c", "containers": [{"name": "app", "containerID": "containerd://4f1c7a", "restartCount": 1}]}`), wantErr: "unknown field"},
		{name: "duplicate manifest", edit: replace(`"uid": "0f1e2d3c"}`, `"uid": "0f1e2d3c"}, {"manifestPath": "/etc/kubernetes/manifests/web.yaml", "sha256": "`+testSHA+`", "uid": "x"}`), wantErr: "listed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := validFileJSON
			if tt.edit != nil {
				data = tt.edit(data)
			}
			f, err := Parse([]byte(data))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if f.PreviousVersion == "" || f.RecordedAt.IsZero() {
					t.Fatalf("Parse returned an incomplete file: %+v", f)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Parse error = %v, want one containing %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}

func replace(old, new string) func(string) string {
	return func(s string) string {
		if !strings.Contains(s, old) {
			panic("test edit does not apply: " + old)
		}
		return strings.Replace(s, old, new, 1)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(validFileJSON))
	f.Add([]byte(`{"apiVersion":"kubelet-compat.io/v1alpha2","kind":"UpgradeCompat","previousVersion":"v1.18.19","recordedAt":"2026-11-29T10:00:00Z"}`))
	f.Add([]byte(`{"apiVersion":"kubelet-compat.io/v1alpha2","kind":"UpgradeCompat","previousVersion":"v1.18.19-rc.0+x","recordedAt":"2026-11-29T10:00:00Z","staticPods":null}`))
	f.Add([]byte(`{"apiVersion":"kubelet-compat.io/v1alpha2","kind":"UpgradeCompat","previousVersion":"v1.20.15","containers":[{"id":"a","hashVersion":"v1.19.16"}],"recordedAt":"2026-11-29T10:00:00Z"}`))
	f.Add([]byte(`{"apiVersion":"kubelet-compat.io/v1alpha2","apiVersion":"kubelet-compat.io/v1alpha2","Kind":"UpgradeCompat"}`))
	f.Add([]byte(`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`null`))
	f.Add([]byte("{\"apiVersion\":\"kubelet-compat.io/v1alpha2\"\x00}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		if err != nil {
			if file != nil {
				t.Fatal("Parse returned a file with an error")
			}
			return
		}
		// Whatever parses must validate, render and parse back the same.
		if err := file.Validate(); err != nil {
			t.Fatalf("parsed file does not validate: %v", err)
		}
		out, err := file.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("round trip: %v\n%s", err, out)
		}
		if again.PreviousVersion != file.PreviousVersion || !again.RecordedAt.Equal(file.RecordedAt) || len(again.StaticPods) != len(file.StaticPods) || len(again.Containers) != len(file.Containers) {
			t.Fatalf("round trip changed the file: %+v != %+v", again, file)
		}
	})
}

func testFile() *File {
	return &File{
		APIVersion:      APIVersion,
		Kind:            Kind,
		PreviousVersion: "v1.20.15",
		RecordedAt:      time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC),
		Containers:      []Container{{ID: "c1", HashVersion: "v1.20.15"}},
		StaticPods:      []StaticPod{{ManifestPath: "/etc/kubernetes/manifests/web.yaml", SHA256: testSHA, UID: "0f1e2d3c"}},
	}
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, DefaultFileName)
	if err := WriteFile(path, testFile()); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0644 {
		t.Errorf("mode = %v, want 0644", fi.Mode())
	}
	got, _, err := ReadFile(path, os.Getuid())
	if err != nil {
		t.Fatal(err)
	}
	if got.PreviousVersion != "v1.20.15" || len(got.StaticPods) != 1 {
		t.Errorf("read back %+v", got)
	}

	// An invalid file is refused and leaves the previous one untouched.
	bad := testFile()
	bad.PreviousVersion = "latest"
	if err := WriteFile(path, bad); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Fatalf("WriteFile(invalid) = %v", err)
	}
	if again, _, err := ReadFile(path, os.Getuid()); err != nil || again.PreviousVersion != "v1.20.15" {
		t.Fatalf("previous file damaged: %v %+v", err, again)
	}
	// A failed write leaves no temporary file behind.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the compat file", len(entries))
	}
	if err := WriteFile(filepath.Join(dir, "missing-dir", "f.json"), testFile()); err == nil {
		t.Error("WriteFile into a missing directory succeeded")
	}
}

// TestReadFileRefusals covers every reason the kubelet ignores a file on disk.
func TestReadFileRefusals(t *testing.T) {
	valid, err := testFile().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	me := os.Getuid()
	tests := []struct {
		name     string
		setup    func(t *testing.T, path string)
		ownerUID int
		wantErr  string
	}{
		{name: "valid", setup: writeMode(valid, 0644), ownerUID: me},
		{name: "read-only for all", setup: writeMode(valid, 0444), ownerUID: me},
		{name: "missing", setup: func(*testing.T, string) {}, ownerUID: me, wantErr: "no such file"},
		{name: "directory", setup: func(t *testing.T, p string) { must(t, os.Mkdir(p, 0755)) }, ownerUID: me, wantErr: "not a regular file"},
		{name: "symlink", setup: func(t *testing.T, p string) {
			writeMode(valid, 0644)(t, p+".real")
			must(t, os.Symlink(p+".real", p))
		}, ownerUID: me, wantErr: "symbolic link"},
		{name: "device", setup: func(t *testing.T, p string) { must(t, os.Symlink("/dev/zero", p)) }, ownerUID: me, wantErr: "symbolic link"},
		{name: "fifo", setup: func(t *testing.T, p string) { must(t, syscall.Mkfifo(p, 0644)) }, ownerUID: me, wantErr: "not a regular file"},
		{name: "group-writable", setup: writeMode(valid, 0664), ownerUID: me, wantErr: "group- or world-writable"},
		{name: "world-writable", setup: writeMode(valid, 0646), ownerUID: me, wantErr: "group- or world-writable"},
		{name: "wrong owner", setup: writeMode(valid, 0644), ownerUID: me + 1, wantErr: "owned by uid"},
		{name: "unparsable", setup: writeMode([]byte("{"), 0644), ownerUID: me, wantErr: "unparsable"},
		{name: "unknown apiVersion", setup: writeMode([]byte(strings.Replace(string(valid), "v1alpha2", "v9", 1)), 0644), ownerUID: me, wantErr: "unknown apiVersion"},
		{name: "too large", setup: writeMode([]byte(strings.Repeat(" ", MaxFileSize+1)), 0644), ownerUID: me, wantErr: "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), DefaultFileName)
			tt.setup(t, path)
			f, _, err := ReadFile(path, tt.ownerUID)
			if tt.wantErr == "" {
				if err != nil || f == nil {
					t.Fatalf("ReadFile = %v, %v", f, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ReadFile error = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestReadFileNotRootOwned checks the default owner (root) against a file
// really owned by someone else; chown needs root.
func TestReadFileNotRootOwned(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("chown to another user needs root")
	}
	path := filepath.Join(t.TempDir(), DefaultFileName)
	must(t, WriteFile(path, testFile()))
	must(t, os.Chown(path, 65534, 65534))
	if _, _, err := ReadFile(path, 0); err == nil || !strings.Contains(err.Error(), "owned by uid 65534, not 0") {
		t.Fatalf("ReadFile = %v", err)
	}
}

func writeMode(data []byte, mode os.FileMode) func(*testing.T, string) {
	return func(t *testing.T, p string) {
		must(t, os.WriteFile(p, data, 0600))
		must(t, os.Chmod(p, mode)) // not subject to umask
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
