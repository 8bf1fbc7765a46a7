package providers

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/kubelet-compat/kubelet-compat/pkg/modfetch"
)

// Manifests are made the way CAPI's release makes a provider's components
// YAML, `kustomize build config/default` and clusterctl's variable
// substitution, with kustomize's library (sigs.k8s.io/kustomize/api) over
// the module's own config tree; then cert-manager's part is replaced: its
// Certificate and Issuer dropped with their inject-ca-from annotations, a
// Secret of a serving certificate from our CA put where the Deployment
// mounts it, and the CA put in every caBundle.

// Variables are the values of clusterctl's ${NAME:=default} variables in
// the providers' manifests that differ from the defaults: the runtime SDK
// and in-place updates (core and KCP; off by default in v1.13), and
// ClusterClass (core and CAPD), which CAPD's quick-start flavors use.
var Variables = map[string]string{
	"EXP_RUNTIME_SDK":      "true",
	"EXP_IN_PLACE_UPDATES": "true",
	"CLUSTER_TOPOLOGY":     "true",
}

// variableRE is clusterctl's variable syntax as the components YAML uses it.
var variableRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:=([^}]*))?\}`)

// substitute replaces the variables as clusterctl does (Variables, else the
// default); a variable with neither is an error.
func substitute(in []byte, vars map[string]string) ([]byte, error) {
	var missing []string
	out := variableRE.ReplaceAllFunc(in, func(m []byte) []byte {
		s := variableRE.FindSubmatch(m)
		if v, ok := vars[string(s[1])]; ok {
			return []byte(v)
		}
		if s[2] != nil {
			return s[3]
		}
		missing = append(missing, string(s[1]))
		return m
	})
	if len(missing) > 0 {
		return nil, fmt.Errorf("variables without a value or a default: %s", strings.Join(missing, ", "))
	}
	return out, nil
}

// ModuleDir downloads p's module through the proxy into the cache (or
// finds it there), checked against its pinned sum, and returns its
// directory.
func (p Provider) ModuleDir(ctx context.Context, cacheDir string) (string, error) {
	m, err := modfetch.Download(ctx, cacheDir, p.Module, p.Version, p.Sum)
	if err != nil {
		return "", err
	}
	return m.Dir, nil
}

// Kustomize renders the provider's config tree in moduleDir as CAPI's
// release does, before variables are substituted.
func (p Provider) Kustomize(moduleDir string) ([]byte, error) {
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(moduleDir, p.Config))
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s of %s: %w", p.Config, p.Module, err)
	}
	return m.AsYaml()
}

// Decode reads a YAML stream into objects.
func Decode(stream []byte) ([]*unstructured.Unstructured, error) {
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(stream), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := d.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// Encode writes objects as one YAML stream.
func Encode(objs []*unstructured.Unstructured) ([]byte, error) {
	var b bytes.Buffer
	for _, o := range objs {
		y, err := yaml.Marshal(o.Object)
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.Bytes(), nil
}

const injectCAFrom = "cert-manager.io/inject-ca-from"

// Objects renders the provider's manifests from its module's directory:
// its image, pulled IfNotPresent, the Variables, and cert-manager replaced
// by a serving certificate of ca.
func (p Provider) Objects(moduleDir string, ca *CA) ([]*unstructured.Unstructured, error) {
	raw, err := p.Kustomize(moduleDir)
	if err != nil {
		return nil, err
	}
	sub, err := substitute(raw, Variables)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.Name, err)
	}
	all, err := Decode(sub)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.Name, err)
	}
	var objs, services, deployments []*unstructured.Unstructured
	for _, o := range all {
		if strings.HasPrefix(o.GetAPIVersion(), "cert-manager.io/") {
			continue
		}
		if a := o.GetAnnotations(); a != nil {
			if _, ok := a[injectCAFrom]; ok {
				delete(a, injectCAFrom)
				if len(a) == 0 {
					a = nil
				}
				o.SetAnnotations(a)
			}
		}
		switch o.GetKind() {
		case "Service":
			if strings.HasSuffix(o.GetName(), "webhook-service") {
				services = append(services, o)
			}
		case "Deployment":
			deployments = append(deployments, o)
		}
		objs = append(objs, o)
	}
	if len(services) != 1 || len(deployments) != 1 {
		return nil, fmt.Errorf("%s: %d webhook Services and %d Deployments, want one of each", p.Name, len(services), len(deployments))
	}
	secretName, err := p.setDeployment(deployments[0])
	if err != nil {
		return nil, err
	}
	if err := patchCABundles(objs, ca.CertPEM); err != nil {
		return nil, fmt.Errorf("%s: %w", p.Name, err)
	}
	svc := services[0]
	secret, err := servingSecret(ca, secretName, svc.GetNamespace(), svc.GetLabels(), ServiceDNSNames(svc.GetName(), svc.GetNamespace())...)
	if err != nil {
		return nil, err
	}
	return insertAfterNamespaces(objs, secret), nil
}

// setDeployment names the image, IfNotPresent, in the manager container
// and returns the Secret its webhook certificate volume mounts.
func (p Provider) setDeployment(d *unstructured.Unstructured) (string, error) {
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	set := 0
	for _, c := range containers {
		c := c.(map[string]any)
		if c["name"] == "manager" {
			c["image"], c["imagePullPolicy"] = p.Image(), "IfNotPresent"
			set++
		}
	}
	if set != 1 {
		return "", fmt.Errorf("%s: %d containers named manager", p.Name, set)
	}
	if err := unstructured.SetNestedSlice(d.Object, containers, "spec", "template", "spec", "containers"); err != nil {
		return "", err
	}
	volumes, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "volumes")
	for _, v := range volumes {
		v := v.(map[string]any)
		if v["name"] == "cert" {
			if name, _, _ := unstructured.NestedString(v, "secret", "secretName"); name != "" {
				return name, nil
			}
		}
	}
	return "", fmt.Errorf("%s: the Deployment mounts no Secret as volume cert", p.Name)
}

// patchCABundles puts caPEM in every webhook of the webhook configurations
// and in every CRD's conversion webhook.
func patchCABundles(objs []*unstructured.Unstructured, caPEM []byte) error {
	bundle := base64.StdEncoding.EncodeToString(caPEM)
	for _, o := range objs {
		switch o.GetKind() {
		case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
			hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
			for _, h := range hooks {
				if err := unstructured.SetNestedField(h.(map[string]any), bundle, "clientConfig", "caBundle"); err != nil {
					return err
				}
			}
			if err := unstructured.SetNestedSlice(o.Object, hooks, "webhooks"); err != nil {
				return err
			}
		case "CustomResourceDefinition":
			if s, _, _ := unstructured.NestedString(o.Object, "spec", "conversion", "strategy"); s == "Webhook" {
				if err := unstructured.SetNestedField(o.Object, bundle, "spec", "conversion", "webhook", "clientConfig", "caBundle"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// servingSecret is the TLS Secret cert-manager would have made: tls.crt,
// tls.key and ca.crt.
func servingSecret(ca *CA, name, namespace string, labels map[string]string, dnsNames ...string) (*unstructured.Unstructured, error) {
	crt, key, err := ca.Serving(dnsNames...)
	if err != nil {
		return nil, err
	}
	s := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"data": map[string]any{
			"tls.crt": base64.StdEncoding.EncodeToString(crt),
			"tls.key": base64.StdEncoding.EncodeToString(key),
			"ca.crt":  base64.StdEncoding.EncodeToString(ca.CertPEM),
		},
	}}
	if len(labels) > 0 {
		s.SetLabels(labels)
	}
	return s, nil
}

// insertAfterNamespaces puts o after the leading Namespaces, before
// anything that could need it.
func insertAfterNamespaces(objs []*unstructured.Unstructured, o *unstructured.Unstructured) []*unstructured.Unstructured {
	i := 0
	for i < len(objs) && objs[i].GetKind() == "Namespace" {
		i++
	}
	return append(objs[:i], append([]*unstructured.Unstructured{o}, objs[i:]...)...)
}

// Render is the management cluster's manifests: the providers in All's
// order, each from its module's directory (dirs, by module path), then the
// extension's objects.
func Render(dirs map[string]string, ca *CA, ext ExtensionOptions) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for _, p := range All {
		dir, ok := dirs[p.Module]
		if !ok {
			return nil, fmt.Errorf("no directory of module %s", p.Module)
		}
		o, err := p.Objects(dir, ca)
		if err != nil {
			return nil, err
		}
		objs = append(objs, o...)
	}
	o, err := ExtensionObjects(ext, ca)
	if err != nil {
		return nil, err
	}
	return append(objs, o...), nil
}
