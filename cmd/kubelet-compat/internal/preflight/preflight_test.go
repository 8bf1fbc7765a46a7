package preflight

import (
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/upstream"
	v1 "k8s.io/api/core/v1"
)

func mustVersion(t *testing.T, s string) kubeletcompat.Version {
	v, err := kubeletcompat.ParseVersion(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestStaticUIDChange(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a", Image: "busybox:1.36"}}}}
	for _, tc := range []struct{ from, to, want string }{
		{"v1.18.19", "v1.19.16", RecreatePod},
		{"v1.19.16", "v1.20.15", ""},
		{"v1.20.15", "v1.21.14", RecreatePod},
		{"v1.18.19", "v1.21.14", RecreatePod},
		{"v1.21.1", "v1.21.14", ""},
		{"v1.21.14", "v1.22.17", ""},
		{"v1.28.15", "v1.29.15", ""},
		{"v1.21.14", "v1.23.17", RecreatePod},
		{"v1.30.14", "v1.31.14", RecreatePod},
		{"v1.36.5", "v1.37.2", RecreatePod},
		{"v1.37.2", "v1.38.0", ""}, // the pod holds no quantity nor seccompProfile
		// Steps no e2e control measured.
		{"v1.16.15", "v1.18.19", MayRecreatePod},
		{"v1.38.0", "v1.39.0", MayRecreatePod},
	} {
		got, why := staticUIDChange(upstream.Model(), mustVersion(t, tc.from), mustVersion(t, tc.to), pod)
		if got != tc.want {
			t.Errorf("%s -> %s: %q (%s), want %q", tc.from, tc.to, got, why, tc.want)
		}
	}
}

// TestStaticUIDChangePerPod: 1.38 changes SeccompProfile and
// resource.Quantity only, so it recreates the static pods that
// instantiate them and keeps the others; the model carries 1.38's types
// as hack/gen-pod-types generated them from v1.38.0-beta.0 and a Last of
// 38, as once the control measures it.
func TestStaticUIDChangePerPod(t *testing.T) {
	model := upstream.Model()
	model.Last = 38
	model.TypeChanges[38] = []string{"SeccompProfile", "SecurityProfileOCI", "SecurityProfileOCIBase", "SecurityProfileOCIBaseType", "resource.Quantity", "resource.cachedString", "resource.formatCode"}
	plain := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a", Image: "busybox:1.36"}}}}
	seccomp := plain.DeepCopy()
	seccomp.Spec.SecurityContext = &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}}
	from, to := mustVersion(t, "v1.37.2"), mustVersion(t, "v1.38.0")
	if got, why := staticUIDChange(model, from, to, seccomp); got != RecreatePod || !strings.Contains(why, "SeccompProfile") {
		t.Errorf("seccompProfile: %q (%s), want %q naming SeccompProfile", got, why, RecreatePod)
	}
	if got, why := staticUIDChange(model, from, to, plain); got != "" {
		t.Errorf("no seccompProfile: %q (%s), want kept", got, why)
	}
	// Unmeasured: the verdict stays open, the reason says the prediction.
	model.Last = 37
	if got, why := staticUIDChange(model, from, to, seccomp); got != MayRecreatePod || !strings.Contains(why, "predicted another UID") {
		t.Errorf("seccompProfile, 1.38 unmeasured: %q (%s)", got, why)
	}
	if got, why := staticUIDChange(model, from, to, plain); got != MayRecreatePod || !strings.Contains(why, "predicted the same UID") {
		t.Errorf("no seccompProfile, 1.38 unmeasured: %q (%s)", got, why)
	}
}

func TestAsSeenByDropsNewerFields(t *testing.T) {
	grace := int64(10)
	c := &v1.Container{Name: "a", Image: "b",
		LivenessProbe: &v1.Probe{TerminationGracePeriodSeconds: &grace, PeriodSeconds: 10},
		Ports:         []v1.ContainerPort{{ContainerPort: 80}}}
	seen, err := asSeenBy(mustVersion(t, "v1.20.15"), c)
	if err != nil {
		t.Fatal(err)
	}
	if seen.LivenessProbe.TerminationGracePeriodSeconds != nil || seen.LivenessProbe.PeriodSeconds != 10 || c.LivenessProbe.TerminationGracePeriodSeconds == nil {
		t.Errorf("asSeenBy(1.20) = %+v (input %+v)", seen.LivenessProbe, c.LivenessProbe)
	}
	h1, _ := kubeletcompat.ContainerHash(mustVersion(t, "v1.20.15"), c)
	h2, _ := kubeletcompat.ContainerHash(mustVersion(t, "v1.20.15"), seen)
	if h1 != h2 {
		t.Errorf("dropping unknown fields changed the 1.20 hash: %x != %x", h1, h2)
	}
	if err := deletePath(map[string]interface{}{"ports": []interface{}{map[string]interface{}{"x": 1}}}, "ports[0].x"); err != nil {
		t.Errorf("deletePath with an index: %v", err)
	}
}

func TestRunCountsAndVersions(t *testing.T) {
	pods := []Pod{{Namespace: "default", Name: "p", Static: true, Object: &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "init", Image: "busybox:1.36"}},
		Containers:     []v1.Container{{Name: "a", Image: "busybox:1.36"}, {Name: "b", Image: "busybox:1.36"}}}}}}
	r, err := Run(mustVersion(t, "v1.18.19"), mustVersion(t, "v1.19.16"), pods, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	want := Summary{Containers: 3, UnpatchedRestarts: 3, UnpatchedRecreated: 1}
	if r.Summary != want {
		t.Errorf("summary %+v, want %+v", r.Summary, want)
	}
	for _, bad := range [][2]string{{"v1.19.0", "v1.19.0"}, {"v1.18.0", "v1.99.0"}, {"v2.0.0", "v2.1.0"}, {"v1.10.0", "v1.15.0"}} {
		if err := CheckVersions(mustVersion(t, bad[0]), mustVersion(t, bad[1])); err == nil {
			t.Errorf("%s -> %s accepted", bad[0], bad[1])
		}
	}
}

func TestRunWithoutSeries(t *testing.T) {
	pods := []Pod{{Namespace: "default", Name: "p", Object: &v1.Pod{Spec: v1.PodSpec{
		Containers: []v1.Container{{Name: "a", Image: "busybox:1.36"}}}}}}
	for _, tc := range []struct {
		from, to    string
		wantPatched string
	}{
		{from: "v1.20.15", to: "v1.21.14", wantPatched: Keep},
		{from: "v1.15.12", to: "v1.16.15", wantPatched: NoSeries},
	} {
		r, err := Run(mustVersion(t, tc.from), mustVersion(t, tc.to), pods, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Rows[0].Patched; got != tc.wantPatched {
			t.Errorf("%s -> %s: patched %q, want %q", tc.from, tc.to, got, tc.wantPatched)
		}
		if hasNote := len(r.Notes) > 0; hasNote != (tc.wantPatched == NoSeries) {
			t.Errorf("%s -> %s: notes %q", tc.from, tc.to, r.Notes)
		}
	}
}

// TestTypesMinor: TypesMinor is the minor of the k8s.io/api go.mod requires,
// and no older than the newest minor whose hash the library knows: record
// writes the spec of every {name, image} container, and a spec decoded with
// older types would lack the newer kubelet's fields (a rollback would keep a
// container that sets one).
func TestTypesMinor(t *testing.T) {
	if newest := NewestKnownVersion(); TypesMinor < newest.Minor {
		t.Errorf("TypesMinor %d is older than the newest minor the library knows (%s): move k8s.io/api to v0.%d", TypesMinor, newest, newest.Minor)
	}
	data, err := os.ReadFile("../../../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/api v0\.(\d+)\.`).FindSubmatch(data)
	if m == nil {
		t.Fatal("go.mod requires no k8s.io/api")
	}
	if got := string(m[1]); got != strconv.Itoa(TypesMinor) {
		t.Errorf("go.mod requires k8s.io/api v0.%s, TypesMinor is %d", got, TypesMinor)
	}
}

// TestRollbackFromNewerMinors (issue 32): on a rollback from a kubelet newer
// than 1.31 to 1.30 or older, the patched older kubelet keeps a container
// whose spec sets no field it lacks and restarts, naming the field, one that
// sets a field of the newer minor: lifecycle.stopSignal (new in 1.33). The
// spec is decoded as the CLI decodes manifests, so its types must know the
// field: with types older than the kubelet that recorded the file, the field
// was dropped and every container restarted.
func TestRollbackFromNewerMinors(t *testing.T) {
	decode := func(js string) v1.Container {
		t.Helper()
		var c v1.Container
		if err := json.Unmarshal([]byte(js), &c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	plain := decode(`{"name":"plain","image":"busybox:1.36","command":["sleep","3600"]}`)
	stop := decode(`{"name":"stop","image":"busybox:1.36","lifecycle":{"stopSignal":"SIGUSR1"}}`)
	for _, tc := range []struct {
		from, to   string
		c          v1.Container
		want       string
		wantReason string
	}{
		{from: "v1.33.13", to: "v1.30.14", c: plain, want: Keep, wantReason: "the spec is the one recorded (rollback)"},
		{from: "v1.33.13", to: "v1.30.14", c: stop, want: Restart, wantReason: "rollback: sets fields v1.30.14 does not know: lifecycle.stopSignal"},
		{from: "v1.37.2", to: "v1.30.14", c: plain, want: Keep, wantReason: "the spec is the one recorded (rollback)"},
		{from: "v1.37.2", to: "v1.29.15", c: stop, want: Restart, wantReason: "rollback: sets fields v1.29.15 does not know: lifecycle.stopSignal"},
		// Between two {name, image} minors the hash is the same: kept, as
		// upstream keeps it (the 1.32 kubelet runs it without the field).
		{from: "v1.33.13", to: "v1.32.13", c: stop, want: Keep, wantReason: "kept: hash unchanged"},
	} {
		t.Run(tc.from+"->"+tc.to+"/"+tc.c.Name, func(t *testing.T) {
			c := tc.c
			pods := []Pod{{Namespace: "default", Name: "p", Object: &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{c}}}}}
			r, err := Run(mustVersion(t, tc.from), mustVersion(t, tc.to), pods, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Rows) != 1 {
				t.Fatalf("rows %+v", r.Rows)
			}
			if row := r.Rows[0]; row.Patched != tc.want || !strings.Contains(row.PatchedReason, tc.wantReason) {
				t.Errorf("patched %q (%s), want %q (...%s...)", row.Patched, row.PatchedReason, tc.want, tc.wantReason)
			}
		})
	}
}
