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
	} {
		got := StaticPodUID(tc.from, tc.to)
		assert.Check(t, is.DeepEqual(got.Changed, tc.changed), "1.%d -> 1.%d", tc.from, tc.to)
		assert.Check(t, is.DeepEqual(got.Unmeasured, tc.unmeasured), "1.%d -> 1.%d", tc.from, tc.to)
		assert.Check(t, (got.Reason() != "") == (len(tc.changed) > 0), "1.%d -> 1.%d: %q", tc.from, tc.to, got.Reason())
	}
}

func TestContainerHashChange(t *testing.T) {
	plain := v1.Container{Name: "app", Image: "busybox:1", Command: []string{"sleep", "1d"}}
	seccomp := plain
	seccomp.SecurityContext = &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}}
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
	} {
		got := ContainerHashChange(&tc.c, tc.from, tc.to)
		if tc.want == "" {
			assert.Check(t, is.Equal(got, ""), tc.name)
		} else {
			assert.Check(t, is.Contains(got, tc.want), tc.name)
		}
	}
}
