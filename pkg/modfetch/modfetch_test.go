package modfetch

import "testing"

func TestNewerGoFor(t *testing.T) {
	for _, tt := range []struct {
		name, msg, want string
	}{
		{"needs 1.27.0", "k8s.io/kubernetes@v1.38.0-beta.0 requires go >= 1.27.0 (running go 1.26.8; GOTOOLCHAIN=local)", "go" + NewerGo},
		{"needs exactly NewerGo", "m@v1 requires go >= " + NewerGo + " (running go 1.26.8; GOTOOLCHAIN=local)", "go" + NewerGo},
		{"needs a Go newer than NewerGo", "m@v1 requires go >= 1.28 (running go 1.26.8; GOTOOLCHAIN=local)", ""},
		{"another error", "m@v1: reading https://proxy/m/@v/v1.info: 403 Forbidden", ""},
		{"no error", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := NewerToolchainFor(tt.msg); got != tt.want {
				t.Errorf("NewerToolchainFor(%q) = %q, want %q", tt.msg, got, tt.want)
			}
		})
	}
}

func TestGoRelease(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"1.27.0", "1.27.3", -1}, {"1.27", "1.27.0", 0}, {"1.28", "1.27.3", 1}, {"1.9", "1.10", -1},
	} {
		a, errA := goRelease(tt.a)
		b, errB := goRelease(tt.b)
		if errA != nil || errB != nil || a.Compare(b) != tt.want {
			t.Errorf("goRelease(%s) vs goRelease(%s): %v %v, compare %d, want %d", tt.a, tt.b, errA, errB, a.Compare(b), tt.want)
		}
	}
}
