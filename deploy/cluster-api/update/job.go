package update

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelet-compat/kubelet-compat/deploy/system-upgrade/manifest"
)

// Role is a Machine's kc-roll role (KC_ROLE): control-plane for a
// Machine of a control plane (KCP's label), worker for the others.
func Role(labels map[string]string) string {
	if _, ok := labels["cluster.x-k8s.io/control-plane"]; ok {
		return "control-plane"
	}
	return "worker"
}

// Key is what the Job of a Machine's roll to version is named by: the same
// Machine and version, the same Job, whoever asks and how often.
func Key(machine types.NamespacedName, version string) string {
	sum := sha256.Sum256([]byte(machine.String() + "@" + version))
	return hex.EncodeToString(sum[:8])
}

// Job is the Job of a Machine's roll on its node: the Job SUC makes of the
// fleet's Plan for the Machine's role (manifest.NodeJob: the same image,
// kc-roll mode, environment, host mounts and security context), without
// the Plan's steps that are CAPI's (the workers' wait for the control
// plane's Plan: CAPI orders the roll; the cordon: CAPI does not cordon for
// an in-place update), with its own labels. Its name is SUC's form,
// apply-<plan>-on-<node>-with-<key>, which kc-roll's gate knows as a Job
// pod of the Plan.
func Job(o manifest.Options, role string, node *corev1.Node, machine types.NamespacedName) (batchv1.Job, error) {
	plans, err := manifest.Plans(o)
	if err != nil {
		return batchv1.Job{}, err
	}
	var plan manifest.Plan
	switch role {
	case "control-plane":
		plan = plans[0]
	case "worker":
		plan = plans[1]
	default:
		return batchv1.Job{}, fmt.Errorf("role %q: want control-plane or worker", role)
	}
	plan.Spec.Prepare, plan.Spec.Cordon = nil, false
	key := Key(machine, o.Version)
	job := o.NodeJob(plan, node, key)
	own := func(m map[string]string) map[string]string {
		out := map[string]string{manifest.CAPILabelManagedBy: manifest.CAPIManagedBy, manifest.CAPILabelKey: key,
			manifest.CAPILabelVersion: o.Version, manifest.CAPILabelNode: node.Name}
		for k, v := range m {
			if !strings.Contains(k, "cattle.io/") {
				out[k] = v
			}
		}
		return out
	}
	job.Labels = own(job.Labels)
	job.Spec.Template.Labels = own(job.Spec.Template.Labels)
	job.Annotations = map[string]string{manifest.CAPIAnnotationMachine: machine.String()}
	return job, nil
}
