// Package etcdbridge takes a kubeadm control plane's etcd across 3.6 ->
// 3.7 the way etcd's upgrade guides say, before kubeadm moves it to 3.7:
// first to the bridge etcd (Version, a 3.6 of at least MinRelease, which
// 3.7 requires) run with --snapshot-count=1 until it has written a snapshot
// at or past every entry the old etcd had applied, so that 3.7 replays
// nothing of the 3.5 era from its WAL (etcd 3.7.0 panics "unmarshal should
// never fail" on a cluster born at 3.5); then to kubeadm's manifest with
// only the bridge's image.
//
// This package is the logic, pure: the rule that says when a bridge is
// needed, the manifest's rewrite, and the reading of etcd's flags, metrics,
// snapshot files and processes. The e2e (e2e/pkg/kind) and kubelet-compat
// etcd-bridge (cmd/kubelet-compat) run it, each on its own evidence.
package etcdbridge

import (
	"bytes"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Version is the bridge etcd. etcd 3.7 wants every member at 3.6.11 or
// later first (its upgrade guide), and it replays the WAL from the newest
// snapshot record, where it cannot parse entries written before 3.6.
// kubeadm 1.36 pins 3.6.8, so a cluster born at 3.5 reaches kubeadm 1.37's
// 3.7.0 with neither. The newest 3.6 the module proxy serves.
const Version = "3.6.16"

// Tag is the bridge's image tag, as kubeadm names its etcd images.
const Tag = Version + "-0"

// MinRelease is the oldest 3.6 that etcd 3.7 accepts as its predecessor.
var MinRelease = Release{3, 6, 11}

// FirstKubeadmMinor37 is the first Kubernetes minor whose kubeadm moves etcd
// to 3.7 (kubeadm 1.37: etcd 3.7.0).
const FirstKubeadmMinor37 = 37

// Release is an etcd release, 3.MINOR.PATCH.
type Release struct{ Major, Minor, Patch int }

func (r Release) String() string { return fmt.Sprintf("%d.%d.%d", r.Major, r.Minor, r.Patch) }

// Below says whether r is an older release than o.
func (r Release) Below(o Release) bool {
	for _, d := range [...]int{r.Major - o.Major, r.Minor - o.Minor, r.Patch - o.Patch} {
		if d != 0 {
			return d < 0
		}
	}
	return false
}

var releasePattern = regexp.MustCompile(`^v?(3)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)

// ParseTag reads the release of an etcd image tag: 3.6.8-0 is 3.6.8.
func ParseTag(tag string) (Release, error) {
	v, _, _ := strings.Cut(tag, "-")
	m := releasePattern.FindStringSubmatch(v)
	if m == nil {
		return Release{}, fmt.Errorf("etcd tag %q is not a 3.x release", tag)
	}
	var r Release
	for i, p := range []*int{&r.Major, &r.Minor, &r.Patch} {
		n, err := strconv.Atoi(m[i+1])
		if err != nil {
			return Release{}, fmt.Errorf("etcd tag %q is not a 3.x release", tag)
		}
		*p = n
	}
	return r, nil
}

// SplitRef splits repo:tag; a registry port (host:5000/x) is not a tag, and
// a reference by digest has none.
func SplitRef(ref string) (repo, tag string, ok bool) {
	i := strings.LastIndex(ref, ":")
	if i <= 0 || strings.Contains(ref[i+1:], "/") || strings.ContainsAny(ref, " \t@") || i == len(ref)-1 {
		return "", "", false
	}
	return ref[:i], ref[i+1:], true
}

// ImageRelease is the release of an etcd image reference.
func ImageRelease(ref string) (Release, error) {
	_, tag, _ := SplitRef(ref)
	return ParseTag(tag)
}

// Needed says whether kubeadm moving etcd from the running image to the
// one it wants crosses 3.6 -> 3.7, so that the bridge must run first. Any
// running 3.6 needs it, 3.6.11 or later included: its WAL may still hold
// entries of the 3.5 era.
func Needed(running, want string) (bool, error) {
	r, err := ImageRelease(running)
	if err != nil {
		return false, err
	}
	carries, err := Carries(want)
	if err != nil {
		return false, err
	}
	return r.Minor == 6 && carries, nil
}

// Bridge returns the bridge etcd's image next to kubeadm's when Needed.
func Bridge(running, want string) (bridge string, need bool, err error) {
	if need, err = Needed(running, want); err != nil || !need {
		return "", false, err
	}
	return Ref(want), true, nil
}

// Carries says whether a kubeadm that wants the etcd image want needs the
// bridge's image next to it: any running 3.6 may meet it.
func Carries(want string) (bool, error) {
	w, err := ImageRelease(want)
	return w.Minor >= 7, err
}

// Ref is the bridge etcd's reference next to kubeadm's etcd
// (registry.k8s.io/etcd:3.7.0-0 -> registry.k8s.io/etcd:3.6.16-0).
func Ref(kubeadmRef string) string {
	repo, _, ok := SplitRef(kubeadmRef)
	if !ok {
		repo = kubeadmRef
	}
	return repo + ":" + Tag
}

// DecodeManifest reads kubeadm's etcd manifest: a pod of one container.
func DecodeManifest(raw []byte) (*v1.Pod, error) {
	var pod v1.Pod
	if err := yaml.UnmarshalStrict(raw, &pod); err != nil {
		return nil, err
	}
	if len(pod.Spec.Containers) != 1 {
		return nil, fmt.Errorf("want one container, found %d", len(pod.Spec.Containers))
	}
	return &pod, nil
}

// CommandFlags are the --name=value arguments of a command.
func CommandFlags(command []string) map[string]string {
	flags := map[string]string{}
	for _, arg := range command {
		if a, ok := strings.CutPrefix(arg, "--"); ok {
			name, value, _ := strings.Cut(a, "=")
			flags[name] = value
		}
	}
	return flags
}

// Pod is kubeadm's etcd pod running image and, unless snapshotCount is
// empty, --snapshot-count=snapshotCount (replaced, or added).
func Pod(kubeadm *v1.Pod, image, snapshotCount string) *v1.Pod {
	pod := kubeadm.DeepCopy()
	c := &pod.Spec.Containers[0]
	c.Image = image
	if snapshotCount == "" {
		return pod
	}
	flag := "--snapshot-count=" + snapshotCount
	for i, arg := range c.Command {
		if strings.HasPrefix(arg, "--snapshot-count=") {
			c.Command[i] = flag
			return pod
		}
	}
	c.Command = append(c.Command, flag)
	return pod
}

var (
	imageLine         = regexp.MustCompile(`^(\s*image:\s*)(\S+)(\s*)$`)
	snapshotCountLine = regexp.MustCompile(`^(\s*-\s*--snapshot-count=)(\S*)(\s*)$`)
	dataDirLine       = regexp.MustCompile(`^(\s*-\s*)--data-dir=`)
)

// RewriteManifest edits kubeadm's etcd manifest as text, keeping its bytes
// but for the container's image line and, unless snapshotCount is empty,
// the --snapshot-count line (replaced, or added after --data-dir): what
// the kubelet reads is kubeadm's manifest with the bridge's changes and
// nothing else, and the way back to kubeadm's is the same edit of
// kubeadm's bytes. The result must decode to Pod of the original, else
// the edit is refused.
func RewriteManifest(raw []byte, image, snapshotCount string) ([]byte, error) {
	pod, err := DecodeManifest(raw)
	if err != nil {
		return nil, err
	}
	running := pod.Spec.Containers[0].Image
	lines := strings.SplitAfter(string(raw), "\n")
	var images, counts []int
	dataDir := -1
	for i, l := range lines {
		body := strings.TrimRight(l, "\r\n")
		if m := imageLine.FindStringSubmatch(body); m != nil && m[2] == running {
			images = append(images, i)
		}
		if snapshotCountLine.MatchString(body) {
			counts = append(counts, i)
		}
		if dataDirLine.MatchString(body) && dataDir < 0 {
			dataDir = i
		}
	}
	if len(images) != 1 {
		return nil, fmt.Errorf("want one line `image: %s`, found %d", running, len(images))
	}
	replace := func(i int, re *regexp.Regexp, value string) {
		l := lines[i]
		eol := l[len(strings.TrimRight(l, "\r\n")):]
		m := re.FindStringSubmatch(strings.TrimRight(l, "\r\n"))
		lines[i] = m[1] + value + m[3] + eol
	}
	replace(images[0], imageLine, image)
	if snapshotCount != "" {
		switch {
		case len(counts) == 1:
			replace(counts[0], snapshotCountLine, snapshotCount)
		case len(counts) > 1:
			return nil, fmt.Errorf("want at most one line `- --snapshot-count=`, found %d", len(counts))
		case dataDir < 0:
			return nil, fmt.Errorf("no line `- --data-dir=` to add --snapshot-count after")
		default:
			l := lines[dataDir]
			eol := l[len(strings.TrimRight(l, "\r\n")):]
			if eol == "" {
				eol = "\n"
				lines[dataDir] += eol
			}
			indent := dataDirLine.FindStringSubmatch(l)[1]
			added := indent + "--snapshot-count=" + snapshotCount + eol
			lines = append(lines[:dataDir+1], append([]string{added}, lines[dataDir+1:]...)...)
		}
	}
	out := []byte(strings.Join(lines, ""))
	got, err := DecodeManifest(out)
	if err != nil {
		return nil, fmt.Errorf("the rewritten manifest: %w", err)
	}
	if err := samePod(got, Pod(pod, image, snapshotCount)); err != nil {
		return nil, fmt.Errorf("the rewritten manifest is not the bridge's pod: %w", err)
	}
	return out, nil
}

// samePod compares two pods as the kubelet reads them, the order of the
// command's flags aside (an added --snapshot-count goes after --data-dir).
func samePod(a, b *v1.Pod) error {
	a, b = a.DeepCopy(), b.DeepCopy()
	ca, cb := a.Spec.Containers[0].Command, b.Spec.Containers[0].Command
	if len(ca) != len(cb) {
		return fmt.Errorf("%d arguments, want %d", len(ca), len(cb))
	}
	seen := map[string]int{}
	for _, arg := range ca {
		seen[arg]++
	}
	for _, arg := range cb {
		if seen[arg] == 0 {
			return fmt.Errorf("no argument %q", arg)
		}
		seen[arg]--
	}
	a.Spec.Containers[0].Command, b.Spec.Containers[0].Command = nil, nil
	ya, err := yaml.Marshal(a)
	if err != nil {
		return err
	}
	yb, err := yaml.Marshal(b)
	if err != nil {
		return err
	}
	if !bytes.Equal(ya, yb) {
		return fmt.Errorf("the pods differ beyond the command")
	}
	return nil
}

// MetricsPort is the port of kubeadm's plain-HTTP etcd metrics listener on
// the node's loopback (--listen-metrics-urls=http://127.0.0.1:2381).
func MetricsPort(urls string) (string, error) {
	for _, s := range strings.Split(urls, ",") {
		u, err := url.Parse(s)
		if err == nil && u.Scheme == "http" && u.Hostname() == "127.0.0.1" && u.Port() != "" {
			return u.Port(), nil
		}
	}
	return "", fmt.Errorf("no http://127.0.0.1:<port> in --listen-metrics-urls=%q", urls)
}

// ParseAppliedIndex reads etcd_server_proposals_applied_total (a gauge of
// the applied index) from etcd's metrics.
func ParseAppliedIndex(metrics []byte) (uint64, error) {
	const name = "etcd_server_proposals_applied_total "
	v, ok := metricLine(metrics, name)
	if !ok {
		return 0, fmt.Errorf("etcd's metrics have no %s", strings.TrimSpace(name))
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || f < 1 {
		return 0, fmt.Errorf("%s%q is not an index", name, v)
	}
	return uint64(f), nil
}

// metricLine is the rest of the first line of metrics that starts with
// prefix.
func metricLine(metrics []byte, prefix string) (string, bool) {
	for _, line := range strings.Split(string(metrics), "\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			return rest, true
		}
	}
	return "", false
}

// ServerVersion reads etcd_server_version{server_version="3.6.16"} 1.
func ServerVersion(metrics []byte) string {
	v, _ := metricLine(metrics, `etcd_server_version{server_version="`)
	v, _, _ = strings.Cut(v, `"`)
	return v
}

// Healthy says whether etcd's /health answer says healthy.
func Healthy(body []byte) bool {
	return bytes.Contains(body, []byte(`"health":"true"`))
}

var snapName = regexp.MustCompile(`^[0-9a-f]{16}-([0-9a-f]{16})\.snap$`)

// NewestSnapshotIndex is the highest raft index among etcd's snapshot
// files (<term>-<index>.snap in <data-dir>/member/snap, in hex), 0 with
// none.
func NewestSnapshotIndex(names []string) uint64 {
	var newest uint64
	for _, name := range names {
		m := snapName.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		if i, err := strconv.ParseUint(m[1], 16, 64); err == nil && i > newest {
			newest = i
		}
	}
	return newest
}

// OneProcessWithout checks that the command lines of the etcd processes
// are one, and that it does not have the argument arg.
func OneProcessWithout(cmdlines [][]string, arg string) error {
	if len(cmdlines) != 1 {
		return fmt.Errorf("want one etcd process, found %d", len(cmdlines))
	}
	for _, a := range cmdlines[0] {
		if a == arg {
			return fmt.Errorf("etcd still runs with %s", arg)
		}
	}
	return nil
}

// ParsePgrep reads `pgrep -a` output: a command line (split at blanks) per
// process, the PID dropped.
func ParsePgrep(out string) [][]string {
	var cmdlines [][]string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		cmdlines = append(cmdlines, f[1:])
	}
	return cmdlines
}
