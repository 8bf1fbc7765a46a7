package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func TestDecodeStaticPodAppliesKubeletDefaults(t *testing.T) {
	pod, err := DecodeStaticPod([]byte(`apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  hostNetwork: true
  containers:
  - name: a
    image: busybox
    ports: [{containerPort: 80}]
    env: [{name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}]
    livenessProbe: {httpGet: {port: 80}}
    resources: {limits: {memory: 1Gi}}
  - name: b
    image: busybox:1.36
  - name: c
    image: busybox@sha256:0123456789012345678901234567890123456789012345678901234567890123
`))
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := pod.Spec.Containers[0], pod.Spec.Containers[1], pod.Spec.Containers[2]
	for _, check := range []struct {
		what string
		ok   bool
	}{
		{"latest tag pulls Always", a.ImagePullPolicy == v1.PullAlways},
		{"explicit tag pulls IfNotPresent", b.ImagePullPolicy == v1.PullIfNotPresent},
		{"digest pulls IfNotPresent", c.ImagePullPolicy == v1.PullIfNotPresent},
		{"termination message path", a.TerminationMessagePath == "/dev/termination-log" && a.TerminationMessagePolicy == v1.TerminationMessageReadFile},
		{"port protocol", a.Ports[0].Protocol == v1.ProtocolTCP},
		{"hostNetwork hostPort", a.Ports[0].HostPort == 80},
		{"fieldRef apiVersion", a.Env[0].ValueFrom.FieldRef.APIVersion == "v1"},
		{"probe defaults", a.LivenessProbe.TimeoutSeconds == 1 && a.LivenessProbe.PeriodSeconds == 10 && a.LivenessProbe.SuccessThreshold == 1 && a.LivenessProbe.FailureThreshold == 3},
		{"httpGet defaults", a.LivenessProbe.HTTPGet.Path == "/" && a.LivenessProbe.HTTPGet.Scheme == v1.URISchemeHTTP},
		{"requests default to limits", a.Resources.Requests.Memory().String() == "1Gi"},
	} {
		if !check.ok {
			t.Errorf("%s: not applied: %+v", check.what, pod.Spec.Containers)
		}
	}
}

func TestReadStaticDirSkipsWhatTheKubeletSkips(t *testing.T) {
	dir := t.TempDir()
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: a, image: b}]}\n"
	os.WriteFile(filepath.Join(dir, "b.yaml"), []byte(pod), 0644)
	os.WriteFile(filepath.Join(dir, "a.json"), []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"q"},"spec":{"containers":[{"name":"a","image":"b"}]}}`), 0644)
	os.WriteFile(filepath.Join(dir, ".hidden.yaml"), []byte("garbage: ["), 0644)
	os.Mkdir(filepath.Join(dir, "sub"), 0755)
	got, err := ReadStaticDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Pod.Name != "q" || got[1].Pod.Name != "p" || got[1].Path != filepath.Join(dir, "b.yaml") || string(got[1].Data) != pod {
		t.Errorf("ReadStaticDir = %+v", got)
	}
	os.WriteFile(filepath.Join(dir, "c.yaml"), []byte("apiVersion: v1\nkind: Pod\n"), 0644)
	if _, err := ReadStaticDir(dir); err == nil || !strings.Contains(err.Error(), "c.yaml: invalid Pod: metadata.name is empty") {
		t.Errorf("invalid manifest: %v", err)
	}
	if _, err := ReadStaticDir(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing directory gave no error")
	}
}

func TestLoadMultiDocument(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "all.yaml")
	os.WriteFile(f, []byte(`---
apiVersion: v1
kind: Pod
metadata: {name: one}
spec: {containers: [{name: a, image: b}]}
---
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm}
---
apiVersion: v1
kind: Pod
metadata: {name: two, namespace: ns}
spec: {containers: [{name: a, image: b}]}
`), 0644)
	pods, notes, err := Load([]string{f})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 2 || pods[0].Pod.Name != "one" || pods[1].Pod.Name != "two" || Namespace(pods[0].Pod) != "default" || Namespace(pods[1].Pod) != "ns" {
		t.Errorf("pods = %+v", pods)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "skipped v1 ConfigMap") {
		t.Errorf("notes = %q", notes)
	}
	os.WriteFile(f, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: a, image: b, ports: \"nope\"}]}\n"), 0644)
	if _, _, err := Load([]string{f}); err == nil || !strings.Contains(err.Error(), "document 1: invalid Pod") {
		t.Errorf("malformed: %v", err)
	}
}

// A FIFO where a manifest was (swapped in after a check) must not block.
func TestReadFileNeverBlocks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "etcd.yaml")
	if err := syscall.Mkfifo(path, 0644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ReadFile(path)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("ReadFile(fifo) = %v", err)
		}
	case <-time.After(5 * time.Second):
		if fh, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			fh.Close()
		}
		t.Fatal("ReadFile blocked on a FIFO")
	}
}
