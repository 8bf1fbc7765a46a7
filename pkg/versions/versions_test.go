package versions

import (
	"sort"
	"testing"

	"gotest.tools/v3/assert"
)

func TestParseKubernetes(t *testing.T) {
	for _, tc := range []struct {
		in, want, pre string
		err           bool
	}{
		{in: "1.31.14", want: "1.31.14"},
		{in: "1.18.19", want: "1.18.19"},
		{in: "0.0.0", want: "0.0.0"},
		{in: "1.38.0-alpha.1", want: "1.38.0-alpha.1", pre: "alpha.1"},
		{in: "1.38.0-beta.0", want: "1.38.0-beta.0", pre: "beta.0"},
		{in: "1.38.0-rc.12", want: "1.38.0-rc.12", pre: "rc.12"},
		{in: "v1.31.14", err: true}, // as the matrix names it: no v
		{in: "1.31", err: true},
		{in: "1.31.14.1", err: true},
		{in: "1", err: true},
		{in: "", err: true},
		{in: "x", err: true},
		{in: "1.31.x", err: true},
		{in: "1..14", err: true},
		{in: "1.031.14", err: true},
		{in: "1.+31.14", err: true},
		{in: "1.-31.14", err: true},
		{in: " 1.31.14", err: true},
		{in: "1.38.0-", err: true},
		{in: "1.38.0-beta", err: true},
		{in: "1.38.0-beta.", err: true},
		{in: "1.38.0-gamma.1", err: true},
		{in: "1.38.0-beta.1.2", err: true},
		{in: "1.38.0-beta.01", err: true},
		{in: "1.38.0+build", err: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			v, err := ParseKubernetes(tc.in)
			if tc.err {
				assert.Error(t, err, `version "`+tc.in+`": want MAJOR.MINOR.PATCH or MAJOR.MINOR.PATCH-alpha.N, -beta.N, -rc.N`)
				return
			}
			assert.NilError(t, err)
			assert.Equal(t, tc.want, v.String())
			assert.Equal(t, tc.pre, v.PreRelease())
		})
	}
}

func TestParseRelease(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		err      bool
	}{
		{in: "1.7.35", want: "1.7.35"},
		{in: "v1.7.35", want: "1.7.35"},
		{in: "v0.0.0", want: "0.0.0"},
		{in: "2.4.2", want: "2.4.2"},
		{in: "1.7", err: true},
		{in: "vv1.7.35", err: true},
		{in: "V1.7.35", err: true},
		{in: "1.5.3-rc.1", err: true}, // no pre-release of a component
		{in: "1.07.35", err: true},
		{in: "1.7.-1", err: true},
		{in: "", err: true},
		{in: "1.7.36+compat.1", want: "1.7.36+compat.1"},
		{in: "v1.7.36+compat.1", want: "1.7.36+compat.1"},
		{in: "1.7.36+exp-sha.5114f85", want: "1.7.36+exp-sha.5114f85"},
		{in: "1.7.36+", err: true},
		{in: "1.7.36+compat..1", err: true},
		{in: "1.7.36+compat_1", err: true},
		{in: "1.7.36+compat.1+2", err: true},
		{in: "1.5.3-rc.1+compat.1", err: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			v, err := ParseRelease(tc.in)
			if tc.err {
				assert.Error(t, err, `version "`+tc.in+`": want MAJOR.MINOR.PATCH or MAJOR.MINOR.PATCH+BUILD`)
				return
			}
			assert.NilError(t, err)
			assert.Equal(t, tc.want, v.String())
		})
	}
}

// TestBuildMetadata: a patched build is another build of the same
// release: told apart, not ordered.
func TestBuildMetadata(t *testing.T) {
	stock, err := ParseRelease("1.7.36")
	assert.NilError(t, err)
	ours, err := ParseRelease("v1.7.36+compat.1")
	assert.NilError(t, err)
	assert.Equal(t, ours.Build, "compat.1")
	assert.Check(t, stock != ours)
	assert.Equal(t, stock.Compare(ours), 0)
	older, err := ParseRelease("1.7.35")
	assert.NilError(t, err)
	assert.Check(t, older.Less(ours))
	assert.Equal(t, ours.PreRelease(), "")
}

func TestLeading(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{in: "1.6.20~ds1", want: "1.6.20", ok: true},
		{in: "v1.7.35", want: "1.7.35", ok: true},
		{in: "2.4.2-1+deb13u1", want: "2.4.2", ok: true},
		{in: "1.7.35", want: "1.7.35", ok: true},
		{in: "1.7", ok: false},
		{in: "devel", ok: false},
		{in: "", ok: false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			v, ok := Leading(tc.in)
			assert.Equal(t, tc.ok, ok)
			if ok {
				assert.Equal(t, tc.want, v.String())
			}
		})
	}
}

func TestCompare(t *testing.T) {
	// In order, oldest first: by number, a pre-release before its release.
	ordered := []string{"1.5.3", "1.10.0", "1.30.14", "1.31.2", "1.31.14", "1.37.2",
		"1.38.0-alpha.1", "1.38.0-alpha.2", "1.38.0-beta.0", "1.38.0-rc.1", "1.38.0-rc.10", "1.38.0", "1.38.1", "2.0.0"}
	var vs []Version
	for _, s := range ordered {
		v, err := ParseKubernetes(s)
		assert.NilError(t, err)
		vs = append(vs, v)
	}
	for i := range vs {
		for j := range vs {
			want := 0
			switch {
			case i < j:
				want = -1
			case i > j:
				want = 1
			}
			assert.Equal(t, want, vs[i].Compare(vs[j]), "%s vs %s", vs[i], vs[j])
			assert.Equal(t, i < j, vs[i].Less(vs[j]), "%s < %s", vs[i], vs[j])
		}
	}
	shuffled := append([]Version{}, vs[7:]...)
	shuffled = append(shuffled, vs[:7]...)
	sort.Slice(shuffled, func(i, j int) bool { return shuffled[i].Less(shuffled[j]) })
	var got []string
	for _, v := range shuffled {
		got = append(got, v.String())
	}
	assert.DeepEqual(t, ordered, got)
}

func TestParseRef(t *testing.T) {
	for _, tc := range []struct {
		in, name, version, err string
	}{
		{in: "containerd@1.7.35", name: "containerd", version: "1.7.35"},
		{in: "containerd@2.4.2", name: "containerd", version: "2.4.2"},
		{in: "runc@v1.5.3", name: "runc", version: "1.5.3"},
		{in: " cni-plugins@1.10.0 ", name: "cni-plugins", version: "1.10.0"},
		{in: "crio@1.31.0", name: "crio", version: "1.31.0"},
		{in: "containerd@1.7.36+compat.1", name: "containerd", version: "1.7.36+compat.1"},
		{in: "containerd", err: "want NAME@VERSION, e.g. containerd@1.7.35"},
		{in: "1.7.35", err: "want NAME@VERSION, e.g. containerd@1.7.35"},
		{in: "@1.7.35", err: "want NAME@VERSION, e.g. containerd@1.7.35"},
		{in: "containerd@", err: "want NAME@VERSION, e.g. containerd@1.7.35"},
		{in: "", err: "want NAME@VERSION, e.g. containerd@1.7.35"},
		{in: "containerd@1.7", err: `version "1.7": want MAJOR.MINOR.PATCH or MAJOR.MINOR.PATCH+BUILD`},
		{in: "runc@1.5.3-rc.1", err: `version "1.5.3-rc.1": want MAJOR.MINOR.PATCH or MAJOR.MINOR.PATCH+BUILD`},
		{in: "containerd@1.7.35@2", err: `version "1.7.35@2": want MAJOR.MINOR.PATCH or MAJOR.MINOR.PATCH+BUILD`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			r, err := ParseRef(tc.in)
			if tc.err != "" {
				assert.Error(t, err, tc.err)
				return
			}
			assert.NilError(t, err)
			assert.Equal(t, tc.name, r.Name)
			assert.Equal(t, tc.version, r.Version.String())
			assert.Equal(t, tc.name+"@"+tc.version, r.String())
		})
	}
}

func TestSplitRef(t *testing.T) {
	for _, tc := range []struct {
		in, name, version string
		ok                bool
	}{
		{in: "containerd@1.7.35", name: "containerd", version: "1.7.35", ok: true},
		{in: "containerd@1.6.20~ds1", name: "containerd", version: "1.6.20~ds1", ok: true},
		{in: "containerd", name: "containerd"},
		{in: "@1.7.35", version: "1.7.35"},
		{in: "containerd@", name: "containerd"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			name, version, ok := SplitRef(tc.in)
			assert.Equal(t, tc.ok, ok)
			if ok {
				assert.Equal(t, tc.name, name)
				assert.Equal(t, tc.version, version)
			}
		})
	}
}

func TestMustParseRef(t *testing.T) {
	assert.Equal(t, MustParseRef("containerd@v2.4.2").String(), "containerd@2.4.2")
	assert.Assert(t, panics(func() { MustParseRef("containerd@2.4") }))
}

func panics(f func()) (did bool) {
	defer func() { did = recover() != nil }()
	f()
	return false
}
