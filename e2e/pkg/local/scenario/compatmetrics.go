package scenario

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
)

// kubeletMetricsURL is the kubelet's own server as the e2e starts it
// (pkg/kubelet: 127.0.0.1, the default port, anonymous reads allowed).
const kubeletMetricsURL = "https://127.0.0.1:10250/metrics"

// compatMetricsCheck reads the kubelet's /metrics and holds its
// kubelet_compat_* series against its sync record (compatMetricsVerdict).
func (s *Scenario) compatMetricsCheck(ctx context.Context, step, variant string, k recordedKubelet) report.Check {
	c := report.Check{Name: fmt.Sprintf("%s %s: the kubelet's kubelet_compat_* metrics say what its sync record says", step, variant)}
	var rec *kubeletcompat.SyncRecord
	if k.Patched {
		var err error
		if rec, err = kubeletcompat.ReadSyncRecord(filepath.Join(s.kubeletDir(), kubeletcompat.RecordFileName), os.Getuid()); err != nil {
			c.Detail = fmt.Sprintf("reading the record: %v", err)
			return c
		}
	} else {
		c.Name = fmt.Sprintf("%s %s: the unpatched kubelet serves no kubelet_compat_* metric", step, variant)
	}
	text, err := kubeletMetrics(ctx)
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	v := compatMetricsVerdict(rec, parseCompatMetrics(text))
	v.Name = c.Name
	return v
}

// kubeletMetrics reads the kubelet's /metrics. The server's certificate
// is the kubelet's self-signed one, made by the kubelet this run started
// on this host's loopback: nothing to verify it against.
func kubeletMetrics(ctx context.Context) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, kubeletMetricsURL, nil)
	if err != nil {
		return "", err
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("reading the kubelet's metrics: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("reading the kubelet's metrics: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("the kubelet's metrics: %s", resp.Status)
	}
	return string(body), nil
}

// compatMetrics are the kubelet_compat_* samples, by series (the name and
// its labels as the kubelet prints them).
type compatMetrics map[string]float64

// parseCompatMetrics reads the kubelet_compat_* samples of a Prometheus
// text exposition.
func parseCompatMetrics(text string) compatMetrics {
	m := compatMetrics{}
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "kubelet_compat_") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			m[line[:i]] = v
		}
	}
	return m
}

// sum is the sum of the samples of metric name, every label.
func (m compatMetrics) sum(name string) float64 {
	total := 0.0
	for series, v := range m {
		if series == name || strings.HasPrefix(series, name+"{") {
			total += v
		}
	}
	return total
}

// compatMetricsVerdict: the patched kubelet's counters equal its record
// (containers kept; kills for a changed definition; pods admitted despite
// a rejection) and its file-state gauge is 1 for the record's state
// alone; the unpatched kubelet (rec nil) serves none of them.
func compatMetricsVerdict(rec *kubeletcompat.SyncRecord, m compatMetrics) report.Check {
	var series []string
	for s := range m {
		series = append(series, s)
	}
	sort.Strings(series)
	if rec == nil {
		c := report.Check{Passed: len(m) == 0, Detail: "no kubelet_compat_* metric"}
		if len(m) > 0 {
			c.Detail = "the unpatched kubelet serves " + strings.Join(series, ", ")
		}
		return c
	}
	kept, restarted, admitted := 0, 0, 0
	for _, p := range rec.Pods {
		if p.AdmittedDespite != "" {
			admitted++
		}
		for _, cr := range p.Containers {
			if cr.Kept != nil {
				kept++
			}
			for _, k := range cr.Kills {
				if strings.Contains(k.Reason, "definition changed") {
					restarted++
				}
			}
		}
	}
	var problems []string
	for _, want := range []struct {
		name   string
		record int
	}{
		{"kubelet_compat_containers_kept_total", kept},
		{"kubelet_compat_containers_restarted_total", restarted},
		{"kubelet_compat_pods_admitted_total", admitted},
	} {
		if got := m.sum(want.name); got != float64(want.record) {
			problems = append(problems, fmt.Sprintf("%s is %g, the record says %d", want.name, got, want.record))
		}
	}
	var states []string
	for _, s := range series {
		if strings.HasPrefix(s, "kubelet_compat_file_state{") && m[s] == 1 {
			states = append(states, s)
		}
	}
	wantState := fmt.Sprintf("kubelet_compat_file_state{state=%q}", rec.CompatFile)
	if len(states) != 1 || states[0] != wantState {
		problems = append(problems, fmt.Sprintf("the file-state gauge is 1 for %v, the record says %q", states, rec.CompatFile))
	}
	c := report.Check{Passed: len(problems) == 0,
		Detail: fmt.Sprintf("kept %g (record %d), restarted for a change %g (record %d), admitted despite a rejection %g (record %d), file state %v",
			m.sum("kubelet_compat_containers_kept_total"), kept, m.sum("kubelet_compat_containers_restarted_total"), restarted,
			m.sum("kubelet_compat_pods_admitted_total"), admitted, states)}
	if len(problems) > 0 {
		c.Detail += "; " + strings.Join(problems, "; ")
	}
	return c
}
