package kubeletcompat

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
)

// processStart approximates the kubelet's process start: package variables
// are initialised before main runs.
var processStart = time.Now()

// DefaultRecheckInterval is how often the compat file is re-stat'ed.
const DefaultRecheckInterval = 5 * time.Second

// maxLogKeys bounds the memory spent on remembering what was logged.
const maxLogKeys = 1024

// Logf logs one line; kubelets before structured logging pass klog.Infof.
type Logf func(format string, args ...interface{})

// LogS logs one structured line; kubelets from 1.21 pass klog.InfoS.
type LogS func(msg string, keysAndValues ...interface{})

// Config sets up a Compat.
type Config struct {
	// RootDir is the kubelet's --root-dir; the compat file defaults to
	// RootDir/upgrade-compat.json, or $KUBELET_COMPAT_FILE when set.
	RootDir string
	// Path overrides the compat file's path.
	Path string
	// KubeletVersion is the running kubelet's version, e.g. v1.21.14+compat.1.
	KubeletVersion string
	// StartTime is when the kubelet process started; containers created
	// before it may be legacy. Defaults to this package's initialisation.
	StartTime time.Time
	// LogS receives the library's few log lines as a message and key/value
	// pairs; when it is nil, Logf receives them rendered as one line; when
	// both are nil they are discarded.
	LogS LogS
	Logf Logf
	// OwnerUID is the uid that must own the compat file (root by default).
	OwnerUID int
	// RecheckInterval bounds how often the file is re-stat'ed.
	RecheckInterval time.Duration
	// RecordPath overrides the sync record's path (DefaultRecordPath of
	// the compat file's); RecordInterval bounds how often it is written.
	RecordPath     string
	RecordInterval time.Duration
	// Now overrides the clock of the sync record, for tests.
	Now func() time.Time
}

// Compat answers the kubelet's questions about containers and static pods
// created by the previous kubelet. A nil *Compat behaves like upstream.
type Compat struct {
	lastCheck int64 // monotonic nanoseconds since base; atomic, keep first for alignment

	path     string
	own      Version
	enabled  bool
	start    time.Time
	logs     LogS
	ownerUID int
	interval time.Duration
	base     time.Time

	state   atomic.Value // *fileState
	runtime atomic.Value // RuntimeLookup
	noFile  *Decider     // the decisions without a file (upstream)
	loadMu  sync.Mutex   // serialises reloads

	logMu  sync.Mutex
	logged map[string]bool
	kept   map[string]keptInfo // container IDs kept through the compat path

	rec *recorder // nil: nothing is recorded (a disabled Compat)
}

// fileState is one loaded version of the compat file.
type fileState struct {
	present bool     // something exists at the path
	retry   bool     // reading failed for a passing reason: read again at the next call
	stamp   [4]int64 // identity of what was read, to skip unchanged reloads
	decider *Decider // nil unless the file was read
}

// RunningContainer is what the runtime reports about a container.
type RunningContainer struct {
	// ID is the runtime's container ID; it keys log-once messages.
	ID string
	// Hash is the stored io.kubernetes.container.hash (0 when absent).
	Hash uint64
	// CreatedAt is when the runtime created the container.
	CreatedAt time.Time
	// Image is the image the runtime reports for the container; only the
	// pre-1.16 rule uses it.
	Image string
}

// Decision is the answer for one container, with a reason for the log.
type Decision struct {
	Keep   bool
	Reason string
	// FirstKeep is set the first time this Compat keeps a container (by
	// ID) through the compat path, so that callers log each container once
	// rather than on every sync.
	FirstKeep bool

	note    *logNote // logged once by Compat
	viaFile bool     // kept through the compat file, not by an equal hash
	creator Version  // the kubelet whose hash a container kept through the file carries
}

var defaultCompat atomic.Value // *Compat

// Init creates the process-wide Compat that the kubelet's hooks consult.
func Init(cfg Config) *Compat {
	c := New(cfg)
	defaultCompat.Store(c)
	return c
}

// Default returns the Compat set by Init, or nil (upstream behaviour).
func Default() *Compat {
	c, _ := defaultCompat.Load().(*Compat)
	return c
}

// New returns a Compat for one kubelet. It reads nothing until first asked.
func New(cfg Config) *Compat {
	c := &Compat{
		path:     cfg.Path,
		start:    cfg.StartTime,
		logs:     structured(cfg.LogS, cfg.Logf),
		ownerUID: cfg.OwnerUID,
		interval: cfg.RecheckInterval,
		base:     time.Now(),
		logged:   map[string]bool{},
		kept:     map[string]keptInfo{},
	}
	if c.path == "" {
		c.path = DefaultPath(cfg.RootDir)
	}
	if c.start.IsZero() {
		c.start = processStart
	}
	if c.interval <= 0 {
		c.interval = DefaultRecheckInterval
	}
	own, err := ParseVersion(cfg.KubeletVersion)
	switch {
	case err != nil:
		c.logOnce("own-version", "Kubelet-compat disabled: the kubelet's version is not understood", "err", err)
	case own.Major != 1 || own.Minor < firstJSONMinor || own.Minor > lastKnownMinor:
		c.logOnce("own-version", "Kubelet-compat disabled: the kubelet is outside the supported range", "kubeletVersion", own, "supported", fmt.Sprintf("1.%d..1.%d", firstJSONMinor, lastKnownMinor))
	default:
		c.own, c.enabled = own, true
		c.noFile = NewDecider(nil, own, c.start)
		c.rec = &recorder{path: cfg.RecordPath, interval: cfg.RecordInterval, now: cfg.Now, pods: map[string]*PodRecord{}}
		if c.rec.path == "" {
			c.rec.path = DefaultRecordPath(c.path)
		}
		if c.rec.interval <= 0 {
			c.rec.interval = DefaultRecordInterval
		}
		if c.rec.now == nil {
			c.rec.now = time.Now
		}
	}
	return c
}

// Path is the compat file this Compat reads.
func (c *Compat) Path() string {
	if c == nil {
		return ""
	}
	return c.path
}

// Active reports the previous kubelet version when the compat file is in force.
func (c *Compat) Active() (Version, bool) {
	d := c.decider()
	if !d.InForce() {
		return Version{}, false
	}
	prev, _ := ParseVersion(d.File().PreviousVersion)
	return prev, true
}

// Decide is Decider.Decide on the compat file as it is now.
func (c *Compat) Decide(container *v1.Container, running RunningContainer) Decision {
	if c == nil || !c.enabled {
		return Decision{Reason: "definition changed"}
	}
	return c.finish(c.decider().Decide(container, running), running)
}

// KeepChanged is Decider.KeepChanged on the compat file as it is now: the
// kubelet asks it for a container whose stored hash differs from its own.
// Without a file in force this is a cached check and no hashing at all.
func (c *Compat) KeepChanged(container *v1.Container, running RunningContainer) Decision {
	d := c.decider()
	if !d.InForce() {
		return Decision{Reason: "definition changed"}
	}
	return c.finish(d.KeepChanged(container, running), running)
}

// finish logs what the decision asks to log once and marks the first keep
// of each container.
func (c *Compat) finish(d Decision, running RunningContainer) Decision {
	if d.note != nil {
		c.logOnce(d.note.key, d.note.msg, d.note.kv...)
		d.note = nil
	}
	if d.Keep && d.viaFile {
		return c.keep(running, keptInfo{reason: d.Reason, creator: d.creator.String()})
	}
	return d
}

// keptInfo is why a container was kept through the compat file.
type keptInfo struct {
	reason  string
	creator string // the kubelet whose hash it carries
}

// keep returns a keep decision, marking the first one per container.
func (c *Compat) keep(running RunningContainer, info keptInfo) Decision {
	c.logMu.Lock()
	defer c.logMu.Unlock()
	_, kept := c.kept[running.ID]
	first := !kept
	if first {
		if len(c.kept) >= maxLogKeys {
			c.kept = map[string]keptInfo{}
		}
		c.kept[running.ID] = info
	}
	return Decision{Keep: true, Reason: info.reason, FirstKeep: first}
}

// StaticPodUID returns the UID recorded for a static pod manifest when the
// compat file is in force and the manifest's bytes are unchanged since then.
func (c *Compat) StaticPodUID(manifestPath string, data []byte) (string, bool) {
	uid, ok, note := c.decider().StaticPodUID(manifestPath, data)
	if note != nil {
		c.logOnce(note.key, note.msg, note.kv...)
	}
	return uid, ok
}

// StaticPodStatus is Decider.StaticPodStatus on the compat file as it is
// now: the status the previous kubelet last reported for the static pod of
// an unchanged manifest that runs under uid.
func (c *Compat) StaticPodStatus(manifestPath string, data []byte, uid string) (v1.PodStatus, bool) {
	return c.decider().StaticPodStatus(manifestPath, data, uid)
}

// SetStaticPodStatus gives pod, the static pod the kubelet decoded from the
// manifest at manifestPath (bytes data), the conditions and container
// statuses its previous kubelet last reported (StaticPodStatus), as an API
// pod comes with the status its previous kubelet wrote; the rest of its
// status (the phase the decoder set) stays. It does nothing without them.
func (c *Compat) SetStaticPodStatus(manifestPath string, data []byte, pod *v1.Pod) {
	if pod == nil {
		return
	}
	if status, ok := c.StaticPodStatus(manifestPath, data, string(pod.UID)); ok {
		pod.Status.Conditions = status.Conditions
		pod.Status.ContainerStatuses = status.ContainerStatuses
	}
}

// decider returns the decisions for the file as it is now; a nil or
// disabled Compat decides as upstream.
func (c *Compat) decider() *Decider {
	if st := c.current(); st != nil && st.decider != nil {
		return st.decider
	}
	if c == nil || c.noFile == nil {
		return &Decider{} // disabled: nothing is in force
	}
	return c.noFile
}

// current returns the compat file state, re-stat'ing the file at most once
// per interval.
func (c *Compat) current() *fileState {
	if c == nil || !c.enabled {
		return nil
	}
	now := int64(time.Since(c.base))
	st, _ := c.state.Load().(*fileState)
	if st != nil && !st.retry && now-atomic.LoadInt64(&c.lastCheck) < int64(c.interval) {
		return st
	}
	c.loadMu.Lock()
	defer c.loadMu.Unlock()
	st, _ = c.state.Load().(*fileState)
	if st != nil && !st.retry && now-atomic.LoadInt64(&c.lastCheck) < int64(c.interval) {
		return st
	}
	next, retry := c.reload(st)
	if retry {
		// Keep what was last read in force, but read again next time.
		kept := fileState{}
		if st != nil {
			kept = *st
		}
		kept.retry = true
		next = &kept
	} else {
		atomic.StoreInt64(&c.lastCheck, now)
	}
	c.state.Store(next)
	return next
}

// reload reads the file anew if it changed. retry is set when reading failed
// for a passing reason (EMFILE, EIO): nothing is cached then, so that the
// next call tries again, and the last good state stays in force meanwhile.
func (c *Compat) reload(old *fileState) (st *fileState, retry bool) {
	fi, err := os.Lstat(c.path)
	if err != nil {
		if !os.IsNotExist(err) {
			c.logOnce("stat "+err.Error(), "Cannot stat the compat file, will retry", "err", err)
			return old, true
		}
		if old != nil && old.decider != nil && old.decider.InForce() {
			c.log("Compat file is gone; containers restart on hash changes as upstream does", "path", c.path)
		}
		return &fileState{}, false
	}
	if old != nil && old.present && !old.retry && old.stamp == changeStamp(fi) {
		return old, false
	}
	f, fi, err := ReadFile(c.path, c.ownerUID)
	if _, bad := err.(*FileProblem); err != nil && !bad {
		if os.IsNotExist(err) {
			return &fileState{}, false // removed since the Lstat
		}
		c.logOnce("read "+err.Error(), "Cannot read the compat file, will retry", "err", err)
		return old, true
	}
	st = &fileState{present: true}
	if fi != nil {
		st.stamp = changeStamp(fi)
	}
	if err != nil {
		c.logOnce("read "+err.Error(), "Ignoring compat file", "err", err)
		return st, false
	}
	st.decider = NewDecider(f, c.own, c.start)
	switch state, why := st.decider.State(); state {
	case FileIgnored:
		c.logOnce("version "+f.PreviousVersion, "Ignoring compat file", "path", c.path, "reason", why)
	case FilePending:
		c.logOnce(fmt.Sprintf("pending %s %v", f.PreviousVersion, st.stamp), "Compat file is pending: what it lists from earlier upgrades is kept", "path", c.path, "reason", why, "containers", len(f.Containers), "staticPods", len(f.StaticPods))
	default:
		c.logOnce(fmt.Sprintf("active %s %v", f.PreviousVersion, st.stamp), "Compat file is active", "path", c.path, "previousKubelet", f.PreviousVersion, "recordedAt", f.RecordedAt.Format(time.RFC3339), "containers", len(f.Containers), "staticPods", len(f.StaticPods))
	}
	return st, false
}

// logOnce logs a message the first time its key is seen.
func (c *Compat) logOnce(key, msg string, keysAndValues ...interface{}) {
	c.logMu.Lock()
	if c.logged[key] {
		c.logMu.Unlock()
		return
	}
	if len(c.logged) >= maxLogKeys {
		c.logged = map[string]bool{}
	}
	c.logged[key] = true
	c.logMu.Unlock()
	c.log(msg, keysAndValues...)
}

func (c *Compat) log(msg string, keysAndValues ...interface{}) {
	if c.logs != nil {
		c.logs(msg, keysAndValues...)
	}
}

// structured returns the structured logger the library logs through: logs
// itself, or logf fed one rendered line, or nil.
func structured(logs LogS, logf Logf) LogS {
	if logs != nil || logf == nil {
		return logs
	}
	return func(msg string, keysAndValues ...interface{}) {
		logf("%s", renderLine(msg, keysAndValues))
	}
}

// renderLine renders a structured line for printf-style loggers, as
// `kubelet-compat: msg key="value" ...`.
func renderLine(msg string, keysAndValues []interface{}) string {
	line := "kubelet-compat: " + msg
	for i := 0; i+1 < len(keysAndValues); i += 2 {
		line += fmt.Sprintf(" %v=%q", keysAndValues[i], fmt.Sprint(keysAndValues[i+1]))
	}
	return line
}
