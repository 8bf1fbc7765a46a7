package kubeletcompat

import (
	"strings"
	"testing"
)

// TestDeciderStates: the activation rule, in one place for the kubelet and
// the CLI.
func TestDeciderStates(t *testing.T) {
	own := Version{Major: 1, Minor: 21, Patch: 14}
	for _, tt := range []struct {
		name, previous string
		want           FileState
		wantWhy        string
		wantLegacy     bool // c1, listed with 1.20's hash, can be kept
	}{
		{name: "no file", want: FileAbsent},
		{name: "older kubelet", previous: "v1.20.15", want: FileActive, wantLegacy: true},
		{name: "this kubelet's version: pending swap", previous: "v1.21.14+compat.1", want: FilePending, wantWhy: "has not happened yet", wantLegacy: true},
		{name: "newer kubelet", previous: "v1.22.0", want: FileIgnored, wantWhy: "newer than this kubelet"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var f *File
			if tt.previous != "" {
				f = testFile()
				f.PreviousVersion = tt.previous
				f.Containers = []Container{{ID: "c1", HashVersion: "v1.20.15"}, {ID: "c2", HashVersion: tt.previous}}
				must(t, f.Validate())
			}
			d := NewDecider(f, own, kubeletStart)
			state, why := d.State()
			if state != tt.want || !strings.Contains(why, tt.wantWhy) {
				t.Errorf("State() = %s %q, want %s %q", state, why, tt.want, tt.wantWhy)
			}
			if _, ok := d.LegacyHashVersion("c1"); ok != tt.wantLegacy {
				t.Errorf("LegacyHashVersion(c1) = %v, want %v", ok, tt.wantLegacy)
			}
			if _, ok := d.LegacyHashVersion("c2"); ok && !mustVersion(t, tt.previous).LessThan(own) {
				t.Errorf("LegacyHashVersion(c2) reports a container carrying %s's hash as legacy", tt.previous)
			}
		})
	}
}

func mustVersion(t *testing.T, s string) Version {
	t.Helper()
	v, err := ParseVersion(s)
	must(t, err)
	return v
}
