package manifest

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// SetDefaults applies the defaults of k8s.io/kubernetes/pkg/apis/core/v1
// that reach v1.Container. The kubelet hashes defaulted containers (static
// pods are defaulted when decoded, API pods by the apiserver), so a hash
// computed from an undefaulted manifest would never match a stored one.
// These defaults have not changed between 1.16 and 1.31 except where noted.
func SetDefaults(pod *v1.Pod) {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			c := &list[i]
			setContainerDefaults(c)
			if pod.Spec.HostNetwork {
				// defaultHostNetworkPorts: hostPort follows containerPort.
				for j := range c.Ports {
					if c.Ports[j].HostPort == 0 {
						c.Ports[j].HostPort = c.Ports[j].ContainerPort
					}
				}
			}
			// SetDefaults_Pod: requests default to limits.
			if c.Resources.Limits != nil {
				if c.Resources.Requests == nil {
					c.Resources.Requests = v1.ResourceList{}
				}
				for k, q := range c.Resources.Limits {
					if _, ok := c.Resources.Requests[k]; !ok {
						c.Resources.Requests[k] = q.DeepCopy()
					}
				}
			}
		}
	}
}

func setContainerDefaults(c *v1.Container) {
	if c.ImagePullPolicy == "" {
		if imageTag(c.Image) == "latest" {
			c.ImagePullPolicy = v1.PullAlways
		} else {
			c.ImagePullPolicy = v1.PullIfNotPresent
		}
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = v1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = v1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = v1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil && vf.FieldRef != nil && vf.FieldRef.APIVersion == "" {
			vf.FieldRef.APIVersion = "v1"
		}
	}
	for _, p := range []*v1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if p == nil {
			continue
		}
		if p.TimeoutSeconds == 0 {
			p.TimeoutSeconds = 1
		}
		if p.PeriodSeconds == 0 {
			p.PeriodSeconds = 10
		}
		if p.SuccessThreshold == 0 {
			p.SuccessThreshold = 1
		}
		if p.FailureThreshold == 0 {
			p.FailureThreshold = 3
		}
		setHTTPGetDefaults(p.HTTPGet)
		if p.GRPC != nil && p.GRPC.Service == nil { // 1.24+
			empty := ""
			p.GRPC.Service = &empty
		}
	}
	if l := c.Lifecycle; l != nil {
		for _, h := range []*v1.LifecycleHandler{l.PostStart, l.PreStop} {
			if h != nil {
				setHTTPGetDefaults(h.HTTPGet)
			}
		}
	}
}

func setHTTPGetDefaults(h *v1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = v1.URISchemeHTTP
	}
}

// imageTag is the tag parsers.ParseImageName finds: "latest" when the
// reference has neither a tag nor a digest, "" for a digest only.
func imageTag(image string) string {
	name := image
	digest := false
	if i := strings.IndexByte(name, '@'); i >= 0 {
		name, digest = name[:i], true
	}
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		return name[i+1:]
	}
	if digest {
		return ""
	}
	return "latest"
}
