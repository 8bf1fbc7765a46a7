package scenario

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/corpus"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/ctxtime"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/local"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/local/deviceplugin"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/node"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	"github.com/kubelet-compat/kubelet-compat/pkg/devicecheckpoint"
	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
	"github.com/kubelet-compat/kubelet-compat/pkg/kubelet"
	"github.com/kubelet-compat/kubelet-compat/pkg/proc"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The device-plugin case (mode devices, API mode): pods that use an
// extended resource of the e2e's device plugin (deviceplugin.Resource,
// served on the kubelet's device-plugins socket) run on kubelet vN and must
// survive every in-place step of the chain. A starting kubelet re-admits
// them: it restores the devices allocated to them from the device
// manager's checkpoint (written in the v1 format by 1.18 and 1.19, v2 from
// 1.20, which reads v1 since kubernetes#102882), counts them against an
// allocatable that its first status update may show as 0 until the plugin
// registers again, and must not allocate them again.

// V1CheckpointMessage is what kubelets 1.20.15 and 1.21.14 log when they
// restore a device checkpoint of the v1 format (kubernetes#102882).
const V1CheckpointMessage = "Read data from a V1 checkpoint"

const (
	// pluginDevices is what the plugin advertises; devicePods use all.
	pluginDevices = 2
	devicePods    = 2
)

// upstreamDeviceLosses is what the unpatched kubelet does to the device
// pods on a step (pod name -> rejection reason), as measured: on every
// step of the chain, with the plugin running and with it down across the
// swap, upstream keeps them (docs/results.md, "The device-plugin case").
// A loss measured later goes here and the control must show it.
func upstreamDeviceLosses(Step) map[string]string { return map[string]string{} }

// devicePodSpecs are the pods that request one device each (limits; the
// API server copies them to requests).
func (s *Scenario) devicePodSpecs() []corpus.Pod {
	o := corpus.Options{NodeName: s.opts.NodeName, API: true}
	var out []corpus.Pod
	for i := 0; i < devicePods; i++ {
		p := corpus.WebPod(fmt.Sprintf("devpod-%d", i), nil, o)
		c := &p.Spec.Spec.Containers[0]
		c.Resources.Limits[v1.ResourceName(deviceplugin.Resource)] = resource.MustParse("1")
		out = append(out, p)
	}
	return out
}

// devicesRuns runs the unpatched control of every step, each from its own
// baseline, then the patched chain on one set of containers.
func (s *Scenario) devicesRuns(ctx context.Context) error {
	if err := s.deviceDirFree(); err != nil {
		return err
	}
	if err := s.startDevicePlugin(ctx); err != nil {
		return err
	}
	var errs []error
	if s.opts.Controls {
		for _, st := range s.opts.Steps {
			if err := s.deviceBaseline(ctx, st.From); err != nil {
				return err
			}
			if err := s.deviceSwap(ctx, st, false); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if s.opts.SkipPatched {
		return errors.Join(errs...)
	}
	if err := s.deviceBaseline(ctx, s.opts.Steps[0].From); err != nil {
		return err
	}
	for _, st := range s.opts.Steps {
		if err := s.deviceSwap(ctx, st, true); err != nil {
			return errors.Join(append(errs, err)...)
		}
	}
	return errors.Join(errs...)
}

// deviceDirFree refuses a node where the device plugin directory is
// someone else's: a kubelet serving kubelet.sock, or a checkpoint or
// plugin socket that was there before the run (another kubelet's
// allocations, another e2e's plugin). The kubelets 1.18 to 1.21 share that
// directory whatever their --root-dir: one such run per machine.
func (s *Scenario) deviceDirFree() error {
	sock := filepath.Join(local.DevicePluginDir, "kubelet.sock")
	if c, err := net.DialTimeout("unix", sock, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("a kubelet serves %s: the device plugin directory is in use, not sharing it", sock)
	}
	if p := filepath.Join(local.DevicePluginDir, deviceplugin.Socket); s.node.ExistedBefore(p) {
		return fmt.Errorf("%s existed before this run: another e2e's device plugin, not touching it", p)
	}
	// A checkpoint without allocations or devices (an earlier kubelet's
	// leftover) holds no state: the run uses it and writes it back.
	if s.node.ExistedBefore(local.DeviceCheckpoint) {
		if cp, err := devicecheckpoint.Parse(readCheckpoint()); err != nil || len(cp.Data.PodDeviceEntries) > 0 || len(cp.Data.RegisteredDevices) > 0 {
			return fmt.Errorf("%s existed before this run and holds devices or allocations (%s): another kubelet's, not touching it", local.DeviceCheckpoint, checkpointSummary(readCheckpoint()))
		}
		s.logf("devices: %s existed before the run, empty: used, and written back at the end", local.DeviceCheckpoint)
	}
	return nil
}

// startDevicePlugin builds e2e/cmd/e2e-device-plugin into the root and
// starts it for the whole run (journaled: `make e2e-cleanup` ends it by
// its PID and removes its socket); it registers with every kubelet.
func (s *Scenario) startDevicePlugin(ctx context.Context) error {
	s.pluginBin = filepath.Join(s.opts.Root, "bin", "e2e-device-plugin")
	if err := os.MkdirAll(filepath.Dir(s.pluginBin), 0o755); err != nil {
		return err
	}
	build := exec.Command("go", "build", "-trimpath", "-o", s.pluginBin, "./e2e/cmd/e2e-device-plugin")
	build.Dir = s.opts.RepoRoot
	build.Env = []string{"CGO_ENABLED=0"}
	if err := build.Run(ctx); err != nil {
		return fmt.Errorf("building the device plugin: %w", err)
	}
	s.pluginLog = filepath.Join(s.logDir(), "device-plugin.log")
	return s.runPlugin()
}

// runPlugin starts the built plugin (again).
func (s *Scenario) runPlugin() error {
	p, err := proc.Start(s.node.Journal, "e2e-device-plugin", s.pluginBin, []string{"-dir", local.DevicePluginDir,
		"-socket", deviceplugin.Socket, "-resource", deviceplugin.Resource, "-devices", fmt.Sprint(pluginDevices)}, nil, s.pluginLog)
	if err != nil {
		return err
	}
	s.stack.Push("stop the device plugin", func(ctx context.Context) error { return p.Stop(ctx, 10*time.Second) })
	s.plugin = p
	s.logf("device plugin started, pid %d, %d devices of %s, log %s", p.PID, pluginDevices, deviceplugin.Resource, s.pluginLog)
	return nil
}

// deviceBaseline is the baseline on version, then the device pods once
// the node shows the plugin's devices.
func (s *Scenario) deviceBaseline(ctx context.Context, version string) error {
	if err := s.baseline(ctx, version); err != nil {
		return err
	}
	cs, err := s.cp.Client()
	if err != nil {
		return err
	}
	if err := s.pluginAlive(); err != nil {
		return err
	}
	if err := waitAllocatable(ctx, cs, s.opts.NodeName, deviceplugin.Resource, pluginDevices, 2*time.Minute); err != nil {
		return fmt.Errorf("baseline on %s: %w", version, err)
	}
	for _, p := range s.devicePodSpecs() {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := cs.CoreV1().Pods(corpus.Namespace).Create(cctx, p.Spec, metav1.CreateOptions{})
		cancel()
		if err != nil {
			return fmt.Errorf("creating pod %s: %w", p.Name, err)
		}
		s.extraPods = append(s.extraPods, p)
	}
	if _, err := s.waitReady(ctx, 2*time.Minute, false); err != nil {
		return fmt.Errorf("device pods on the baseline: %w", err)
	}
	if err := waitAPIReady(ctx, cs, len(s.pods()), 2*time.Minute); err != nil {
		return err
	}
	s.logf("devices: %d pods with one %s each run on %s; checkpoint %s", devicePods, deviceplugin.Resource, version, checkpointSummary(readCheckpoint()))
	return nil
}

// deviceSwap records, swaps the control plane and the kubelet for st.To
// and reports what became of every pod, the device pods first.
func (s *Scenario) deviceSwap(ctx context.Context, st Step, patched bool) error {
	cs, err := s.cp.Client()
	if err != nil {
		return err
	}
	variant := report.Unpatched
	if patched {
		variant = report.Patched
	}
	label := st.String() + " (devices)"
	if s.opts.DevicePluginGap > 0 {
		label = fmt.Sprintf("%s (devices, plugin down until %s after the kubelet started)", st, s.opts.DevicePluginGap)
	}
	run := &report.Run{Step: label, From: st.From, To: st.To, Variant: variant}
	var checkpointBefore string
	var regsBefore, allocsBefore int
	pluginBack := make(chan error, 1)
	obs, err := s.observedSwap(ctx, cs, st, run, afterSwap{
		what:      "devices",
		back:      "every pod back",
		errPrefix: "devices: ",
		prepare: func(ctx context.Context, _ *snapshot.Snapshot) error {
			checkpointBefore = checkpointSummary(readCheckpoint())
			var err error
			if regsBefore, allocsBefore, _, err = s.pluginCounts(); err != nil {
				return err
			}
			return s.beforeDeviceSwap(ctx, st, variant)
		},
		swap: s.swapKubeletTo(node.Kubelet{Version: st.To, Patched: patched}),
		started: func(ctx context.Context, started time.Time) error {
			if s.opts.DevicePluginGap == 0 {
				pluginBack <- nil
				return nil
			}
			go func() {
				if err := ctxtime.Sleep(ctx, time.Until(started.Add(s.opts.DevicePluginGap))); err != nil {
					pluginBack <- err
					return
				}
				pluginBack <- s.runPlugin()
			}()
			return nil
		},
		wait: func(ctx context.Context) (time.Time, error) {
			return s.waitReady(ctx, 3*time.Minute, true)
		},
		waited: func() error { return <-pluginBack },
		alive:  s.pluginAlive,
	})
	if err != nil {
		return err
	}
	if run.KeptLogLines, err = s.kubelet.CountLines(kubelet.KeptMessage); err != nil {
		return err
	}
	regsAfter, allocsAfter, lastReg, err := s.pluginCounts()
	if err != nil {
		return err
	}
	v1Read, err := s.kubelet.CountLines(V1CheckpointMessage)
	if err != nil {
		return err
	}
	allocatable, err := nodeAllocatable(ctx, cs, s.opts.NodeName, deviceplugin.Resource)
	if err != nil {
		return err
	}

	expect := upstreamDeviceLosses(st)
	first := len(s.Report.Checks)
	s.devicePodChecks(st, variant, expect, obs)
	s.check(report.Check{
		Name:   fmt.Sprintf("devices %s %s: the device plugin registered with the new kubelet", st, variant),
		Passed: regsAfter > regsBefore,
		Detail: fmt.Sprintf("%d registrations (the last %.1fs after the kubelet started), %d Allocate calls since the swap (0: no device allocated again); node allocatable %s = %s; checkpoint before %s, after %s; %q logged %d times",
			regsAfter-regsBefore, lastReg.Sub(obs.started).Seconds(), allocsAfter-allocsBefore, deviceplugin.Resource, allocatable, checkpointBefore, checkpointSummary(readCheckpoint()), V1CheckpointMessage, v1Read),
	})
	s.check(s.deviceReadyCheck(st, variant, expect, obs))
	failed := 0
	for _, c := range s.Report.Checks[first:] {
		if !c.Passed {
			failed++
		}
	}
	assertDevices(run, failed, len(obs.lines), expect)
	s.Report.Runs = append(s.Report.Runs, *run)
	s.logf("devices %s (%s): %s", st, variant, run.Verdict)
	if !run.Passed {
		return fmt.Errorf("devices %s %s: %s", st, variant, run.Verdict)
	}
	return nil
}

// beforeDeviceSwap upgrades kube-apiserver first and, with a plugin gap,
// stops the device plugin: it is down when the new kubelet re-admits the
// pods, as a plugin pod that restarts with the node's upgrade would be.
func (s *Scenario) beforeDeviceSwap(ctx context.Context, st Step, variant string) error {
	s.logf("devices %s (%s): upgrading kube-apiserver, then the kubelet", st, variant)
	if err := s.cp.UpgradeAPIServer(ctx, st.To); err != nil {
		return err
	}
	if s.opts.DevicePluginGap > 0 {
		if err := s.plugin.Stop(ctx, 10*time.Second); err != nil {
			return err
		}
		s.logf("devices: device plugin stopped before the swap; started again %s after the new kubelet", s.opts.DevicePluginGap)
	}
	return nil
}

// devicePodChecks are the per-pod checks of a device swap: the pods with
// a device, those without.
func (s *Scenario) devicePodChecks(st Step, variant string, expect map[string]string, obs *swapObservation) {
	for _, p := range s.extraPods {
		c := admissionCheck(variant, p.Name, expect[p.Name], obs.pods[p.Name], obs.before, obs.after, obs.windows[p.Name], obs.admitted[p.Name])
		c.Name = fmt.Sprintf("devices %s %s: %s (one %s)", st, variant, p.Name, deviceplugin.Resource)
		s.check(c)
	}
	for _, p := range s.corpus.Pods {
		c := admissionCheck(variant, p.Name, "", obs.pods[p.Name], obs.before, obs.after, obs.windows[p.Name], obs.admitted[p.Name])
		c.Name = fmt.Sprintf("devices %s %s: %s (no device)", st, variant, p.Name)
		s.check(c)
	}
}

// deviceReadyCheck is the Ready windows across a device swap.
func (s *Scenario) deviceReadyCheck(st Step, variant string, expect map[string]string, obs *swapObservation) report.Check {
	var order []string
	for _, p := range s.pods() {
		order = append(order, p.Name)
	}
	ready := readinessSummary(variant, order, expect, obs.windows)
	ready.Name = fmt.Sprintf("devices %s %s: Ready False across the swap (API polled every 250 ms)", st, variant)
	return ready
}

// assertDevices sets the run's verdict. Unpatched: every pod as upstream
// was measured to do (kept, or lost with the reason upstreamDeviceLosses
// names). Patched: no restart, nothing recreated, every pod kept, and one
// admission line per pod upstream rejects.
func assertDevices(run *report.Run, failedChecks, admitLines int, expect map[string]string) {
	if run.Variant == report.Unpatched {
		for name, reason := range expect {
			run.Expected = append(run.Expected, report.Expectation{Pod: corpus.Namespace + "/" + name, Reason: "rejected at re-admission: " + reason})
		}
		run.Passed = failedChecks == 0
		switch {
		case !run.Passed:
			run.Verdict = fmt.Sprintf("FAIL: %d checks not as upstream was measured", failedChecks)
		case len(expect) == 0:
			run.Verdict = fmt.Sprintf("pass: upstream also keeps the device pods (%d restarts): nothing here tells the patch from upstream", run.Restarts)
		default:
			run.Verdict = fmt.Sprintf("pass: %d device pods lost as upstream", len(expect))
		}
		return
	}
	report.AssertPatched(run)
	if failedChecks > 0 || admitLines < len(expect) {
		run.Passed = false
		run.Verdict = fmt.Sprintf("FAIL: %d checks failed, %d %q lines for %d rejections upstream; %s", failedChecks, admitLines, AdmitMessage, len(expect), run.Verdict)
		return
	}
	run.Verdict = fmt.Sprintf("%s; device pods kept, %d admitted despite a rejection", run.Verdict, admitLines)
}

func (s *Scenario) pluginAlive() error {
	if ended, err := s.plugin.Exited(); ended {
		return fmt.Errorf("the device plugin (pid %d) exited: %v; see %s", s.plugin.PID, err, s.pluginLog)
	}
	return nil
}

// pluginCounts counts the plugin's registrations and Allocate calls so
// far, and says when it last registered (its log stamps the time of day).
func (s *Scenario) pluginCounts() (registrations, allocations int, last time.Time, err error) {
	f, err := os.Open(s.pluginLog)
	if err != nil {
		return 0, 0, time.Time{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		stamp, msg, _ := strings.Cut(sc.Text(), " ")
		switch {
		case strings.HasPrefix(msg, deviceplugin.RegisteredMessage):
			registrations++
			if t, err := time.ParseInLocation("15:04:05.000", stamp, time.Local); err == nil {
				now := time.Now()
				last = time.Date(now.Year(), now.Month(), now.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.Local)
			}
		case strings.HasPrefix(msg, deviceplugin.AllocateMessage+":"):
			allocations++
		}
	}
	return registrations, allocations, last, sc.Err()
}

// waitAllocatable waits until the node's allocatable shows n of res.
func waitAllocatable(ctx context.Context, cs kubernetes.Interface, nodeName, res string, n int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		q, err := nodeAllocatable(ctx, cs, nodeName, res)
		if err == nil && q.Value() == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node allocatable %s is %s after %s, want %d (%v)", res, q.String(), timeout, n, err)
		}
		if err := ctxtime.Sleep(ctx, 500*time.Millisecond); err != nil {
			return err
		}
	}
}

func nodeAllocatable(ctx context.Context, cs kubernetes.Interface, nodeName, res string) (*resource.Quantity, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n, err := cs.CoreV1().Nodes().Get(cctx, nodeName, metav1.GetOptions{})
	if err != nil {
		return resource.NewQuantity(0, resource.DecimalSI), err
	}
	q := n.Status.Allocatable[v1.ResourceName(res)]
	return &q, nil
}

func readCheckpoint() []byte {
	b, _ := os.ReadFile(local.DeviceCheckpoint)
	return b
}

// checkpointSummary names the device checkpoint's format and what it
// holds: v1 (1.18, 1.19) lists a container's device IDs, v2 (1.20 and
// later) maps NUMA nodes to them.
func checkpointSummary(data []byte) string {
	if len(data) == 0 {
		return "none"
	}
	cp, err := devicecheckpoint.Parse(data)
	if err != nil {
		return "unreadable: " + err.Error()
	}
	format := "no allocation"
	var devs []string
	for _, e := range cp.Data.PodDeviceEntries {
		raw := strings.TrimSpace(string(e.DeviceIDs))
		if f := e.Format(); f != 0 {
			format = fmt.Sprintf("v%d", f)
		}
		uid := e.PodUID
		if len(uid) > 8 {
			uid = uid[:8]
		}
		devs = append(devs, uid+"/"+e.ContainerName+"="+strings.NewReplacer(`"`, "", " ", "").Replace(raw))
	}
	return fmt.Sprintf("%s, %d allocations (%s), %d registered devices", format, len(cp.Data.PodDeviceEntries), strings.Join(devs, " "), len(cp.Data.RegisteredDevices[deviceplugin.Resource]))
}
