package upstream

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	v1 "k8s.io/api/core/v1"
)

func TestStaticPodUID(t *testing.T) {
	for _, tc := range []struct {
		from, to   int
		changed    []int
		unmeasured []int
	}{
		{18, 19, []int{19}, nil},
		{19, 20, nil, nil},
		{20, 21, []int{21}, nil},
		{21, 22, nil, nil},
		{28, 29, nil, nil},
		{18, 22, []int{19, 21}, nil},
		{30, 31, []int{31}, nil},
		{36, 37, []int{37}, nil},
		{21, 21, nil, nil},
		{16, 18, nil, []int{17, 18}},
		{37, 38, nil, []int{38}},
		// Rollbacks: the older kubelet derives the UID as its own minor
		// does, so the minors in (to, from] count.
		{31, 30, []int{31}, nil},
		{21, 20, []int{21}, nil},
		{20, 19, nil, nil},
		{22, 21, nil, nil},
		{29, 28, nil, nil},
		{19, 18, []int{19}, nil},
		{22, 18, []int{19, 21}, nil},
		{31, 28, []int{30, 31}, nil},
		{37, 36, []int{37}, nil},
		{18, 16, nil, []int{17, 18}},
		{38, 37, nil, []int{38}},
	} {
		got := StaticPodUID(tc.from, tc.to)
		assert.Check(t, is.DeepEqual(got.Changed, tc.changed), "1.%d -> 1.%d", tc.from, tc.to)
		assert.Check(t, is.DeepEqual(got.Unmeasured, tc.unmeasured), "1.%d -> 1.%d", tc.from, tc.to)
		assert.Check(t, (got.Reason() != "") == (len(tc.changed) > 0), "1.%d -> 1.%d: %q", tc.from, tc.to, got.Reason())
		assert.Check(t, is.Equal(got.Rollback, tc.to < tc.from), "1.%d -> 1.%d", tc.from, tc.to)
		if got.Rollback && len(tc.changed) > 0 {
			assert.Check(t, is.Contains(got.Reason(), "rollback below 1."), "1.%d -> 1.%d", tc.from, tc.to)
		}
	}
}

// TestStaticPodUIDRollbackMirrorsUpgrade: a rollback from 1.b to 1.a
// changes the UID exactly when the upgrade from 1.a to 1.b does.
func TestStaticPodUIDRollbackMirrorsUpgrade(t *testing.T) {
	for a := 14; a <= 40; a++ {
		for b := a + 1; b <= 40; b++ {
			up, down := StaticPodUID(a, b), StaticPodUID(b, a)
			assert.Check(t, is.DeepEqual(up.Changed, down.Changed), "1.%d <-> 1.%d", a, b)
			assert.Check(t, is.DeepEqual(up.Unmeasured, down.Unmeasured), "1.%d <-> 1.%d", a, b)
		}
	}
}

func TestStaticPodUIDRollbackReason(t *testing.T) {
	assert.Check(t, is.Contains(StaticPodUID(31, 30).Reason(), "rollback below 1.31"))
	assert.Check(t, is.Contains(StaticPodUID(31, 30).Reason(), "PodSecurityContext, VolumeSource"))
	assert.Check(t, is.Contains(StaticPodUID(21, 20).Reason(), "node name and path"))
	// Several minors down: the first change the older kubelet lacks.
	assert.Check(t, is.Contains(StaticPodUID(22, 18).Reason(), "rollback below 1.19"))
	assert.Check(t, is.Equal(StaticPodUID(20, 19).Reason(), ""))
}

func TestContainerHashChange(t *testing.T) {
	plain := v1.Container{Name: "app", Image: "busybox:1", Command: []string{"sleep", "1d"}}
	seccomp := plain
	seccomp.SecurityContext = &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}}
	grace := plain
	tgps := int64(5)
	grace.LivenessProbe = &v1.Probe{TerminationGracePeriodSeconds: &tgps}
	grace.LivenessProbe.Exec = &v1.ExecAction{Command: []string{"true"}}
	for _, tc := range []struct {
		name     string
		c        v1.Container
		from, to int
		want     string
	}{
		{"plain 1.20 -> 1.21", plain, 20, 21, ""},
		{"seccomp field unknown to 1.18", seccomp, 18, 19, "securityContext.seccompProfile"},
		{"seccomp known to both", seccomp, 19, 20, ""},
		{"the {name, image} hash", plain, 30, 31, "every container restarts"},
		{"skip-level across 1.31", plain, 28, 31, "every container restarts"},
		{"both {name, image}", seccomp, 31, 37, ""},
		{"probe grace unknown to 1.20", grace, 20, 21, "fields 1.20 does not know: livenessProbe.terminationGracePeriodSeconds"},
		// Rollbacks: the older kubelet hashes what it knows of the
		// container; the stored hash is the newer kubelet's.
		{"rollback 1.31 -> 1.30: the JSON hash again", plain, 31, 30, "every container restarts"},
		{"rollback 1.31 -> 1.30, seccomp", seccomp, 31, 30, "every container restarts"},
		{"rollback 1.37 -> 1.28", plain, 37, 28, "every container restarts"},
		{"rollback 1.37 -> 1.31: both {name, image}", grace, 37, 31, ""},
		{"rollback 1.21 -> 1.20, plain", plain, 21, 20, ""},
		{"rollback 1.21 -> 1.20, seccomp known to both", seccomp, 21, 20, ""},
		{"rollback 1.21 -> 1.20, probe grace unknown to 1.20", grace, 21, 20, "rollback: hash differs between 1.21 and 1.20 (fields 1.20 does not know: livenessProbe.terminationGracePeriodSeconds)"},
		{"rollback 1.19 -> 1.18, seccomp unknown to 1.18", seccomp, 19, 18, "fields 1.18 does not know: securityContext.seccompProfile"},
		{"rollback 1.20 -> 1.19, seccomp known to both", seccomp, 20, 19, ""},
		{"rollback 1.30 -> 1.21, probe grace known to both", grace, 30, 21, ""},
		{"rollback 1.30 -> 1.18, probe grace and seccomp", grace, 30, 18, "fields 1.18 does not know: livenessProbe.terminationGracePeriodSeconds"},
	} {
		got := ContainerHashChange(&tc.c, tc.from, tc.to)
		if tc.want == "" {
			assert.Check(t, is.Equal(got, ""), tc.name)
		} else {
			assert.Check(t, is.Contains(got, tc.want), tc.name)
		}
	}
}

// TestContainerHashChangeRollbackMirrorsUpgrade: a container restarts on
// the rollback from 1.b to 1.a exactly when it restarts on the upgrade
// from 1.a to 1.b (the hashes of both minors are compared either way).
func TestContainerHashChangeRollbackMirrorsUpgrade(t *testing.T) {
	tgps := int64(5)
	both := v1.Container{Name: "both", Image: "busybox:1",
		SecurityContext: &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}},
		LivenessProbe:   &v1.Probe{TerminationGracePeriodSeconds: &tgps}}
	for _, c := range []v1.Container{{Name: "plain", Image: "busybox:1"}, both} {
		for a := 16; a <= 37; a++ {
			for b := a + 1; b <= 37; b++ {
				up, down := ContainerHashChange(&c, a, b), ContainerHashChange(&c, b, a)
				assert.Check(t, (up == "") == (down == ""), "%s 1.%d <-> 1.%d: %q, %q", c.Name, a, b, up, down)
			}
		}
	}
}

// TestSkew: upstream's kubelet skew policy and kubeadm's own limit (read
// from policy.go of every matrix tree): kubeadm 1.20 .. 1.28 refuses, without
// --force, a skip-level flow the policy allows.
func TestSkew(t *testing.T) {
	for _, tc := range []struct{ minor, policy, kubeadm int }{
		{18, 2, 1}, {20, 2, 1}, {27, 2, 1}, {28, 3, 1}, {29, 3, 3}, {31, 3, 3}, {37, 3, 3},
	} {
		assert.Equal(t, KubeletSkew(tc.minor), tc.policy, "1.%d", tc.minor)
		assert.Equal(t, KubeadmKubeletSkew(tc.minor), tc.kubeadm, "1.%d", tc.minor)
	}
}
