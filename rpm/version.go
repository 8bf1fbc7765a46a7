package rpm

import (
	"fmt"
	"regexp"
)

var versionPattern = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)

// CheckVersion accepts a Kubernetes version as the packages name it:
// major.minor.patch without a leading v, e.g. 1.21.14.
func CheckVersion(v string) error {
	if !versionPattern.MatchString(v) {
		return fmt.Errorf("invalid Kubernetes version %q: want major.minor.patch without a leading v, e.g. 1.21.14", v)
	}
	return nil
}

// reportsVersion tells whether a binary's version output names exactly v
// ("v1.21.14", not "v1.21.140"), to catch binaries of the wrong version.
func reportsVersion(output []byte, v string) bool {
	return regexp.MustCompile(`(^|[^0-9.])v` + regexp.QuoteMeta(v) + `([^0-9.]|$)`).Match(output)
}
