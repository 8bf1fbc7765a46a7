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
	// Changed are the minors in (from, to] that derive another UID; for
	// a rollback (to < from), the minors in (to, from]: the older kubelet
	// derives the UID as its own minor does, without the changes those
	// minors made.
	Changed []int
	// Unmeasured are the minors of that range no control measured.
	Unmeasured []int
	// Rollback: to is older than from.
	Rollback bool
}

// StaticPodUID says which minors between kubelets 1.from and 1.to change
// the UID of a static pod without metadata.uid, and which were never
// measured: those in (from, to] on an upgrade, in (to, from] on a
// rollback (to < from), where an unpatched 1.to derives the UID as 1.to
// always did.
func StaticPodUID(from, to int) UIDChange {
	var c UIDChange
	lo, hi := from, to
	if to < from {
		lo, hi, c.Rollback = to, from, true
	}
	for m := lo + 1; m <= hi; m++ {
		switch _, ok := staticPodUIDChanges[m]; {
		case m <= First || m > Last:
			c.Unmeasured = append(c.Unmeasured, m)
		case ok:
			c.Changed = append(c.Changed, m)
		}
	}
	return c
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
		return fmt.Sprintf("rollback below 1.%d, whose UID derivation the older kubelet lacks: %s", m, staticPodUIDChanges[m])
	}
	return staticPodUIDChanges[m]
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
