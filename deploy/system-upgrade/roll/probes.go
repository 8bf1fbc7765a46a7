package roll

import (
	"regexp"
	"strconv"
	"strings"
)

// probeSeries is one readiness probe counter of the kubelet's prober,
// prober_probe_total{probe_type="Readiness"}: a line "POD-UID CONTAINER
// RESULT COUNT" of a sample (ProbesBaseFile).
type probeSeries struct {
	UID, Container, Result string
	Count                  float64
}

// probeSample is the kubelet's readiness probe counters at one look, in
// the order the kubelet served them.
type probeSample []probeSeries

var probeLabel = regexp.MustCompile(`[{,]([a-z_]+)="([^"]*)"`)

// parseProbeMetrics reads /metrics/probes.
func parseProbeMetrics(text string) probeSample {
	var s probeSample
	for _, line := range lines(text) {
		if !strings.HasPrefix(line, "prober_probe_total{") {
			continue
		}
		labels := map[string]string{}
		for _, m := range probeLabel.FindAllStringSubmatch(line, -1) {
			if _, ok := labels[m[1]]; !ok {
				labels[m[1]] = m[2]
			}
		}
		if labels["probe_type"] != "Readiness" {
			continue
		}
		f := strings.Fields(line)
		s = append(s, probeSeries{UID: labels["pod_uid"], Container: labels["container"], Result: labels["result"], Count: number(f[len(f)-1])})
	}
	return s
}

// parseProbeSample reads a sample's file.
func parseProbeSample(text string) probeSample {
	var s probeSample
	for _, line := range lines(text) {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		s = append(s, probeSeries{UID: f[0], Container: f[1], Result: f[2], Count: number(f[3])})
	}
	return s
}

func (s probeSample) String() string {
	var b strings.Builder
	for _, p := range s {
		b.WriteString(p.UID + " " + p.Container + " " + p.Result + " " + formatNumber(p.Count) + "\n")
	}
	return b.String()
}

// counts indexes the sample by "UID CONTAINER RESULT".
func (s probeSample) counts() map[string]float64 {
	m := map[string]float64{}
	for _, p := range s {
		m[p.UID+" "+p.Container+" "+p.Result] = p.Count
	}
	return m
}

// number reads a metric's value as awk's $NF + 0 does: 0 when it is none.
func number(s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0
	}
	return f
}

// formatNumber writes n as awk prints a number: an integer without a
// fraction, otherwise %.6g.
func formatNumber(n float64) string {
	if n == float64(int64(n)) {
		return strconv.FormatInt(int64(n), 10)
	}
	return strconv.FormatFloat(n, 'g', 6, 64)
}
