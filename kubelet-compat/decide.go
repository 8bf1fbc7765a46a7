package kubeletcompat

import (
	"fmt"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"
)

// FileState is what a kubelet does with a compat file.
type FileState int

const (
	// FileAbsent: there is no file; the kubelet behaves as upstream.
	FileAbsent FileState = iota
	// FileIgnored: the file is bad; the kubelet behaves as upstream.
	FileIgnored
	// FilePending: the file records this kubelet's own version: record ran
	// and the swap has not happened yet (or record ran twice). What it lists
	// from earlier upgrades is still kept.
	FilePending
	// FileActive: the file records an older kubelet (an upgrade), or a
	// newer one (a rollback: State's reason says so).
	FileActive
)

func (s FileState) String() string {
	switch s {
	case FileAbsent:
		return "absent"
	case FileIgnored:
		return "ignored"
	case FilePending:
		return "pending"
	case FileActive:
		return "active"
	}
	return fmt.Sprintf("FileState(%d)", int(s))
}

// Decider is the whole decision, free of I/O: a parsed compat file, the
// running kubelet's version and its start time. The kubelet (through
// Compat, which watches the file), and the CLI's status, sweep and preflight
// all decide with it.
type Decider struct {
	file       *File
	own        Version
	start      time.Time
	state      FileState
	reason     string
	containers map[string]Version   // hash version by container ID
	specs      map[string]string    // recorded spec hash by container ID
	pods       map[string]StaticPod // by manifest path
	uids       map[string]bool      // static pod UIDs
}

// NewDecider returns the decisions of a kubelet of version own, started at
// start, for the compat file f (nil: no file). The file must be valid.
func NewDecider(f *File, own Version, start time.Time) *Decider {
	d := &Decider{file: f, own: own, start: start}
	if f == nil {
		d.state = FileAbsent
		return d
	}
	prev, _ := ParseVersion(f.PreviousVersion) // validated by Parse
	switch prev.Compare(own) {
	case 0:
		d.state, d.reason = FilePending, fmt.Sprintf("recorded for this kubelet's own version %s: the swap it was recorded for has not happened yet", own)
	case 1:
		d.state, d.reason = FileActive, fmt.Sprintf("rollback: recorded by the newer kubelet %s", prev)
	default:
		d.state = FileActive
	}
	d.containers = make(map[string]Version, len(f.Containers))
	d.specs = make(map[string]string, len(f.Containers))
	for _, c := range f.Containers {
		d.containers[c.ID], _ = ParseVersion(c.HashVersion) // validated by Parse
		if c.SpecHash != "" {
			d.specs[c.ID] = c.SpecHash
		}
	}
	d.pods = make(map[string]StaticPod, len(f.StaticPods))
	d.uids = make(map[string]bool, len(f.StaticPods))
	for _, sp := range f.StaticPods {
		d.pods[sp.ManifestPath] = sp
		d.uids[sp.UID] = true
	}
	return d
}

// State says what the kubelet does with the file, and why it ignores or
// holds it.
func (d *Decider) State() (FileState, string) { return d.state, d.reason }

// InForce reports whether the kubelet uses the file.
func (d *Decider) InForce() bool { return d.state == FileActive || d.state == FilePending }

// File is the compat file decided on, nil when there is none.
func (d *Decider) File() *File { return d.file }

// LegacyHashVersion returns the other kubelet (older, or newer after a
// rollback) whose hash the file says a container carries: only such a
// container can be kept through the file.
func (d *Decider) LegacyHashVersion(containerID string) (Version, bool) {
	v, ok := d.containers[containerID]
	if !ok || !d.InForce() || v.Compare(d.own) == 0 {
		return Version{}, false
	}
	return v, true
}

// Decide is the whole decision for a running container: keep it when its
// stored hash is the running kubelet's own hash for the spec (upstream), or
// when the compat path keeps it (see KeepChanged). The own hash is computed
// as the running kubelet's minor computes it, whatever types the caller
// decoded the spec with.
func (d *Decider) Decide(container *v1.Container, running RunningContainer) Decision {
	if own, err := ContainerHash(d.own, container); err == nil && own == running.Hash {
		return Decision{Keep: true, Reason: "hash matches"}
	}
	return d.KeepChanged(container, running)
}

// KeepChanged is for a container whose stored hash differs from the running
// kubelet's own: it is kept only when the compat file is in force, lists the
// container (it ran when the file was recorded) with another kubelet's
// hash, the container was created before this kubelet started, and its
// stored hash is what that kubelet computes for the current spec (for a
// newer kubelet, see keepNewer). A
// container created after the file was recorded is never kept this way,
// whatever the clocks say and however often the kubelet restarts.
func (d *Decider) KeepChanged(container *v1.Container, running RunningContainer) Decision {
	if !d.InForce() {
		return Decision{Reason: "definition changed"}
	}
	creator, listed := d.containers[running.ID]
	if !listed {
		return Decision{Reason: "definition changed (not running when the compat file was recorded)"}
	}
	if running.CreatedAt.IsZero() || !running.CreatedAt.Before(d.start) {
		return Decision{Reason: "definition changed (created by this kubelet)"}
	}
	switch creator.Compare(d.own) {
	case 0:
		return Decision{Reason: fmt.Sprintf("definition changed (it carries the hash of %s, this kubelet's own)", creator)}
	case 1:
		return d.keepNewer(container, running, creator)
	}
	if EraOf(creator) == EraGoStruct {
		return keepByAge(container, running, creator)
	}
	legacy, err := ContainerHash(creator, container)
	if err != nil {
		return Decision{Reason: "definition changed (" + err.Error() + ")",
			note: &logNote{key: "hash " + err.Error(), msg: "Container hash of a recorded kubelet not reproduced; containers restart as upstream does", kv: []interface{}{"err", err}}}
	}
	if legacy == running.Hash {
		return Decision{Keep: true, viaFile: true, creator: creator, Reason: fmt.Sprintf("kept: stored hash %x is what %s computes for the current spec", legacy, creator)}
	}
	return Decision{Reason: fmt.Sprintf("definition changed (stored hash %x is neither this kubelet's nor %s's %x)", running.Hash, creator, legacy)}
}

// keepNewer is KeepChanged after a rollback: the container carries the hash
// of the newer kubelet that recorded the file. It is kept when that hash is
// what the newer kubelet computes for the spec as this kubelet reads it
// (fields this kubelet does not know are not in its types). A {name, image}
// hash (1.31 on) covers nothing else, so then the spec must also hash as
// record found it: a container that sets a field this kubelet does not know,
// or changed, restarts.
func (d *Decider) keepNewer(container *v1.Container, running RunningContainer, creator Version) Decision {
	var stored uint64
	var err error
	if EraOf(creator) == EraJSON {
		stored, err = specHashAs(creator, d.own, container)
	} else {
		stored, err = ContainerHash(creator, container)
	}
	if err != nil {
		return Decision{Reason: "definition changed (" + err.Error() + ")",
			note: &logNote{key: "hash " + err.Error(), msg: "Container hash of a recorded kubelet not reproduced; containers restart as upstream does", kv: []interface{}{"err", err}}}
	}
	if stored != running.Hash {
		return Decision{Reason: fmt.Sprintf("definition changed (stored hash %x is neither this kubelet's nor %s's %x)", running.Hash, creator, stored)}
	}
	if EraOf(creator) == EraJSON {
		return Decision{Keep: true, viaFile: true, creator: creator, Reason: fmt.Sprintf("kept: stored hash %x is what the newer %s computes for the current spec (rollback)", stored, creator)}
	}
	recorded, ok := d.specs[running.ID]
	if !ok {
		return Decision{Reason: fmt.Sprintf("definition changed (rollback: the compat file records no spec of it, so fields %s knows and this kubelet does not cannot be ruled out)", creator)}
	}
	spec, err := specHashAs(creator, d.own, container)
	if err != nil {
		return Decision{Reason: "definition changed (" + err.Error() + ")"}
	}
	if FormatSpecHash(spec) != recorded {
		return Decision{Reason: fmt.Sprintf("definition changed (rollback: its spec as this kubelet reads it is not the spec recorded under %s: it changed, or sets fields this kubelet does not know)", creator)}
	}
	return Decision{Keep: true, viaFile: true, creator: creator, Reason: fmt.Sprintf("kept: stored hash %x is what the newer %s computes, and the spec is the one recorded (rollback)", stored, creator)}
}

// keepByAge is the rule for containers of kubelets (<= 1.15) whose hash is
// not reproduced: keep what such a kubelet created unless the image changed.
// It applies only to a container the file says carries such a hash.
func keepByAge(container *v1.Container, running RunningContainer, creator Version) Decision {
	if running.Image == "" || normalizeImage(running.Image) != normalizeImage(container.Image) {
		return Decision{Reason: fmt.Sprintf("definition changed (image %q is not the running %q)", container.Image, running.Image)}
	}
	return Decision{Keep: true, viaFile: true, creator: creator, Reason: fmt.Sprintf("kept: created by %s before the compat file was recorded, image unchanged", creator),
		note: &logNote{key: "age " + running.ID, msg: "Keeping a container whose creator's hash is not reproduced: only an image change restarts it", kv: []interface{}{"containerID", running.ID, "containerName", container.Name, "createdBy", creator.String()}}}
}

// StaticPodUID returns the UID recorded for a static pod manifest when the
// file is in force and the manifest's bytes are unchanged since then; the
// note, when set, says why a recorded manifest is not used.
func (d *Decider) StaticPodUID(manifestPath string, data []byte) (uid string, ok bool, note *logNote) {
	if !d.InForce() {
		return "", false, nil
	}
	// The recorded paths are absolute; --pod-manifest-path may be relative.
	abs, err := filepath.Abs(manifestPath)
	if err != nil {
		return "", false, nil
	}
	sp, ok := d.pods[abs]
	if !ok {
		return "", false, nil
	}
	if ManifestSHA256(data) != sp.SHA256 {
		return "", false, &logNote{key: "manifest " + manifestPath + " " + sp.SHA256, msg: "Static pod manifest changed since it was recorded: its recorded UID is not used", kv: []interface{}{"path", manifestPath}}
	}
	return sp.UID, true, nil
}

// StaticStatusMaxAge bounds how long before the kubelet started the compat
// file may have been recorded for its static pod status to count: the status
// stands for what the previous kubelet last reported, so a record taken for
// the swap, not one from an earlier day.
const StaticStatusMaxAge = time.Hour

// StaticPodStatus returns the status the previous kubelet last reported for
// the static pod of an unchanged manifest that runs under uid, as the
// compat file recorded it: its Ready condition and its containers by ID
// (Ready, Started, running). The kubelet gives the pod this status, as the
// API server gives an API pod the status its previous kubelet wrote, so that
// the prober keeps each of those very containers Ready (started) until its
// first probe result. Nothing is returned unless the file is in force and
// was recorded before this kubelet started, at most StaticStatusMaxAge
// before, for this manifest (same bytes) and this UID.
func (d *Decider) StaticPodStatus(manifestPath string, data []byte, uid string) (v1.PodStatus, bool) {
	// The file source re-reads every manifest every 20 s for as long as the
	// file is in force: the cheap checks first, and the manifest is hashed
	// only for a pod that can get a status.
	if !d.InForce() {
		return v1.PodStatus{}, false
	}
	if age := d.start.Sub(d.file.RecordedAt); age <= 0 || age > StaticStatusMaxAge {
		return v1.PodStatus{}, false
	}
	abs, err := filepath.Abs(manifestPath)
	if err != nil {
		return v1.PodStatus{}, false
	}
	sp, ok := d.pods[abs]
	if !ok || sp.UID != uid || len(sp.Containers) == 0 || ManifestSHA256(data) != sp.SHA256 {
		return v1.PodStatus{}, false
	}
	var status v1.PodStatus
	if sp.Ready {
		status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
	}
	for _, c := range sp.Containers {
		started := c.Started || c.Ready
		status.ContainerStatuses = append(status.ContainerStatuses, v1.ContainerStatus{
			Name:        c.Name,
			ContainerID: c.ContainerID,
			State:       v1.ContainerState{Running: &v1.ContainerStateRunning{}},
			Ready:       c.Ready,
			Started:     &started,
		})
	}
	return status, true
}

// logNote is a structured line the kubelet logs once per key.
type logNote struct {
	key, msg string
	kv       []interface{}
}
