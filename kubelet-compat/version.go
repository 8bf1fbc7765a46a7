package kubeletcompat

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a parsed Kubernetes semantic version such as v1.21.14 or
// v1.21.14+compat.1. Build metadata is kept for display but, as semver
// requires, ignored when versions are compared.
type Version struct {
	Major, Minor, Patch int
	PreRelease          string
	Build               string
}

// ParseVersion parses a semantic version with an optional leading "v".
func ParseVersion(s string) (Version, error) {
	var v Version
	rest := strings.TrimPrefix(strings.TrimSpace(s), "v")
	if i := strings.IndexByte(rest, '+'); i >= 0 {
		v.Build = rest[i+1:]
		rest = rest[:i]
		if !validIdentifiers(v.Build, false) {
			return Version{}, fmt.Errorf("invalid version %q: bad build metadata", s)
		}
	}
	if i := strings.IndexByte(rest, '-'); i >= 0 {
		v.PreRelease = rest[i+1:]
		rest = rest[:i]
		if !validIdentifiers(v.PreRelease, true) {
			return Version{}, fmt.Errorf("invalid version %q: bad pre-release", s)
		}
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 {
		return Version{}, fmt.Errorf("invalid version %q: want vMAJOR.MINOR.PATCH", s)
	}
	nums := make([]int, 3)
	for i, p := range parts {
		n, err := parseNumber(p)
		if err != nil {
			return Version{}, fmt.Errorf("invalid version %q: %v", s, err)
		}
		nums[i] = n
	}
	v.Major, v.Minor, v.Patch = nums[0], nums[1], nums[2]
	return v, nil
}

func parseNumber(p string) (int, error) {
	if p == "" || (len(p) > 1 && p[0] == '0') {
		return 0, fmt.Errorf("bad number %q", p)
	}
	for _, r := range p {
		if r < '0' || r > '9' {
			return 0, fmt.Errorf("bad number %q", p)
		}
	}
	n, err := strconv.Atoi(p)
	if err != nil || n > 1<<20 {
		return 0, fmt.Errorf("bad number %q", p)
	}
	return n, nil
}

func validIdentifiers(s string, numericNoLeadingZero bool) bool {
	if s == "" {
		return false
	}
	for _, id := range strings.Split(s, ".") {
		if id == "" {
			return false
		}
		numeric := true
		for _, r := range id {
			switch {
			case r >= '0' && r <= '9':
			case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '-':
				numeric = false
			default:
				return false
			}
		}
		if numeric && numericNoLeadingZero && len(id) > 1 && id[0] == '0' {
			return false
		}
	}
	return true
}

// String renders the version as Kubernetes does, with a leading "v".
func (v Version) String() string {
	s := fmt.Sprintf("v%d.%d.%d", v.Major, v.Minor, v.Patch)
	if v.PreRelease != "" {
		s += "-" + v.PreRelease
	}
	if v.Build != "" {
		s += "+" + v.Build
	}
	return s
}

// Compare returns -1, 0 or 1 as v sorts before, with or after o, by semver
// precedence (build metadata ignored).
func (v Version) Compare(o Version) int {
	for _, d := range [...]int{v.Major - o.Major, v.Minor - o.Minor, v.Patch - o.Patch} {
		if d != 0 {
			return sign(d)
		}
	}
	return comparePreRelease(v.PreRelease, o.PreRelease)
}

// LessThan reports whether v has lower precedence than o.
func (v Version) LessThan(o Version) bool { return v.Compare(o) < 0 }

func comparePreRelease(a, b string) int {
	switch {
	case a == b:
		return 0
	case a == "":
		return 1 // a release sorts after its pre-releases
	case b == "":
		return -1
	}
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		if c := compareIdentifier(as[i], bs[i]); c != 0 {
			return c
		}
	}
	return sign(len(as) - len(bs))
}

func compareIdentifier(a, b string) int {
	an, bn := isNumeric(a), isNumeric(b)
	switch {
	case an && bn:
		// No leading zeros (ParseVersion checks), so the longer number is
		// the larger: no integer conversion that could overflow.
		if len(a) != len(b) {
			return sign(len(a) - len(b))
		}
		return strings.Compare(a, b)
	case an:
		return -1 // numeric identifiers sort before alphanumeric ones
	case bn:
		return 1
	}
	return strings.Compare(a, b)
}

// isNumeric reports whether a semver identifier is numeric: digits only
// ("-1" is alphanumeric).
func isNumeric(id string) bool {
	for i := 0; i < len(id); i++ {
		if id[i] < '0' || id[i] > '9' {
			return false
		}
	}
	return id != ""
}

func sign(d int) int {
	switch {
	case d < 0:
		return -1
	case d > 0:
		return 1
	}
	return 0
}
