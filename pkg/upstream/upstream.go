// Package upstream is what this project measured of upstream kubelets
// across an in-place upgrade, per minor: which minors derive another UID
// for a static pod without metadata.uid, and when a container's hash
// changes. `kubelet-compat preflight` predicts from it and the e2e's
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
	Last  = 37
)

// NameImageHashMinor is the first minor hashing only a container's name
// and image (kubernetes/kubernetes#124220): every container a 1.30 or older
// kubelet created restarts under an unpatched 1.31 or newer.
const NameImageHashMinor = 31

// staticPodUIDChanges are the minors whose kubelet derives another UID
// for a static pod without metadata.uid than the previous minor did: the
// UID is a hash (md5, FNV-128a from 1.35) of the decoded, defaulted
// internal api.Pod printed by go-spew with every field, so any field added
// to, removed from or renamed in a struct the pod instantiates changes it.
// Every minor 1.19 .. 1.37 is measured by the e2e's unpatched controls
// (every static pod without metadata.uid recreated, or none); the reasons
// were read from upstream's source first (pkg/apis/core/types.go and
// apimachinery's meta/v1, minor to minor). 1.20, 1.22 and 1.29 changed
// none of the fields the corpus's pods instantiate.
var staticPodUIDChanges = map[int]string{
	19: "new UID derivation in 1.19 (PodSpec, PodSecurityContext, SecurityContext, VolumeSource got fields)",
	21: "UID includes node name and path in 1.21",
	23: "internal Pod type changed in 1.23 (PodSpec, Probe, ProbeHandler)",
	24: "internal Pod type changed in 1.24 (ObjectMeta: ClusterName renamed)",
	25: "internal Pod type changed in 1.25 (ObjectMeta, PodSecurityContext)",
	26: "internal Pod type changed in 1.26 (PodSpec, ResourceRequirements)",
	27: "internal Pod type changed in 1.27 (Container, PodStatus)",
	28: "internal Pod type changed in 1.28 (Container, PodStatus)",
	30: "internal Pod type changed in 1.30 (PodSecurityContext, SecurityContext, VolumeMount)",
	31: "internal Pod type changed in 1.31 (PodSecurityContext, VolumeSource)",
	32: "internal Pod type changed in 1.32 (PodSpec, PodSecurityContext)",
	33: "internal Pod type changed in 1.33 (PodStatus)",
	34: "internal Pod type changed in 1.34 (Container, PodSpec, PodStatus)",
	35: "UID hash is FNV-128a from 1.35, and PodSpec, PodStatus changed",
	36: "internal Pod type changed in 1.36 (PodSpec, PodStatus)",
	37: "internal Pod type changed in 1.37 (PodSpec, PodStatus, PodSecurityContext, ...)",
}

// UIDChange is what a kubelet 1.to does to a static pod without
// metadata.uid that kubelet 1.from started.
type UIDChange struct {
	// Changed are the minors in (from, to] that derive another UID.
	Changed []int
	// Unmeasured are the minors in (from, to] no control measured.
	Unmeasured []int
}

// StaticPodUID says which minors in (from, to] change the UID of a static
// pod without metadata.uid, and which were never measured.
func StaticPodUID(from, to int) UIDChange {
	var c UIDChange
	for m := from + 1; m <= to; m++ {
		switch _, ok := staticPodUIDChanges[m]; {
		case m <= First || m > Last:
			c.Unmeasured = append(c.Unmeasured, m)
		case ok:
			c.Changed = append(c.Changed, m)
		}
	}
	return c
}

// Reason is the first change's reason, "" when the UID stays.
func (c UIDChange) Reason() string {
	if len(c.Changed) == 0 {
		return ""
	}
	return staticPodUIDChanges[c.Changed[0]]
}

// ContainerHashChange says why a container's hash differs between
// kubelets 1.from and 1.to (an unpatched 1.to restarts it), or "". It
// compares kubeletcompat.ContainerHash of both minors: fields a minor's
// v1.Container lacks (seccompProfile before 1.19, the probe's
// terminationGracePeriodSeconds before 1.21) and the {name, image} hash
// from 1.31.
func ContainerHashChange(c *v1.Container, from, to int) string {
	if from >= NameImageHashMinor && to >= NameImageHashMinor {
		// Both hash {name, image} (the library may know fewer minors
		// than the matrix).
		return ""
	}
	if from < NameImageHashMinor && to >= NameImageHashMinor {
		return fmt.Sprintf("container %s: the hash is {name, image} from 1.%d: every container restarts", c.Name, NameImageHashMinor)
	}
	vf := kubeletcompat.Version{Major: 1, Minor: from}
	vt := kubeletcompat.Version{Major: 1, Minor: to}
	hf, errF := kubeletcompat.ContainerHash(vf, c)
	ht, errT := kubeletcompat.ContainerHash(vt, c)
	if errF != nil || errT != nil || hf == ht {
		return ""
	}
	unknown, _ := kubeletcompat.UnknownFields(vf, c)
	return fmt.Sprintf("container %s: hash differs between 1.%d and 1.%d (fields 1.%d does not know: %s)", c.Name, from, to, from, strings.Join(unknown, ", "))
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
