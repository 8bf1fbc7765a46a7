package app

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// admissionWaiver is one kind of admission rejection the patched kubelet
// may admit a pod started before it despite, with the reasons the kubelets
// give for it; each reason is asked of the library.
type admissionWaiver struct {
	Name    string   `json:"name"`
	Reasons []string `json:"reasons"`
	// Holds says for how long, in words.
	Holds string `json:"holds"`
	// label is the table's name for it.
	label string
}

// admissionWaivers are the kinds of rejection kubeletcompat.WaivedRejection
// waives. Resource fit is every OutOf<resource>; the library decides on
// the prefix, so the four reasons asked stand for the extended resources
// too.
func admissionWaivers() []admissionWaiver {
	inForce := "while the compat file is in force"
	resource := "for a kubelet started within " + kubeletcompat.ResourceWaiverWindow.String() + " after the record"
	return []admissionWaiver{
		{Name: "nodeAffinity", label: "affinity", Holds: inForce, Reasons: []string{kubeletcompat.ReasonNodeAffinity, kubeletcompat.ReasonMatchNodeSelector}},
		{Name: "taints", label: "taints", Holds: inForce, Reasons: []string{kubeletcompat.ReasonTaintToleration, kubeletcompat.ReasonTolerationsNotMatch}},
		{Name: "resourceFit", label: "resources", Holds: resource, Reasons: []string{kubeletcompat.ReasonOutOfPrefix + "cpu", kubeletcompat.ReasonOutOfPrefix + "memory",
			kubeletcompat.ReasonOutOfPrefix + "pods", kubeletcompat.ReasonOutOfPrefix + "ephemeral-storage"}},
		{Name: "eviction", label: "eviction", Holds: resource, Reasons: []string{kubeletcompat.ReasonEvicted}},
	}
}

// admissionStatus is what the running kubelet does when an admission
// handler rejects a pod it runs: the library's Decider on what the
// container runtime runs, never on API status.
type admissionStatus struct {
	// InForce: the compat file is in force, so waivers apply at all.
	InForce bool `json:"inForce"`
	// ResourceWaivers: this kubelet waives resource fit and eviction (it
	// started within ResourceWaiverWindow after the record).
	ResourceWaivers bool `json:"resourceWaivers"`
	// ResourceWaiversUntil is recordedAt + ResourceWaiverWindow: a kubelet
	// started after it re-admits for resources and pressure as upstream.
	ResourceWaiversUntil *time.Time         `json:"resourceWaiversUntil,omitempty"`
	ResourceWaiversNote  string             `json:"resourceWaiversNote,omitempty"`
	Waivers              []admissionWaiver  `json:"waivers,omitempty"`
	Pods                 []admissionPodInfo `json:"pods"`
}

// admissionPodInfo is one pod the runtime runs and the kubelet's admission
// decision on it.
type admissionPodInfo struct {
	Pod               string   `json:"pod"`
	UID               string   `json:"uid"`
	RunningContainers []string `json:"runningContainers,omitempty"`
	SandboxReady      bool     `json:"sandboxReady"`
	// StartedBefore is Decider.PodStartedBefore; Why is the library's
	// reason, or why not.
	StartedBefore bool   `json:"startedBefore"`
	Why           string `json:"why"`
	// AdmittedDespite are the waivers (admissionWaiver.Name) the library
	// grants the pod: Decider.AdmitDespite for every reason of each.
	AdmittedDespite []string `json:"admittedDespite"`
	// HoldsFile says why the pod runs on its waiver now: without the file
	// the kubelet's next start would reject it (waiverHolders); sweep keeps
	// the file for it unless --release-waived. "" when it does not.
	HoldsFile string `json:"holdsFile,omitempty"`
}

// runtimePod is a pod as the container runtime shows it: what the patched
// kubelet's RuntimeLookup (GetPods(false): running sandboxes and
// containers) answers for its UID.
type runtimePod struct {
	uid, namespace, name string
	rt                   kubeletcompat.RuntimePod
}

// runtimePods groups the running sandboxes and containers by pod UID as the
// kubelet's GetPods does: a sandbox by its metadata UID (the CRI client
// falls back to the io.kubernetes.pod.uid label), a container by its
// io.kubernetes.pod.uid label. Namespace and name come from the
// io.kubernetes.pod.namespace and .name labels. Sorted by namespace, name
// and UID.
func runtimePods(st *nodeState) []runtimePod {
	byUID := map[string]*runtimePod{}
	get := func(uid, ns, name string) *runtimePod {
		p, ok := byUID[uid]
		if !ok {
			p = &runtimePod{uid: uid}
			byUID[uid] = p
		}
		if p.namespace == "" && p.name == "" {
			p.namespace, p.name = ns, name
		}
		return p
	}
	for _, sb := range st.sandboxes {
		if !sb.Ready || sb.UID == "" {
			continue
		}
		ns, name := sb.Labels[cri.PodNamespaceLabel], sb.Labels[cri.PodNameLabel]
		if ns == "" && name == "" {
			ns, name = sb.Namespace, sb.Name
		}
		get(sb.UID, ns, name).rt.SandboxReady = true
	}
	for _, c := range st.containers {
		if c.State != cri.ContainerRunning || c.PodUID == "" {
			continue
		}
		p := get(c.PodUID, c.PodNamespace, c.PodName)
		p.rt.RunningContainerIDs = append(p.rt.RunningContainerIDs, c.ID)
	}
	out := make([]runtimePod, 0, len(byUID))
	for _, p := range byUID {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.namespace != b.namespace {
			return a.namespace < b.namespace
		}
		if a.name != b.name {
			return a.name < b.name
		}
		return a.uid < b.uid
	})
	return out
}

// admission asks the library, for every pod the runtime runs, whether the
// kubelet counts it as started before itself and which rejections it would
// admit it despite.
func admission(d *kubeletcompat.Decider, st *nodeState, start time.Time, holders []waiverHolder) admissionStatus {
	a := admissionStatus{InForce: d.InForce(), Pods: []admissionPodInfo{}}
	if !a.InForce {
		return a
	}
	f := d.File()
	until := f.RecordedAt.Add(kubeletcompat.ResourceWaiverWindow).UTC()
	a.ResourceWaivers, a.ResourceWaiversUntil = d.ResourceWaiversHold(), &until
	a.ResourceWaiversNote = resourceWaiversNote(a.ResourceWaivers, f.RecordedAt, start)
	a.Waivers = admissionWaivers()
	holds := map[string]string{}
	for _, h := range holders {
		holds[h.UID] = h.withoutFile()
	}
	for _, p := range runtimePods(st) {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.namespace, Name: p.name, UID: types.UID(p.uid)}}
		info := admissionPodInfo{Pod: p.namespace + "/" + p.name, UID: p.uid, RunningContainers: p.rt.RunningContainerIDs,
			SandboxReady: p.rt.SandboxReady, AdmittedDespite: []string{}, HoldsFile: holds[p.uid]}
		info.StartedBefore, info.Why = d.PodStartedBefore(pod, p.rt)
		if !info.StartedBefore {
			info.Why = notStartedBefore(f, p)
		}
		for _, w := range a.Waivers {
			var waived []string
			for _, reason := range w.Reasons {
				if ok, _ := d.AdmitDespite(pod, p.rt, reason); ok {
					waived = append(waived, reason)
				}
			}
			switch {
			case len(waived) == len(w.Reasons):
				info.AdmittedDespite = append(info.AdmittedDespite, w.Name)
			case len(waived) > 0: // the library tells the reasons of one kind apart
				info.AdmittedDespite = append(info.AdmittedDespite, waived...)
			}
		}
		a.Pods = append(a.Pods, info)
	}
	return a
}

// resourceWaiversNote says whether the library waives resource fit and
// eviction (hold, Decider.ResourceWaiversHold) and until when.
func resourceWaiversNote(hold bool, recordedAt, start time.Time) string {
	window := kubeletcompat.ResourceWaiverWindow
	until := recordedAt.Add(window).UTC().Format(time.RFC3339)
	switch {
	case hold:
		return fmt.Sprintf("waived, the kubelet started within %s after the record (a kubelet started after %s re-admits for them as upstream)", window, until)
	case start.Before(recordedAt):
		return fmt.Sprintf("not waived, the kubelet started before the record (a kubelet started by %s waives them)", until)
	}
	return fmt.Sprintf("ended at %s, %s after the record: the kubelet started at %s re-admits for them as upstream", until, window, start.UTC().Format(time.RFC3339))
}

// notStartedBefore says why a pod the runtime runs does not count as
// started before the kubelet, from what the file lists and records.
func notStartedBefore(f *kubeletcompat.File, p runtimePod) string {
	recorded := false
	for _, sp := range f.StaticPods {
		if sp.UID == p.uid {
			recorded = true
		}
	}
	why := "no running container of it is listed in the compat file"
	if len(p.rt.RunningContainerIDs) == 0 {
		why = "none of its containers runs"
	}
	if recorded {
		return why + ", and no sandbox of its recorded static-pod UID runs"
	}
	return why + ", and its UID is not a recorded static-pod UID"
}

// inForceStatus says why the compat file is still in force and until when:
// sweep's rule.
type inForceStatus struct {
	// ListedRunning are the running containers the file lists: the
	// admission waivers rest on them.
	ListedRunning []listedRunning `json:"listedContainersRunning"`
	// WaiverHolders are the pods that run on an admission waiver: without
	// the file the kubelet's next start would reject them (sweep keeps the
	// file for them unless --release-waived).
	WaiverHolders []waiverHolder `json:"waiverHolders"`
	// SweepNeeds is what sweep keeps the file for now, in its words (the
	// static pods are also staticPodsOnRecordedUID, the pods on a waiver
	// waiverHolders).
	SweepNeeds []string  `json:"sweepNeeds"`
	Grace      string    `json:"grace"`
	GraceUntil time.Time `json:"graceUntil"`
	// Until is sweep's rule, in words.
	Until string `json:"until"`
}

// listedRunning is a running container the compat file lists.
type listedRunning struct {
	Pod         string `json:"pod"`
	Container   string `json:"container"`
	ID          string `json:"id"`
	HashVersion string `json:"hashVersion"`
	// NeedsFile is why sweep keeps the file for it ("": it does not).
	NeedsFile string `json:"needsFile,omitempty"`
}

// inForce says why the file d decides on is in force and until when sweep
// keeps it, given the legacy containers and static pods status found and
// sweep's grace.
func inForce(d *kubeletcompat.Decider, st *nodeState, legacy []legacyContainer, statics []staticPodNeed, holders []waiverHolder, start, now time.Time, grace time.Duration) *inForceStatus {
	if !d.InForce() {
		return nil
	}
	version := map[string]string{}
	for _, c := range d.File().Containers {
		version[c.ID] = c.HashVersion
	}
	needs := map[string]string{}
	for _, l := range legacy {
		needs[l.c.ID] = l.needsFile()
	}
	s := &inForceStatus{ListedRunning: []listedRunning{}, WaiverHolders: holders, SweepNeeds: fileNeeds(legacy, statics, holders), Grace: grace.String(), GraceUntil: graceEnd(start, grace)}
	if s.WaiverHolders == nil {
		s.WaiverHolders = []waiverHolder{}
	}
	if s.SweepNeeds == nil {
		s.SweepNeeds = []string{}
	}
	for _, c := range st.containers {
		v, ok := version[c.ID]
		if !ok || c.State != cri.ContainerRunning {
			continue
		}
		s.ListedRunning = append(s.ListedRunning, listedRunning{Pod: c.PodNamespace + "/" + c.PodName, Container: c.Name, ID: c.ID, HashVersion: v, NeedsFile: needs[c.ID]})
	}
	sort.Slice(s.ListedRunning, func(i, j int) bool {
		a, b := s.ListedRunning[i], s.ListedRunning[j]
		if a.Pod != b.Pod {
			return a.Pod < b.Pod
		}
		return a.Container < b.Container
	})
	if state, reason := d.State(); state == kubeletcompat.FilePending {
		s.Until = "sweep keeps it while it is pending (" + reason + "; delete it by hand if that upgrade was abandoned)"
		return s
	}
	once := "once the kubelet has every running pod (nothing running needs it now)"
	if n := len(s.SweepNeeds); n > 0 {
		once = fmt.Sprintf("once no running container, static pod or pod on an admission waiver needs it (%d still do) and the kubelet has every running pod", n)
	}
	at := s.GraceUntil.Format(time.RFC3339)
	if now.Before(start.Add(grace)) {
		s.Until = fmt.Sprintf("sweep deletes it not before %s (--grace %s after the kubelet's start), and then only %s", at, grace, once)
	} else {
		s.Until = fmt.Sprintf("sweep deletes it %s; the grace (--grace %s) ended at %s", once, grace, at)
	}
	return s
}

// writeInForce is the table's account of why the file is in force.
func writeInForce(w io.Writer, s *inForceStatus, statics []staticPodNeed) {
	if len(s.ListedRunning) == 0 && len(statics) == 0 && len(s.WaiverHolders) == 0 {
		fmt.Fprintln(w, "compat file in force, though no listed container runs and no static pod runs under a recorded UID")
	} else {
		fmt.Fprintln(w, "compat file in force because:")
	}
	holds := map[string]bool{}
	for _, h := range s.WaiverHolders {
		holds[h.Pod] = true
	}
	for _, l := range s.ListedRunning {
		line := fmt.Sprintf("  listed container %s/%s (%s) runs", l.Pod, l.Container, shortID(l.ID))
		switch {
		case l.NeedsFile != "":
			line += ": " + l.NeedsFile
		case holds[l.Pod]:
			line += " (admission rests on it; its pod runs on an admission waiver, below)"
		default:
			line += " (admission rests on it; sweep does not keep the file for it)"
		}
		fmt.Fprintln(w, line)
	}
	for _, sp := range statics {
		fmt.Fprintf(w, "  static pod %s runs under the recorded UID %s (%s)\n", sp.Pod, sp.UID, sp.ManifestPath)
	}
	for _, h := range s.WaiverHolders {
		fmt.Fprintf(w, "  pod %s (uid %s) runs on its admission waiver: %s; sweep keeps the file for it (--release-waived deletes it anyway)\n", h.Pod, h.UID, h.withoutFile())
	}
	fmt.Fprintf(w, "until: %s\n", s.Until)
}

// writeAdmission is the table's account of admission.
func writeAdmission(w io.Writer, a admissionStatus) {
	if !a.InForce {
		fmt.Fprintln(w, "admission: as upstream (no compat file in force)")
		return
	}
	fmt.Fprintln(w, "admission: a pod started before the kubelet is admitted despite a node affinity or taint rejection while the file is in force")
	fmt.Fprintf(w, "resource fit and eviction: %s\n", a.ResourceWaiversNote)
	if len(a.Pods) == 0 {
		fmt.Fprintln(w, "no pod runs")
		return
	}
	labels := map[string]string{}
	for _, wv := range a.Waivers {
		labels[wv.Name] = wv.label
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POD\tUID\tADMITTED DESPITE\tSTARTED BEFORE THE KUBELET")
	for _, p := range a.Pods {
		var despite []string
		for _, name := range p.AdmittedDespite {
			if l, ok := labels[name]; ok {
				name = l
			}
			despite = append(despite, name)
		}
		d := strings.Join(despite, ", ")
		if d == "" {
			d = "-"
		}
		// Container IDs as the CRI tools print them; JSON has them whole.
		why := p.Why
		for _, id := range p.RunningContainers {
			why = strings.ReplaceAll(why, id, shortID(id))
		}
		started := "no: " + why
		if p.StartedBefore {
			started = "yes: " + why
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Pod, p.UID, d, started)
	}
	tw.Flush()
}
