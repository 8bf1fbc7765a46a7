package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The Job settings Controller gives SUC in its ConfigMap, which NodeJob
// applies as SUC does: one place for both.
const (
	// jobBackoffLimit 0: a Job starts no second pod itself (kc-roll keeps
	// the roll's state on the node; a re-run is a new Job).
	jobBackoffLimit = 0
	// jobPullPolicy: a fleet without a registry has the images loaded.
	jobPullPolicy = corev1.PullIfNotPresent
	// jobPrivileged: kc-roll runs the node's programs through chroot.
	jobPrivileged = true
	// sucPodReplacementPolicy is SUC's default, which Controller leaves.
	sucPodReplacementPolicy = batchv1.TerminatingOrFailed
)

// kubectlImage is the image of SUC's cordon step: the upgrade image of the
// target version, whose entrypoint is its kubectl.
func (o Options) kubectlImage() string { return o.ImageName() + ":" + o.Version }

// SUC's labels and annotation on its Jobs (pkg/apis/upgrade.cattle.io).
const (
	sucLabelController = "upgrade.cattle.io/controller"
	sucLabelExclusive  = "upgrade.cattle.io/exclusive"
	sucLabelNode       = "upgrade.cattle.io/node"
	sucLabelPlan       = "upgrade.cattle.io/plan"
	sucLabelVersion    = "upgrade.cattle.io/version"
	sucAnnotationTTL   = "upgrade.cattle.io/ttl-seconds-after-finished"
	// sucControllerName is the controller's name in Controller's
	// Deployment (its label upgrade.cattle.io/controller).
	sucControllerName = "system-upgrade-controller"
)

// The Cluster API extension's labels and annotation on its Jobs
// (deploy/cluster-api/update), in place of SUC's: a system-upgrade-controller
// in the same cluster would take a Job with SUC's for one of its Plans'.
const (
	CAPILabelManagedBy = "app.kubernetes.io/managed-by"
	CAPIManagedBy      = "kc-capi-extension"
	// CAPILabelKey is the Job's key (update.Key of the Machine and version).
	CAPILabelKey = "kubelet-compat.io/machine-key"
	// CAPILabelVersion is the roll's target version.
	CAPILabelVersion = "kubelet-compat.io/version"
	// CAPILabelNode is the node the Job rolls.
	CAPILabelNode = "kubelet-compat.io/node"
	// CAPIAnnotationMachine is the Machine, NAMESPACE/NAME, in the
	// management cluster.
	CAPIAnnotationMachine = "kubelet-compat.io/machine"
)

// NodeJob is the Job SUC (SUCVersion, pkg/upgrade/job.New) makes of Plan p
// for node under Controller(o)'s settings, once the node is in the Plan's
// applying list (parallelism 1), hash standing for the Plan's latest hash.
// It is written from SUC's code for the Plans' fields (no drain, secrets,
// volumes, exclusive or Windows node); testdata/suc-jobs holds SUC's own
// output for the goldens' Plans, which it must equal. The Cluster API
// extension runs it as it is but for its name and labels: the same pod,
// host mounts, security context, environment and image as the fleet's.
func (o Options) NodeJob(p Plan, node *corev1.Node, hash string) batchv1.Job {
	hostname := node.Name
	if h, ok := node.Labels[corev1.LabelHostname]; ok {
		hostname = h
	}
	short, _, _ := strings.Cut(node.Name, ".")
	ttl := int32(o.jobTTL())
	version := p.Spec.Version
	jobAnnotations := map[string]string{sucAnnotationTTL: strconv.FormatInt(int64(ttl), 10)}
	var podAnnotations map[string]string
	for k, v := range p.Metadata.Annotations {
		if !strings.Contains(k, "cattle.io/") && !strings.Contains(k, "kubectl.kubernetes.io/") {
			jobAnnotations[k] = v
			if podAnnotations == nil {
				podAnnotations = map[string]string{}
			}
			podAnnotations[k] = v
		}
	}
	labels := map[string]string{
		sucLabelController: sucControllerName,
		sucLabelExclusive:  "false",
		sucLabelNode:       node.Name,
		sucLabelPlan:       p.Metadata.Name,
		sucLabelVersion:    version,
		"plan.upgrade.cattle.io/" + p.Metadata.Name: hash,
	}
	for k, v := range p.Metadata.Labels {
		if !strings.Contains(k, "cattle.io/") {
			labels[k] = v
		}
	}
	planEnv := []corev1.EnvVar{
		{Name: "SYSTEM_UPGRADE_PLAN_NAME", Value: p.Metadata.Name},
		{Name: "SYSTEM_UPGRADE_PLAN_LATEST_HASH", Value: hash},
		{Name: "SYSTEM_UPGRADE_PLAN_LATEST_VERSION", Value: version},
	}
	container := func(name string, c ContainerSpec, sc *corev1.SecurityContext) corev1.Container {
		return sucContainer(name, c, sc, planEnv)
	}
	tagged := func(c ContainerSpec) ContainerSpec {
		c.Image = withTag(c.Image, version)
		return c
	}
	var initContainers []corev1.Container
	if p.Spec.Prepare != nil {
		initContainers = append(initContainers, container("prepare", tagged(*p.Spec.Prepare), nil))
	}
	if p.Spec.Cordon {
		initContainers = append(initContainers, container("cordon", ContainerSpec{Image: o.kubectlImage(), Args: []string{"cordon", node.Name}}, nil))
	}
	privileged := jobPrivileged
	upgrade := container("upgrade", tagged(*p.Spec.Upgrade), &corev1.SecurityContext{
		Privileged: &privileged, Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"CAP_SYS_BOOT"}}})
	// A Plan's deadline of 0 is unset (omitempty): SUC's default, which
	// Controller sets to o.JobDeadline.
	deadline := o.JobDeadline
	if p.Spec.JobActiveDeadlineSecs > 0 {
		deadline = p.Spec.JobActiveDeadlineSecs
	}
	directory := corev1.HostPathDirectory
	mode := int32(0o644)
	backoff, one, replacement := int32(jobBackoffLimit), int32(1), sucPodReplacementPolicy
	return batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:        safeConcatName("apply", p.Metadata.Name, "on", short, "with", hash),
			Namespace:   p.Metadata.Namespace,
			Annotations: jobAnnotations,
			Labels:      labels,
		},
		Spec: batchv1.JobSpec{
			PodReplacementPolicy:    &replacement,
			BackoffLimit:            &backoff,
			TTLSecondsAfterFinished: &ttl,
			Completions:             &one,
			Parallelism:             &one,
			ActiveDeadlineSeconds:   &deadline,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: podAnnotations, Labels: labels},
				Spec: corev1.PodSpec{
					HostIPC: true, HostPID: true, HostNetwork: true,
					DNSPolicy:          corev1.DNSClusterFirstWithHostNet,
					ServiceAccountName: p.Spec.ServiceAccountName,
					Affinity: &corev1.Affinity{
						NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
							NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
								{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{hostname}}}}}}},
						PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
							LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
								{Key: sucLabelPlan, Operator: metav1.LabelSelectorOpIn, Values: []string{p.Metadata.Name}}}},
							TopologyKey: corev1.LabelHostname}}},
					},
					// The controller's cordon must not keep the Job off its node.
					Tolerations: append([]corev1.Toleration{{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists,
						Effect: corev1.TaintEffectNoSchedule}}, p.Spec.Tolerations...),
					RestartPolicy: corev1.RestartPolicyNever,
					Volumes: []corev1.Volume{
						{Name: "host-root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/", Type: &directory}}},
						{Name: "pod-info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
							DefaultMode: &mode,
							Items: []corev1.DownwardAPIVolumeFile{
								{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels", APIVersion: "v1"}},
								{Path: "annotations", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations", APIVersion: "v1"}},
							}}}},
					},
					InitContainers: initContainers,
					Containers:     []corev1.Container{upgrade},
				},
			},
		},
	}
}

// sucContainer is SUC's container of a step (pkg/upgrade/container.New and
// the options job.New gives it): the step's image, command, arguments and
// environment after the node's, the pod's and the Plan's; the node's root
// at /host, the pod's labels and annotations at /run/system-upgrade/pod.
func sucContainer(name string, c ContainerSpec, sc *corev1.SecurityContext, planEnv []corev1.EnvVar) corev1.Container {
	field := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	env := append([]corev1.EnvVar{
		field("SYSTEM_UPGRADE_NODE_NAME", "spec.nodeName"),
		field("SYSTEM_UPGRADE_POD_NAME", "metadata.name"),
		field("SYSTEM_UPGRADE_POD_UID", "metadata.uid"),
	}, c.Env...)
	return corev1.Container{
		Name: name, Image: c.Image, Command: c.Command, Args: c.Args,
		Env: append(env, planEnv...),
		VolumeMounts: []corev1.VolumeMount{
			{Name: "host-root", MountPath: "/host"},
			{Name: "pod-info", MountPath: "/run/system-upgrade/pod", ReadOnly: true},
		},
		ImagePullPolicy: jobPullPolicy,
		SecurityContext: sc,
	}
}

// withTag is SUC's WithLatestTag for the Plans' images: an image named
// without a tag or digest gets tag.
func withTag(image, tag string) string {
	last := image[strings.LastIndex(image, "/")+1:]
	if strings.ContainsAny(last, ":@") {
		return image
	}
	return image + ":" + tag
}

// safeConcatName is wrangler's name.SafeConcatName, which names SUC's
// Jobs: the parts joined with "-", cut to 63 characters with a digest.
func safeConcatName(parts ...string) string {
	full := strings.Join(parts, "-")
	if len(full) < 64 {
		return full
	}
	digest := sha256.Sum256([]byte(full))
	sum := hex.EncodeToString(digest[:])
	// A cut in the middle may end on a character a name cannot end with.
	if c := full[56]; 'a' <= c && c <= 'z' || '0' <= c && c <= '9' {
		return full[:57] + "-" + sum[:5]
	}
	return full[:56] + "-" + sum[:6]
}
