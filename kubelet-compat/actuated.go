package kubeletcompat

import (
	"reflect"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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

// LegacyActuatedResources returns what to record as actuated for a running
// container that ActuatedAsAllocated takes over from the previous kubelet.
// Where the container runtime reports what the container runs with (the
// CRI's container status resources; pass nil for what it does not report),
// that is recorded. Otherwise the allocated value is recorded only for a
// resource whose resizePolicy is RestartContainer, the case that would
// restart the container. A resource with the default NotRequired policy
// that the runtime does not report stays unrecorded: the kubelet compares it
// with zero and actuates the allocation in place, without a restart, as
// upstream does, so a resize the API server accepted while the previous
// kubelet ran (and ignored) is actuated, not hidden. Resources that are
// never resized in place are recorded as allocated.
func LegacyActuatedResources(c *v1.Container, cpuRequest, cpuLimit, memoryRequest, memoryLimit *resource.Quantity) v1.ResourceRequirements {
	var out v1.ResourceRequirements
	if c == nil {
		return out
	}
	set := func(list *v1.ResourceList, name v1.ResourceName, q resource.Quantity) {
		if *list == nil {
			*list = v1.ResourceList{}
		}
		(*list)[name] = q.DeepCopy()
	}
	for name, q := range c.Resources.Requests {
		if name != v1.ResourceCPU && name != v1.ResourceMemory {
			set(&out.Requests, name, q)
		}
	}
	for name, q := range c.Resources.Limits {
		if name != v1.ResourceCPU && name != v1.ResourceMemory {
			set(&out.Limits, name, q)
		}
	}
	for _, r := range []struct {
		name           v1.ResourceName
		request, limit *resource.Quantity
	}{
		{v1.ResourceCPU, cpuRequest, cpuLimit},
		{v1.ResourceMemory, memoryRequest, memoryLimit},
	} {
		restart := resizeRestarts(c, r.name)
		for _, f := range []struct {
			reported  *resource.Quantity
			allocated v1.ResourceList
			out       *v1.ResourceList
		}{
			{r.request, c.Resources.Requests, &out.Requests},
			{r.limit, c.Resources.Limits, &out.Limits},
		} {
			allocated, ok := f.allocated[r.name]
			switch {
			case f.reported != nil:
				set(f.out, r.name, *f.reported)
			case restart && ok:
				set(f.out, r.name, allocated)
			}
		}
	}
	return out
}

// resizeRestarts reports whether the container's resizePolicy restarts it
// for a change of the resource (the default is NotRequired). The field is
// read by name: the library builds against every supported tree's API, and
// v1.Container has ResizePolicy only from 1.27.
func resizeRestarts(c *v1.Container, name v1.ResourceName) bool {
	policies := reflect.ValueOf(c).Elem().FieldByName("ResizePolicy")
	if !policies.IsValid() || policies.Kind() != reflect.Slice {
		return false
	}
	for i := 0; i < policies.Len(); i++ {
		p := policies.Index(i)
		if p.FieldByName("ResourceName").String() == string(name) {
			return p.FieldByName("RestartPolicy").String() == "RestartContainer"
		}
	}
	return false
}
