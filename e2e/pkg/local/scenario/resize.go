package scenario

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/corpus"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/ctxtime"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/pkg/kubelet"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A resize accepted by the new API server before the new kubelet runs
// (-resize-pending, API mode, a step to 1.33 or later): the control plane
// is upgraded first, as upstream's upgrade order has it, and from 1.33
// kube-apiserver accepts in-place resizes (pods/resize) by default, but
// only for a pod whose running containers' statuses carry resources (its
// kubelet has InPlacePodVerticalScaling: 1.27 .. 1.32 only with the gate;
// isPodResizeRequestSupported, "Pod running on node without support for
// resize"). The resize is made while the old kubelet runs
// (ResizeWhileOldKubelet: a kubelet with the gate actuates it itself) or
// between the two kubelets (ResizeBetweenKubelets: no kubelet runs, so
// the new one must actuate it). The patched 1.33 .. 1.36 take what the
// runtime reports, or leave a NotRequired resource unrecorded so that it
// is compared with zero and updated (kubeletcompat.
// LegacyActuatedResources); recording the allocation as actuated would
// hide the resize (the container keeps its old limit while the API shows
// the new one).
const (
	ResizeWhileOldKubelet = "while-old-kubelet"
	ResizeBetweenKubelets = "between-kubelets"
)

// resizeStepMilli is how much each resize raises the resize pod's cpu
// limit (the corpus sets 100m; cpu's resizePolicy is NotRequired): a
// chain's later step resizes again (200m -> 300m), so that each step's
// resize is a real one.
const resizeStepMilli = 100

// pendingResize is the resize made before the new kubelet ran.
type pendingResize struct {
	pod, container, containerID string
	from, to, when              string
	// api is the kube-apiserver that took the resize (to, or from on a
	// rollback step).
	api string
	// fromMilli and toMilli are the cpu limit the API had and the one
	// the resize asks for.
	fromMilli, toMilli int64
	// refused is kube-apiserver's answer when it refused the resize.
	refused string
	// quotaBefore and quotaOld are the container's cpu quota (µs per
	// period) before the resize and right before the new kubelet starts
	// (while-old-kubelet: one sync period after the resize).
	quotaBefore, quotaOld cpuQuota
}

// whenText says when the resize was made, for logs and checks.
func (r *pendingResize) whenText() string {
	if r.when == ResizeBetweenKubelets {
		return "between kubelet " + r.from + " and " + r.to + " (no kubelet ran)"
	}
	return "while kubelet " + r.from + " ran"
}

// cpuQuota is a cgroup's cpu limit: quota µs per period µs (quota -1: none).
type cpuQuota struct {
	Quota, Period int64
	Path          string
}

func (q cpuQuota) milli() int64 {
	if q.Quota < 0 || q.Period <= 0 {
		return -1
	}
	return q.Quota * 1000 / q.Period
}

func (q cpuQuota) String() string {
	if q.Period == 0 {
		return "unknown"
	}
	if q.Quota < 0 {
		return "no limit"
	}
	return fmt.Sprintf("%dm (%d/%d µs)", q.milli(), q.Quota, q.Period)
}

// resizePod is the corpus's resize pod (API mode: the 10th pod).
func (s *Scenario) resizePod() (corpus.Pod, bool) {
	for _, p := range s.corpus.Pods {
		if p.Kind == corpus.KindResize {
			return p, true
		}
	}
	return corpus.Pod{}, false
}

// resizeBeforeNewKubelet raises the resize pod's cpu limit from 100m to
// 200m through the running kube-apiserver (pods/resize: st.To's, or
// st.From's on a rollback step) and reads the
// container's cgroup before and after (while-old-kubelet: one sync period
// after, with kubelet st.From still running). A refusal by the API server
// is a result (reported), not an error.
func (s *Scenario) resizeBeforeNewKubelet(ctx context.Context, st Step, before *snapshot.Snapshot, when string) (*pendingResize, error) {
	// The API server is the step's target, or the newer from on a
	// rollback step (beforeStop keeps it).
	api := s.cp.Version
	if kubelet.Minor(api) < 33 {
		return nil, fmt.Errorf("-resize-pending: kube-apiserver %s has no pods/resize (1.33+)", api)
	}
	p, ok := s.resizePod()
	if !ok {
		return nil, fmt.Errorf("-resize-pending: the corpus has no resize pod (API mode, 10 pods)")
	}
	c := p.Spec.Spec.Containers[0]
	r := &pendingResize{pod: p.Name, container: c.Name, from: st.From, to: st.To, when: when, api: api}
	if bc, ok := before.Running(p.RuntimeName)[c.Name]; ok {
		r.containerID = bc.ID
	}
	if r.containerID == "" {
		return nil, fmt.Errorf("-resize-pending: %s runs no container %s", p.RuntimeName, c.Name)
	}
	var err error
	if r.quotaBefore, err = containerCPUQuota(r.containerID); err != nil {
		return nil, err
	}
	cs, err := s.cp.Client()
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cur, err := cs.CoreV1().Pods(corpus.Namespace).Get(cctx, p.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("-resize-pending: reading %s: %w", p.Name, err)
	}
	r.fromMilli = cur.Spec.Containers[0].Resources.Limits.Cpu().MilliValue()
	r.toMilli = r.fromMilli + resizeStepMilli
	patch := fmt.Sprintf(`{"spec":{"containers":[{"name":%q,"resources":{"limits":{"cpu":"%dm"}}}]}}`, c.Name, r.toMilli)
	var got v1.Pod
	err = cs.CoreV1().RESTClient().Patch(types.StrategicMergePatchType).Namespace(corpus.Namespace).Resource("pods").Name(p.Name).
		SubResource("resize").Body([]byte(patch)).Do(cctx).Into(&got)
	if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
		r.refused = err.Error()
		s.logf("resize: kube-apiserver %s refused to resize %s %s: %v", api, p.Name, r.whenText(), err)
		return r, nil
	}
	if err != nil {
		return nil, fmt.Errorf("-resize-pending: resizing %s through kube-apiserver %s: %w", p.Name, api, err)
	}
	if l := got.Spec.Containers[0].Resources.Limits.Cpu().MilliValue(); l != r.toMilli {
		return nil, fmt.Errorf("-resize-pending: kube-apiserver %s stored cpu limit %dm, not %dm", api, l, r.toMilli)
	}
	s.logf("resize: %s's cpu limit %dm -> %dm accepted by kube-apiserver %s (pods/resize) %s; container %s at %s",
		p.Name, r.fromMilli, r.toMilli, api, r.whenText(), shortID(r.containerID), r.quotaBefore)
	if when == ResizeWhileOldKubelet {
		if err := ctxtime.Sleep(ctx, s.opts.SyncFrequency+2*time.Second); err != nil {
			return nil, err
		}
	}
	if r.quotaOld, err = containerCPUQuota(r.containerID); err != nil {
		return nil, err
	}
	s.logf("resize: before the new kubelet starts the container runs at %s", r.quotaOld)
	return r, nil
}

// check reads, after the swap and the settle wait, what the new kubelet
// made of the resize: patched, the same container (no restart) at the new
// limit, or the check fails; unpatched, reported as measured (what
// upstream does).
func (r *pendingResize) check(ctx context.Context, s *Scenario, variant string, after *snapshot.Snapshot) report.Check {
	c := report.Check{Name: fmt.Sprintf("resize %s: %s's cpu limit %dm -> %dm through kube-apiserver %s %s",
		variant, r.pod, r.fromMilli, r.toMilli, r.api, r.whenText())}
	if r.refused != "" {
		c.Passed = true
		c.Detail = "refused by kube-apiserver (nothing pending; the swap is the plain one): " + r.refused
		return c
	}
	now, ok := after.Running(corpus.Namespace + "/" + r.pod)[r.container]
	same := ok && now.ID == r.containerID
	var q cpuQuota
	var qerr error
	if ok {
		q, qerr = containerCPUQuota(now.ID)
	}
	actuated := qerr == nil && q.milli() == r.toMilli
	var api string
	if cs, err := s.cp.Client(); err == nil {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		pod, err := cs.CoreV1().Pods(corpus.Namespace).Get(cctx, r.pod, metav1.GetOptions{})
		cancel()
		if err == nil {
			api = apiResizeState(pod)
		} else {
			api = "API: " + err.Error()
		}
	}
	c.Detail = fmt.Sprintf("container cpu limit %s before the resize, %s when the new kubelet started; after the swap: ", r.quotaBefore, r.quotaOld)
	switch {
	case !ok:
		c.Detail += "no running container " + r.container
	case same:
		c.Detail += "same container " + shortID(now.ID) + " (not restarted)"
	default:
		c.Detail += fmt.Sprintf("container RESTARTED (%s -> %s, attempt %d)", shortID(r.containerID), shortID(now.ID), now.Attempt)
	}
	switch {
	case qerr != nil:
		c.Detail += "; cgroup: " + qerr.Error()
	case ok:
		c.Detail += fmt.Sprintf(", cgroup cpu limit %s (%s)", q, map[bool]string{true: "resize actuated", false: "resize NOT actuated"}[actuated])
	}
	if api != "" {
		c.Detail += "; " + api
	}
	if variant == report.Patched {
		c.Passed = same && actuated
	} else {
		c.Passed = true
		c.Detail = "reported (what upstream does): " + c.Detail
	}
	return c
}

// apiResizeState is what the API shows of the resize pod's resources: the
// spec's cpu limit, the status's (containerStatuses[].resources, 1.33+)
// and any resize condition.
func apiResizeState(pod *v1.Pod) string {
	out := fmt.Sprintf("API: spec cpu limit %s", pod.Spec.Containers[0].Resources.Limits.Cpu())
	for _, st := range pod.Status.ContainerStatuses {
		if st.Resources != nil {
			out += fmt.Sprintf(", status cpu limit %s", quantityOrNone(st.Resources.Limits[v1.ResourceCPU]))
		}

	}
	if pod.Status.Resize != "" {
		out += ", status.resize " + string(pod.Status.Resize)
	}
	for _, cond := range pod.Status.Conditions {
		if strings.HasPrefix(string(cond.Type), "PodResize") {
			out += fmt.Sprintf(", condition %s=%s (%s)", cond.Type, cond.Status, cond.Reason)
		}
	}
	return out
}

func quantityOrNone(q resource.Quantity) string {
	if q.IsZero() {
		return "none"
	}
	return q.String()
}

// cgroupCPURoots are where a container's cpu cgroup may be: the cpu
// controller of cgroup v1 (alone or with cpuacct), or the unified
// hierarchy; the kubelet (cgroupfs driver, cgroup root /) creates kubepods
// under each.
var cgroupCPURoots = []string{"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup"}

// containerCPUQuota reads a container's cpu limit from its cgroup: the
// directory named after the container ID under kubepods.
func containerCPUQuota(id string) (cpuQuota, error) {
	for _, root := range cgroupCPURoots {
		dir, err := findDir(filepath.Join(root, "kubepods"), id)
		if err != nil || dir == "" {
			continue
		}
		if q, err := readV1Quota(dir); err == nil {
			return q, nil
		}
		if q, err := readV2Max(dir); err == nil {
			return q, nil
		}
	}
	return cpuQuota{}, fmt.Errorf("no cpu cgroup of container %s under %s", shortID(id), strings.Join(cgroupCPURoots, ", "))
}

var errFound = errors.New("found")

// findDir returns the directory named name under root, or "".
func findDir(root, name string) (string, error) {
	var found string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && d.Name() == name {
			found = p
			return errFound
		}
		return nil
	})
	if err != nil && !errors.Is(err, errFound) {
		return "", err
	}
	return found, nil
}

func readInt(p string) (int64, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

func readV1Quota(dir string) (cpuQuota, error) {
	quota, err := readInt(filepath.Join(dir, "cpu.cfs_quota_us"))
	if err != nil {
		return cpuQuota{}, err
	}
	period, err := readInt(filepath.Join(dir, "cpu.cfs_period_us"))
	if err != nil {
		return cpuQuota{}, err
	}
	return cpuQuota{Quota: quota, Period: period, Path: dir}, nil
}

// readV2Max reads cpu.max ("max 100000" or "20000 100000").
func readV2Max(dir string) (cpuQuota, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cpu.max"))
	if err != nil {
		return cpuQuota{}, err
	}
	return parseCPUMax(string(b), dir)
}

func parseCPUMax(s, dir string) (cpuQuota, error) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return cpuQuota{}, fmt.Errorf("cpu.max %q", s)
	}
	period, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return cpuQuota{}, err
	}
	if f[0] == "max" {
		return cpuQuota{Quota: -1, Period: period, Path: dir}, nil
	}
	quota, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return cpuQuota{}, err
	}
	return cpuQuota{Quota: quota, Period: period, Path: dir}, nil
}
