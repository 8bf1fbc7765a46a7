package providers

import (
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// The extension's objects in the management cluster.
const (
	ExtensionNamespace = "kc-capi-extension"
	ExtensionName      = "kc-capi-extension"
	// ExtensionCertSecret holds the extension's serving certificate and,
	// as ca.crt, the CA that CAPI injects into the ExtensionConfig.
	ExtensionCertSecret = ExtensionName + "-cert"
	// ExtensionConfigName is the ExtensionConfig's name: CAPI names the
	// handlers <handler>.kubelet-compat.
	ExtensionConfigName = "kubelet-compat"
	injectCAFromSecret  = "runtime.cluster.x-k8s.io/inject-ca-from-secret"
	certDir             = "/tmp/k8s-webhook-server/serving-certs"
)

// ExtensionOptions say how the extension runs.
type ExtensionOptions struct {
	// Image is the extension's image (ExtensionImage).
	Image string
	// UpgradeImage is kc-capi-extension's -upgrade-image; empty: its default.
	UpgradeImage string
	// Namespaces are the Clusters' namespaces: the ExtensionConfig selects
	// them, and the extension may read Secrets (the clusters' kubeconfigs)
	// in them only.
	Namespaces []string
	// Settings are the ExtensionConfig's settings (README's table).
	Settings map[string]string
}

// ExtensionObjects are the extension's Namespace, serving-certificate
// Secret, ServiceAccount and RBAC (get on Machines everywhere, get on
// Secrets in the Namespaces), Deployment, Service and ExtensionConfig.
func ExtensionObjects(o ExtensionOptions, ca *CA) ([]*unstructured.Unstructured, error) {
	if o.Image == "" || len(o.Namespaces) == 0 {
		return nil, fmt.Errorf("the extension needs an image and at least one namespace")
	}
	labels := map[string]string{"app.kubernetes.io/name": ExtensionName, "app.kubernetes.io/part-of": "kubelet-compat"}
	meta := func(name, namespace string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels}
	}
	args := []string{"-cert-dir=" + certDir}
	if o.UpgradeImage != "" {
		args = append(args, "-upgrade-image="+o.UpgradeImage)
	}
	typed := []runtime.Object{
		&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: meta(ExtensionNamespace, "")},
		&corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: meta(ExtensionName, ExtensionNamespace)},
		&rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"}, ObjectMeta: meta(ExtensionName, ""),
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"cluster.x-k8s.io"}, Resources: []string{"machines"}, Verbs: []string{"get"}}}},
		&rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"}, ObjectMeta: meta(ExtensionName, ""),
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: ExtensionName},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: ExtensionName, Namespace: ExtensionNamespace}}},
	}
	for _, ns := range o.Namespaces {
		typed = append(typed,
			&rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"}, ObjectMeta: meta(ExtensionName+"-kubeconfigs", ns),
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}},
			&rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"}, ObjectMeta: meta(ExtensionName+"-kubeconfigs", ns),
				RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: ExtensionName + "-kubeconfigs"},
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: ExtensionName, Namespace: ExtensionNamespace}}})
	}
	selector := map[string]string{"app.kubernetes.io/name": ExtensionName}
	typed = append(typed,
		&appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: meta(ExtensionName, ExtensionNamespace),
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: selector},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
					ServiceAccountName: ExtensionName,
					Containers: []corev1.Container{{Name: "extension", Image: o.Image, ImagePullPolicy: corev1.PullIfNotPresent, Args: args,
						Ports:          []corev1.ContainerPort{{Name: "https", ContainerPort: 9443, Protocol: corev1.ProtocolTCP}},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("https")}}},
						VolumeMounts:   []corev1.VolumeMount{{Name: "cert", MountPath: certDir, ReadOnly: true}},
						SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), Privileged: ptr.To(false),
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}, RunAsUser: ptr.To[int64](65532), RunAsGroup: ptr.To[int64](65532)},
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError}},
					Volumes:         []corev1.Volume{{Name: "cert", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: ExtensionCertSecret}}}},
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					Tolerations:     []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}},
				}}}},
		&corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: meta(ExtensionName, ExtensionNamespace),
			Spec: corev1.ServiceSpec{Selector: selector, Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromString("https"), Protocol: corev1.ProtocolTCP}}}},
	)
	var objs []*unstructured.Unstructured
	for _, t := range typed {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(t)
		if err != nil {
			return nil, err
		}
		clean(m)
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	secret, err := servingSecret(ca, ExtensionCertSecret, ExtensionNamespace, labels, ServiceDNSNames(ExtensionName, ExtensionNamespace)...)
	if err != nil {
		return nil, err
	}
	objs = insertAfterNamespaces(objs, secret)
	return append(objs, extensionConfig(o, labels)), nil
}

// extensionConfig registers the extension; CAPI fills its caBundle from
// ca.crt of the certificate's Secret.
func extensionConfig(o ExtensionOptions, labels map[string]string) *unstructured.Unstructured {
	ns := append([]string(nil), o.Namespaces...)
	sort.Strings(ns)
	nsAny := make([]any, len(ns))
	for i, n := range ns {
		nsAny[i] = n
	}
	spec := map[string]any{
		"clientConfig": map[string]any{"service": map[string]any{"name": ExtensionName, "namespace": ExtensionNamespace, "port": int64(443)}},
		"namespaceSelector": map[string]any{"matchExpressions": []any{map[string]any{
			"key": "kubernetes.io/metadata.name", "operator": "In", "values": nsAny}}},
	}
	if len(o.Settings) > 0 {
		s := map[string]any{}
		for k, v := range o.Settings {
			s[k] = v
		}
		spec["settings"] = s
	}
	l := map[string]any{}
	for k, v := range labels {
		l[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "runtime.cluster.x-k8s.io/v1beta2", "kind": "ExtensionConfig",
		"metadata": map[string]any{"name": ExtensionConfigName, "labels": l,
			"annotations": map[string]any{injectCAFromSecret: ExtensionNamespace + "/" + ExtensionCertSecret}},
		"spec": spec,
	}}
}

// clean drops what a typed object's conversion adds and an apply does not
// want: empty statuses and null creation timestamps.
func clean(m map[string]any) {
	delete(m, "status")
	for _, path := range [][]string{{"metadata"}, {"spec", "template", "metadata"}} {
		if md, ok, _ := unstructured.NestedMap(m, path...); ok {
			if md["creationTimestamp"] == nil {
				delete(md, "creationTimestamp")
				_ = unstructured.SetNestedMap(m, md, path...)
			}
		}
	}
	if spec, ok := m["spec"].(map[string]any); ok && len(spec) == 0 {
		delete(m, "spec")
	}
	if spec, ok := m["spec"].(map[string]any); ok {
		if strat, ok := spec["strategy"].(map[string]any); ok && len(strat) == 0 {
			delete(spec, "strategy")
		}
		if tmpl, ok := spec["template"].(map[string]any); ok {
			if ps, ok := tmpl["spec"].(map[string]any); ok {
				for _, c := range ps["containers"].([]any) {
					if r, ok := c.(map[string]any)["resources"].(map[string]any); ok && len(r) == 0 {
						delete(c.(map[string]any), "resources")
					}
				}
			}
		}
	}
}
