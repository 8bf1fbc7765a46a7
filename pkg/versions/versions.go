// Package versions parses and orders the versions the project names: a
// Kubernetes release (1.31.14, or a pre-release such as 1.38.0-beta.0), a
// component release (1.7.35 or v1.7.35, or this project's patched build of
// one, 1.7.36+compat.1) and a runtime component reference
// (containerd@1.7.35). Every caller parses them here.
package versions

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Version is MAJOR.MINOR.PATCH with an optional pre-release, or a
// component release with build metadata. The zero value is 0.0.0.
type Version struct {
	Major, Minor, Patch int
	// pre is the pre-release kind (0: a release, 1 alpha, 2 beta, 3 rc),
	// preN its number.
	pre, preN int
	// Build is semver build metadata: compat.1 of 1.7.36+compat.1, this
	// project's patched build of the release 1.7.36. It tells two builds
	// of one release apart (==), not their order (Compare ignores it).
	Build string
}

// preKinds are the pre-releases Kubernetes publishes, in their order.
var preKinds = []string{"", "alpha", "beta", "rc"}

// ParseKubernetes reads a Kubernetes release as the matrix and the
// packages name it: MAJOR.MINOR.PATCH without a leading v, or a
// pre-release MAJOR.MINOR.PATCH-alpha.N, -beta.N or -rc.N. A number has
// no sign and no leading zero.
func ParseKubernetes(s string) (Version, error) {
	core, pre, hasPre := strings.Cut(s, "-")
	v, ok := parseCore(core)
	if ok && hasPre {
		kind, num, _ := strings.Cut(pre, ".")
		v.pre = indexOf(preKinds[1:], kind) + 1
		v.preN, ok = number(num)
		ok = ok && v.pre > 0
	}
	if !ok {
		return Version{}, fmt.Errorf("version %q: want MAJOR.MINOR.PATCH or MAJOR.MINOR.PATCH-alpha.N, -beta.N, -rc.N", s)
	}
	return v, nil
}

// ParseRelease reads a component's release, MAJOR.MINOR.PATCH with or
// without a leading v (1.7.35, v1.7.35), no pre-release, with or without
// build metadata (1.7.36+compat.1: dot-separated identifiers of letters,
// digits and hyphens).
func ParseRelease(s string) (Version, error) {
	core, build, hasBuild := strings.Cut(strings.TrimPrefix(s, "v"), "+")
	v, ok := parseCore(core)
	if ok && hasBuild {
		v.Build, ok = build, buildMetadata(build)
	}
	if !ok {
		return Version{}, fmt.Errorf("version %q: want MAJOR.MINOR.PATCH or MAJOR.MINOR.PATCH+BUILD", s)
	}
	return v, nil
}

// buildMetadata says whether s is semver build metadata: dot-separated
// non-empty identifiers of [0-9A-Za-z-].
func buildMetadata(s string) bool {
	for _, id := range strings.Split(s, ".") {
		if id == "" || strings.Trim(id, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-") != "" {
			return false
		}
	}
	return true
}

// Leading is the release a runtime reports at the start of its version:
// 1.6.20 of Debian's 1.6.20~ds1 (the v cut, then everything from the
// first character that is neither a digit nor a dot). ok is false when
// that start is no MAJOR.MINOR.PATCH.
func Leading(s string) (v Version, ok bool) {
	s = strings.TrimPrefix(s, "v")
	if end := strings.IndexFunc(s, func(r rune) bool { return r != '.' && (r < '0' || r > '9') }); end >= 0 {
		s = s[:end]
	}
	return parseCore(s)
}

// parseCore reads MAJOR.MINOR.PATCH.
func parseCore(s string) (Version, bool) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return Version{}, false
	}
	var n [3]int
	for i, p := range parts {
		var ok bool
		if n[i], ok = number(p); !ok {
			return Version{}, false
		}
	}
	return Version{Major: n[0], Minor: n[1], Patch: n[2]}, true
}

// number reads digits without a leading zero (0 alone is one).
func number(s string) (int, bool) {
	if s == "" || (len(s) > 1 && s[0] == '0') || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// PreRelease is "alpha.N", "beta.N" or "rc.N", or "" for a release.
func (v Version) PreRelease() string {
	if v.pre == 0 {
		return ""
	}
	return preKinds[v.pre] + "." + strconv.Itoa(v.preN)
}

// String is MAJOR.MINOR.PATCH[-PRE][+BUILD], without a v.
func (v Version) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	if p := v.PreRelease(); p != "" {
		s += "-" + p
	}
	if v.Build != "" {
		s += "+" + v.Build
	}
	return s
}

// Compare is -1, 0 or 1 as v is older than, the same as or newer than w:
// by major, minor and patch, then a pre-release before its release
// (alpha, beta, rc, each by its number). Build metadata has no precedence
// (semver): 1.7.36+compat.1 is as new as 1.7.36.
func (v Version) Compare(w Version) int {
	a := [5]int{v.Major, v.Minor, v.Patch, rank(v.pre), v.preN}
	b := [5]int{w.Major, w.Minor, w.Patch, rank(w.pre), w.preN}
	for i := range a {
		switch {
		case a[i] < b[i]:
			return -1
		case a[i] > b[i]:
			return 1
		}
	}
	return 0
}

// rank puts a release (0) after every pre-release.
func rank(pre int) int {
	if pre == 0 {
		return len(preKinds)
	}
	return pre
}

// Less says whether v is older than w (Compare).
func (v Version) Less(w Version) bool { return v.Compare(w) < 0 }

// Ref is a runtime component's release, as make runtime, the runtime
// packages and the Plans' KC_RUNTIME name it: containerd@1.7.35, or
// containerd@1.7.36+compat.1 for the project's patched build.
type Ref struct {
	Name    string
	Version Version
}

// String is NAME@MAJOR.MINOR.PATCH[+BUILD], without a v.
func (r Ref) String() string { return r.Name + "@" + r.Version.String() }

// ErrNotRef is SplitRef's and ParseRef's error for a string that is not
// NAME@VERSION.
var ErrNotRef = errors.New("want NAME@VERSION, e.g. containerd@1.7.35")

// SplitRef cuts NAME@VERSION (spaces around it trimmed) at its @; ok is
// false when there is no @, or nothing before or after it. The version is
// as given: ParseRef also reads it.
func SplitRef(s string) (name, version string, ok bool) {
	name, version, ok = strings.Cut(strings.TrimSpace(s), "@")
	return name, version, ok && name != "" && version != ""
}

// ParseRef reads NAME@VERSION, the version a release with or without a
// leading v (ParseRelease): containerd@1.7.35, runc@v1.5.3. Its error is
// ErrNotRef, or ParseRelease's for the version.
func ParseRef(s string) (Ref, error) {
	name, version, ok := SplitRef(s)
	if !ok {
		return Ref{}, ErrNotRef
	}
	v, err := ParseRelease(version)
	if err != nil {
		return Ref{}, err
	}
	return Ref{Name: name, Version: v}, nil
}

// MustParseRef is ParseRef for a reference the code holds in a table
// (its test parses every entry): it panics on an error.
func MustParseRef(s string) Ref {
	r, err := ParseRef(s)
	if err != nil {
		panic(fmt.Sprintf("versions.MustParseRef(%q): %v", s, err))
	}
	return r
}
