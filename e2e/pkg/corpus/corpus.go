// Package corpus generates the e2e's workload: static pod manifests that
// cover what an in-place kubelet upgrade can break (hostNetwork and bridge
// pods, several containers, init containers, probes of every kind,
// resources, env, emptyDir and hostPath volumes, pods with and without
// metadata.uid, seccompProfile (container and pod level), a probe's
// terminationGracePeriodSeconds;
// in API mode also configMap volumes and resizePolicy), and what
// upstream's kubelet restarts for each of them on each step.
package corpus

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/upstream"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// Images the corpus runs; the local provider builds and imports them.
const (
	BusyboxImage        = "kubelet-compat.local/e2e/busybox:1"
	BusyboxVariantImage = "kubelet-compat.local/e2e/busybox:2" // for the genuine change
	PauseImage          = "kubelet-compat.local/e2e/pause:1"
	Namespace           = "kc-e2e"
)

// Kinds of pods, in the order the corpus cycles through them: the first
// eight pods hold one of each.
const (
	KindWeb        = "web"        // bridge network, http readiness, exec liveness, resources, env
	KindHostNet    = "hostnet"    // hostNetwork, tcp readiness and http liveness on 127.0.0.1
	KindMulti      = "multi"      // two containers sharing an emptyDir, exec readiness
	KindInit       = "init"       // an init container fills the emptyDir the server serves
	KindHostPath   = "hostpath"   // a hostPath volume
	KindSeccomp    = "seccomp"    // seccompProfile RuntimeDefault, explicit metadata.uid
	KindProbeGrace = "probegrace" // liveness probe with terminationGracePeriodSeconds, explicit uid
	KindPinned     = "pinned"     // explicit metadata.uid, otherwise like web
	KindConfigMap  = "configmap"  // API mode only: serves a configMap volume
	KindResize     = "resize"     // API mode only: web with resizePolicy memory RestartContainer, cpu and memory requests and limits
	// KindRestartAll is web with an explicit uid whose container sets
	// restartPolicy Always and a restartPolicyRules action
	// RestartAllContainers (exit code 42, which it never returns): a pod
	// that needs the node feature RestartAllContainersOnContainerExits
	// (KEP-5328). Static pods only, one more pod after the rotation, when
	// every kubelet of the plan is RestartAllMinMinor or newer.
	KindRestartAll = "restartall"
	// KindPodSeccomp is web without resources, with a pod-level
	// seccompProfile RuntimeDefault (as kubeadm's control-plane pods) and
	// without metadata.uid; KindPlain is web without resources and
	// without metadata.uid. 1.38 changed SeccompProfile and
	// resource.Quantity only: it recreates the first and keeps the second
	// (pkg/upstream, per pod). Static pods only, after the rotation, when
	// every kubelet of the plan is PerPodUIDMinMinor or newer.
	KindPodSeccomp = "podseccomp"
	KindPlain      = "plain"
)

// PerPodUIDMinMinor is the oldest plan minor whose static corpus gets the
// KindPodSeccomp and KindPlain pods: 1.37 -> 1.38 is the first step whose
// kubelet changes only types some pods instantiate, and older plans keep
// the corpus their figures (docs/results.md) were measured with (a
// seccompProfile needs 1.19 anyway).
const PerPodUIDMinMinor = 37

// RestartAllMinMinor is the first minor whose kubelet accepts a static pod
// with a RestartAllContainers rule by default: a kubelet validates static
// pods with its own feature gates (pkg/kubelet/config/common.go,
// ValidatePodCreate, no old pod to ratchet from), and
// RestartAllContainersOnContainerExits is alpha (off) in 1.35, beta (on)
// in 1.36 and 1.37 (ContainerRestartRules, which the container-level
// restartPolicy needs, is on from 1.35).
const RestartAllMinMinor = 36

// RestartAllGate is the feature gate of that rule.
const RestartAllGate = "RestartAllContainersOnContainerExits"

// ConfigMapName is the configMap the configmap pods mount (API mode).
const ConfigMapName = "kc-e2e-www"

var kinds = []string{KindWeb, KindHostNet, KindMulti, KindInit, KindHostPath, KindSeccomp, KindProbeGrace, KindPinned}

// Options shape a corpus.
type Options struct {
	Pods     int
	NodeName string
	// HostPathRoot holds the hostPath volumes' directories.
	HostPathRoot string
	// FirstHostPort is the first 127.0.0.1 port of the hostNetwork pods.
	FirstHostPort int
	// API makes API pods instead of static pods: spec.nodeName set, no
	// metadata.uid (the API server assigns it), no service account token,
	// and configMap volumes among the kinds.
	API bool
	// ResizeGate says the e2e turns InPlacePodVerticalScaling on where it
	// is off by default (ResizeGateMinor): the old API server keeps the
	// resize pods' resizePolicy (UpstreamRestarts).
	ResizeGate bool
	// MinKubeletMinor is the oldest kubelet minor of the plan (0: not
	// known): from RestartAllMinMinor on, static corpora get one
	// KindRestartAll pod more.
	MinKubeletMinor int
}

// Pod is one pod of the corpus with what the e2e needs to know about it.
type Pod struct {
	Name string // as in the manifest
	Kind string
	// RuntimeName is namespace/name as the runtime sees it: static pods are
	// named <name>-<node>.
	RuntimeName string
	HostNetwork bool
	// Port is where the pod serves HTTP: on the pod IP, or on 127.0.0.1
	// for hostNetwork pods.
	Port       int
	PinnedUID  bool
	Containers int
	Spec       *v1.Pod
}

// Corpus is the generated set of pods.
type Corpus struct {
	Pods       []Pod
	API        bool
	ResizeGate bool
}

// New generates o.Pods pods.
func New(o Options) *Corpus {
	c := &Corpus{}
	ks := kinds
	if o.API {
		// resize last: the smaller API corpora (admission, devices) stay
		// as they were.
		ks = append(append([]string{KindConfigMap}, kinds...), KindResize)
	}
	for i := 0; i < o.Pods; i++ {
		kind := ks[i%len(ks)]
		c.Pods = append(c.Pods, newPod(kind, fmt.Sprintf("%s-%03d", kind, i), i, o))
	}
	if !o.API && o.MinKubeletMinor >= RestartAllMinMinor {
		c.Pods = append(c.Pods, newPod(KindRestartAll, fmt.Sprintf("%s-%03d", KindRestartAll, o.Pods), o.Pods, o))
	}
	if !o.API && o.MinKubeletMinor >= PerPodUIDMinMinor {
		for _, kind := range []string{KindPodSeccomp, KindPlain} {
			i := len(c.Pods)
			c.Pods = append(c.Pods, newPod(kind, fmt.Sprintf("%s-%03d", kind, i), i, o))
		}
	}
	c.API, c.ResizeGate = o.API, o.ResizeGate
	return c
}

func newPod(kind, name string, i int, o Options) Pod {
	p := build(kind, name, i, o)
	if kind == KindPodSeccomp || kind == KindPlain {
		perPodUID(p, kind)
	}
	runtimeName := Namespace + "/" + name + "-" + o.NodeName
	if o.API {
		no := false
		p.UID = ""
		p.Spec.NodeName = o.NodeName
		p.Spec.AutomountServiceAccountToken = &no
		runtimeName = Namespace + "/" + name
	}
	return Pod{Name: name, Kind: kind, RuntimeName: runtimeName,
		HostNetwork: p.Spec.HostNetwork, Port: port(kind, i, o), PinnedUID: p.UID != "",
		Containers: len(p.Spec.Containers), Spec: p}
}

// WebPod is one more pod of kind web named name, outside the corpus (the
// admission cases create such pods after the baseline), with nodeSelector
// when not nil.
func WebPod(name string, nodeSelector map[string]string, o Options) Pod {
	p := newPod(KindWeb, name, 0, o)
	p.Spec.Spec.NodeSelector = nodeSelector
	return p
}

// Containers is the number of regular containers.
func (c *Corpus) Containers() int {
	n := 0
	for _, p := range c.Pods {
		n += p.Containers
	}
	return n
}

// Find returns the pod with the given runtime name.
func (c *Corpus) Find(runtimeName string) (Pod, bool) {
	for _, p := range c.Pods {
		if p.RuntimeName == runtimeName {
			return p, true
		}
	}
	return Pod{}, false
}

// ConfigMap is the configMap the configmap pods serve (API mode).
func ConfigMap() *v1.ConfigMap {
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: Namespace},
		Data: map[string]string{"index.html": "served from a configMap\n"}}
}

// Write writes one manifest per pod into dir.
func (c *Corpus) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, p := range c.Pods {
		if err := WritePod(dir, p.Spec); err != nil {
			return err
		}
	}
	return nil
}

// WritePod writes one manifest atomically (the kubelet polls the directory).
func WritePod(dir string, pod *v1.Pod) error {
	data, err := yaml.Marshal(pod)
	if err != nil {
		return fmt.Errorf("manifest of %s: %w", pod.Name, err)
	}
	path := filepath.Join(dir, pod.Name+".yaml")
	// A dot-file is ignored by the kubelet until renamed.
	tmp := filepath.Join(dir, "."+pod.Name+".yaml.tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func port(kind string, i int, o Options) int {
	if kind == KindHostNet {
		return o.FirstHostPort + i
	}
	return 8080
}

// pinnedUID is a fixed UID per pod index for the pods that set metadata.uid.
func pinnedUID(i int) types.UID {
	return types.UID(fmt.Sprintf("6b636f6d-7061-4e32-8065-%012d", i))
}

func build(kind, name string, i int, o Options) *v1.Pod {
	grace := int64(2)
	p := &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace, Labels: map[string]string{"app": kind, "e2e.kubelet-compat.io/pod": name}},
		Spec:       v1.PodSpec{TerminationGracePeriodSeconds: &grace, RestartPolicy: v1.RestartPolicyAlways},
	}
	serve := func(addr string) []string {
		return []string{"sh", "-c", "mkdir -p /www && echo " + name + " > /www/index.html && exec httpd -f -p " + addr + " -h /www"}
	}
	web := v1.Container{
		Name: "httpd", Image: BusyboxImage, Command: serve("8080"),
		Env: []v1.EnvVar{{Name: "POD_KIND", Value: kind}, {Name: "GREETING", Value: "hello from " + name}},
		Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("5m"), v1.ResourceMemory: resource.MustParse("8Mi")},
			Limits:   v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")},
		},
		ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/", Port: intstr.FromInt(8080)}}, PeriodSeconds: 5},
		LivenessProbe:  &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"test", "-f", "/www/index.html"}}}, PeriodSeconds: 10, FailureThreshold: 3},
	}
	switch kind {
	case KindWeb, KindPodSeccomp, KindPlain: // the last two: perPodUID
		p.Spec.Containers = []v1.Container{web}
	case KindConfigMap:
		c := web
		c.Command = []string{"httpd", "-f", "-p", "8080", "-h", "/www"}
		c.VolumeMounts = []v1.VolumeMount{{Name: "www", MountPath: "/www", ReadOnly: true}}
		p.Spec.Volumes = []v1.Volume{{Name: "www", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: ConfigMapName}}}}}
		p.Spec.Containers = []v1.Container{c}
	case KindResize:
		// Non-zero cpu and memory in requests and limits: every one
		// differs from the zero a kubelet without an actuated record
		// compares them to (resizeRestarts).
		c := web
		c.Resources = v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("5m"), v1.ResourceMemory: resource.MustParse("8Mi")},
			Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("64Mi")},
		}
		c.ResizePolicy = []v1.ContainerResizePolicy{
			{ResourceName: v1.ResourceCPU, RestartPolicy: v1.NotRequired},
			{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer},
		}
		p.Spec.Containers = []v1.Container{c}
	case KindPinned:
		p.UID = pinnedUID(i)
		p.Spec.Containers = []v1.Container{web}
	case KindHostNet:
		pt := port(kind, i, o)
		p.Spec.HostNetwork = true
		c := web
		c.Command = serve(fmt.Sprintf("127.0.0.1:%d", pt))
		c.ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Host: "127.0.0.1", Port: intstr.FromInt(pt)}}, PeriodSeconds: 5}
		c.LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Host: "127.0.0.1", Path: "/", Port: intstr.FromInt(pt)}}, PeriodSeconds: 10, FailureThreshold: 3}
		p.Spec.Containers = []v1.Container{c}
	case KindMulti:
		shared := v1.VolumeMount{Name: "shared", MountPath: "/shared"}
		c := web
		c.VolumeMounts = []v1.VolumeMount{shared}
		side := v1.Container{Name: "sidecar", Image: BusyboxImage,
			Command:        []string{"sh", "-c", "touch /shared/alive; trap 'exit 0' TERM; while true; do date > /shared/now; sleep 5; done"},
			VolumeMounts:   []v1.VolumeMount{shared},
			ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", "/shared/alive"}}}, PeriodSeconds: 5}}
		p.Spec.Volumes = []v1.Volume{{Name: "shared", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
		p.Spec.Containers = []v1.Container{c, side}
	case KindInit:
		www := v1.VolumeMount{Name: "www", MountPath: "/www"}
		p.Spec.Volumes = []v1.Volume{{Name: "www", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
		p.Spec.InitContainers = []v1.Container{{Name: "fill", Image: BusyboxImage, Command: []string{"sh", "-c", "echo " + name + " > /www/index.html"}, VolumeMounts: []v1.VolumeMount{www}}}
		c := web
		c.Command = []string{"httpd", "-f", "-p", "8080", "-h", "/www"}
		c.VolumeMounts = []v1.VolumeMount{www}
		p.Spec.Containers = []v1.Container{c}
	case KindHostPath:
		dirType := v1.HostPathDirectoryOrCreate
		p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: filepath.Join(o.HostPathRoot, name), Type: &dirType}}}}
		c := web
		c.Command = []string{"sh", "-c", "mkdir -p /data/www && echo " + name + " > /data/www/index.html && exec httpd -f -p 8080 -h /data/www"}
		c.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
		c.LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"test", "-f", "/data/www/index.html"}}}, PeriodSeconds: 10}
		p.Spec.Containers = []v1.Container{c}
	case KindSeccomp:
		p.UID = pinnedUID(i)
		c := web
		c.SecurityContext = &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}}
		p.Spec.Containers = []v1.Container{c}
	case KindRestartAll:
		p.UID = pinnedUID(i)
		p.Spec.Containers = []v1.Container{restartAll(web)}
	case KindProbeGrace:
		p.UID = pinnedUID(i)
		c := web
		tgps := int64(5)
		c.LivenessProbe = c.LivenessProbe.DeepCopy()
		c.LivenessProbe.TerminationGracePeriodSeconds = &tgps
		p.Spec.Containers = []v1.Container{c}
	}
	return p
}

// perPodUID makes p, a web pod, a KindPodSeccomp or KindPlain pod: without
// resources (no resource.Quantity), with a pod-level seccompProfile for
// KindPodSeccomp.
func perPodUID(p *v1.Pod, kind string) {
	p.Spec.Containers[0].Resources = v1.ResourceRequirements{}
	if kind == KindPodSeccomp {
		p.Spec.SecurityContext = &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}}
	}
}

// restartAll is c with restartPolicy Always and a restartPolicyRules
// action RestartAllContainers on exit code 42 (the kind restartall):
// ValidatePodCreate of 1.36 and 1.37 wants the container's restartPolicy
// with restart rules, and exitCodes on every rule.
func restartAll(c v1.Container) v1.Container {
	always := v1.ContainerRestartPolicyAlways
	c.RestartPolicy = &always
	c.RestartPolicyRules = []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
	return c
}

// Expectation is what upstream's kubelet does to one pod on a step.
type Expectation struct {
	Pod    string `json:"pod"` // runtime name
	Reason string `json:"reason"`
}

// UpstreamRestarts lists the pods an unpatched kubelet restarts (recreates
// or restarts a container of) when it replaces kubelet 1.<from> in place as
// kubelet 1.<to>: static pods without metadata.uid when a minor in
// (from, to] derives their UID differently (upstream.StaticPodUIDFor, per
// pod: a new derivation, or a type the pod instantiates changed), and
// containers whose hash differs between the two minors
// (kubeletcompat.ContainerHash: fields a minor's v1.Container lacks, e.g.
// seccompProfile before 1.19 and the probe's terminationGracePeriodSeconds
// before 1.21; the {name, image} hash from 1.31). A rollback (to < from)
// is the same comparison the other way: the minors in (to, from], the
// fields the older kubelet lacks, every container from 1.31+ down to
// 1.30 or older.
//
// API pods restart nothing of that: they have API server assigned UIDs, and
// an older API server drops the fields it does not know (seccompProfile
// before 1.19, the probe's terminationGracePeriodSeconds before 1.21) when
// the pod is created, so the newer kubelet never sees them. Measured (make
// e2e E2E=api, 1.20.15 -> 1.21.14, API server upgraded first): the unpatched
// 1.21 kubelet logged 51 computePodActions for the 10 pods, every one empty
// (no kill, no start), and 0 containers restarted. The one exception is
// the resize pods' container on the steps resizeRestarts names.
func (c *Corpus) UpstreamRestarts(from, to int) []Expectation {
	var out []Expectation
	if c.API {
		if !resizeRestarts(from, to, c.ResizeGate) {
			return nil
		}
		for _, p := range c.Pods {
			if p.Kind == KindResize {
				out = append(out, Expectation{p.RuntimeName, resizeReason})
			}
		}
		return out
	}
	for _, p := range c.Pods {
		if r := staticUIDReason(p, from, to); r != "" {
			out = append(out, Expectation{p.RuntimeName, r})
			continue
		}
		if r := upstream.PodHashChange(p.Spec.Spec.Containers, from, to); r != "" {
			out = append(out, Expectation{p.RuntimeName, r})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pod < out[j].Pod })
	return out
}

// staticUIDReason is why kubelet 1.to derives another UID for p than 1.from
// did (upstream's ControlReason: measured, or predicted for a step no
// control measured yet), "" when it does not or p sets metadata.uid.
func staticUIDReason(p Pod, from, to int) string {
	if p.PinnedUID {
		return ""
	}
	if r := upstream.StaticPodUIDFor(p.Spec, from, to).ControlReason(); r != "" {
		return "static pod without metadata.uid: " + r
	}
	return ""
}

// TargetRefuses lists the pods kubelet 1.<to>, with the feature gates
// gates on top of its defaults, refuses at its start, patched or not: the
// KindRestartAll pods when its RestartAllContainersOnContainerExits is off.
// A static pod reaches no admission handler then: the kubelet's own
// validation refuses the manifest ("Could not process manifest file",
// restartPolicyRules action not supported), the pod is not in its config,
// and its running containers are killed as an orphaned pod's
// (HandlePodCleanups). An API pod would pass the API server's validation
// and be rejected PodFeatureUnsupported by the declared-features admit
// handler; the corpus has no such API pod. The patched kubelet waives
// neither: it cannot honour the rule.
func (c *Corpus) TargetRefuses(to int, gates map[string]bool) []Expectation {
	if c.API || RestartAllGateOn(to, gates) {
		return nil
	}
	var out []Expectation
	for _, p := range c.Pods {
		if p.Kind == KindRestartAll {
			out = append(out, Expectation{p.RuntimeName, fmt.Sprintf("restartPolicyRules action RestartAllContainers with %s off on kubelet 1.%d: the static pod's manifest is invalid there, its containers are killed", RestartAllGate, to)})
		}
	}
	return out
}

// RestartAllGateOn says whether kubelet 1.minor runs with
// RestartAllContainersOnContainerExits on: gates' value, else its default
// (on from 1.36; absent before 1.35).
func RestartAllGateOn(minor int, gates map[string]bool) bool {
	if on, ok := gates[RestartAllGate]; ok && minor >= 35 {
		return on
	}
	return minor >= RestartAllMinMinor
}

// PatchedRollbackRestarts lists the pods the patched kubelet 1.<to>
// restarts a container of when it replaces kubelet 1.<from> on a rollback
// (to < from): those whose containers set a field 1.<from> knows and
// 1.<to> does not (kubeletcompat.NewFields), which the older kubelet
// cannot represent. Nothing on an upgrade, and nothing for API pods (the
// API server of the older control plane never stored such fields).
func (c *Corpus) PatchedRollbackRestarts(from, to int) []Expectation {
	if to >= from || c.API {
		return nil
	}
	older, newer := kubeletcompat.Version{Major: 1, Minor: to}, kubeletcompat.Version{Major: 1, Minor: from}
	var out []Expectation
	for _, p := range c.Pods {
		for i := range p.Spec.Spec.Containers {
			fields, err := kubeletcompat.NewFields(older, newer, &p.Spec.Spec.Containers[i])
			if err == nil && len(fields) > 0 {
				out = append(out, Expectation{p.RuntimeName, fmt.Sprintf("container %s sets fields 1.%d does not know: %s", p.Spec.Spec.Containers[i].Name, to, strings.Join(fields, ", "))})
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pod < out[j].Pod })
	return out
}

// ResizeGateMinor says whether kube-apiserver and kubelet 1.minor have the
// InPlacePodVerticalScaling gate off by default: alpha 1.27 .. 1.32, beta
// and on from 1.33, absent before 1.27 (pkg/features of each minor).
func ResizeGateMinor(minor int) bool { return minor >= 27 && minor <= 32 }

// ResizeFeatureGates are the feature gates the e2e's -resize-gate sets on
// kube-apiserver and kubelet 1.minor (nil: none, the gate is on by default
// or does not exist).
func ResizeFeatureGates(minor int) map[string]bool {
	if !ResizeGateMinor(minor) {
		return nil
	}
	return map[string]bool{"InPlacePodVerticalScaling": true}
}

const resizeReason = "resizePolicy memory RestartContainer and no actuated_pods_state record: the kubelet compares the spec's resources to zero"

// resizeRestarts says whether an unpatched kubelet 1.to that replaces
// kubelet 1.from restarts the resize pods' container. Kubelets 1.33 ..
// 1.36 read the container's actuated resources from actuated_pods_state,
// which no kubelet before 1.33 writes; without a record they compare the
// spec to zero and restart the container for a resource whose resizePolicy
// is RestartContainer (computePodResizeAction; static pods are exempt).
// 1.37 records the actuated state before the first sync
// (InitializeActuatedPod). The policy only reaches the kubelet if the old
// API server kept it: with the gate off (the default before 1.33, and 1.26
// and older do not know the field) it drops resizePolicy from a new pod
// (dropDisabledPodFields), and the kubelet updates the resources in place.
func resizeRestarts(from, to int, gate bool) bool {
	// ResizeGateMinor(from) also means from writes no actuated record.
	return gate && ResizeGateMinor(from) && to >= 33 && to <= 36
}
