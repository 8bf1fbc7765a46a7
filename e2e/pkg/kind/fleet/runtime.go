package fleet

import (
	"context"
	"fmt"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
)

// checkRuntimeMoved checks, after the runtime roll, that every node's
// containerd is the one the Plans named: the CRI's answer (crictl
// version) and the selection (runtime-select status).
func (f *fleetRun) checkRuntimeMoved(ctx context.Context) error {
	c := report.Check{Name: fmt.Sprintf("%s: every node runs containerd %s after the roll (KC_RUNTIME)", f.label(), f.runtime.Version), Passed: true}
	var per []string
	for _, n := range f.Cluster.Nodes {
		version, _ := n.Exec(ctx, nil, "crictl", "--timeout", "10s", "version")
		status, _ := n.Exec(ctx, nil, "runtime-select", "status")
		ok := kind.RuntimeVersionIs(string(version), f.runtime.Version) && strings.Contains(string(status), "containerd: "+f.runtime.Version)
		c.Passed = c.Passed && ok
		per = append(per, fmt.Sprintf("%s %s (%s)", n.Name(), map[bool]string{true: "yes", false: "NO"}[ok], strings.Join(strings.Fields(string(status)), " ")))
	}
	c.Detail = strings.Join(per, "; ")
	f.Logf("check %q: passed %t: %s", c.Name, c.Passed, c.Detail)
	f.Record(c)
	return nil
}
