package kubeletcompat

import (
	"fmt"
	"os"
	"path/filepath"
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

// Logf logs one line; kubelets pass klog.Infof.
type Logf func(format string, args ...interface{})

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
	// Logf receives the library's few log lines; nil discards them.
	Logf Logf
	// OwnerUID is the uid that must own the compat file (root by default).
	OwnerUID int
	// RecheckInterval bounds how often the file is re-stat'ed.
	RecheckInterval time.Duration
}

// Compat answers the kubelet's questions about containers and static pods
// created by the previous kubelet. A nil *Compat behaves like upstream.
type Compat struct {
	lastCheck int64 // monotonic nanoseconds since base; atomic, keep first for alignment

	path     string
	own      Version
	enabled  bool
	start    time.Time
	logf     Logf
	ownerUID int
	interval time.Duration
	base     time.Time

	state  atomic.Value // *fileState
	loadMu sync.Mutex   // serialises reloads

	logMu  sync.Mutex
	logged map[string]bool
	kept   map[string]bool // container IDs kept through the compat path
}

// fileState is one loaded version of the compat file.
type fileState struct {
	present    bool     // something exists at the path
	retry      bool     // reading failed for a passing reason: read again at the next call
	stamp      [4]int64 // identity of what was read, to skip unchanged reloads
	file       *File    // nil unless the file is active
	prev       Version
	containers map[string]Version   // hash version by container ID
	pods       map[string]StaticPod // by manifest path
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
		logf:     cfg.Logf,
		ownerUID: cfg.OwnerUID,
		interval: cfg.RecheckInterval,
		base:     time.Now(),
		logged:   map[string]bool{},
		kept:     map[string]bool{},
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
		c.logOnce("own-version", "kubelet-compat: disabled: kubelet version: %v", err)
	case own.Major != 1 || own.Minor < firstJSONMinor || own.Minor > lastKnownMinor:
		c.logOnce("own-version", "kubelet-compat: disabled: kubelet %s is outside the supported range 1.%d..1.%d", own, firstJSONMinor, lastKnownMinor)
	default:
		c.own, c.enabled = own, true
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

// Active reports the previous kubelet version when the compat file is active.
func (c *Compat) Active() (Version, bool) {
	st := c.current()
	if st == nil || st.file == nil {
		return Version{}, false
	}
	return st.prev, true
}

// Decide is the whole decision for a running container: keep it when its
// stored hash is this kubelet's own hash (upstream), or when the compat path
// keeps it (see KeepChanged).
func (c *Compat) Decide(container *v1.Container, running RunningContainer) Decision {
	if c != nil && c.enabled {
		own, err := ownContainerHash(c.own, container)
		if err == nil && own == running.Hash {
			return Decision{Keep: true, Reason: "hash matches"}
		}
	}
	return c.KeepChanged(container, running)
}

// KeepChanged is for a container whose stored hash differs from this
// kubelet's own: it is kept only when the compat file is active, lists the
// container (it ran when the file was recorded), the container was created
// before this kubelet started, and its stored hash is what the kubelet the
// file names for it computes for the current spec. A container created after
// the file was recorded is never kept this way, whatever the clocks say and
// however often the kubelet restarts. Without an active file this is a cached
// check and no hashing at all.
func (c *Compat) KeepChanged(container *v1.Container, running RunningContainer) Decision {
	st := c.current()
	if st == nil || st.file == nil {
		return Decision{Reason: "definition changed"}
	}
	creator, listed := st.containers[running.ID]
	if !listed {
		return Decision{Reason: "definition changed (not running when the compat file was recorded)"}
	}
	if running.CreatedAt.IsZero() || !running.CreatedAt.Before(c.start) {
		return Decision{Reason: "definition changed (created by this kubelet)"}
	}
	if !creator.LessThan(c.own) {
		return Decision{Reason: fmt.Sprintf("definition changed (it carries the hash of %s, not of an older kubelet)", creator)}
	}
	if creator.Minor <= lastGoStructMinor {
		return c.keepByAge(container, running, creator)
	}
	legacy, err := (&containerHashes{container: container}).of(creator)
	if err != nil {
		c.logOnce("hash "+err.Error(), "kubelet-compat: %v; containers restart as upstream does", err)
		return Decision{Reason: "definition changed (" + err.Error() + ")"}
	}
	if legacy == running.Hash {
		return c.keep(running, fmt.Sprintf("kept: stored hash %x is what %s computes for the current spec", legacy, creator))
	}
	return Decision{Reason: fmt.Sprintf("definition changed (stored hash %x is neither this kubelet's nor %s's %x)", running.Hash, creator, legacy)}
}

// keep returns a keep decision, marking the first one per container.
func (c *Compat) keep(running RunningContainer, reason string) Decision {
	c.logMu.Lock()
	defer c.logMu.Unlock()
	first := !c.kept[running.ID]
	if first {
		if len(c.kept) >= maxLogKeys {
			c.kept = map[string]bool{}
		}
		c.kept[running.ID] = true
	}
	return Decision{Keep: true, Reason: reason, FirstKeep: first}
}

// keepByAge is the rule for containers of kubelets (<= 1.15) whose hash is
// not reproduced: keep what such a kubelet created unless the image changed.
// It applies only to a container the file says carries such a hash.
func (c *Compat) keepByAge(container *v1.Container, running RunningContainer, prev Version) Decision {
	if running.Image == "" || normalizeImage(running.Image) != normalizeImage(container.Image) {
		return Decision{Reason: fmt.Sprintf("definition changed (image %q is not the running %q)", container.Image, running.Image)}
	}
	c.logOnce("age "+running.ID, "kubelet-compat: keeping container %s (%s) created by %s: that version's hash is not reproduced, so only an image change restarts it", running.ID, container.Name, prev)
	return c.keep(running, fmt.Sprintf("kept: created by %s before the compat file was recorded, image unchanged", prev))
}

// StaticPodUID returns the UID recorded for a static pod manifest when the
// compat file is active and the manifest's bytes are unchanged since then.
func (c *Compat) StaticPodUID(manifestPath string, data []byte) (string, bool) {
	st := c.current()
	if st == nil || st.file == nil {
		return "", false
	}
	// The recorded paths are absolute; --pod-manifest-path may be relative.
	abs, err := filepath.Abs(manifestPath)
	if err != nil {
		return "", false
	}
	sp, ok := st.pods[abs]
	if !ok {
		return "", false
	}
	if ManifestSHA256(data) != sp.SHA256 {
		c.logOnce("manifest "+manifestPath+" "+sp.SHA256, "kubelet-compat: %s changed since it was recorded: its recorded UID is not used", manifestPath)
		return "", false
	}
	return sp.UID, true
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
			c.logOnce("stat "+err.Error(), "kubelet-compat: cannot stat the compat file, will retry: %v", err)
			return old, true
		}
		if old != nil && old.file != nil {
			c.logf2("kubelet-compat: %s is gone; containers restart on hash changes as upstream does", c.path)
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
		c.logOnce("read "+err.Error(), "kubelet-compat: cannot read the compat file, will retry: %v", err)
		return old, true
	}
	st = &fileState{present: true}
	if fi != nil {
		st.stamp = changeStamp(fi)
	}
	if err != nil {
		c.logOnce("read "+err.Error(), "kubelet-compat: ignoring compat file: %v", err)
		return st, false
	}
	prev, _ := ParseVersion(f.PreviousVersion) // validated by ReadFile
	if c.own.LessThan(prev) {
		c.logOnce("version "+f.PreviousVersion, "kubelet-compat: ignoring %s: previous version %s is newer than this kubelet %s", c.path, prev, c.own)
		return st, false
	}
	st.file, st.prev = f, prev
	st.containers = make(map[string]Version, len(f.Containers))
	for _, ct := range f.Containers {
		st.containers[ct.ID], _ = ParseVersion(ct.HashVersion) // validated by ReadFile
	}
	st.pods = make(map[string]StaticPod, len(f.StaticPods))
	for _, sp := range f.StaticPods {
		st.pods[sp.ManifestPath] = sp
	}
	state := "active: previous kubelet"
	if !prev.LessThan(c.own) {
		// record ran again before the swap: what it lists from earlier
		// upgrades stays protected.
		state = "recorded for this kubelet's own version (the swap has not happened yet): kubelet"
	}
	c.logOnce(fmt.Sprintf("active %s %v", prev, st.stamp), "kubelet-compat: %s is %s %s recorded at %s, %d containers, %d static pods", c.path, state, prev, f.RecordedAt.Format(time.RFC3339), len(f.Containers), len(f.StaticPods))
	return st, false
}

// logOnce logs a message the first time its key is seen.
func (c *Compat) logOnce(key, format string, args ...interface{}) {
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
	c.logf2(format, args...)
}

func (c *Compat) logf2(format string, args ...interface{}) {
	if c.logf != nil {
		c.logf(format, args...)
	}
}
