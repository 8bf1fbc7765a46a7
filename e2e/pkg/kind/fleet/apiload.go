package fleet

// The API server's load across a roll, for the scale estimate (README):
// kube-apiserver's own counter apiserver_request_total, read from its
// /metrics every few seconds from the baseline on. kubeadm upgrade apply
// restarts the API server, which resets the counter: a sample lower than
// the one before starts again from zero, as Prometheus's increase() does
// (the requests between the last sample and the restart are lost, a few
// seconds' worth). The e2e's own watchers and polls count too: the rate
// before the roll is the background, reported apart.

import (
	"bufio"
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
)

// apiSampleEvery is how often the sampler reads /metrics.
const apiSampleEvery = 5 * time.Second

// apiSample is the API server's request counter at T.
type apiSample struct {
	T     time.Time
	Total float64
}

// requestTotal sums every series of apiserver_request_total in a /metrics
// text; ok is false when there is none.
func requestTotal(metrics []byte) (total float64, ok bool) {
	sc := bufio.NewScanner(bytes.NewReader(metrics))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") && !strings.HasPrefix(line, "apiserver_request_total ") {
			continue
		}
		f := strings.Fields(line[strings.LastIndexByte(line, '}')+1:])
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		total += v
		ok = true
	}
	return total, ok
}

// requestsIn is the counter's increase over the samples taken in [from,
// to], a sample lower than the one before counting from zero (a restart).
func requestsIn(samples []apiSample, from, to time.Time) float64 {
	var n float64
	var prev *apiSample
	for i := range samples {
		s := &samples[i]
		if !within(s.T, from, to) {
			continue
		}
		if prev != nil {
			if s.Total >= prev.Total {
				n += s.Total - prev.Total
			} else {
				n += s.Total
			}
		}
		prev = s
	}
	return n
}

// apiSampler reads the counter until stopped; a failed read (the API
// server restarting) is skipped.
type apiSampler struct {
	mu      sync.Mutex
	samples []apiSample
	stop    chan struct{}
	done    chan struct{}
}

func startAPISampler(ctx context.Context, cs kubernetes.Interface) *apiSampler {
	s := &apiSampler{stop: make(chan struct{}), done: make(chan struct{})}
	read := func() {
		raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			return
		}
		if total, ok := requestTotal(raw); ok {
			s.mu.Lock()
			s.samples = append(s.samples, apiSample{T: time.Now(), Total: total})
			s.mu.Unlock()
		}
	}
	go func() {
		defer close(s.done)
		t := time.NewTicker(apiSampleEvery)
		defer t.Stop()
		read()
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.stop:
				read()
				return
			case <-t.C:
				read()
			}
		}
	}()
	return s
}

// end stops the sampler (once) and returns its samples.
func (s *apiSampler) end() []apiSample {
	s.mu.Lock()
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	s.mu.Unlock()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]apiSample(nil), s.samples...)
}
