// Package preflight predicts what an in-place kubelet upgrade does to running
// containers: which ones an unpatched kubelet restarts and why, and what the
// patched kubelet (the kubelet-compat library) does instead.
package preflight

import (
	"crypto/sha256"
	"fmt"
	"sort"
	"strings"
	"time"

	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/matrix"
	"github.com/kubelet-compat/kubelet-compat/pkg/upstream"
	v1 "k8s.io/api/core/v1"
)

// TypesMinor is the minor of the k8s.io/api this binary decodes pod specs
// with (go.mod): the newest minor whose hash the library knows or newer
// (TestTypesMinor), so the specs it decodes hold every field of each
// kubelet it predicts and record writes specHash for.
const TypesMinor = 38

// Outcomes of an upgrade for one container.
const (
	Keep           = "keep"
	Restart        = "restart"
	RecreatePod    = "recreate pod"
	MayRecreatePod = "may recreate pod"
	Unknown        = "unknown"
	// NoSeries is the patched column where kubelet-compat has no patch
	// series for the target minor: there is no patched kubelet to predict.
	NoSeries = "n/a"
)

// Pod is one pod to check.
type Pod struct {
	// Namespace and Name identify the pod in the report (for a static pod on
	// a node, the kubelet's name including the node name).
	Namespace, Name string
	// Source says where the spec came from (a file, the API server...).
	Source string
	// Object is the pod as the kubelet sees it (defaults applied); nil when
	// no spec was found, in which case only Running is reported.
	Object *v1.Pod
	// Static marks a pod the kubelet reads from its manifest directory.
	Static bool
	// Running holds what the runtime reports per container name; empty for
	// pods given as manifests, whose stored hashes are computed as vFrom would.
	Running map[string]Running
}

// Running is a running container's stored state.
type Running struct {
	ID        string
	Hash      uint64
	HashKnown bool
	Image     string
}

// Row is the verdict for one container.
type Row struct {
	Pod       string `json:"pod"`
	Source    string `json:"source,omitempty"`
	Container string `json:"container"`
	Init      bool   `json:"init,omitempty"`
	// StoredHash is the hash on the running container (from the runtime, or
	// what vFrom computes); empty when not known.
	StoredHash string `json:"storedHash,omitempty"`
	// NewHash is what an unpatched vTo computes.
	NewHash       string   `json:"newHash,omitempty"`
	Unpatched     string   `json:"unpatched"`
	Reasons       []string `json:"reasons,omitempty"`
	Patched       string   `json:"patched"`
	PatchedReason string   `json:"patchedReason"`
}

// Report is the whole preflight answer.
type Report struct {
	From    string   `json:"from"`
	To      string   `json:"to"`
	Eras    string   `json:"hashEras"`
	Rows    []Row    `json:"containers"`
	Notes   []string `json:"notes,omitempty"`
	Summary Summary  `json:"summary"`
	// Killers are the other things that lose pods at the swap (node
	// affinity, taints, resource fit, exec probe timeouts, the CPU manager
	// and device-plugin checkpoints, flags); KillerNotes say what was
	// checked and what was not.
	Killers     []Finding `json:"podKillers,omitempty"`
	KillerNotes []string  `json:"podKillerNotes,omitempty"`
}

// Summary counts the rows.
type Summary struct {
	Containers         int `json:"containers"`
	UnpatchedRestarts  int `json:"unpatchedRestarts"`
	UnpatchedRecreated int `json:"unpatchedPodsRecreated"`
	UnpatchedMaybe     int `json:"unpatchedPodsMaybeRecreated"`
	PatchedRestarts    int `json:"patchedRestarts"`
	Unknown            int `json:"unknown"`
}

// CheckVersions validates an upgrade from -> to (or, to older than from, a
// rollback) that this tool can predict.
func CheckVersions(from, to kubeletcompat.Version) error {
	if from.Major != 1 || to.Major != 1 {
		return fmt.Errorf("only Kubernetes 1.x is known (got %s -> %s)", from, to)
	}
	if from.Compare(to) == 0 {
		return fmt.Errorf("--from %s and --to %s are the same version", from, to)
	}
	newest := NewestKnownVersion()
	if kubeletcompat.EraOf(from) == kubeletcompat.EraUnknown {
		return fmt.Errorf("unknown version %s: the newest known minor is %d.%d", from, newest.Major, newest.Minor)
	}
	if era := kubeletcompat.EraOf(from); to.LessThan(from) && era != kubeletcompat.EraJSON && era != kubeletcompat.EraNameImage {
		return fmt.Errorf("unsupported rollback from %s: kubelets 1.16 to %d.%d can be predicted", from, newest.Major, newest.Minor)
	}
	if era := kubeletcompat.EraOf(to); era != kubeletcompat.EraJSON && era != kubeletcompat.EraNameImage {
		return fmt.Errorf("unsupported --to %s: kubelets 1.16 to %d.%d can be predicted", to, newest.Major, newest.Minor)
	}
	return nil
}

// NewestKnownVersion is the newest minor whose container hash the library
// knows.
func NewestKnownVersion() kubeletcompat.Version {
	v := kubeletcompat.Version{Major: 1, Minor: 16}
	for kubeletcompat.EraOf(kubeletcompat.Version{Major: 1, Minor: v.Minor + 1}) != kubeletcompat.EraUnknown {
		v.Minor++
	}
	return v
}

// seriesRelease is the release kubelet-compat patches for v's minor, or ""
// when it has no patch series for it.
func seriesRelease(v kubeletcompat.Version) string {
	row, err := matrix.Lookup(fmt.Sprintf("%d.%d", v.Major, v.Minor))
	if err != nil || !row.Build {
		return ""
	}
	return row.Kubernetes
}

// recordedUID is what the patched kubelet does for a static pod.
const recordedUID = "static pod keeps its recorded UID while the manifest is unchanged"

// staticUIDChange says whether a static pod without metadata.uid gets a new
// UID from from to to: RecreatePod (measured), MayRecreatePod (a minor on
// the way was not measured; the reason says what the types it changed
// predict for this pod) or "" (no change), with the reason. It answers per
// pod: a minor that changed only types the pod does not instantiate keeps
// its UID. The model is package upstream's (upstream.Model), which the
// e2e's controls assert.
func staticUIDChange(model upstream.UIDModel, from, to kubeletcompat.Version, pod *v1.Pod) (string, string) {
	if from.Minor == to.Minor {
		return "", ""
	}
	c := model.StaticPodUID(pod, from.Minor, to.Minor)
	switch {
	case len(c.Changed) > 0:
		return RecreatePod, "static pod without metadata.uid: " + c.Reason() + " (measured)"
	case len(c.Unmeasured) > 0:
		return MayRecreatePod, "static pod without metadata.uid: not measured: " + c.Prediction()
	}
	return "", ""
}

// uidModel is what staticUIDChange predicts from.
var uidModel = upstream.Model()

// Run builds the report. now stands for the upgrade time.
func Run(from, to kubeletcompat.Version, pods []Pod, now time.Time) (*Report, error) {
	if err := CheckVersions(from, to); err != nil {
		return nil, err
	}
	patched, err := patchedKubelet(from, to, now, pods)
	if err != nil {
		return nil, err
	}
	r := &Report{From: from.String(), To: to.String(),
		Eras: kubeletcompat.EraOf(from).String() + " -> " + kubeletcompat.EraOf(to).String()}
	for _, p := range pods {
		r.Rows = append(r.Rows, checkPod(from, to, p, patched, now)...)
	}
	recreated, maybe := map[string]bool{}, map[string]bool{}
	for _, row := range r.Rows {
		r.Summary.Containers++
		switch row.Unpatched {
		case Restart:
			r.Summary.UnpatchedRestarts++
		case RecreatePod:
			r.Summary.UnpatchedRestarts++
			recreated[row.Pod] = true
		case MayRecreatePod:
			r.Summary.UnpatchedRestarts++
			maybe[row.Pod] = true
		case Unknown:
			r.Summary.Unknown++
		}
		if row.Patched == Restart {
			r.Summary.PatchedRestarts++
		}
	}
	r.Summary.UnpatchedRecreated, r.Summary.UnpatchedMaybe = len(recreated), len(maybe)
	if seriesRelease(to) == "" {
		noSeries := fmt.Sprintf("kubelet-compat has no patch series for %d.%d", to.Major, to.Minor)
		for i := range r.Rows {
			r.Rows[i].Patched, r.Rows[i].PatchedReason = NoSeries, noSeries
		}
		r.Summary.PatchedRestarts = 0
		r.Notes = append(r.Notes, noSeries+": there is no patched kubelet for this target, only the unpatched column applies")
	}
	return r, nil
}

// patchedKubelet is the decision core exactly as a patched kubelet vTo runs
// it, on a compat file that records vFrom and lists every container of pods
// as created by vFrom, with the spec record writes (as vFrom reads it).
func patchedKubelet(from, to kubeletcompat.Version, now time.Time, pods []Pod) (*kubeletcompat.Decider, error) {
	f := &kubeletcompat.File{APIVersion: kubeletcompat.APIVersion, Kind: kubeletcompat.Kind, PreviousVersion: from.String(), RecordedAt: now}
	listed := map[string]bool{}
	for _, p := range pods {
		if p.Object == nil {
			continue
		}
		for _, c := range p.Object.Spec.Containers {
			if id := containerID(p, c.Name); !listed[id] {
				listed[id] = true
				entry := kubeletcompat.Container{ID: id, HashVersion: from.String()}
				// As record: the spec of a {name, image} container, as vFrom reads it.
				if kubeletcompat.EraOf(from) == kubeletcompat.EraNameImage {
					c := c
					if seen, err := asSeenBy(from, &c); err == nil {
						if h, err := kubeletcompat.SpecHash(from, seen); err == nil {
							entry.SpecHash = kubeletcompat.FormatSpecHash(h)
						}
					}
				}
				f.Containers = append(f.Containers, entry)
			}
		}
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	d := kubeletcompat.NewDecider(f, to, now)
	if state, _ := d.State(); state != kubeletcompat.FileActive {
		return nil, fmt.Errorf("the compat library does not accept %s -> %s", from, to)
	}
	return d, nil
}

func hex(h uint64) string { return fmt.Sprintf("%x", h) }

// containerID is the runtime's ID of a running container, or a stand-in
// derived from its pod and name for a container given as a manifest.
func containerID(p Pod, name string) string {
	if r, ok := p.Running[name]; ok && r.ID != "" {
		return r.ID
	}
	sum := sha256.Sum256([]byte(p.Namespace + "/" + p.Name + "/" + name))
	return "manifest-" + hex64(sum[:8])
}

func hex64(b []byte) string { return fmt.Sprintf("%x", b) }

func checkPod(from, to kubeletcompat.Version, p Pod, patched *kubeletcompat.Decider, now time.Time) []Row {
	name := p.Namespace + "/" + p.Name
	if p.Object == nil {
		var rows []Row
		for cname := range p.Running {
			rows = append(rows, Row{Pod: name, Source: p.Source, Container: cname, Unpatched: Unknown,
				Reasons: []string{"no pod spec found (give --manifest-dir or --kubeconfig)"}, Patched: Unknown,
				PatchedReason: "no pod spec found"})
		}
		sort.Slice(rows, func(i, j int) bool { return rows[i].Container < rows[j].Container })
		return rows
	}
	podVerdict, podReason := "", ""
	if p.Static && p.Object.UID == "" {
		podVerdict, podReason = staticUIDChange(uidModel, from, to, p.Object)
	}
	var rows []Row
	for _, c := range p.Object.Spec.InitContainers {
		row := Row{Pod: name, Source: p.Source, Container: c.Name, Init: true, Unpatched: Keep,
			Reasons: []string{"init container: not hash-checked once it completed"},
			Patched: Keep, PatchedReason: "kept: not hash-checked once it completed"}
		if podVerdict != "" {
			row.Unpatched, row.Reasons = podVerdict, []string{podReason + ": init containers run again"}
			row.PatchedReason = "kept: " + recordedUID
		}
		rows = append(rows, row)
	}
	for i := range p.Object.Spec.Containers {
		rows = append(rows, checkContainer(from, to, p, name, &p.Object.Spec.Containers[i], podVerdict, podReason, patched, now))
	}
	return rows
}

func checkContainer(from, to kubeletcompat.Version, p Pod, podName string, c *v1.Container, podVerdict, podReason string, patched *kubeletcompat.Decider, now time.Time) Row {
	row := Row{Pod: podName, Source: p.Source, Container: c.Name}
	newHash, err := kubeletcompat.ContainerHash(to, c)
	if err != nil {
		row.Unpatched, row.Reasons = Unknown, []string{err.Error()}
		row.Patched, row.PatchedReason = Unknown, err.Error()
		return row
	}
	row.NewHash = hex(newHash)

	running, onNode := p.Running[c.Name]
	if p.Running != nil && !onNode {
		row.Unpatched, row.Reasons = Keep, []string{"not running on this node"}
		row.Patched, row.PatchedReason = Keep, "not running"
		return row
	}
	stored, storedKnown := running.Hash, running.HashKnown
	image := running.Image
	if !onNode {
		image = c.Image
		if h, err := kubeletcompat.ContainerHash(from, c); err == nil {
			stored, storedKnown = h, true
		}
	}
	if storedKnown {
		row.StoredHash = hex(stored)
	}

	var reasons []string
	verdict := Keep
	fromEra, toEra := kubeletcompat.EraOf(from), kubeletcompat.EraOf(to)
	switch {
	case fromEra != toEra:
		verdict = Restart
		reasons = append(reasons, fmt.Sprintf("hash algorithm changed (%s -> %s)", fromEra, toEra))
	case !storedKnown:
		verdict = Restart
		reasons = append(reasons, "no stored hash on the container")
	case stored != newHash:
		verdict = Restart
		reasons = append(reasons, hashChangeReason(from, to, c, stored, onNode))
	}
	if podVerdict != "" {
		verdict = podVerdict
		reasons = append([]string{podReason}, reasons...)
	}
	row.Unpatched, row.Reasons = verdict, reasons

	seen, err := asSeenBy(to, c)
	if err != nil {
		row.Patched, row.PatchedReason = Unknown, err.Error()
		return row
	}
	d := patched.Decide(seen, kubeletcompat.RunningContainer{ID: containerID(p, c.Name), Hash: stored, CreatedAt: now.Add(-time.Hour), Image: image})
	row.Patched, row.PatchedReason = Restart, d.Reason
	if unknown := newFields(to, from, c); to.LessThan(from) && !d.Keep && len(unknown) > 0 {
		row.PatchedReason = fmt.Sprintf("rollback: sets fields %s does not know: %s", to, strings.Join(unknown, ", "))
	}
	if d.Keep {
		row.Patched = Keep
		if d.Reason == "hash matches" {
			row.PatchedReason = "kept: hash unchanged"
		}
	}
	if podVerdict != "" && d.Keep {
		row.PatchedReason += "; " + recordedUID
	}
	return row
}

// hashChangeReason explains why vTo's hash differs from the stored one
// within one hash era.
func hashChangeReason(from, to kubeletcompat.Version, c *v1.Container, stored uint64, onNode bool) string {
	if onNode {
		if legacy, err := kubeletcompat.ContainerHash(from, c); err == nil && legacy != stored {
			return fmt.Sprintf("definition changed since the container was created (stored hash %x, %s computes %x for the current spec)", stored, from, legacy)
		}
	}
	older, newer := from, to
	if to.LessThan(from) {
		older, newer = to, from
	}
	if unknown := newFields(older, newer, c); len(unknown) > 0 {
		return fmt.Sprintf("fields unknown to %s: %s", older, strings.Join(unknown, ", "))
	}
	return fmt.Sprintf("hash changed (%x -> %x)", stored, mustHash(to, c))
}

func mustHash(v kubeletcompat.Version, c *v1.Container) uint64 {
	h, _ := kubeletcompat.ContainerHash(v, c)
	return h
}

// newFields lists the set fields newer knows and older does not.
func newFields(older, newer kubeletcompat.Version, c *v1.Container) []string {
	fields, _ := kubeletcompat.NewFields(older, newer, c)
	return fields
}
