package rpm

import "github.com/kubelet-compat/kubelet-compat/pkg/layout"

// CheckVersion accepts a Kubernetes version as the packages name it:
// major.minor.patch without a leading v, e.g. 1.21.14.
func CheckVersion(v string) error { return layout.CheckVersion(v) }

// reportsVersion tells whether a binary's version output names exactly v.
func reportsVersion(output []byte, v string) bool { return layout.ReportsVersion(output, v) }
