package nodeimage

import (
	"fmt"
	"regexp"
)

var versionPattern = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)

// checkVersion accepts major.minor.patch without a leading v (1.21.14), as
// the harness names its output directories.
func checkVersion(v string) error {
	if !versionPattern.MatchString(v) {
		return fmt.Errorf("invalid Kubernetes version %q: want major.minor.patch without a leading v, e.g. 1.21.14", v)
	}
	return nil
}
