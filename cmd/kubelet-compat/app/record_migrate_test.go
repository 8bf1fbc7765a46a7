package app

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/internal/manifest"
	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	v1 "k8s.io/api/core/v1"
)

// v1alpha1File is a compat file as kubelet-compat wrote it before the file
// listed containers (06d0416..6f73e23): versions only, newest first.
func v1alpha1File(previous string, older ...string) string {
	s := `{"apiVersion":"kubelet-compat.io/v1alpha1","kind":"UpgradeCompat","previousVersion":"` + previous + `","recordedAt":"2025-01-01T00:00:00Z"`
	if len(older) > 0 {
		s += `,"olderVersions":["` + strings.Join(older, `","`) + `"]`
	}
	return s + `,"staticPods":[{"manifestPath":"/etc/kubernetes/manifests/etcd.yaml","sha256":"` + strings.Repeat("a", 64) + `","uid":"etcd-uid"}]}` + "\n"
}

// TestRecordMigratesEveryFormat (issue 19, item 6): a v1alpha1 file was
// "not a compat file" to record, and --force then labelled every container
// with the running kubelet without looking at its stored hash, so a
// container kept through the previous upgrade restarted at the next swap.
// record reads every format this project wrote; where the file it replaces
// has no per-container history (v1alpha1, no file, a file replaced with
// --force), it matches each container's stored hash against what each known
// kubelet computes for its spec.
func TestRecordMigratesEveryFormat(t *testing.T) {
	const (
		seccompID = "c-pinned-uid-app" // created by 1.18: seccompProfile is not in its hash
		plainID   = "c-plain-uid-app"  // created by the running kubelet
	)
	seccomp18 := pod{file: "seccomp.yaml", yaml: seccompYAML, uid: "pinned-uid", created: beforeStart, ready: true, version: "v1.18.19"}
	plain := pod{file: "plain.yaml", yaml: plainYAML, uid: "plain-uid", created: beforeStart, ready: true}
	for _, tc := range []struct {
		name      string
		existing  string // the file record replaces
		running   string
		args      []string
		pods      []pod
		wantCode  int
		want      map[string]string // container ID -> hashVersion
		wantOut   []string
		wantWarns []string
	}{
		{name: "v1alpha1 after 1.18 -> 1.19", existing: v1alpha1File("v1.18.19"), running: "v1.19.16", pods: []pod{seccomp18, plain},
			want:    map[string]string{seccompID: "v1.18.19", plainID: "v1.19.16"},
			wantOut: []string{"migrated from kubelet-compat.io/v1alpha1", "2 container(s) without a recorded hash version matched by their stored hashes: 1 carry an older kubelet's"}},
		{name: "v1alpha1 after 1.18 -> 1.19 -> 1.20 (olderVersions)", existing: v1alpha1File("v1.19.16", "v1.18.19"), running: "v1.20.15", pods: []pod{seccomp18, plain},
			want: map[string]string{seccompID: "v1.18.19", plainID: "v1.20.15"}},
		{name: "v1alpha1 naming a kubelet whose hash is not reproduced (1.15)", existing: v1alpha1File("v1.15.12"), running: "v1.18.19",
			pods:      []pod{{file: "plain.yaml", yaml: plainYAML, uid: "plain-uid", created: beforeStart, ready: true, hash: "deadbeef"}},
			want:      map[string]string{plainID: "v1.15.12"},
			wantWarns: []string{"container default/plain-node-1/app (c-plain-uid-a): stored hash deadbeef is what no kubelet v1.16 to v1.38 computes for its spec; the replaced file names v1.15.12, whose hash is not reproduced: recorded as carrying it (kept while its image is unchanged)"}},
		{name: "no file: the hashes say which kubelet created each container", running: "v1.19.16", pods: []pod{seccomp18, plain},
			want: map[string]string{seccompID: "v1.18.0", plainID: "v1.19.16"}},
		{name: "a foreign file replaced with --force: the same", existing: `{"kind":"KubeletConfiguration"}`, args: []string{"--force"}, running: "v1.19.16", pods: []pod{seccomp18, plain},
			want: map[string]string{seccompID: "v1.18.0", plainID: "v1.19.16"}, wantWarns: []string{"which is not a compat file"}},
		{name: "a v1alpha2 file lists the history: carried, not inferred", running: "v1.19.16", pods: []pod{seccomp18, plain},
			existing: `{"apiVersion":"kubelet-compat.io/v1alpha2","kind":"UpgradeCompat","previousVersion":"v1.18.19","recordedAt":"2025-01-01T00:00:00Z","containers":[{"id":"` + seccompID + `","hashVersion":"v1.18.19"}]}` + "\n",
			want:     map[string]string{seccompID: "v1.18.19", plainID: "v1.19.16"}},
		{name: "a container no kubelet's hash explains: the running kubelet's, with a warning", running: "v1.19.16",
			pods:      []pod{{file: "plain.yaml", yaml: plainYAML, uid: "plain-uid", created: beforeStart, ready: true, hash: "deadbeef"}},
			want:      map[string]string{plainID: "v1.19.16"},
			wantWarns: []string{"container default/plain-node-1/app (c-plain-uid-a): stored hash deadbeef is what no kubelet v1.16 to v1.38 computes for its spec from " + "$MANIFESTS/plain.yaml: recorded as v1.19.16's; the next kubelet restarts it unless its own hash matches"}},
		{name: "v1alpha1 with an unknown field: not a compat file", existing: strings.Replace(v1alpha1File("v1.18.19"), `"kind"`, `"bogus":1,"kind"`, 1), running: "v1.19.16", pods: []pod{plain},
			wantCode: ExitError, wantWarns: []string{"exists and is not a compat file"}},
		{name: "v1alpha1 recording a newer kubelet: refused", existing: v1alpha1File("v1.20.15"), running: "v1.19.16", pods: []pod{plain},
			wantCode: ExitError, wantWarns: []string{"already records kubelet v1.20.15, newer than v1.19.16: refusing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, cri.APIv1)
			f.addStaticPods(tc.running, tc.pods...)
			if tc.existing != "" {
				f.write(f.compatPath(), tc.existing)
			}
			code := f.run(append([]string{"record", "--kubelet-binary", f.kubeletBinary(tc.running)}, tc.args...)...)
			assert.Equal(t, code, tc.wantCode, "stdout %s\nstderr %s", f.stdout.String(), f.stderr.String())
			for _, w := range tc.wantWarns {
				assert.Check(t, is.Contains(f.stderr.String(), strings.ReplaceAll(w, "$MANIFESTS", f.manifestDir)))
			}
			if tc.wantCode != ExitOK {
				after, _ := os.ReadFile(f.compatPath())
				assert.Equal(t, string(after), tc.existing, "the file record refused to replace changed")
				return
			}
			for _, w := range tc.wantOut {
				assert.Check(t, is.Contains(f.stdout.String(), w))
			}
			if len(tc.wantWarns) == 0 {
				assert.Check(t, is.Equal(f.stderr.String(), ""))
			}
			got, _, err := kubeletcompat.ReadFile(f.compatPath(), os.Getuid())
			assert.NilError(t, err)
			assert.Equal(t, got.APIVersion, kubeletcompat.APIVersion)
			assert.DeepEqual(t, hashVersions(got), tc.want)
		})
	}
}

func hashVersions(f *kubeletcompat.File) map[string]string {
	out := map[string]string{}
	for _, c := range f.Containers {
		out[c.ID] = c.HashVersion
	}
	return out
}

// webPod is an API pod of the node, defaulted as the API server returns it.
func webPod() v1.Pod {
	pod := v1.Pod{}
	pod.Name, pod.Namespace, pod.UID = "web", "default", "web-uid"
	pod.Spec.NodeName = testNode
	pod.Spec.Containers = []v1.Container{{Name: "nginx", Image: "nginx:1.25"}}
	manifest.SetDefaults(&pod)
	return pod
}

// TestRecordInfersAPIPodsWithKubeconfig: an API pod's spec comes from the
// API server; without --kubeconfig record cannot check its stored hash and
// says so, one line per container.
func TestRecordInfersAPIPodsWithKubeconfig(t *testing.T) {
	spec := webPod()
	// Created by 1.30 and kept by the patched 1.31 (whose hash is {name, image}).
	h, err := kubeletcompat.ContainerHash(kubeletcompat.Version{Major: 1, Minor: 30, Patch: 14}, &spec.Spec.Containers[0])
	assert.NilError(t, err)
	for _, tc := range []struct {
		name       string
		kubeconfig bool
		want       string
		wantWarn   string
		wantNoSpec bool // the rollback warning: no spec recorded
	}{
		{name: "with --kubeconfig", kubeconfig: true, want: "v1.30.0"},
		{name: "without", want: "v1.31.14", wantWarn: "container default/web/nginx (c-web): no pod spec found (API pods need --kubeconfig): its stored hash " + strconv.FormatUint(h, 16) + " is not checked; recorded as v1.31.14's",
			wantNoSpec: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, cri.APIv1)
			f.srv.Set([]cri.Sandbox{{ID: "sb-web", Name: "web", Namespace: "default", UID: "web-uid", Ready: true, CreatedAt: beforeStart}},
				[]cri.Container{{ID: "c-web", SandboxID: "sb-web", Name: "nginx", Image: "nginx:1.25", State: cri.ContainerRunning, CreatedAt: beforeStart,
					Labels:      map[string]string{cri.PodNameLabel: "web", cri.PodNamespaceLabel: "default", cri.PodUIDLabel: "web-uid", cri.ContainerNameLabel: "nginx"},
					Annotations: map[string]string{cri.ContainerHashAnnotation: strconv.FormatUint(h, 16)}}})
			args := []string{"record", "--kubelet-binary", f.kubeletBinary("v1.31.14")}
			if tc.kubeconfig {
				args = append(args, "--kubeconfig", apiServer(t, f.dir, spec))
			}
			code := f.run(args...)
			assert.Equal(t, code, ExitOK, "stderr %s", f.stderr.String())
			if tc.wantWarn == "" {
				assert.Check(t, is.Equal(f.stderr.String(), ""))
			} else {
				lines := strings.Split(strings.TrimSpace(f.stderr.String()), "\n")
				sort.Strings(lines)
				want := []string{"kubelet-compat: warning: " + tc.wantWarn}
				if tc.wantNoSpec {
					want = append([]string{"kubelet-compat: warning: 1 container(s) of 1.31 or newer have no pod spec (API pods need --kubeconfig): their specs are not recorded, so a rollback to a kubelet of 1.30 or older restarts them"}, want...)
				}
				assert.Check(t, is.DeepEqual(lines, want))
			}
			got, _, err := kubeletcompat.ReadFile(f.compatPath(), os.Getuid())
			assert.NilError(t, err)
			assert.DeepEqual(t, hashVersions(got), map[string]string{"c-web": tc.want})
		})
	}
}

// TestRecordForRollback: record on a 1.31 kubelet writes the spec of each
// container carrying a {name, image} hash, from the manifests and, with
// --kubeconfig, the API server; the patched 1.30 swapped back in keeps them
// (status decides as that kubelet does), except a container whose spec
// changed after record and one record found no spec of.
func TestRecordForRollback(t *testing.T) {
	api := webPod()
	v131 := kubeletcompat.Version{Major: 1, Minor: 31, Patch: 14}
	h, err := kubeletcompat.ContainerHash(v131, &api.Spec.Containers[0])
	assert.NilError(t, err)
	for _, tc := range []struct {
		name       string
		kubeconfig bool
		editEtcd   bool
		want       map[string]bool // kept by the 1.30 kubelet, by container ID
	}{
		{name: "every spec found", kubeconfig: true, want: map[string]bool{"c-etcd-uid-etcd": true, "c-web": true}},
		{name: "API pod without --kubeconfig", want: map[string]bool{"c-etcd-uid-etcd": true, "c-web": false}},
		{name: "manifest changed after record", kubeconfig: true, editEtcd: true, want: map[string]bool{"c-etcd-uid-etcd": false, "c-web": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, cri.APIv1)
			f.addStaticPods("v1.31.14", pod{file: "etcd.yaml", yaml: etcdYAML, uid: "etcd-uid", created: beforeStart, ready: true})
			sbs, cs := f.srv.Sandboxes(), f.srv.Containers()
			sbs = append(sbs, cri.Sandbox{ID: "sb-web", Name: "web", Namespace: "default", UID: "web-uid", Ready: true, CreatedAt: beforeStart})
			cs = append(cs, cri.Container{ID: "c-web", SandboxID: "sb-web", Name: "nginx", Image: "nginx:1.25", State: cri.ContainerRunning, CreatedAt: beforeStart,
				Labels:      map[string]string{cri.PodNameLabel: "web", cri.PodNamespaceLabel: "default", cri.PodUIDLabel: "web-uid", cri.ContainerNameLabel: "nginx"},
				Annotations: map[string]string{cri.ContainerHashAnnotation: strconv.FormatUint(h, 16)}})
			f.srv.Set(sbs, cs)
			args := []string{"record", "--kubelet-binary", f.kubeletBinary("v1.31.14")}
			var kubeconfig string
			if tc.kubeconfig {
				// status reads the node too: a 1.30 kubelet checks the
				// taints of the API pod it admitted on a waiver.
				node := &v1.Node{}
				node.Name = testNode
				kubeconfig = apiServerWithNode(t, f.dir, node, api)
				args = append(args, "--kubeconfig", kubeconfig)
			}
			assert.Equal(t, f.run(args...), ExitOK, "stderr %s", f.stderr.String())
			got, _, err := kubeletcompat.ReadFile(f.compatPath(), os.Getuid())
			assert.NilError(t, err)
			for _, c := range got.Containers {
				assert.Check(t, c.HashVersion == "v1.31.14", "%s: hash version %s", c.ID, c.HashVersion)
				assert.Check(t, (c.SpecHash != "") == (c.ID != "c-web" || tc.kubeconfig), "%s: spec hash %q", c.ID, c.SpecHash)
			}
			if tc.editEtcd {
				f.write(filepath.Join(f.manifestDir, "etcd.yaml"), strings.Replace(etcdYAML, "    image: registry.k8s.io/etcd:3.4.13-0\n", "    image: registry.k8s.io/etcd:3.4.13-0\n    command: [etcd]\n", 1))
			}
			f.runKubelet("v1.30.14")
			status := []string{"status", "-o", "json"}
			if tc.kubeconfig {
				status = append(status, "--kubeconfig", kubeconfig)
			}
			assert.Equal(t, f.run(status...), ExitOK, "stderr %s", f.stderr.String())
			var r statusReport
			assert.NilError(t, json.Unmarshal(f.stdout.Bytes(), &r))
			kept := map[string]bool{}
			for _, l := range r.Legacy {
				kept[l.ID] = l.Keep != nil && *l.Keep
			}
			assert.DeepEqual(t, kept, tc.want)
		})
	}
}

// TestMigratedHistoryKeepsContainersAtTheNextSwap: the container 1.19 kept
// through 1.18 -> 1.19 (v1alpha1 file) is kept by the patched 1.20 after
// record migrated the file; labelled 1.19's, as --force did, it restarted.
func TestMigratedHistoryKeepsContainersAtTheNextSwap(t *testing.T) {
	f := newFixture(t, cri.APIv1)
	f.addStaticPods("v1.19.16", pod{file: "seccomp.yaml", yaml: seccompYAML, uid: "pinned-uid", created: beforeStart, ready: true, version: "v1.18.19"})
	f.write(f.compatPath(), v1alpha1File("v1.18.19"))
	assert.Equal(t, f.run("record", "--kubelet-binary", f.kubeletBinary("v1.19.16")), ExitOK, "stderr %s", f.stderr.String())
	f.runKubelet("v1.20.15")
	assert.Equal(t, f.run("status", "-o", "json"), ExitOK, "stderr %s", f.stderr.String())
	var r statusReport
	assert.NilError(t, json.Unmarshal(f.stdout.Bytes(), &r))
	assert.Equal(t, len(r.Legacy), 1)
	l := r.Legacy[0]
	assert.Check(t, l.Keep != nil && *l.Keep, "decision %q", l.Decision)
	assert.Check(t, is.Contains(l.Decision, "is what v1.18.19 computes for the current spec"))
}

// TestCompatFormats: the table ends with the format record writes, and each
// reader reads its own format only.
func TestCompatFormats(t *testing.T) {
	assert.Equal(t, compatFormats[len(compatFormats)-1].apiVersion, kubeletcompat.APIVersion)
	files := map[string]string{
		"kubelet-compat.io/v1alpha1": v1alpha1File("v1.19.16", "v1.18.19"),
		"kubelet-compat.io/v1alpha2": `{"apiVersion":"kubelet-compat.io/v1alpha2","kind":"UpgradeCompat","previousVersion":"v1.19.16","recordedAt":"2025-01-01T00:00:00Z","containers":[{"id":"a","hashVersion":"v1.18.19"}]}`,
	}
	assert.Equal(t, len(files), len(compatFormats), "a test file for every format")
	for _, format := range compatFormats {
		for apiVersion, data := range files {
			h, err := format.read([]byte(data))
			if apiVersion != format.apiVersion {
				assert.Check(t, err != nil, "%s read a %s file", format.apiVersion, apiVersion)
				continue
			}
			assert.NilError(t, err, format.apiVersion)
			assert.Equal(t, h.apiVersion, apiVersion)
			assert.Equal(t, h.previous.String(), "v1.19.16")
			assert.DeepEqual(t, versionStrings(h.versions), []string{"v1.19.16", "v1.18.19"})
		}
	}
	for _, bad := range []string{
		strings.Replace(v1alpha1File("v1.19.16", "v1.18.19"), `"v1.18.19"`, `"v1.20.15"`, 1), // not older
		strings.Replace(v1alpha1File("v1.19.16"), `"v1.19.16"`, `"v2.0.0"`, 1),
		strings.Replace(v1alpha1File("v1.19.16"), `,"recordedAt":"2025-01-01T00:00:00Z"`, ``, 1),
		v1alpha1File("v1.19.16") + "{}",
		`{"apiVersion":"kubelet-compat.io/v1alpha0","kind":"UpgradeCompat"}`,
	} {
		_, err := parseAnyFormat([]byte(bad))
		assert.Check(t, err != nil, "accepted %s", bad)
	}
}

func versionStrings(vs []kubeletcompat.Version) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.String())
	}
	return out
}

func TestInferHashVersion(t *testing.T) {
	v := func(s string) kubeletcompat.Version {
		t.Helper()
		x, err := kubeletcompat.ParseVersion(s)
		assert.NilError(t, err)
		return x
	}
	spec := func(yaml string) *v1.Container {
		t.Helper()
		p, err := manifest.DecodeStaticPod([]byte(yaml))
		assert.NilError(t, err)
		return &p.Spec.Containers[0]
	}
	hashOf := func(version string, c *v1.Container) uint64 {
		t.Helper()
		h, err := kubeletcompat.ContainerHash(v(version), c)
		assert.NilError(t, err)
		return h
	}
	seccomp, plain := spec(seccompYAML), spec(plainYAML)
	for _, tc := range []struct {
		name     string
		spec     *v1.Container
		stored   uint64
		hashErr  error
		running  string
		named    []string
		want     string
		wantKind inferKind
		warning  string
	}{
		{name: "the running kubelet's own hash", spec: seccomp, stored: hashOf("v1.20.15", seccomp), running: "v1.20.15", named: []string{"v1.19.16"}, want: "v1.20.15", wantKind: inferOwn},
		{name: "a named kubelet before a newer unnamed one whose hash agrees", spec: seccomp, stored: hashOf("v1.17.17", seccomp), running: "v1.20.15", named: []string{"v1.17.17"}, want: "v1.17.17", wantKind: inferOlder},
		{name: "no names: the newest minor whose hash agrees", spec: seccomp, stored: hashOf("v1.17.17", seccomp), running: "v1.20.15", want: "v1.18.0", wantKind: inferOlder},
		{name: "across the 1.31 hash change", spec: plain, stored: hashOf("v1.30.14", plain), running: "v1.32.13", want: "v1.30.0", wantKind: inferOlder},
		{name: "a named newer kubelet whose hash does not agree", spec: seccomp, stored: hashOf("v1.17.17", seccomp), running: "v1.19.16", named: []string{"v1.20.15"}, want: "v1.18.0", wantKind: inferOlder},
		{name: "rolled back: a newer kubelet's hash", spec: plain, stored: hashOf("v1.31.14", plain), running: "v1.30.14", want: "v1.31.0", wantKind: inferNewer},
		{name: "rolled back: the named newer kubelet first", spec: plain, stored: hashOf("v1.31.14", plain), running: "v1.30.14", named: []string{"v1.33.13"}, want: "v1.33.13", wantKind: inferNewer},
		{name: "nothing explains it", spec: plain, stored: 0xdeadbeef, running: "v1.20.15", named: []string{"v1.19.16"}, want: "v1.20.15", wantKind: inferUnexplained,
			warning: "container ns/pod/app (c-1): stored hash deadbeef is what no kubelet v1.16 to v1.38 computes for its spec from src: recorded as v1.20.15's; the next kubelet restarts it unless its own hash matches"},
		{name: "a named pre-1.16 kubelet", spec: plain, stored: 0xdeadbeef, running: "v1.18.19", named: []string{"v1.15.12"}, want: "v1.15.12", wantKind: inferByAge},
		{name: "no spec", stored: 0xdeadbeef, running: "v1.20.15", want: "v1.20.15", wantKind: inferUnchecked,
			warning: "container ns/pod/app (c-1): no pod spec found (nowhere): its stored hash deadbeef is not checked; recorded as v1.20.15's"},
		{name: "no stored hash", spec: plain, hashErr: errors.New("no io.kubernetes.container.hash annotation"), running: "v1.20.15", want: "v1.20.15", wantKind: inferUnchecked},
		{name: "a pre-1.16 running kubelet labels everything its own", spec: plain, stored: 0xdeadbeef, running: "v1.15.12", want: "v1.15.12", wantKind: inferOwn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var named []kubeletcompat.Version
			for _, n := range tc.named {
				named = append(named, v(n))
			}
			c := cri.Container{ID: "c-1", PodNamespace: "ns", PodName: "pod", Name: "app", Hash: tc.stored, HashErr: tc.hashErr}
			got := inferHashVersion(c, tc.spec, "src", "nowhere", v(tc.running), named)
			assert.Equal(t, got.version.String(), tc.want)
			assert.Equal(t, got.kind, tc.wantKind)
			if tc.warning != "" {
				assert.Equal(t, got.warning, tc.warning)
			}
			assert.Equal(t, got.warning == "", tc.wantKind == inferOwn || tc.wantKind == inferOlder || tc.wantKind == inferNewer, "warning %q", got.warning)
		})
	}
}

// stopSignalYAML sets lifecycle.stopSignal, new in v1.Container in 1.33.
const stopSignalYAML = `apiVersion: v1
kind: Pod
metadata:
  name: stop-signal
  namespace: kube-system
spec:
  os:
    name: linux
  containers:
  - name: app
    image: busybox:1.36
    lifecycle:
      stopSignal: SIGUSR1
`

// TestRollbackFromNewerMinors (issue 32): record on a kubelet newer than
// 1.31 writes the spec of each container, as that kubelet reads it, and the
// patched 1.30 swapped back in keeps a container whose spec sets no field
// 1.30 lacks and restarts one that sets lifecycle.stopSignal (new in 1.33),
// which preflight names. A 1.32 kubelet never read that field (it ran the
// container without it, as 1.30 does): kept. With the CLI's k8s.io/api
// older than the recording kubelet, record wrote no spec and every
// container restarted.
func TestRollbackFromNewerMinors(t *testing.T) {
	const (
		etcdID = "c-etcd-uid-etcd"
		stopID = "c-stop-uid-app"
	)
	for _, tc := range []struct {
		from, to string
		want     map[string]bool // kept by the older kubelet, by container ID
		wantWhy  string          // the patched reason preflight gives for the stop-signal container
	}{
		{from: "v1.33.13", to: "v1.30.14", want: map[string]bool{etcdID: true, stopID: false},
			wantWhy: "rollback: sets fields v1.30.14 does not know: lifecycle.stopSignal"},
		{from: "v1.37.2", to: "v1.30.14", want: map[string]bool{etcdID: true, stopID: false},
			wantWhy: "rollback: sets fields v1.30.14 does not know: lifecycle.stopSignal"},
		{from: "v1.32.13", to: "v1.30.14", want: map[string]bool{etcdID: true, stopID: true},
			wantWhy: "the spec is the one recorded (rollback)"},
	} {
		t.Run(tc.from+"->"+tc.to, func(t *testing.T) {
			f := newFixture(t, cri.APIv1)
			f.addStaticPods(tc.from,
				pod{file: "etcd.yaml", yaml: etcdYAML, uid: "etcd-uid", created: beforeStart, ready: true},
				pod{file: "stop.yaml", yaml: stopSignalYAML, uid: "stop-uid", created: beforeStart, ready: true})
			assert.Equal(t, f.run("record", "--kubelet-binary", f.kubeletBinary(tc.from)), ExitOK, "stderr %s", f.stderr.String())
			assert.Check(t, is.Equal(f.stderr.String(), ""))
			got, _, err := kubeletcompat.ReadFile(f.compatPath(), os.Getuid())
			assert.NilError(t, err)
			assert.Equal(t, len(got.Containers), 2)
			for _, c := range got.Containers {
				assert.Check(t, c.SpecHash != "", "%s: no spec hash", c.ID)
			}

			assert.Equal(t, f.run("preflight", "--from", tc.from, "--to", tc.to, "-f", f.manifestDir, "-o", "json"), ExitOK, "stderr %s", f.stderr.String())
			var pr struct {
				Rows []struct {
					Pod           string `json:"pod"`
					Patched       string `json:"patched"`
					PatchedReason string `json:"patchedReason"`
				} `json:"containers"`
			}
			assert.NilError(t, json.Unmarshal(f.stdout.Bytes(), &pr))
			predicted := map[string]bool{}
			for _, row := range pr.Rows {
				id := map[string]string{"kube-system/etcd": etcdID, "kube-system/stop-signal": stopID}[row.Pod]
				predicted[id] = row.Patched == "keep"
				if id == stopID {
					assert.Check(t, is.Contains(row.PatchedReason, tc.wantWhy))
				}
			}
			assert.Check(t, is.DeepEqual(predicted, tc.want), "preflight %s", f.stdout.String())

			f.runKubelet(tc.to)
			assert.Equal(t, f.run("status", "-o", "json"), ExitOK, "stderr %s", f.stderr.String())
			var r statusReport
			assert.NilError(t, json.Unmarshal(f.stdout.Bytes(), &r))
			kept := map[string]bool{}
			for _, l := range r.Legacy {
				kept[l.ID] = l.Keep != nil && *l.Keep
			}
			assert.DeepEqual(t, kept, tc.want)
		})
	}
}

// TestRecordAfterRollback: record on the older kubelet replaces the file a
// newer kubelet recorded for the swap back once that older kubelet runs
// (it started after the record); while the older kubelet that runs started
// before it, the file is not stale and record refuses.
func TestRecordAfterRollback(t *testing.T) {
	for _, tc := range []struct {
		name       string
		recordedAt time.Time // when 1.31 recorded the file
		wantCode   int
		wantErr    string
	}{
		{name: "rolled back", recordedAt: kubeletStart.Add(-10 * time.Minute), wantCode: ExitOK},
		{name: "the older kubelet ran before the record", recordedAt: kubeletStart.Add(10 * time.Minute), wantCode: ExitError, wantErr: "newer than v1.30.14: refusing to overwrite it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, cri.APIv1)
			f.addStaticPods("v1.31.14", pod{file: "etcd.yaml", yaml: etcdYAML, uid: "etcd-uid", created: beforeStart, ready: true})
			f.now = tc.recordedAt
			assert.Equal(t, f.run("record", "--kubelet-binary", f.kubeletBinary("v1.31.14")), ExitOK, "stderr %s", f.stderr.String())
			f.runKubelet("v1.30.14")
			f.now = kubeletStart.Add(time.Hour)
			code := f.run("record")
			assert.Equal(t, code, tc.wantCode, "stderr %s", f.stderr.String())
			got, _, err := kubeletcompat.ReadFile(f.compatPath(), os.Getuid())
			assert.NilError(t, err)
			if tc.wantErr != "" {
				assert.Check(t, is.Contains(f.stderr.String(), tc.wantErr))
				assert.Equal(t, got.PreviousVersion, "v1.31.14")
				return
			}
			assert.Equal(t, got.PreviousVersion, "v1.30.14")
			// The container 1.31 created still carries 1.31's hash: the
			// file says so, or the 1.30 kubelet restarts it.
			assert.DeepEqual(t, hashVersions(got), map[string]string{"c-etcd-uid-etcd": "v1.31.14"})
			assert.Check(t, got.Containers[0].SpecHash != "", "no spec hash carried")
			assert.Check(t, is.Contains(f.stdout.String(), "a rollback"))
			// The rolled-back kubelet keeps it, and so does the next patch
			// release swapped in after a record on 1.30.14.
			assertKept(t, f, "c-etcd-uid-etcd")
			assert.Equal(t, f.run("record"), ExitOK, "stderr %s", f.stderr.String())
			f.runKubelet("v1.30.15")
			assertKept(t, f, "c-etcd-uid-etcd")
		})
	}
}

// assertKept runs status as the running kubelet decides and checks that it
// keeps the container id.
func assertKept(t *testing.T, f *fixture, id string) {
	t.Helper()
	assert.Equal(t, f.run("status", "-o", "json"), ExitOK, "stderr %s", f.stderr.String())
	var r statusReport
	assert.NilError(t, json.Unmarshal(f.stdout.Bytes(), &r))
	for _, l := range r.Legacy {
		if l.ID == id {
			assert.Check(t, l.Keep != nil && *l.Keep, "%s: %s", id, l.Decision)
			return
		}
	}
	t.Errorf("status lists no legacy container %s: %+v", id, r.Legacy)
}
