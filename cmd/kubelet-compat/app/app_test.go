package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/internal/kubelet"
	"github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/internal/manifest"
	podresfake "github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/internal/podresources/fake"
	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	"github.com/kubelet-compat/kubelet-compat/pkg/cri/fake"
	"github.com/kubelet-compat/kubelet-compat/pkg/shimgroups"
)

const (
	testNode   = "node-1"
	bootTime   = 1700000000
	kubeletPID = 4242
)

// The kubelet of the tests started at boot + 1000 s; legacy containers were
// created before, new ones after.
var (
	kubeletStart = time.Unix(bootTime+1000, 0)
	beforeStart  = kubeletStart.Add(-time.Hour)
	afterStart   = kubeletStart.Add(time.Minute)
	now          = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
)

// fixture is one node: a manifest dir, a kubelet root dir, a fake /proc with
// a kubelet process, and a CRI server.
type fixture struct {
	t              *testing.T
	dir            string
	manifestDir    string
	rootDir        string
	procRoot       string
	srv            *fake.Server
	listeners      []shimgroups.Listener
	stdout, stderr bytes.Buffer
	// clocks is the machine's: booted at bootTime unless a test says otherwise.
	clocks kubelet.Clocks
	// now is the commands' time: the package's now unless a test says otherwise.
	now time.Time
	// podResources is the running kubelet's pod-resources service (runKubelet
	// starts it), which sweep asks; it has every pod the runtime has.
	podResources *podresfake.Server
}

func newFixture(t *testing.T, apis ...string) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{t: t, dir: dir, manifestDir: filepath.Join(dir, "manifests"), rootDir: filepath.Join(dir, "kubelet"), procRoot: filepath.Join(dir, "proc")}
	for _, d := range []string{f.manifestDir, f.rootDir, f.procRoot} {
		if err := os.MkdirAll(d, 0755); err != nil {
			t.Fatal(err)
		}
	}
	f.srv = fake.Start(t, apis...)
	f.clocks = bootedAt(time.Unix(bootTime, 0))
	f.now = now
	if err := os.MkdirAll(filepath.Join(f.procRoot, "1", "ns"), 0755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(hostPIDNamespace, filepath.Join(f.procRoot, "1", "ns", "pid")); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) write(path, content string) {
	f.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0644); err != nil {
		f.t.Fatal(err)
	}
}

// kubeletBinary writes a script that prints `Kubernetes <version>`.
func (f *fixture) kubeletBinary(version string) string {
	f.t.Helper()
	p := filepath.Join(f.dir, "bin", "kubelet-"+version)
	f.write(p, "#!/bin/sh\necho Kubernetes "+version+"\n")
	os.Chmod(p, 0755)
	return p
}

// defaultKubeletBinary is the fixture's /usr/bin/kubelet: a symlink to the
// selected version, as kubernetes-select makes it.
func (f *fixture) defaultKubeletBinary() string { return filepath.Join(f.dir, "usr", "bin", "kubelet") }

// selectKubelet points the fixture's /usr/bin/kubelet at version.
func (f *fixture) selectKubelet(version string) {
	f.t.Helper()
	bin := f.kubeletBinary(version)
	os.MkdirAll(filepath.Dir(f.defaultKubeletBinary()), 0755)
	os.Remove(f.defaultKubeletBinary())
	if err := os.Symlink(bin, f.defaultKubeletBinary()); err != nil {
		f.t.Fatal(err)
	}
}

// runKubelet selects version and makes the fake /proc show a kubelet
// started from it at kubeletStart: a root process (the test's uid) of the
// host PID namespace.
func (f *fixture) runKubelet(version string) {
	f.t.Helper()
	f.selectKubelet(version)
	pd := filepath.Join(f.procRoot, strconv.Itoa(kubeletPID))
	f.write(filepath.Join(pd, "comm"), "kubelet\n")
	// The kernel truncates the start to a tick and the CLI rounds it up:
	// the tick before kubeletStart is read as kubeletStart.
	ticks := strconv.Itoa(1000*100 - 1)
	f.write(filepath.Join(pd, "stat"), strconv.Itoa(kubeletPID)+" (kubelet) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 "+ticks+" 1 1\n")
	uid := strconv.Itoa(os.Getuid())
	f.write(filepath.Join(pd, "status"), "Name:\tkubelet\nUid:\t"+uid+"\t"+uid+"\t"+uid+"\t"+uid+"\n")
	os.MkdirAll(filepath.Join(pd, "ns"), 0755)
	os.Remove(filepath.Join(pd, "ns", "pid"))
	os.Remove(filepath.Join(pd, "exe"))
	if err := os.Symlink(hostPIDNamespace, filepath.Join(pd, "ns", "pid")); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Symlink(f.kubeletBinary(version), filepath.Join(pd, "exe")); err != nil {
		f.t.Fatal(err)
	}
	if f.podResources == nil {
		f.podResources = podresfake.Start(f.t)
		f.podResources.SetLister(func() []podresfake.Pod {
			var pods []podresfake.Pod
			for _, sb := range f.srv.Sandboxes() {
				pods = append(pods, podresfake.Pod{Namespace: sb.Namespace, Name: sb.Name})
			}
			return pods
		})
	}
}

func (f *fixture) env() Env {
	return Env{Stdout: &f.stdout, Stderr: &f.stderr, ProcRoot: f.procRoot, Now: func() time.Time { return f.now },
		Hostname: func() (string, error) { return "Node-1", nil }, OwnerUID: os.Getuid(), Geteuid: os.Geteuid,
		KubeletBinary: f.defaultKubeletBinary(), Systemd: kubelet.Systemd{RunDir: filepath.Join(f.dir, "run", "systemd", "system"), Systemctl: filepath.Join(f.dir, "bin", "systemctl")},
		RootUID: os.Getuid(), Clocks: f.clocks, FSRoot: f.hostRoot(),
		UnixListeners: func() ([]shimgroups.Listener, error) { return f.listeners, nil }}
}

// bootedAt is a machine's clocks an hour and a half after boot.
func bootedAt(boot time.Time) kubelet.Clocks {
	return func() (time.Duration, time.Time, error) {
		since := 90 * time.Minute
		return since, boot.Add(since), nil
	}
}

// hostRoot is the root the cgroups check reads runc's state, /proc and the
// cgroup files under: never the machine's.
func (f *fixture) hostRoot() string { return filepath.Join(f.dir, "host") }

func (f *fixture) compatPath() string { return filepath.Join(f.rootDir, kubeletcompat.DefaultFileName) }

// run runs a command with the fixture's node flags appended.
func (f *fixture) run(args ...string) int {
	f.t.Helper()
	f.stdout.Reset()
	f.stderr.Reset()
	return f.runTo(context.Background(), &f.stdout, &f.stderr, args...)
}

// runTo runs a command with its own output buffers, e.g. next to another.
func (f *fixture) runTo(ctx context.Context, stdout, stderr *bytes.Buffer, args ...string) int {
	// Flags given later win: the test's own come last.
	// preflight reads the root dir too (cpu_manager_state, the device
	// checkpoint, kubeadm-flags.env): never the machine's.
	full := []string{args[0], "--runtime-endpoint", f.srv.Endpoint, "--manifest-dir", f.manifestDir, "--root-dir", f.rootDir}
	switch args[0] {
	case "cgroups", "picture":
		full = full[:3]
	case "gate":
		full = append(full[:3], "--root-dir", f.rootDir)
	}
	if args[0] == "preflight" {
		full = append(full, "--kubelet-config", filepath.Join(f.rootDir, "config.yaml"), "--extra-args-file", filepath.Join(f.dir, "sysconfig-kubelet"))
	}
	// The root dir's own socket path is too long for a socket in the tests.
	if args[0] == "sweep" && f.podResources != nil {
		full = append(full, "--pod-resources-endpoint", f.podResources.Endpoint)
	}
	env := f.env()
	env.Stdout, env.Stderr = stdout, stderr
	return Run(ctx, env, append(full, args[1:]...))
}

// pod is a static pod manifest with the sandbox and containers a kubelet of
// version created for it.
type pod struct {
	file, yaml string
	uid        string
	created    time.Time
	ready      bool
	// version is the kubelet that created the containers, when not the one
	// addStaticPods is given; hash, when set, is their stored hash instead
	// of that kubelet's.
	version, hash string
}

func (f *fixture) addStaticPods(version string, pods ...pod) {
	f.t.Helper()
	v, err := kubeletcompat.ParseVersion(version)
	if err != nil {
		f.t.Fatal(err)
	}
	var sbs []cri.Sandbox
	var cs []cri.Container
	for i, p := range pods {
		f.write(filepath.Join(f.manifestDir, p.file), p.yaml)
		obj, err := manifest.DecodeStaticPod([]byte(p.yaml))
		if err != nil {
			f.t.Fatal(err)
		}
		ns, name := manifest.Namespace(obj), manifest.StaticPodName(obj.Name, testNode)
		sbID := "sb-" + strconv.Itoa(i) + "-" + p.uid
		sbs = append(sbs, cri.Sandbox{ID: sbID, Name: name, Namespace: ns, UID: p.uid, Ready: p.ready, CreatedAt: p.created,
			Labels:      map[string]string{cri.PodNameLabel: name, cri.PodNamespaceLabel: ns, cri.PodUIDLabel: p.uid},
			Annotations: map[string]string{cri.ConfigSourceAnnotation: cri.ConfigSourceFile}})
		if !p.ready {
			continue
		}
		creator := v
		if p.version != "" {
			if creator, err = kubeletcompat.ParseVersion(p.version); err != nil {
				f.t.Fatal(err)
			}
		}
		for _, c := range obj.Spec.Containers {
			stored := p.hash
			if stored == "" {
				h, err := kubeletcompat.ContainerHash(creator, &c)
				if err != nil {
					f.t.Fatal(err)
				}
				stored = strconv.FormatUint(h, 16)
			}
			cs = append(cs, cri.Container{ID: "c-" + p.uid + "-" + c.Name, SandboxID: sbID, Name: c.Name, Image: c.Image, State: cri.ContainerRunning, CreatedAt: p.created,
				Labels:      map[string]string{cri.PodNameLabel: name, cri.PodNamespaceLabel: ns, cri.PodUIDLabel: p.uid, cri.ContainerNameLabel: c.Name},
				Annotations: map[string]string{cri.ContainerHashAnnotation: stored, cri.RestartCountAnnotation: "0"}})
		}
	}
	f.srv.Set(sbs, cs)
}

const etcdYAML = `apiVersion: v1
kind: Pod
metadata:
  name: etcd
  namespace: kube-system
spec:
  containers:
  - name: etcd
    image: registry.k8s.io/etcd:3.4.13-0
`

const seccompYAML = `apiVersion: v1
kind: Pod
metadata:
  name: seccomp
  uid: pinned-uid
spec:
  containers:
  - name: app
    image: busybox:1.36
    securityContext:
      seccompProfile:
        type: RuntimeDefault
`

var apiVersions = [][]string{{cri.APIv1}, {cri.APIv1alpha2}, {cri.APIv1, cri.APIv1alpha2}}

func apiName(apis []string) string { return strings.Join(apis, "+") }

func assertOneErrorLine(t *testing.T, stderr, want string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	var errs []string
	for _, l := range lines {
		if !strings.HasPrefix(l, "kubelet-compat: warning:") {
			errs = append(errs, l)
		}
	}
	if len(errs) != 1 || !strings.HasPrefix(errs[0], "kubelet-compat: ") || !strings.Contains(errs[0], want) {
		t.Errorf("stderr = %q, want one line `kubelet-compat: ...%s...`", stderr, want)
	}
	if strings.Contains(stderr, "Usage:") || strings.Contains(stderr, "goroutine") {
		t.Errorf("stderr has usage or a stack: %q", stderr)
	}
}
