package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/internal/kubelet"
	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/gate"
	"github.com/kubelet-compat/kubelet-compat/pkg/regularfile"
)

// goneSettle is how long a gone-only verdict must hold before it is final:
// a pod the kubelet kills whole has no ready sandbox until it created the
// next, and its record says so a moment after the sync.
const goneSettle = 10 * time.Second

// firstLook bounds the first look at the node alone: it runs to its end
// even past --timeout (a slow runtime or a loaded node), so that the gate
// always ends on a verdict that says what it waits for, not on a request
// the timeout cut.
const firstLook = 30 * time.Second

// gateReport is what gate prints: the verdict and what it was judged on.
type gateReport struct {
	Picture        string       `json:"picture"`
	Node           string       `json:"node"`
	PictureTaken   time.Time    `json:"pictureTaken"`
	PictureKubelet gate.Kubelet `json:"pictureKubelet"`
	// Kubelet is the running kubelet, from /proc.
	Kubelet    gate.Kubelet `json:"kubelet"`
	RecordPath string       `json:"recordPath"`
	// RecordProblem says why a record that is there was not used.
	RecordProblem string       `json:"recordProblem,omitempty"`
	Verdict       gate.Verdict `json:"verdict"`
}

// pollVerdict judges the node every --poll until the verdict is final or
// --timeout passes; then the last verdict, or the last error when no
// verdict came. The poll and the timeout run on the real clock; the judged
// times (the runtime's view, the fixed wait) on env.Now.
func (o *gateOptions) pollVerdict(ctx context.Context, env Env, pic *gate.Picture, opts gate.Options) (*gateReport, error) {
	pollCtx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	var last *gateReport
	var lastErr error
	var gone string
	var goneSince time.Time
	warned := map[string]bool{}
	for looks := 0; ; looks++ {
		lookCtx, cancelLook := pollCtx, context.CancelFunc(func() {})
		if looks == 0 {
			lookCtx, cancelLook = context.WithTimeout(ctx, max(o.timeout, firstLook))
		}
		r, err := o.judgeOnce(lookCtx, env, pic, opts)
		cancelLook()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		switch {
		case err != nil && pollCtx.Err() != nil && last != nil:
			return last, nil // the timeout cut this poll short
		case err != nil:
			lastErr = err
		default:
			last, lastErr = r, nil
			if p := r.RecordProblem; p != "" && !warned[p] {
				warned[p] = true
				warnf(env, "%s", p)
			}
			if key := goneKey(r.Verdict); key != gone {
				gone, goneSince = key, time.Now()
			}
			if r.Verdict.Final() && (r.Verdict.Result != gate.GoneOnly || time.Since(goneSince) >= goneSettle) {
				return r, nil
			}
		}
		select {
		case <-pollCtx.Done():
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if lastErr != nil {
				return nil, fmt.Errorf("no verdict within %s: %w", o.timeout, lastErr)
			}
			return last, nil
		case <-time.After(o.poll):
		}
	}
}

// goneKey names the pods a gone-only verdict found gone ("" for any other
// verdict).
func goneKey(v gate.Verdict) string {
	if v.Result != gate.GoneOnly {
		return ""
	}
	var uids []string
	for _, p := range v.Pods {
		if p.Outcome == gate.Gone {
			uids = append(uids, p.UID)
		}
	}
	return strings.Join(uids, ",")
}

// judgeOnce reads the running kubelet from /proc, then the runtime, then
// the sync record (last: a kill the runtime already shows is recorded by
// then, at most a second after its sync), and judges.
func (o *gateOptions) judgeOnce(ctx context.Context, env Env, pic *gate.Picture, opts gate.Options) (*gateReport, error) {
	k, err := kubelet.Find(ctx, o.kubeletConfig(env))
	if err != nil {
		return nil, err
	}
	opts.Kubelet = gate.Kubelet{PID: k.PID, StartedAt: k.StartTime.UTC()}
	now, _, err := o.takeSnapshot(ctx, env)
	if err != nil {
		return nil, err
	}
	r := &gateReport{Picture: o.picture, Node: pic.Node, PictureTaken: pic.Runtime.Taken, PictureKubelet: pic.Kubelet,
		Kubelet: opts.Kubelet, RecordPath: o.recordPath()}
	rec, err := kubeletcompat.ReadSyncRecord(r.RecordPath, env.OwnerUID)
	switch {
	case err == nil:
	case errors.Is(err, os.ErrNotExist):
		rec = nil
	default:
		rec = nil
		r.RecordProblem = fmt.Sprintf("sync record refused, judged as without one: %v", err)
	}
	r.Verdict = gate.Judge(&pic.Runtime, now, rec, opts)
	return r, nil
}

// readPicture reads and checks the picture file.
func readPicture(path string) (*gate.Picture, error) {
	data, err := regularfile.Read(path, gate.MaxPictureSize, false)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("no picture %s: take one with kubelet-compat picture before the swap", path)
	case err != nil:
		return nil, fmt.Errorf("reading the picture: %w", err)
	case len(data) > gate.MaxPictureSize:
		return nil, fmt.Errorf("picture %s is larger than %d bytes", path, gate.MaxPictureSize)
	}
	p, err := gate.ParsePicture(data)
	if err != nil {
		return nil, fmt.Errorf("picture %s: %w", path, err)
	}
	return p, nil
}
