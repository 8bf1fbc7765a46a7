// Package kubelet runs one kubelet binary of the e2e (standalone with
// static pods, or against an API server) and reads its log for the pods it
// has synced; pkg/controlplane asks a binary its flags and minor with it.
package kubelet

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/proc"
)

// Config is one kubelet run.
type Config struct {
	Binary          string
	Version         string // for logs and reports
	RootDir         string
	ManifestDir     string
	NodeName        string
	RuntimeEndpoint string
	PauseImage      string
	LogFile         string
	// Kubeconfig switches to API mode.
	Kubeconfig string
	// SyncFrequency is --sync-frequency.
	SyncFrequency time.Duration
	// Minor is the kubelet's minor version: flags differ by era.
	Minor int
	// Recorder records the process in the run's journal (may be nil).
	Recorder proc.Recorder
	// ExtraArgs are appended to the flags (e.g. --max-pods).
	ExtraArgs []string
	// Help is what the binary's --help lists (AskHelp): settings whose
	// flag it no longer lists go to a KubeletConfiguration file. Nil:
	// every flag is passed (1.18 .. 1.21 as measured before).
	Help *Help
	// ConfigFile is where that file goes (default: <RootDir>/kubelet-config.json).
	ConfigFile string
	// FeatureGates are set as --feature-gates, or the configuration's
	// featureGates when --help does not list the flag (none when empty).
	FeatureGates map[string]bool
}

// Args are the kubelet's flags (Plan().Args): per era, see era.go.
func (c Config) Args() []string { return c.Plan().Args }

// Kubelet is a running kubelet.
type Kubelet struct {
	Config
	*proc.Process
	logOffset int64
}

// Start starts the kubelet. Its log is appended to LogFile; SyncedPods
// only reads what this run wrote.
func Start(c Config) (*Kubelet, error) {
	for _, d := range []string{c.RootDir, c.ManifestDir, filepath.Dir(c.LogFile)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	var offset int64
	if fi, err := os.Stat(c.LogFile); err == nil {
		offset = fi.Size()
	}
	plan := c.Plan()
	if err := c.writeConfig(plan); err != nil {
		return nil, err
	}
	p, err := proc.Start(c.Recorder, "kubelet "+c.Version, c.Binary, plan.Args, nil, c.LogFile)
	if err != nil {
		return nil, err
	}
	return &Kubelet{Config: c, Process: p, logOffset: offset}, nil
}

// Alive fails when the kubelet has exited.
func (k *Kubelet) Alive() error {
	if ended, err := k.Exited(); ended {
		return fmt.Errorf("kubelet %s (pid %d) exited: %v; see %s", k.Version, k.PID, err, k.LogFile)
	}
	return nil
}

// Stop stops the kubelet (SIGTERM, SIGKILL after 15s).
func (k *Kubelet) Stop(ctx context.Context) error { return k.Process.Stop(ctx, 15*time.Second) }

// SyncedPods returns the pods (by manifest name prefix matching, see
// Synced) that this run has computed actions for.
func (k *Kubelet) SyncedPods(names []PodRef) (map[PodRef]bool, error) {
	return k.SyncedPodsSince(k.logOffset, names)
}

// LogSize is where this kubelet's log ends now: SyncedPodsSince's offset
// for what it logs from now on (a runtime swap under it).
func (k *Kubelet) LogSize() (int64, error) {
	st, err := os.Stat(k.LogFile)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// SyncedPodsSince is SyncedPods of the lines logged after offset.
func (k *Kubelet) SyncedPodsSince(offset int64, names []PodRef) (map[PodRef]bool, error) {
	f, err := os.Open(k.LogFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, err
	}
	return Synced(f, names)
}

// KeptMessage starts the patched kubelet's log line for a container it
// keeps (all patched minors, logged once per container at V(2)).
const KeptMessage = "Keeping container"

// CountLines counts the lines of this run's log containing substr.
func (k *Kubelet) CountLines(substr string) (int, error) {
	lines, err := k.Lines(substr)
	return len(lines), err
}

// Lines are the lines of this kubelet's log that contain substr.
func (k *Kubelet) Lines(substr string) ([]string, error) {
	return LinesSince(k.LogFile, k.logOffset, substr)
}

// LinesSince are the lines of the log at path after offset that contain
// substr (a kubelet's or containerd's log, read from where a run began).
func LinesSince(path string, offset int64, substr string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, err
	}
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), substr) {
			out = append(out, sc.Text())
		}
	}
	return out, sc.Err()
}

// PodRef names a pod as the runtime does.
type PodRef struct{ Namespace, Name string }

func (p PodRef) String() string { return p.Namespace + "/" + p.Name }

// ParsePodRef reads namespace/name.
func ParsePodRef(s string) PodRef {
	ns, name, _ := strings.Cut(s, "/")
	return PodRef{ns, name}
}

// Synced scans a kubelet log for the computePodActions line of each pod:
//
//	1.18-1.20: computePodActions got {...} for pod "name_namespace(uid)"
//	1.21+:     "computePodActions got for pod" podActions={...} pod="namespace/name"
func Synced(r io.Reader, pods []PodRef) (map[PodRef]bool, error) {
	byOld := map[string]PodRef{}
	byNew := map[string]PodRef{}
	for _, p := range pods {
		byOld[`"`+p.Name+"_"+p.Namespace+"("] = p
		byNew[`pod="`+p.Namespace+"/"+p.Name+`"`] = p
	}
	out := map[PodRef]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "computePodActions got") {
			continue
		}
		if i := strings.LastIndex(line, ` for pod "`); i >= 0 {
			rest := line[i+len(` for pod `):]
			if j := strings.Index(rest, "("); j >= 0 {
				if p, ok := byOld[rest[:j+1]]; ok {
					out[p] = true
				}
			}
			continue
		}
		if i := strings.LastIndex(line, `pod="`); i >= 0 {
			rest := line[i:]
			if j := strings.Index(rest[len(`pod="`):], `"`); j >= 0 {
				if p, ok := byNew[rest[:len(`pod="`)+j+1]]; ok {
					out[p] = true
				}
			}
		}
	}
	return out, sc.Err()
}

// Minor returns the minor of a version such as 1.21.14.
func Minor(version string) int {
	parts := strings.Split(strings.TrimPrefix(version, "v"), ".")
	if len(parts) < 2 {
		return 0
	}
	m, _ := strconv.Atoi(parts[1])
	return m
}
