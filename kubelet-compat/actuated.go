package kubeletcompat

import (
	v1 "k8s.io/api/core/v1"
)

// ActuatedAsAllocated reports whether a running container that has no
// actuated-resources record is taken to run with its allocated resources:
// the compat file in force lists it, so the previous kubelet started it, and
// kubelets before 1.33 keep no such record. Without one the kubelets 1.33 to
// 1.36 compare the container's resources with zero and restart it when its
// resizePolicy says RestartContainer (1.37 initialises the record from the
// allocated resources itself). A container started after the file was
// recorded is never listed; without a file in force the answer is no.
func (d *Decider) ActuatedAsAllocated(containerID string) (bool, string) {
	if containerID == "" || !d.InForce() {
		return false, ""
	}
	if _, ok := d.containers[containerID]; !ok {
		return false, ""
	}
	return true, "container " + containerID + " is listed in the compat file"
}

// ActuatedAsAllocated is Decider.ActuatedAsAllocated on the compat file as
// it is now; the kubelet asks it when a running container has no actuated
// resources record, and then records the allocated resources as actuated.
// Each container is logged once. Without a file in force, or for a nil
// Compat, it is false: upstream behaviour.
func (c *Compat) ActuatedAsAllocated(pod *v1.Pod, containerName, containerID string) bool {
	ok, why := c.decider().ActuatedAsAllocated(containerID)
	if ok {
		c.logOnce("actuated "+containerID, "Taking the allocated resources of a container started by the previous kubelet as actuated",
			"pod", pod.Namespace+"/"+pod.Name, "containerName", containerName, "containerID", containerID, "startedBefore", why)
	}
	return ok
}
