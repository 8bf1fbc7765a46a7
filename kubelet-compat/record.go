package kubeletcompat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/ioutil"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// The sync record is the kubelet's own account, per pod, of what its pod
// syncs did since it started: which containers the compat file kept and
// why, which it killed and why, which it started, when each pod was last
// synced. A roll judges a node on it (kubelet-compat gate) instead of on
// timers and node-wide counters. Only the kubelet writes it, beside the
// compat file, from what its runtime and its own decisions said; nothing in
// it comes from what an API user can write but the pods' names.

const (
	// RecordAPIVersion and RecordKind identify the sync record's schema.
	RecordAPIVersion = "kubelet-compat.io/v1alpha1"
	RecordKind       = "PodSyncRecord"
	// RecordFileName is the sync record's name beside the compat file.
	RecordFileName = "upgrade-compat-syncs.json"

	// DefaultRecordInterval is how long a sync's change may wait before the
	// record is written: syncs only update memory; one write covers them.
	DefaultRecordInterval = time.Second
	// RecordRetention is how long a pod that is no longer synced (deleted,
	// terminated) stays in the record.
	RecordRetention = time.Hour
	// MaxRecordedPods bounds the pods the record holds; the least recently
	// synced go first.
	MaxRecordedPods = 5000
	// maxRecordedKills bounds the kills kept per container (KillCount
	// counts all of them).
	maxRecordedKills = 4

	// ReasonPodKilled is the reason recorded for the containers of a pod
	// the sync killed whole (its sandbox changed or it must not run).
	ReasonPodKilled = "killed with its pod"
)

// SyncRecord is the sync record file.
type SyncRecord struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// KubeletVersion and KubeletPID name the kubelet that writes the record;
	// KubeletStartedAt is when that kubelet process started: the record
	// covers its syncs only.
	KubeletVersion   string    `json:"kubeletVersion"`
	KubeletPID       int       `json:"kubeletPID"`
	KubeletStartedAt time.Time `json:"kubeletStartedAt"`
	// WrittenAt is when the kubelet last wrote the record.
	WrittenAt time.Time `json:"writtenAt"`
	// CompatFile is what the kubelet did with the compat file at that
	// time: absent, ignored, pending or active.
	CompatFile string `json:"compatFile"`
	// Pods are the pods synced since KubeletStartedAt, by UID.
	Pods []PodRecord `json:"pods"`
}

// PodRecord is what the kubelet's syncs of one pod did.
type PodRecord struct {
	UID       string `json:"uid"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Syncs counts the pod's syncs; FirstSyncAt and LastSyncAt are when
	// the first and the last of them finished.
	Syncs       int       `json:"syncs"`
	FirstSyncAt time.Time `json:"firstSyncAt"`
	LastSyncAt  time.Time `json:"lastSyncAt"`
	// LastSyncError is the last sync's error; empty when it succeeded.
	LastSyncError string `json:"lastSyncError,omitempty"`
	// AdmittedDespite is the admission rejection the compat file overruled
	// for this pod, when one was.
	AdmittedDespite string `json:"admittedDespite,omitempty"`
	// SandboxesCreated and PodKills count the syncs that created a new
	// sandbox and that killed the whole pod; FirstSandboxAt and
	// FirstPodKillAt are the first of them.
	SandboxesCreated int        `json:"sandboxesCreated,omitempty"`
	FirstSandboxAt   *time.Time `json:"firstSandboxAt,omitempty"`
	PodKills         int        `json:"podKills,omitempty"`
	FirstPodKillAt   *time.Time `json:"firstPodKillAt,omitempty"`
	// Containers are the pod's containers by name, sorted.
	Containers []ContainerRecord `json:"containers,omitempty"`

	keptAnnounced  bool   // SyncNews.KeptPod was given
	admitAnnounced bool   // SyncNews.AdmittedDespite was given
	admittedAs     string // the overruled rejection, "reason: message"
}

// ContainerRecord is what the syncs did to one container of a pod.
type ContainerRecord struct {
	Name string `json:"name"`
	// ID is the container the runtime showed running at the pod's last
	// sync; empty when none ran.
	ID string `json:"id,omitempty"`
	// Kept says that the compat file kept a running container whose
	// stored hash this kubelet computes differently, and why.
	Kept *KeptContainer `json:"kept,omitempty"`
	// Kills are the first kills of this container by the syncs (at most a
	// few); KillCount counts them all.
	Kills     []KilledContainer `json:"kills,omitempty"`
	KillCount int               `json:"killCount,omitempty"`
	// Starts counts the syncs that started this container; FirstStartAt is
	// the first of them.
	Starts       int        `json:"starts,omitempty"`
	FirstStartAt *time.Time `json:"firstStartAt,omitempty"`
}

// KeptContainer is a container the compat file kept.
type KeptContainer struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
	// CreatedBy is the kubelet whose container hash it carries (the
	// previous kubelet, or the newer one after a rollback).
	CreatedBy string    `json:"createdBy"`
	At        time.Time `json:"at"`
}

// KilledContainer is a container a sync killed.
type KilledContainer struct {
	ID     string    `json:"id"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// PodSync is what the kubelet tells the record after one sync of a pod.
type PodSync struct {
	UID, Namespace, Name string
	// Running are the containers the runtime showed running when the sync
	// began (name and runtime ID).
	Running []SyncContainer
	// Killed are the containers the sync killed one by one, with the
	// kubelet's reason.
	Killed []SyncContainer
	// Started are the names of the containers the sync started.
	Started []string
	// KillPod and CreateSandbox are set when the sync killed the whole pod
	// (every running container with it) and when it created a new sandbox.
	KillPod, CreateSandbox bool
	// Err is the sync's error, nil when it succeeded.
	Err error
}

// SyncContainer is a container of a sync.
type SyncContainer struct {
	Name, ID, Reason string
}

// SyncNews is what a sync added that the kubelet announces: each once per
// pod and kubelet process (an in-place upgrade starts a new process).
type SyncNews struct {
	// NewlyKept are the containers first recorded as kept by this sync
	// (the kept-containers counter, by CreatedBy).
	NewlyKept []KeptContainer
	// KeptPod is set on the first sync that recorded a kept container of
	// the pod; Kept then lists the pod's kept containers by name, and
	// KeptBy the kubelet whose hashes they carry.
	KeptPod bool
	Kept    []string
	KeptBy  string
	// AdmittedDespite is the admission rejection overruled for the pod
	// ("reason: message"), on the pod's first sync after it.
	AdmittedDespite       string
	AdmittedDespiteReason string
	// RestartedForChange counts this sync's kills of containers whose
	// definition changed (a genuine change: the compat file did not keep
	// them).
	RestartedForChange int
	// FileState is what the kubelet does with the compat file now.
	FileState string
}

// definitionChanged is in the kubelet's kill message for a container whose
// spec changed ("Container app definition changed", with ", will be
// restarted" when its restart policy restarts it; every minor).
const definitionChanged = "definition changed"

// recorder keeps the record in memory and writes it at most once per
// interval; syncs never wait on the disk.
type recorder struct {
	path     string
	interval time.Duration
	now      func() time.Time

	mu      sync.Mutex
	pods    map[string]*PodRecord
	pending bool // a write is scheduled

	writeMu sync.Mutex // serialises writes
	failing bool       // the last write failed (logged); under writeMu
}

// RecordPath is the sync record this Compat writes; empty when it records
// nothing (a nil or disabled Compat).
func (c *Compat) RecordPath() string {
	if c == nil || c.rec == nil {
		return ""
	}
	return c.rec.path
}

// DefaultRecordPath is the sync record beside the compat file at compatPath.
func DefaultRecordPath(compatPath string) string {
	return filepath.Join(filepath.Dir(compatPath), RecordFileName)
}

// RecordSync adds one sync of a pod to the record. It takes a lock and
// updates memory only; the write follows within the record interval. A nil
// or disabled Compat records nothing.
func (c *Compat) RecordSync(s PodSync) SyncNews {
	if c == nil || c.rec == nil || s.UID == "" {
		return SyncNews{}
	}
	r := c.rec
	now := r.now()
	kept := c.keptFor(s.Running)
	state, _ := c.decider().State()
	news := SyncNews{FileState: state.String()}
	r.mu.Lock()
	p := r.pods[s.UID]
	if p == nil {
		p = &PodRecord{UID: s.UID, FirstSyncAt: now}
		r.pods[s.UID] = p
	}
	p.Namespace, p.Name = s.Namespace, s.Name
	p.Syncs++
	p.LastSyncAt = now
	p.LastSyncError = ""
	if s.Err != nil {
		p.LastSyncError = recordString(s.Err.Error())
	}
	if s.CreateSandbox {
		p.SandboxesCreated++
		if p.FirstSandboxAt == nil {
			p.FirstSandboxAt = timePtr(now)
		}
	}
	if s.KillPod {
		p.PodKills++
		if p.FirstPodKillAt == nil {
			p.FirstPodKillAt = timePtr(now)
		}
	}
	for i := range p.Containers {
		p.Containers[i].ID = ""
	}
	for _, rc := range s.Running {
		cr := p.container(rc.Name)
		cr.ID = rc.ID
		if info, ok := kept[rc.ID]; ok && (cr.Kept == nil || cr.Kept.ID != rc.ID) {
			cr.Kept = &KeptContainer{ID: rc.ID, Reason: recordString(info.reason), CreatedBy: info.creator, At: now}
			news.NewlyKept = append(news.NewlyKept, *cr.Kept)
		}
	}
	if len(news.NewlyKept) > 0 && !p.keptAnnounced {
		p.keptAnnounced, news.KeptPod = true, true
		for _, cr := range p.Containers {
			if cr.Kept != nil {
				news.Kept = append(news.Kept, cr.Name)
				news.KeptBy = cr.Kept.CreatedBy
			}
		}
	}
	if p.AdmittedDespite != "" && !p.admitAnnounced {
		p.admitAnnounced = true
		news.AdmittedDespite, news.AdmittedDespiteReason = p.admittedAs, p.AdmittedDespite
	}
	killed := s.Killed
	if s.KillPod {
		for _, rc := range s.Running {
			killed = append(killed, SyncContainer{Name: rc.Name, ID: rc.ID, Reason: ReasonPodKilled})
		}
	}
	for _, kc := range killed {
		if strings.Contains(kc.Reason, definitionChanged) {
			news.RestartedForChange++
		}
		cr := p.container(kc.Name)
		cr.KillCount++
		if len(cr.Kills) < maxRecordedKills {
			cr.Kills = append(cr.Kills, KilledContainer{ID: kc.ID, Reason: recordString(kc.Reason), At: now})
		}
	}
	for _, name := range s.Started {
		cr := p.container(name)
		cr.Starts++
		if cr.FirstStartAt == nil {
			cr.FirstStartAt = timePtr(now)
		}
	}
	schedule := !r.pending
	r.pending = true
	r.mu.Unlock()
	if schedule {
		time.AfterFunc(r.interval, func() { c.writeRecord() })
	}
	return news
}

// noteAdmitted records the rejection the compat file overruled for pod.
func (c *Compat) noteAdmitted(uid, namespace, name, reason, message string) {
	if c == nil || c.rec == nil || uid == "" {
		return
	}
	r := c.rec
	r.mu.Lock()
	p := r.pods[uid]
	if p == nil {
		p = &PodRecord{UID: uid, Namespace: namespace, Name: name}
		r.pods[uid] = p
	}
	p.AdmittedDespite = reason
	p.admittedAs = recordString(reason + ": " + message)
	schedule := !r.pending
	r.pending = true
	r.mu.Unlock()
	if schedule {
		time.AfterFunc(r.interval, func() { c.writeRecord() })
	}
}

// container returns the pod's record of the named container, adding it.
func (p *PodRecord) container(name string) *ContainerRecord {
	for i := range p.Containers {
		if p.Containers[i].Name == name {
			return &p.Containers[i]
		}
	}
	p.Containers = append(p.Containers, ContainerRecord{Name: name})
	sort.Slice(p.Containers, func(i, j int) bool { return p.Containers[i].Name < p.Containers[j].Name })
	for i := range p.Containers {
		if p.Containers[i].Name == name {
			return &p.Containers[i]
		}
	}
	return nil // not reached
}

// keptFor returns, of the running containers, those the compat path kept,
// with the reason.
func (c *Compat) keptFor(running []SyncContainer) map[string]keptInfo {
	var kept map[string]keptInfo
	c.logMu.Lock()
	defer c.logMu.Unlock()
	for _, rc := range running {
		if info, ok := c.kept[rc.ID]; ok {
			if kept == nil {
				kept = map[string]keptInfo{}
			}
			kept[rc.ID] = info
		}
	}
	return kept
}

// FlushRecord writes the record now when a sync changed it since the last
// write; it returns the write's error.
func (c *Compat) FlushRecord() error {
	if c == nil || c.rec == nil {
		return nil
	}
	return c.writeRecord()
}

// writeRecord writes the record as it is now. A failure is logged when
// writes start failing, not on every write: the kubelet goes on, and the
// gate sees a stale record.
func (c *Compat) writeRecord() error {
	r := c.rec
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	rec := c.snapshotRecord()
	if rec == nil {
		return nil
	}
	err := WriteSyncRecord(r.path, rec)
	if err != nil && !r.failing {
		c.log("Cannot write the pod sync record; the next sync writes it again", "path", r.path, "err", err)
	}
	r.failing = err != nil
	return err
}

// snapshotRecord copies the record for a write and prunes it; nil when
// nothing changed since the last write.
func (c *Compat) snapshotRecord() *SyncRecord {
	r := c.rec
	now := r.now()
	state, _ := c.decider().State()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.pending {
		return nil
	}
	r.pending = false
	pods := make([]PodRecord, 0, len(r.pods))
	for uid, p := range r.pods {
		if !p.LastSyncAt.IsZero() && now.Sub(p.LastSyncAt) > RecordRetention {
			delete(r.pods, uid)
			continue
		}
		pods = append(pods, p.copy())
	}
	if len(pods) > MaxRecordedPods {
		sort.Slice(pods, func(i, j int) bool { return pods[i].LastSyncAt.After(pods[j].LastSyncAt) })
		for _, p := range pods[MaxRecordedPods:] {
			delete(r.pods, p.UID)
		}
		pods = pods[:MaxRecordedPods]
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].UID < pods[j].UID })
	return &SyncRecord{
		APIVersion:       RecordAPIVersion,
		Kind:             RecordKind,
		KubeletVersion:   c.own.String(),
		KubeletPID:       os.Getpid(),
		KubeletStartedAt: c.start,
		WrittenAt:        now,
		CompatFile:       state.String(),
		Pods:             pods,
	}
}

func (p *PodRecord) copy() PodRecord {
	out := *p
	out.Containers = make([]ContainerRecord, len(p.Containers))
	for i, cr := range p.Containers {
		cr.Kills = append([]KilledContainer(nil), cr.Kills...)
		out.Containers[i] = cr
	}
	return out
}

func timePtr(t time.Time) *time.Time { return &t }

// maxRecordString bounds a reason or an error in the record.
const maxRecordString = 256

func recordString(s string) string {
	if len(s) > maxRecordString {
		return s[:maxRecordString-3] + "..."
	}
	return s
}

// MarshalSyncRecord renders the record as it is written: indented JSON with
// a final newline.
func MarshalSyncRecord(rec *SyncRecord) ([]byte, error) {
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// WriteSyncRecord replaces the record at path atomically, as WriteFile
// does, but without fsync: the record is the running kubelet's live
// account, worthless after a crash (it names a kubelet that no longer
// runs), and a sync loop writing once a second must not compete for the
// disk with etcd's fsyncs on a control-plane node.
func WriteSyncRecord(path string, rec *SyncRecord) error {
	data, err := MarshalSyncRecord(rec)
	if err != nil {
		return err
	}
	if len(data) > MaxFileSize {
		return fmt.Errorf("refusing to write %d bytes: a sync record holds at most %d bytes", len(data), MaxFileSize)
	}
	return writeAtomic(path, data, false)
}

// ParseSyncRecord decodes a sync record, refusing unknown fields and
// another schema.
func ParseSyncRecord(data []byte) (*SyncRecord, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	rec := &SyncRecord{}
	if err := dec.Decode(rec); err != nil {
		return nil, fmt.Errorf("decoding the sync record: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("decoding the sync record: data after the object")
	}
	if rec.APIVersion != RecordAPIVersion || rec.Kind != RecordKind {
		return nil, fmt.Errorf("not a sync record: apiVersion %q, kind %q (want %s, %s)", truncate(rec.APIVersion), truncate(rec.Kind), RecordAPIVersion, RecordKind)
	}
	if rec.KubeletStartedAt.IsZero() {
		return nil, fmt.Errorf("the sync record names no kubelet start")
	}
	seen := map[string]bool{}
	for _, p := range rec.Pods {
		if !isPodUID(p.UID) {
			return nil, fmt.Errorf("the sync record has a pod with UID %q", truncate(p.UID))
		}
		if seen[p.UID] {
			return nil, fmt.Errorf("the sync record lists pod %s twice", p.UID)
		}
		seen[p.UID] = true
	}
	return rec, nil
}

// ReadSyncRecord reads the sync record at path with the checks ReadFile
// makes of the compat file: a regular file owned by ownerUID that neither
// group nor others may write, never through a symbolic link.
func ReadSyncRecord(path string, ownerUID int) (*SyncRecord, error) {
	fh, err := openFile(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if err := checkFileInfo(fi, ownerUID); err != nil {
		return nil, err
	}
	data, err := ioutil.ReadAll(io.LimitReader(fh, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, problemf("%s is larger than %d bytes", path, MaxFileSize)
	}
	rec, err := ParseSyncRecord(data)
	if err != nil {
		return nil, problemf("%s: %v", path, err)
	}
	return rec, nil
}

// Pod returns the record of the pod with uid.
func (r *SyncRecord) Pod(uid string) (PodRecord, bool) {
	for _, p := range r.Pods {
		if p.UID == uid {
			return p, true
		}
	}
	return PodRecord{}, false
}

// Container returns the record of the pod's container name.
func (p PodRecord) Container(name string) (ContainerRecord, bool) {
	for _, c := range p.Containers {
		if c.Name == name {
			return c, true
		}
	}
	return ContainerRecord{}, false
}
