package plan

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/runtimecompat"
)

// KindRuntime is the runtime a kind node is born on: Debian's containerd
// 1.6.20 of the node image's base (package nodeimage), which serves every
// kubelet 1.18 .. 1.37.
var KindRuntime = Runtime{Name: "containerd", Version: "1.6.20"}

// RuntimeMove moves every node's container runtime in place while the
// cluster runs kubelet At: after the kubelet step to At, before the next
// one (a road, ParseRoad).
type RuntimeMove struct {
	At   string
	Step RuntimeStep
}

// String is "containerd@1.6.20 -> containerd@1.7.35 under kubelet 1.31.14".
func (m RuntimeMove) String() string { return m.Step.String() + " under kubelet " + m.At }

// ParseRoad reads a road: the kubelet versions and the runtimes a cluster
// goes through, in the order it reaches them, e.g.
// 1.30.14,1.31.14,containerd@1.7.35,1.32.13,containerd@2.4.2,1.33.13: born
// at 1.30.14 on start, the kubelet steps of the chain, and each runtime
// moved in place under the kubelet before it. Every kubelet must be served
// by the runtime it runs on, and every runtime by the kubelets it runs
// (pkg/runtimecompat, as preflight judges a node), and a runtime only goes
// up.
func ParseRoad(list string, start Runtime) ([]Step, []RuntimeMove, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil, errors.New("the road is empty (want kubelet versions and runtimes in order, e.g. 1.30.14,1.31.14,containerd@1.7.35,1.32.13)")
	}
	var kubelets []string
	var moves []RuntimeMove
	cur := start
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if !strings.Contains(item, "@") {
			if err := serves(cur, item); err != nil {
				return nil, nil, err
			}
			kubelets = append(kubelets, item)
			continue
		}
		rt, err := ParseRuntime(item)
		if err != nil {
			return nil, nil, err
		}
		if len(kubelets) == 0 {
			return nil, nil, fmt.Errorf("road %q: it starts with a kubelet version (the cluster is born on %s)", list, start)
		}
		st := RuntimeStep{From: cur, To: rt}
		if !cur.release().Less(rt.release()) {
			return nil, nil, fmt.Errorf("road: runtime move %s does not go up: only upgrades of the runtime are run", st)
		}
		at := kubelets[len(kubelets)-1]
		if err := serves(rt, at); err != nil {
			return nil, nil, err
		}
		moves = append(moves, RuntimeMove{At: at, Step: st})
		cur = rt
	}
	if len(kubelets) < 2 {
		return nil, nil, fmt.Errorf("road %q: at least two kubelet versions (a kubelet step)", list)
	}
	steps, err := ParseSteps(strings.Join(kubelets, ","), "")
	if err != nil {
		return nil, nil, err
	}
	return steps, moves, nil
}

// serves refuses a kubelet version rt does not serve.
func serves(rt Runtime, kubelet string) error {
	k, ok := kubernetes(kubelet)
	if !ok {
		return fmt.Errorf("road: kubelet %q: versions must be 1.<minor>.<patch>", kubelet)
	}
	line, ok := runtimecompat.LineOf(rt.Name, rt.Version)
	if !ok {
		return fmt.Errorf("road: runtime %s is not in pkg/runtimecompat's matrix", rt)
	}
	if ok, why := line.Serves(k.Minor); !ok {
		return fmt.Errorf("road: %s under kubelet %s: %s", rt, kubelet, why)
	}
	return nil
}

// ErrRoadKindOnly is why the local provider refuses a road.
var ErrRoadKindOnly = errors.New("-road runs on the kind provider only (-provider kind): the local provider swaps the runtime with -runtime-steps")

// RoadRuns are a road's clusters: with controls, one control cluster over
// the whole road (the kubelets as released from its first step on), then
// the patched chain; each moves the runtime where the road does.
func RoadRuns(steps []Step, controls, skipPatched bool) []Run {
	var out []Run
	if controls {
		out = append(out, Run{Steps: steps})
	}
	if !skipPatched {
		out = append(out, Run{Steps: steps, Patched: true})
	}
	return out
}

// CheckRoadControls refuses, with controls, a runtime move before the
// road's first kubelet step: the control cluster is born on the node
// image's patched kubelet, so that move would be no control's.
func CheckRoadControls(p Plan) error {
	if p.Controls && len(p.RuntimeMoves) > 0 && len(p.Steps) > 0 && p.RuntimeMoves[0].At == p.Steps[0].From {
		return fmt.Errorf("road: %s comes before the first kubelet step, where the control cluster still runs the node image's patched kubelet: move it after %s (or -controls=false)", p.RuntimeMoves[0], p.Steps[0])
	}
	return nil
}
