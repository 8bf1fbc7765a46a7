package providers

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"

	"github.com/kubelet-compat/kubelet-compat/pkg/cachedir"
	"github.com/kubelet-compat/kubelet-compat/pkg/ocilayout"
)

// moduleDirs fetches the providers' modules (through the proxy into
// $KC_CACHE, once) for the tests.
var moduleDirs = sync.OnceValues(func() (map[string]string, error) {
	cache := cachedir.Resolve(os.Getenv(cachedir.Env))
	dirs := map[string]string{}
	for _, p := range All {
		d, err := p.ModuleDir(context.Background(), cache)
		if err != nil {
			return nil, err
		}
		dirs[p.Module] = d
	}
	return dirs, nil
})

var testCA = sync.OnceValues(NewCA)

var testOptions = ExtensionOptions{Image: ExtensionImage("0123456789ab"), Namespaces: []string{"default", "fleet"},
	UpgradeImage: "kubelet-compat.local/system-upgrade/upgrade", Settings: map[string]string{"gateTimeout": "300"}}

func render(t *testing.T) ([]*unstructured.Unstructured, *CA) {
	t.Helper()
	dirs, err := moduleDirs()
	assert.NilError(t, err)
	ca, err := testCA()
	assert.NilError(t, err)
	objs, err := Render(dirs, ca, testOptions)
	assert.NilError(t, err)
	return objs, ca
}

// forGolden replaces what changes with every CA (caBundles, Secrets' data)
// and leaves the CRDs' schemas out (megabytes of CAPI's API, not ours).
func forGolden(t *testing.T, objs []*unstructured.Unstructured, ca *CA) string {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, o := range objs {
		o = o.DeepCopy()
		if o.GetKind() == "Secret" {
			for k := range o.Object["data"].(map[string]any) {
				o.Object["data"].(map[string]any)[k] = "<" + k + ">"
			}
		}
		if o.GetKind() == "CustomResourceDefinition" {
			versions, _, _ := unstructured.NestedSlice(o.Object, "spec", "versions")
			for _, v := range versions {
				if _, ok := v.(map[string]any)["schema"]; ok {
					v.(map[string]any)["schema"] = "<omitted>"
				}
			}
			assert.NilError(t, unstructured.SetNestedSlice(o.Object, versions, "spec", "versions"))
		}
		out = append(out, o)
	}
	y, err := Encode(out)
	assert.NilError(t, err)
	return strings.ReplaceAll(string(y), base64.StdEncoding.EncodeToString(ca.CertPEM), "<CA bundle>")
}

// TestGolden: each provider's and the extension's objects
// (testdata/<name>.yaml.golden; go test ./providers -update rewrites them).
func TestGolden(t *testing.T) {
	dirs, err := moduleDirs()
	assert.NilError(t, err)
	ca, err := testCA()
	assert.NilError(t, err)
	for _, p := range All {
		t.Run(p.Name, func(t *testing.T) {
			objs, err := p.Objects(dirs[p.Module], ca)
			assert.NilError(t, err)
			golden.Assert(t, forGolden(t, objs, ca), p.Name+".yaml.golden")
		})
	}
	objs, err := ExtensionObjects(testOptions, ca)
	assert.NilError(t, err)
	golden.Assert(t, forGolden(t, objs, ca), "kc-capi-extension.yaml.golden")
}

func decodeScheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	assert.NilError(t, scheme.AddToScheme(s))
	assert.NilError(t, apiextensionsv1.AddToScheme(s))
	assert.NilError(t, runtimev1.AddToScheme(s))
	return s
}

// TestObjects: every object decodes strictly into its type (CAPI's own
// CRs excepted: only the ExtensionConfig is one), cert-manager is gone,
// every caBundle is the CA, every serving certificate verifies for its
// Service, the images are ours, IfNotPresent, and the gates are on.
func TestObjects(t *testing.T) {
	objs, ca := render(t)
	s := decodeScheme(t)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM)
	wantBundle := string(ca.CertPEM)
	secrets := map[string]*corev1.Secret{}
	services := map[string]bool{}
	var deployments []*appsv1.Deployment
	webhooks, conversions := 0, 0
	for _, o := range objs {
		id := o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
		typed, err := s.New(o.GroupVersionKind())
		assert.NilError(t, err, id)
		assert.NilError(t, runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, typed, true), id)
		assert.Assert(t, !strings.Contains(o.GetAPIVersion(), "cert-manager"), id)
		_, injected := o.GetAnnotations()[injectCAFrom]
		assert.Assert(t, !injected, id)
		switch x := typed.(type) {
		case *admissionregistrationv1.MutatingWebhookConfiguration:
			for _, h := range x.Webhooks {
				assert.Equal(t, string(h.ClientConfig.CABundle), wantBundle, id+" "+h.Name)
				services[h.ClientConfig.Service.Namespace+"/"+h.ClientConfig.Service.Name] = true
				webhooks++
			}
		case *admissionregistrationv1.ValidatingWebhookConfiguration:
			for _, h := range x.Webhooks {
				assert.Equal(t, string(h.ClientConfig.CABundle), wantBundle, id+" "+h.Name)
				services[h.ClientConfig.Service.Namespace+"/"+h.ClientConfig.Service.Name] = true
				webhooks++
			}
		case *apiextensionsv1.CustomResourceDefinition:
			if x.Spec.Conversion != nil && x.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter {
				assert.Equal(t, string(x.Spec.Conversion.Webhook.ClientConfig.CABundle), wantBundle, id)
				conversions++
			}
		case *corev1.Secret:
			secrets[x.Namespace+"/"+x.Name] = x
		case *appsv1.Deployment:
			deployments = append(deployments, x)
		case *runtimev1.ExtensionConfig:
			assert.Equal(t, x.Annotations[injectCAFromSecret], ExtensionNamespace+"/"+ExtensionCertSecret)
			assert.Equal(t, x.Spec.ClientConfig.Service.Name, ExtensionName)
			services[ExtensionNamespace+"/"+ExtensionName] = true
		}
	}
	assert.Assert(t, webhooks > 10 && conversions > 10, "%d webhooks, %d conversion webhooks", webhooks, conversions)
	// Every webhook's Service has a serving certificate of the CA, in the
	// Secret its Deployment mounts.
	for svc := range services {
		ns, name, _ := strings.Cut(svc, "/")
		var found bool
		for _, d := range deployments {
			if d.Namespace != ns {
				continue
			}
			for _, v := range d.Spec.Template.Spec.Volumes {
				if v.Name != "cert" || v.Secret == nil {
					continue
				}
				sec, ok := secrets[ns+"/"+v.Secret.SecretName]
				assert.Assert(t, ok, "%s: no Secret %s", svc, v.Secret.SecretName)
				found = true
				b, _ := pem.Decode(sec.Data["tls.crt"])
				assert.Assert(t, b != nil, svc)
				cert, err := x509.ParseCertificate(b.Bytes)
				assert.NilError(t, err)
				_, err = cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: name + "." + ns + ".svc"})
				assert.NilError(t, err, svc)
				assert.Equal(t, string(sec.Data["ca.crt"]), wantBundle)
			}
		}
		assert.Assert(t, found, "no serving certificate for %s", svc)
	}
	assert.Equal(t, len(deployments), 5)
	for _, d := range deployments {
		c := d.Spec.Template.Spec.Containers[0]
		assert.Assert(t, strings.HasPrefix(c.Image, ImageRepository+"/"), d.Name)
		assert.Equal(t, c.ImagePullPolicy, corev1.PullIfNotPresent, d.Name)
		for _, a := range c.Args {
			assert.Assert(t, !strings.Contains(a, "${"), "%s: %s", d.Name, a)
		}
		// KCP has no RuntimeSDK gate: InPlaceUpdates alone gives it its
		// runtime client.
		args := strings.Join(c.Args, " ")
		switch d.Name {
		case "capi-controller-manager":
			assert.Assert(t, strings.Contains(args, "RuntimeSDK=true") && strings.Contains(args, "InPlaceUpdates=true"), args)
		case "capi-kubeadm-control-plane-controller-manager":
			assert.Assert(t, strings.Contains(args, "InPlaceUpdates=true"), args)
		}
	}
}

func TestSubstitute(t *testing.T) {
	out, err := substitute([]byte("a=${A:=1} b=${B:=} c=${C} d=$D"), map[string]string{"C": "3"})
	assert.NilError(t, err)
	assert.Equal(t, string(out), "a=1 b= c=3 d=$D")
	_, err = substitute([]byte("${X} ${Y:=y} ${Z}"), nil)
	assert.Error(t, err, "variables without a value or a default: X, Z")
}

func TestCA(t *testing.T) {
	ca, err := testCA()
	assert.NilError(t, err)
	again, err := LoadCA(ca.CertPEM, ca.KeyPEM)
	assert.NilError(t, err)
	assert.Assert(t, again.Cert.Equal(ca.Cert))
	other, err := NewCA()
	assert.NilError(t, err)
	_, err = LoadCA(ca.CertPEM, other.KeyPEM)
	assert.ErrorContains(t, err, "is not a CA of this key")
}

func TestImage(t *testing.T) {
	dir := t.TempDir()
	bin, cas := filepath.Join(dir, "bin"), filepath.Join(dir, "cas")
	assert.NilError(t, os.WriteFile(bin, []byte("ELF"), 0o755))
	assert.NilError(t, os.WriteFile(cas, []byte("CAS"), 0o644))
	img, err := Image(Core.Image(), "manager", bin, cas)
	assert.NilError(t, err)
	assert.DeepEqual(t, img.Entrypoint, []string{"/manager"})
	layout, digests, err := ocilayout.Layout(img)
	assert.NilError(t, err)
	assert.Assert(t, digests[Core.Image()] != "")
	// The layer holds the binary, the CA bundle and the users.
	tr := tar.NewReader(bytes.NewReader(layout))
	found := map[string]bool{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		assert.NilError(t, err)
		if !strings.HasPrefix(h.Name, "blobs/") {
			continue
		}
		data, _ := io.ReadAll(tr)
		layer := tar.NewReader(bytes.NewReader(data))
		for {
			lh, err := layer.Next()
			if err != nil {
				break
			}
			found[lh.Name] = true
		}
	}
	for _, want := range []string{"manager", "etc/ssl/certs/ca-certificates.crt", "etc/passwd", "etc/group", "tmp/"} {
		assert.Assert(t, found[want], "the layer lacks %s: %v", want, found)
	}
}
