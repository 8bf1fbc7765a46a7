package upstream

import (
	"os"
	"reflect"
	"regexp"
	"strconv"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Pods of the shapes whose UIDs the table tells apart.
var (
	plainPod = &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox:1"}}}}
	// resourcesPod instantiates resource.Quantity.
	resourcesPod = &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox:1",
		Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("5m")}}}}}}
	// seccompPod sets a pod-level seccompProfile, as kubeadm's
	// control-plane pods do.
	seccompPod = &v1.Pod{Spec: v1.PodSpec{SecurityContext: &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}},
		Containers: []v1.Container{{Name: "app", Image: "busybox:1"}}}}
	containerSeccompPod = &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox:1",
		SecurityContext: &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}}}}}}
)

// TestStaticPodUIDFor138: 1.38 (measured) changes the UID of the pods
// that hold a resource quantity or a seccompProfile, and only theirs.
func TestStaticPodUIDFor138(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pod     *v1.Pod
		changed []int
	}{
		{"plain", plainPod, nil},
		{"resources", resourcesPod, []int{38}},
		{"pod-level seccompProfile", seccompPod, []int{38}},
		{"container seccompProfile", containerSeccompPod, []int{38}},
	} {
		for _, step := range [][2]int{{37, 38}, {38, 37}} {
			got := StaticPodUIDFor(tc.pod, step[0], step[1])
			assert.Check(t, is.DeepEqual(got.Changed, tc.changed), "%s: 1.%d -> 1.%d", tc.name, step[0], step[1])
			assert.Check(t, is.Len(got.Unmeasured, 0), "%s: 1.%d -> 1.%d", tc.name, step[0], step[1])
		}
	}
}

func TestStaticPodUIDFor(t *testing.T) {
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
		{38, 39, nil, []int{39}},
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
		{39, 38, nil, []int{39}},
	} {
		// Every minor 1.19 .. 1.37 changed PodSpec, PodStatus, ObjectMeta
		// or PodSecurityContext (which defaulting always sets), or the
		// derivation: the pods' shapes do not matter there.
		for _, p := range []*v1.Pod{plainPod, resourcesPod, seccompPod} {
			got := StaticPodUIDFor(p, tc.from, tc.to)
			assert.Check(t, is.DeepEqual(got.Changed, tc.changed), "1.%d -> 1.%d", tc.from, tc.to)
			assert.Check(t, is.DeepEqual(got.Unmeasured, tc.unmeasured), "1.%d -> 1.%d", tc.from, tc.to)
			assert.Check(t, (got.Reason() != "") == (len(tc.changed) > 0), "1.%d -> 1.%d: %q", tc.from, tc.to, got.Reason())
			assert.Check(t, is.Equal(got.Rollback, tc.to < tc.from), "1.%d -> 1.%d", tc.from, tc.to)
			if got.Rollback && len(tc.changed) > 0 {
				assert.Check(t, is.Contains(got.Reason(), "rollback below 1."), "1.%d -> 1.%d", tc.from, tc.to)
			}
		}
	}
}

// types138 is what `go run ./hack/gen-pod-types -tree
// 1.38.0-beta.0=<kubernetes@v1.38.0-beta.0>,<apimachinery@v0.38.0-beta.0>`
// wrote for 1.38 before the matrix had its row: SeccompProfile gained OCI,
// and resource.Quantity's cached string became a struct.
var types138 = []string{"SeccompProfile", "SecurityProfileOCI", "SecurityProfileOCIBase", "SecurityProfileOCIBaseType", "resource.Quantity", "resource.cachedString", "resource.formatCode"}

// TestStaticPodUIDPerPod: a minor that changes types only some pods
// instantiate (1.38) changes only those pods' UIDs.
func TestStaticPodUIDPerPod(t *testing.T) {
	model := Model()
	model.Last = 38
	model.TypeChanges[38] = types138
	for _, tc := range []struct {
		name    string
		pod     *v1.Pod
		changed []int
		reason  string
	}{
		{"no seccompProfile, no quantity", plainPod, nil, ""},
		{"pod-level seccompProfile", seccompPod, []int{38}, "internal Pod types changed in 1.38: SeccompProfile"},
		{"container seccompProfile", containerSeccompPod, []int{38}, "SeccompProfile"},
		{"resource requests", resourcesPod, []int{38}, "resource.Quantity"},
	} {
		got := model.StaticPodUID(tc.pod, 37, 38)
		assert.Check(t, is.DeepEqual(got.Changed, tc.changed), tc.name)
		assert.Check(t, is.Contains(got.Reason(), tc.reason), tc.name)
		back := model.StaticPodUID(tc.pod, 38, 37)
		assert.Check(t, is.DeepEqual(back.Changed, tc.changed), "rollback: "+tc.name)
	}
	// Unmeasured (Last 37): the table predicts, the verdict stays open.
	model.Last = 37
	got := model.StaticPodUID(seccompPod, 37, 38)
	assert.Check(t, is.DeepEqual(got.Predicted, []int{38}))
	assert.Check(t, is.Contains(got.Prediction(), "1.38: predicted another UID (internal Pod types changed in 1.38: SeccompProfile)"))
	got = model.StaticPodUID(plainPod, 37, 38)
	assert.Check(t, is.Len(got.Predicted, 0))
	assert.Check(t, is.Contains(got.Prediction(), "1.38: predicted the same UID"))
}

// TestTypes138 holds types138 to the generated table once the matrix has
// the 1.38 row.
func TestTypes138(t *testing.T) {
	if types, ok := podTypeChanges[38]; ok {
		assert.Check(t, is.DeepEqual(types, types138))
	}
}

// TestStaticPodUIDRollbackMirrorsUpgrade: a rollback from 1.b to 1.a
// changes the UID exactly when the upgrade from 1.a to 1.b does.
func TestStaticPodUIDRollbackMirrorsUpgrade(t *testing.T) {
	for a := 14; a <= 40; a++ {
		for b := a + 1; b <= 40; b++ {
			for _, p := range []*v1.Pod{plainPod, seccompPod} {
				up, down := StaticPodUIDFor(p, a, b), StaticPodUIDFor(p, b, a)
				assert.Check(t, is.DeepEqual(up.Changed, down.Changed), "1.%d <-> 1.%d", a, b)
				assert.Check(t, is.DeepEqual(up.Unmeasured, down.Unmeasured), "1.%d <-> 1.%d", a, b)
				assert.Check(t, is.DeepEqual(up.Predicted, down.Predicted), "1.%d <-> 1.%d", a, b)
			}
		}
	}
}

func TestStaticPodUIDRollbackReason(t *testing.T) {
	assert.Check(t, is.Contains(StaticPodUIDFor(plainPod, 31, 30).Reason(), "rollback below 1.31"))
	assert.Check(t, is.Contains(StaticPodUIDFor(plainPod, 31, 30).Reason(), "PodSecurityContext"))
	assert.Check(t, is.Contains(StaticPodUIDFor(plainPod, 21, 20).Reason(), "node name and path"))
	// Several minors down: the first change the older kubelet lacks.
	assert.Check(t, is.Contains(StaticPodUIDFor(plainPod, 22, 18).Reason(), "rollback below 1.19"))
	assert.Check(t, is.Equal(StaticPodUIDFor(plainPod, 20, 19).Reason(), ""))
}

// TestMeasuredMinors: every minor (First, Last] was measured, and the
// table has every minor of the matrix but the first.
func TestMeasuredMinors(t *testing.T) {
	for m := First + 1; m <= Last; m++ {
		_, measured := MeasuredCorpusRecreated(m)
		assert.Check(t, measured, "1.%d", m)
		_, ok := podTypeChanges[m]
		assert.Check(t, ok, "1.%d has no type table", m)
	}
	assert.Check(t, is.Len(staticPodUIDChanges, Last-First))
}

func TestInstantiatedTypes(t *testing.T) {
	probe := plainPod.DeepCopy()
	probe.Spec.Containers[0].LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
	probe.Spec.Volumes = []v1.Volume{{Name: "v"}}
	for _, tc := range []struct {
		name      string
		pod       *v1.Pod
		has, lack []string
	}{
		{"plain: defaulting sets the PodSecurityContext", plainPod,
			[]string{"Pod", "PodSpec", "PodStatus", "PodSecurityContext", "Container", "ResourceRequirements", "metav1.ObjectMeta", "metav1.Time", "metav1.TypeMeta"},
			[]string{"SeccompProfile", "resource.Quantity", "SecurityContext", "Probe", "Volume"}},
		{"pod-level seccompProfile", seccompPod, []string{"SeccompProfile", "SeccompProfileType"}, []string{"resource.Quantity"}},
		{"quantities and their unexported parts", resourcesPod, []string{"resource.Quantity", "resource.int64Amount", "ResourceList", "ResourceName"}, []string{"SeccompProfile"}},
		{"a probe holds the internal Handler before 1.23; a volume without a source is an emptyDir", probe,
			[]string{"Probe", "ProbeHandler", "Handler", "ExecAction", "Volume", "VolumeSource", "EmptyDirVolumeSource"}, []string{"HTTPGetAction", "LifecycleHandler"}},
	} {
		got := InstantiatedTypes(tc.pod)
		for _, name := range tc.has {
			assert.Check(t, got[name], "%s: %s", tc.name, name)
		}
		for _, name := range tc.lack {
			assert.Check(t, !got[name], "%s: %s", tc.name, name)
		}
	}
	assert.Check(t, plainPod.Spec.SecurityContext == nil, "the walk defaults a copy")
}

// TestTableNamesV1Types: every type the generated table names is a type a
// v1.Pod can hold (so InstantiatedTypes can see it), the internal twin of
// one (internalNames), or gone from k8s.io/api and internal only.
func TestTableNamesV1Types(t *testing.T) {
	reachable := map[string]bool{}
	walkType(reflect.TypeOf(v1.Pod{}), reachable)
	for _, internal := range internalNames {
		reachable[internal] = true
	}
	v1TypesMinor := apiMinor(t)
	for m, types := range podTypeChanges {
		seenOne := false
		for _, name := range types {
			seenOne = seenOne || reachable[name]
		}
		for _, name := range types {
			if m > v1TypesMinor && seenOne {
				// New in a minor newer than the CLI's k8s.io/api (1.38's
				// SecurityProfileOCI, Quantity's cachedString): a pod
				// reaches it only through a changed type the walk sees.
				continue
			}
			assert.Check(t, reachable[name] || internalOnly[name], "1.%d: %s is no type of k8s.io/api's v1.Pod: add it to internalNames or internalOnly", m, name)
		}
	}
}

// apiMinor is the minor of go.mod's k8s.io/api.
func apiMinor(t *testing.T) int {
	data, err := os.ReadFile("../../go.mod")
	assert.NilError(t, err)
	m := regexp.MustCompile(`(?m)^\s+k8s\.io/api v0\.([0-9]+)\.`).FindSubmatch(data)
	assert.Assert(t, m != nil, "go.mod names no k8s.io/api")
	n, err := strconv.Atoi(string(m[1]))
	assert.NilError(t, err)
	return n
}

// internalOnly are the table's types without a v1 type of the name that a
// v1.Pod holds: gone from k8s.io/api, or only internal.
var internalOnly = map[string]bool{
	"ClaimSource":       true, // PodResourceClaim's source, 1.26 .. 1.30
	"WorkloadReference": true, // PodSpec.WorkloadRef, 1.35 .. 1.36, tombstoned in v1
}

// walkType collects the named types a value of t can hold, named as
// InstantiatedTypes names them.
func walkType(t reflect.Type, seen map[string]bool) {
	if t.Name() != "" && t.PkgPath() != "" {
		name := typePrefix(t.PkgPath()) + t.Name()
		if seen[name] {
			return
		}
		seen[name] = true
	}
	switch t.Kind() {
	case reflect.Ptr, reflect.Slice, reflect.Array:
		walkType(t.Elem(), seen)
	case reflect.Map:
		walkType(t.Key(), seen)
		walkType(t.Elem(), seen)
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			walkType(t.Field(i).Type, seen)
		}
	}
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
