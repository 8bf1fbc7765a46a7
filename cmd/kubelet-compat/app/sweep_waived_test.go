package app

import (
	"encoding/json"
	"os"
	"strconv"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/internal/manifest"
	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// waivedPod is a pod on the test node for TestSweepKeepsFileForWaivedPods:
// an API pod (its spec served by the fake API server) or a static pod (its
// manifest in --manifest-dir), and the sandbox and container the runtime
// runs for it.
type waivedPod struct {
	name     string
	static   bool
	selector map[string]string
	// tolerates the test's NoExecute taint.
	tolerates bool
	// afterSwap: created by the new kubelet, so the file does not list it.
	afterSwap bool
	// exited: its container no longer runs (and its sandbox is not ready).
	exited bool
	// statusNames is a container ID the pod's API status claims, as any
	// user with pods/status rights can write it.
	statusNames string
}

const waivedTaintKey = "example.com/maintenance"

// runtimeAndSpecs returns the API pods (static pods: their mirror pods are
// not needed) and puts the manifests of the static pods in the manifest
// directory and every pod's sandbox and container in the runtime, with the
// hash kubelet `creator` stores.
func (f *fixture) runtimeAndSpecs(creator kubeletcompat.Version, pods []waivedPod) []v1.Pod {
	f.t.Helper()
	var api []v1.Pod
	var sbs []cri.Sandbox
	var cs []cri.Container
	for _, wp := range pods {
		p := v1.Pod{}
		p.APIVersion, p.Kind = "v1", "Pod"
		p.Name, p.Namespace, p.UID = wp.name, "default", types.UID(wp.name+"-uid")
		p.Spec.NodeName = testNode
		p.Spec.NodeSelector = wp.selector
		p.Spec.Containers = []v1.Container{{Name: "app", Image: "busybox:1.36"}}
		if wp.tolerates {
			p.Spec.Tolerations = []v1.Toleration{{Key: waivedTaintKey, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}
		}
		name := wp.name
		if wp.static {
			// The manifest pins its UID: only the waiver can need the file.
			y := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + wp.name + "\n  uid: " + string(p.UID) + "\nspec:\n"
			if len(wp.selector) > 0 {
				y += "  nodeSelector:\n"
				for k, v := range wp.selector {
					y += "    " + k + ": " + v + "\n"
				}
			}
			y += "  containers:\n  - name: app\n    image: busybox:1.36\n"
			f.write(f.manifestDir+"/"+wp.name+".yaml", y)
			obj, err := manifest.DecodeStaticPod([]byte(y))
			assert.NilError(f.t, err)
			p.Spec.Containers = obj.Spec.Containers
			name = manifest.StaticPodName(wp.name, testNode)
		} else {
			manifest.SetDefaults(&p)
		}
		h, err := kubeletcompat.ContainerHash(creator, &p.Spec.Containers[0])
		assert.NilError(f.t, err)
		created := beforeStart
		if wp.afterSwap {
			created = afterStart
		}
		sbID, cID := "sb-"+wp.name, "c-"+wp.name
		sb := cri.Sandbox{ID: sbID, Name: name, Namespace: "default", UID: string(p.UID), Ready: !wp.exited, CreatedAt: created,
			Labels: map[string]string{cri.PodNameLabel: name, cri.PodNamespaceLabel: "default", cri.PodUIDLabel: string(p.UID)}}
		if wp.static {
			sb.Annotations = map[string]string{cri.ConfigSourceAnnotation: cri.ConfigSourceFile}
		}
		state := cri.ContainerRunning
		if wp.exited {
			state = cri.ContainerExited
		}
		sbs = append(sbs, sb)
		cs = append(cs, cri.Container{ID: cID, SandboxID: sbID, Name: "app", Image: "busybox:1.36", State: state, CreatedAt: created,
			Labels:      map[string]string{cri.PodNameLabel: name, cri.PodNamespaceLabel: "default", cri.PodUIDLabel: string(p.UID), cri.ContainerNameLabel: "app"},
			Annotations: map[string]string{cri.ContainerHashAnnotation: strconv.FormatUint(h, 16), cri.RestartCountAnnotation: "0"}})
		if wp.statusNames != "" {
			p.Status.Phase = v1.PodRunning
			p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "app", ContainerID: "containerd://" + wp.statusNames, Ready: true,
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}
		}
		if !wp.static {
			api = append(api, p)
		}
	}
	f.srv.Set(sbs, cs)
	return api
}

// TestSweepKeepsFileForWaivedPods (issue 32, item 5): while the compat file
// is in force, the patched kubelet admits a pod that the runtime shows ran
// before the swap despite a node affinity/selector or taint rejection. Once
// sweep deletes the file, the next start of the kubelet (for any reason)
// re-admits that pod without the waiver, rejects it and kills it
// (kubernetes#76322). So sweep keeps the file while such a pod runs and
// says which; --release-waived deletes it anyway and names the pods that
// lose their waiver. Which pods count is judged as the kubelet judges: the
// runtime (a running container the file lists, or a recorded static pod's
// sandbox), never the pod's API status; the node's labels and taints and the
// pod's spec decide whether it would be rejected.
func TestSweepKeepsFileForWaivedPods(t *testing.T) {
	web := waivedPod{name: "web", selector: map[string]string{"disktype": "ssd"}}
	tainted := &v1.Taint{Key: waivedTaintKey, Value: "true", Effect: v1.TaintEffectNoExecute}
	rejectedLine := "pod default/web (uid web-uid) holds its admission waiver: without the compat file the kubelet's next start rejects it (NodeAffinity: nodeSelector disktype=ssd: the node has no label disktype)"
	for _, tc := range []struct {
		name     string
		from, to string // the kubelets before and after the swap; default 1.18.19 -> 1.19.16
		pods     []waivedPod
		labels   map[string]string // the node's labels
		taint    *v1.Taint
		noKube   bool // sweep without --kubeconfig
		noNode   bool // the API server does not serve the node
		// forgedMirror: the API server also lists a pod of another
		// namespace, created after the victim, whose mirror-pod annotation
		// names the victim web's UID and whose spec has no nodeSelector
		// (any user who may create pods can set the annotation).
		forgedMirror bool
		args         []string
		wantCode     int
		wantOut      []string
		wantNot      []string
		wantErr      string
		wantFile     bool
	}{
		{name: "a pod rejected for its nodeSelector without the waiver: kept", pods: []waivedPod{web},
			wantCode: ExitKept, wantFile: true, wantOut: []string{rejectedLine},
			wantErr: "1 pod(s) started before the kubelet would be rejected without it (node affinity or taints; --release-waived deletes it anyway)"},
		{name: "--release-waived deletes it and names the pods that lose their waiver", pods: []waivedPod{web}, args: []string{"--release-waived"},
			wantCode: ExitOK, wantFile: false, wantOut: []string{
				"pod default/web (uid web-uid) loses its admission waiver: the kubelet's next start rejects it (NodeAffinity: nodeSelector disktype=ssd: the node has no label disktype) and kills it",
				"deleted ", ": no running container needs it; 1 pod(s) lose their admission waiver (--release-waived)\n"}},
		{name: "--release-waived --dry-run says who would lose it", pods: []waivedPod{web}, args: []string{"--release-waived", "--dry-run"},
			wantCode: ExitOK, wantFile: true, wantOut: []string{
				"pod default/web (uid web-uid) would lose its admission waiver: the kubelet's next start rejects it (NodeAffinity",
				"would delete "}},
		{name: "the node's labels match: deleted", pods: []waivedPod{web}, labels: map[string]string{"disktype": "ssd"},
			wantCode: ExitOK, wantFile: false, wantOut: []string{"deleted "}, wantNot: []string{"waiver"}},
		{name: "a pod started after the swap holds nothing", pods: []waivedPod{{name: "web", selector: web.selector, afterSwap: true}},
			wantCode: ExitOK, wantFile: false, wantOut: []string{"deleted "}, wantNot: []string{"waiver"}},
		{name: "a listed container that exited holds nothing", pods: []waivedPod{{name: "web", selector: web.selector, exited: true}},
			wantCode: ExitOK, wantFile: false, wantOut: []string{"deleted "}, wantNot: []string{"waiver"}},
		{name: "API status naming a listed container is no evidence",
			pods:     []waivedPod{{name: "web"}, {name: "forged", selector: web.selector, afterSwap: true, statusNames: "c-web"}},
			wantCode: ExitOK, wantFile: false, wantOut: []string{"deleted "}, wantNot: []string{"waiver"}},
		{name: "a mirror-pod annotation naming the pod's UID does not stand for its spec", pods: []waivedPod{web}, forgedMirror: true,
			wantCode: ExitKept, wantFile: true, wantOut: []string{rejectedLine}},
		{name: "an untolerated NoExecute taint, kubelet 1.23 (it checks taints): kept", from: "v1.22.17", to: "v1.23.17",
			pods: []waivedPod{{name: "web"}}, taint: tainted, wantCode: ExitKept, wantFile: true,
			wantOut: []string{"pod default/web (uid web-uid) holds its admission waiver: without the compat file the kubelet's next start rejects it (TaintToleration: it does not tolerate the node's taint example.com/maintenance=true:NoExecute)"}},
		{name: "a tolerated taint: deleted", from: "v1.22.17", to: "v1.23.17",
			pods: []waivedPod{{name: "web", tolerates: true}}, taint: tainted, wantCode: ExitOK, wantFile: false, wantNot: []string{"waiver"}},
		{name: "the same taint, kubelet 1.19 (it does not check taints): deleted",
			pods: []waivedPod{{name: "web"}}, taint: tainted, wantCode: ExitOK, wantFile: false, wantNot: []string{"waiver"}},
		{name: "a static pod is not checked for taints: deleted", from: "v1.22.17", to: "v1.23.17",
			pods: []waivedPod{{name: "agent", static: true}}, taint: tainted, wantCode: ExitOK, wantFile: false, wantNot: []string{"waiver"}},
		{name: "a static pod rejected for its nodeSelector: kept", pods: []waivedPod{{name: "agent", static: true, selector: web.selector}},
			wantCode: ExitKept, wantFile: true,
			wantOut: []string{"pod default/agent-node-1 (uid agent-uid) holds its admission waiver: without the compat file the kubelet's next start rejects it (NodeAffinity: nodeSelector disktype=ssd: the node has no label disktype)"}},
		{name: "a static pod with a nodeSelector and no --kubeconfig: the node's labels are unknown, kept", noKube: true,
			pods: []waivedPod{{name: "agent", static: true, selector: web.selector}}, wantCode: ExitKept, wantFile: true,
			wantOut: []string{"pod default/agent-node-1 (uid agent-uid) holds its admission waiver: it has a nodeSelector or required node affinity and the node's labels are not known (give --kubeconfig)"}},
		{name: "the node cannot be read: nothing deleted", pods: []waivedPod{web}, noNode: true, wantCode: ExitError, wantFile: true,
			wantErr: "cannot tell which pods run on an admission waiver: reading node node-1: "},
		{name: "a static pod without a nodeSelector and no --kubeconfig: deleted", noKube: true,
			pods: []waivedPod{{name: "agent", static: true}}, wantCode: ExitOK, wantFile: false, wantNot: []string{"waiver"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from, to := tc.from, tc.to
			if from == "" {
				from, to = "v1.18.19", "v1.19.16"
			}
			creator, err := kubeletcompat.ParseVersion(from)
			assert.NilError(t, err)
			f := newFixture(t, cri.APIv1)
			// Record with every pod created before the swap running, then
			// swap; the pods created after it are added then.
			var before []waivedPod
			for _, p := range tc.pods {
				if !p.afterSwap {
					running := p
					running.exited = false
					before = append(before, running)
				}
			}
			f.runtimeAndSpecs(creator, before)
			assert.Equal(t, f.run("record", "--kubelet-binary", f.kubeletBinary(from)), ExitOK, "record: %s", f.stderr.String())
			api := f.runtimeAndSpecs(creator, tc.pods)
			f.runKubelet(to)

			node := v1.Node{}
			node.APIVersion, node.Kind = "v1", "Node"
			node.Name = testNode
			node.Labels = map[string]string{"kubernetes.io/hostname": testNode}
			for k, v := range tc.labels {
				node.Labels[k] = v
			}
			if tc.taint != nil {
				node.Spec.Taints = []v1.Taint{*tc.taint}
			}
			if tc.forgedMirror {
				forger := v1.Pod{}
				forger.APIVersion, forger.Kind = "v1", "Pod"
				forger.Name, forger.Namespace, forger.UID = "forger", "zz-tenant", "forger-uid"
				forger.Annotations = map[string]string{cri.ConfigMirrorAnnotation: "web-uid"}
				forger.Spec.NodeName = testNode
				forger.Spec.Containers = []v1.Container{{Name: "app", Image: "busybox:1.36"}}
				manifest.SetDefaults(&forger)
				api = append(api, forger)
			}
			args := []string{"sweep"}
			switch {
			case tc.noNode:
				args = append(args, "--kubeconfig", apiServer(t, f.dir, api...))
			case !tc.noKube:
				args = append(args, "--kubeconfig", apiServerWithNode(t, f.dir, &node, api...))
			}
			code := f.run(append(args, tc.args...)...)
			assert.Equal(t, code, tc.wantCode, "stdout %s\nstderr %s", f.stdout.String(), f.stderr.String())
			for _, want := range tc.wantOut {
				assert.Check(t, is.Contains(f.stdout.String(), want))
			}
			for _, not := range tc.wantNot {
				assert.Check(t, !is.Contains(f.stdout.String(), not)().Success(), "stdout %q has %q", f.stdout.String(), not)
			}
			if tc.wantErr != "" {
				assertOneErrorLine(t, f.stderr.String(), tc.wantErr)
			}
			_, err = os.Stat(f.compatPath())
			assert.Check(t, is.Equal(err == nil, tc.wantFile), "file present after exit %d", code)
		})
	}
}

// TestStatusNamesWaiverHolders: status says which pods run on an admission
// waiver (inForce.waiverHolders, admission.pods[].holdsFile and the table's
// "compat file in force because" lines), the pods sweep keeps the file for.
func TestStatusNamesWaiverHolders(t *testing.T) {
	f := newFixture(t, cri.APIv1)
	v118 := kubeletcompat.Version{Major: 1, Minor: 18, Patch: 19}
	pods := []waivedPod{{name: "web", selector: map[string]string{"disktype": "ssd"}}, {name: "plain"}}
	f.runtimeAndSpecs(v118, pods)
	assert.Equal(t, f.run("record", "--kubelet-binary", f.kubeletBinary("v1.18.19")), ExitOK, "record: %s", f.stderr.String())
	api := f.runtimeAndSpecs(v118, append(pods, waivedPod{name: "late", selector: map[string]string{"disktype": "ssd"}, afterSwap: true}))
	f.runKubelet("v1.19.16")
	node := &v1.Node{}
	node.Name = testNode
	kubeconfig := apiServerWithNode(t, f.dir, node, api...)

	assert.Equal(t, f.run("status", "-o", "json", "--kubeconfig", kubeconfig), ExitOK, "stderr %s", f.stderr.String())
	var r statusReport
	assert.NilError(t, json.Unmarshal(f.stdout.Bytes(), &r))
	assert.Assert(t, r.InForce != nil)
	assert.DeepEqual(t, r.InForce.WaiverHolders, []waiverHolder{{Pod: "default/web", UID: "web-uid", Reasons: []string{"NodeAffinity"},
		Why: "NodeAffinity: nodeSelector disktype=ssd: the node has no label disktype"}})
	assert.Check(t, is.Contains(r.InForce.SweepNeeds, "pod default/web (uid web-uid) holds its admission waiver: without the compat file the kubelet's next start rejects it (NodeAffinity: nodeSelector disktype=ssd: the node has no label disktype)"))
	holds := map[string]string{}
	for _, p := range r.Admission.Pods {
		holds[p.Pod] = p.HoldsFile
	}
	assert.DeepEqual(t, holds, map[string]string{
		"default/web":   "without the compat file the kubelet's next start rejects it (NodeAffinity: nodeSelector disktype=ssd: the node has no label disktype)",
		"default/plain": "",
		// Started after the swap: upstream's admission, no waiver to lose.
		"default/late": "",
	})

	assert.Equal(t, f.run("status", "--kubeconfig", kubeconfig), ExitOK, "stderr %s", f.stderr.String())
	for _, want := range []string{
		"  listed container default/web/app (c-web) runs (admission rests on it; its pod runs on an admission waiver, below)",
		"  listed container default/plain/app (c-plain) runs (admission rests on it; sweep does not keep the file for it)",
		"  pod default/web (uid web-uid) runs on its admission waiver: without the compat file the kubelet's next start rejects it (NodeAffinity: nodeSelector disktype=ssd: the node has no label disktype); sweep keeps the file for it (--release-waived deletes it anyway)",
		"once no running container, static pod or pod on an admission waiver needs it (1 still do)",
	} {
		assert.Check(t, is.Contains(f.stdout.String(), want))
	}
}

// TestSpecIndexMirrorPods: the mirror-pod annotation, which any user who
// may create pods can set, stands for a static pod's spec only where the
// manifest is not found, for a static sandbox of the mirror's own namespace
// and name, and never for the UID of an API pod.
func TestSpecIndexMirrorPods(t *testing.T) {
	mk := func(ns, name, uid, mirrorOf string) *v1.Pod {
		p := &v1.Pod{}
		p.Namespace, p.Name, p.UID = ns, name, types.UID(uid)
		if mirrorOf != "" {
			p.Annotations = map[string]string{cri.ConfigMirrorAnnotation: mirrorOf}
		}
		return p
	}
	web := mk("default", "web", "web-uid", "")
	mirror := mk("kube-system", "etcd-node-1", "mirror-uid", "etcd-uid")
	forgedWeb := mk("zz-tenant", "forger", "forger-uid", "web-uid")
	forgedEtcd := mk("zz-tenant", "etcd-node-1", "forger2-uid", "agent-uid")
	idx := &specIndex{static: map[string]manifest.Static{}, byUID: map[string]*v1.Pod{}, mirrors: map[string]*v1.Pod{}}
	for _, p := range []*v1.Pod{web, mirror, forgedWeb, forgedEtcd} {
		idx.byUID[string(p.UID)] = p
		if uid := p.Annotations[cri.ConfigMirrorAnnotation]; uid != "" {
			idx.mirrors[uid] = p
		}
	}
	static := map[string]string{cri.ConfigSourceAnnotation: cri.ConfigSourceFile}
	for _, tc := range []struct {
		name string
		sb   cri.Sandbox
		want *v1.Pod
	}{
		{name: "an API pod by its own UID, whatever a mirror annotation names", sb: cri.Sandbox{Namespace: "default", Name: "web", UID: "web-uid"}, want: web},
		{name: "a static pod without its manifest: its mirror pod", sb: cri.Sandbox{Namespace: "kube-system", Name: "etcd-node-1", UID: "etcd-uid", Annotations: static}, want: mirror},
		{name: "a mirror of another namespace does not stand for it", sb: cri.Sandbox{Namespace: "kube-system", Name: "agent-node-1", UID: "agent-uid", Annotations: static}},
		{name: "a mirror does not stand for an API pod's sandbox", sb: cri.Sandbox{Namespace: "kube-system", Name: "etcd-node-1", UID: "etcd-uid"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb := tc.sb
			got, ok := idx.lookup(&sb, cri.Container{PodUID: sb.UID, PodNamespace: sb.Namespace, PodName: sb.Name})
			assert.Equal(t, ok, tc.want != nil)
			if tc.want != nil {
				assert.Equal(t, got.pod, tc.want)
			}
		})
	}
}
