// Package upstream is what this project measured of upstream kubelets
// across an in-place upgrade, per minor: which minors derive another UID
// for a static pod without metadata.uid, and when a container's hash
// changes.
//
// A static pod without metadata.uid gets as UID a hash of its decoded,
// defaulted internal api.Pod printed by go-spew (md5, FNV-128a from 1.35;
// node name and file path hashed too from 1.21). go-spew prints a nil
// pointer as a typed nil and an empty slice or map without elements, so a
// type that changes between two minors changes the UID only of the pods
// that instantiate it (InstantiatedTypes), besides the minors that change
// the derivation itself (1.19, 1.21, 1.35). The changed types per minor
// are generated from upstream's trees (hack/gen-pod-types,
// zz_generated.podtypes.go); StaticPodUIDFor answers per pod. `kubelet-compat preflight` predicts from it and the e2e's
// unpatched controls are asserted against it, so a prediction and its proof
// cannot drift apart.
package upstream

import (
	"fmt"
	"strings"

	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	v1 "k8s.io/api/core/v1"
)

// First and Last bound the minors the e2e's unpatched controls measured.
const (
	First = 18
	Last  = 38
)

// NameImageHashMinor is the first minor hashing only a container's name
// and image (kubernetes/kubernetes#124220): every container a 1.30 or older
// kubelet created restarts under an unpatched 1.31 or newer.
const NameImageHashMinor = 31

// uidDerivationChanges are the minors whose kubelet derives the UID of a
// static pod without metadata.uid differently whatever the pod holds.
var uidDerivationChanges = map[int]string{
	19: "new UID derivation in 1.19",
	21: "UID includes node name and path in 1.21",
	35: "UID hash is FNV-128a from 1.35",
}

// staticPodUIDChanges are what the e2e's unpatched controls measured per
// minor 1.19 .. 1.38: true when the kubelet of that minor recreated every
// static pod without metadata.uid of the corpus (kinds web, hostnet,
// multi, init, hostpath), false when it kept them all. 1.38 (1.38.0-beta.0,
// 2026-12-07) recreated those five kinds, which all hold a resource
// quantity, and podseccomp (a seccompProfile), and kept plain. The prediction per
// pod comes from uidDerivationChanges and the types the pod instantiates
// (zz_generated.podtypes.go, hack/gen-pod-types); e2e/pkg/corpus's test
// holds it to these measurements.
var staticPodUIDChanges = map[int]bool{
	19: true, 20: false, 21: true, 22: false, 23: true, 24: true, 25: true,
	26: true, 27: true, 28: true, 29: false, 30: true, 31: true, 32: true,
	33: true, 34: true, 35: true, 36: true, 37: true, 38: true,
}

// MeasuredCorpusRecreated says what the unpatched control of minor m did
// to the corpus's static pods without metadata.uid: measured is false
// outside (First, Last].
func MeasuredCorpusRecreated(m int) (recreated, measured bool) {
	recreated, measured = staticPodUIDChanges[m]
	return recreated, measured
}

// UIDModel is what a static pod's UID change is predicted from: the
// newest measured minor and, per minor, the types that changed.
type UIDModel struct {
	// Last is the newest minor the e2e's unpatched controls measured;
	// the minors above it are Unmeasured.
	Last int
	// TypeChanges are podTypeChanges: per minor, the types reachable from
	// the internal api.Pod that changed.
	TypeChanges map[int][]string
}

// Model is the measured model (Last, the generated table), a copy that a
// test may extend with a minor not yet in the matrix.
func Model() UIDModel {
	m := UIDModel{Last: Last, TypeChanges: map[int][]string{}}
	for minor, types := range podTypeChanges {
		m.TypeChanges[minor] = append([]string(nil), types...)
	}
	return m
}

var measuredModel = UIDModel{Last: Last, TypeChanges: podTypeChanges}

// StaticPodUIDFor says which minors between kubelets 1.from and 1.to
// change the UID of p, a static pod without metadata.uid: those in
// (from, to] on an upgrade, in (to, from] on a rollback (to < from),
// where an unpatched 1.to derives the UID as 1.to always did.
func StaticPodUIDFor(p *v1.Pod, from, to int) UIDChange {
	return measuredModel.StaticPodUID(p, from, to)
}

// UIDChange is what a kubelet 1.to does to a static pod without
// metadata.uid that kubelet 1.from started.
type UIDChange struct {
	// Changed are the measured minors of the range that derive another
	// UID for the pod: a new UID derivation, or a type the pod
	// instantiates changed. For a rollback (to < from), the range is
	// (to, from]: the older kubelet lacks those minors' changes.
	Changed []int
	// Unmeasured are the minors of that range no control measured.
	Unmeasured []int
	// Predicted are the Unmeasured minors whose type table says the UID
	// changes; Unmeasured minors in neither list and without a table
	// entry are unknown (Prediction says which).
	Predicted []int
	// Rollback: to is older than from.
	Rollback bool
	// reasons per minor of Changed and Predicted; prediction, the text of
	// every Unmeasured minor.
	reasons    map[int]string
	prediction []string
}

// StaticPodUID is StaticPodUIDFor with the model's knowledge.
func (model UIDModel) StaticPodUID(p *v1.Pod, from, to int) UIDChange {
	c := UIDChange{reasons: map[int]string{}}
	lo, hi := from, to
	if to < from {
		lo, hi, c.Rollback = to, from, true
	}
	var instantiated map[string]bool
	if lo < hi {
		instantiated = InstantiatedTypes(p)
	}
	for m := lo + 1; m <= hi; m++ {
		reason, known := model.minorReason(m, instantiated)
		switch {
		case m <= First || m > model.Last:
			c.Unmeasured = append(c.Unmeasured, m)
			c.prediction = append(c.prediction, predictionText(m, reason, known))
			if reason != "" && m > First {
				c.Predicted = append(c.Predicted, m)
				c.reasons[m] = reason
			}
		case reason != "":
			c.Changed = append(c.Changed, m)
			c.reasons[m] = reason
		}
	}
	return c
}

// minorReason says why minor m derives another UID for a pod
// instantiating those types, "" when it does not; known is false when
// the type table has no entry for m.
func (model UIDModel) minorReason(m int, instantiated map[string]bool) (reason string, known bool) {
	types, known := changedTypesOf(model.TypeChanges, m, instantiated)
	changed := ""
	if len(types) > 0 {
		changed = fmt.Sprintf("internal Pod types changed in 1.%d: %s", m, strings.Join(types, ", "))
	}
	derivation, ok := uidDerivationChanges[m]
	switch {
	case ok && changed != "":
		return derivation + "; " + changed, true
	case ok:
		return derivation, true
	}
	return changed, known
}

func predictionText(m int, reason string, known bool) string {
	switch {
	case m <= First:
		return fmt.Sprintf("1.%d: may change (no prediction before the UID derivation of 1.19)", m)
	case !known:
		return fmt.Sprintf("1.%d: may change (no type table for it)", m)
	case reason != "":
		return fmt.Sprintf("1.%d: predicted another UID (%s)", m, reason)
	}
	return fmt.Sprintf("1.%d: predicted the same UID (no type the pod instantiates changed)", m)
}

// Reason is the first change's reason, "" when the UID stays; on a
// rollback, the first change above the older kubelet's minor.
func (c UIDChange) Reason() string {
	if len(c.Changed) == 0 {
		return ""
	}
	m := c.Changed[0]
	if c.Rollback {
		// The first change above the older kubelet's minor: it lacks
		// that one and every later one.
		return fmt.Sprintf("rollback below 1.%d, whose UID derivation the older kubelet lacks: %s", m, c.reasons[m])
	}
	return c.reasons[m]
}

// ControlReason is why an e2e control of the step expects the pod
// recreated, "" when it expects it kept: Reason, or for a step no control
// measured yet the first Predicted minor's reason, marked as such, so that
// the control's run measures the prediction.
func (c UIDChange) ControlReason() string {
	if r := c.Reason(); r != "" || len(c.Predicted) == 0 {
		return r
	}
	m := c.Predicted[0]
	return fmt.Sprintf("predicted, 1.%d not measured: %s", m, c.reasons[m])
}

// Prediction is what the type table says of the Unmeasured minors, ""
// when there are none.
func (c UIDChange) Prediction() string {
	return strings.Join(c.prediction, "; ")
}

// ContainerHashChange says why a container's hash differs between
// kubelets 1.from and 1.to (an unpatched 1.to restarts it), or "". It
// compares kubeletcompat.ContainerHash of both minors: fields the older
// minor's v1.Container lacks (seccompProfile before 1.19, the probe's
// terminationGracePeriodSeconds before 1.21) and the {name, image} hash
// from 1.31. Either way: on a rollback (to < from) the older kubelet
// hashes what it knows of the container, and the stored hash is the
// newer one's; from 1.31 or newer down to 1.30 or older, every container
// restarts.
func ContainerHashChange(c *v1.Container, from, to int) string {
	if from >= NameImageHashMinor && to >= NameImageHashMinor {
		// Both hash {name, image} (the library may know fewer minors
		// than the matrix).
		return ""
	}
	if from < NameImageHashMinor && to >= NameImageHashMinor {
		return fmt.Sprintf("container %s: the hash is {name, image} from 1.%d: every container restarts", c.Name, NameImageHashMinor)
	}
	if from >= NameImageHashMinor && to < NameImageHashMinor {
		return fmt.Sprintf("container %s: rollback below 1.%d: the hash is the container's JSON again, not {name, image}: every container restarts", c.Name, NameImageHashMinor)
	}
	vf := kubeletcompat.Version{Major: 1, Minor: from}
	vt := kubeletcompat.Version{Major: 1, Minor: to}
	hf, errF := kubeletcompat.ContainerHash(vf, c)
	ht, errT := kubeletcompat.ContainerHash(vt, c)
	if errF != nil || errT != nil || hf == ht {
		return ""
	}
	older, what := vf, ""
	if to < from {
		older, what = vt, "rollback: "
	}
	unknown, _ := kubeletcompat.UnknownFields(older, c)
	return fmt.Sprintf("container %s: %shash differs between 1.%d and 1.%d (fields 1.%d does not know: %s)", c.Name, what, from, to, older.Minor, strings.Join(unknown, ", "))
}

// PodHashChange is ContainerHashChange of the first of containers that
// changes, or "".
func PodHashChange(containers []v1.Container, from, to int) string {
	for i := range containers {
		if r := ContainerHashChange(&containers[i], from, to); r != "" {
			return r
		}
	}
	return ""
}

// KubeletSkew is how many minors a kubelet may be older than an API server
// of minor apiMinor under upstream's version skew policy: three from 1.28
// on (KEP-3935), two before.
func KubeletSkew(apiMinor int) int {
	if apiMinor >= 28 {
		return 3
	}
	return 2
}

// KubeadmKubeletSkew is how many minors kubeadm upgrade apply of minor m
// lets a node's kubelet lag behind the new control plane before it refuses
// (a skippable error: --force): MaximumAllowedMinorVersionKubeletSkew in
// cmd/kubeadm/app/phases/upgrade/policy.go, 1 until 1.28, 3 from 1.29. So a
// skip-level flow inside upstream's policy (KubeletSkew) needs --force
// where the two differ, e.g. kubeadm 1.20 with 1.18 kubelets.
func KubeadmKubeletSkew(m int) int {
	if m >= 29 {
		return 3
	}
	return 1
}
