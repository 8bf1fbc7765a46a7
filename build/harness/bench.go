package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
)

// SyncLoopBenchmark is the series' benchmark of the sync loop (hook
// 5-record-pod-syncs, in pkg/kubelet/kuberuntime): SyncPod of a running
// pod that needs nothing, kubeletcompat off and on (its record written).
const (
	SyncLoopBenchmark = "BenchmarkSyncPodCompat"
	syncLoopPackage   = "./pkg/kubelet/kuberuntime/"
)

// SyncLoopCost is what kubeletcompat adds to one sync of a pod, measured
// in one run: the medians of the off and on runs, and the median of the
// ratios of each run's on to its off (adjacent in time, so that the load
// of a noisy machine falls on both alike).
type SyncLoopCost struct {
	Off, On             time.Duration
	OffAllocs, OnAllocs int
	Ratio               float64
	Runs                int
}

func (c SyncLoopCost) String() string {
	return fmt.Sprintf("SyncPod of an unchanged pod: kubeletcompat on/off %.3f (%+.1f%%), median of %d runs side by side; off %s, on %s; %d and %d allocs",
		c.Ratio, (c.Ratio-1)*100, c.Runs, c.Off, c.On, c.OffAllocs, c.OnAllocs)
}

// Bench builds the package's test binary once with the row's Go and runs
// the sync loop's benchmark count times, each run off then on.
func (t *Tree) Bench(ctx context.Context, count int) (SyncLoopCost, error) {
	t.h.logf(t.Row, "benchmarking the sync loop (%s, %d runs) with go%s...", SyncLoopBenchmark, count, t.Row.Go)
	bin := filepath.Join(t.logDir, "kuberuntime.test")
	defer os.Remove(bin)
	if err := t.run(ctx, "bench-build", t.goBin(), "test", "-c", "-o", bin, syncLoopPackage); err != nil {
		return SyncLoopCost{}, err
	}
	logPath := filepath.Join(t.logDir, "bench.log")
	log, err := os.Create(logPath)
	if err != nil {
		return SyncLoopCost{}, err
	}
	defer log.Close()
	// The package's tests read their testdata from the package's directory.
	for i := 0; i < count; i++ {
		cmd := &exec.Cmd{Name: bin, Args: []string{"-test.run", "^$", "-test.bench", "^" + SyncLoopBenchmark + "$", "-test.benchmem"},
			Dir: filepath.Join(t.Dir, syncLoopPackage), Log: log}
		if err := cmd.Run(ctx); err != nil {
			return SyncLoopCost{}, fmt.Errorf("[%s] %s failed: see %s", t.Row.Kubernetes, SyncLoopBenchmark, logPath)
		}
	}
	out, err := os.ReadFile(logPath)
	if err != nil {
		return SyncLoopCost{}, err
	}
	return parseSyncLoopBench(string(out))
}

var (
	benchName    = regexp.MustCompile(SyncLoopBenchmark + `/compat=(true|false)`)
	benchFigures = regexp.MustCompile(`(?:^|\s)(\d+)\s+([0-9.]+) ns/op(?:\s+\d+ B/op\s+(\d+) allocs/op)?`)
)

// parseSyncLoopBench reads go test -bench's output: the medians of the
// off and on runs. go test prints a run's name, then whatever the code
// under test logs (the kubelet's klog lines), then its figures.
func parseSyncLoopBench(out string) (SyncLoopCost, error) {
	ns := map[string][]float64{}
	allocs := map[string]int{}
	var ratios []float64
	run := ""
	for _, line := range strings.Split(out, "\n") {
		if m := benchName.FindStringSubmatch(line); m != nil {
			run = m[1]
			line = line[strings.Index(line, m[0])+len(m[0]):]
		}
		m := benchFigures.FindStringSubmatch(line)
		if m == nil || run == "" {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return SyncLoopCost{}, err
		}
		ns[run] = append(ns[run], v)
		if m[3] != "" {
			allocs[run], _ = strconv.Atoi(m[3])
		}
		if off := ns["false"]; run == "true" && len(off) == len(ns["true"]) {
			ratios = append(ratios, v/off[len(off)-1])
		}
		run = ""
	}
	if len(ns["false"]) == 0 || len(ns["false"]) != len(ns["true"]) || len(ratios) != len(ns["true"]) {
		return SyncLoopCost{}, fmt.Errorf("%s: %d runs off and %d on in the output, not each off then on", SyncLoopBenchmark, len(ns["false"]), len(ns["true"]))
	}
	return SyncLoopCost{Off: time.Duration(median(ns["false"])), On: time.Duration(median(ns["true"])),
		OffAllocs: allocs["false"], OnAllocs: allocs["true"], Ratio: median(ratios), Runs: len(ratios)}, nil
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
