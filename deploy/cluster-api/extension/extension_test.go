package extension

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimecatalog "sigs.k8s.io/cluster-api/exp/runtime/catalog"
	"sigs.k8s.io/cluster-api/exp/runtime/server"

	"github.com/kubelet-compat/kubelet-compat/deploy/cluster-api/update"
)

// selfSigned writes a serving certificate for 127.0.0.1 into dir, as the
// server reads it (tls.crt, tls.key), and returns its pool.
func selfSigned(t *testing.T, dir string) *x509.CertPool {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	assert.NilError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kc-capi-extension"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	assert.NilError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	assert.NilError(t, err)
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	cert, err := x509.ParseCertificate(der)
	assert.NilError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool
}

// noMachines is a management cluster without Machines.
type noMachines struct{}

func (noMachines) Machine(_ context.Context, m types.NamespacedName) (*clusterv1.Machine, error) {
	return nil, fmt.Errorf("reading Machine %s: not found", m)
}

func (noMachines) Workload(context.Context, types.NamespacedName) (kubernetes.Interface, error) {
	return nil, fmt.Errorf("no cluster")
}

// TestServer sends the hooks' requests to the runtime SDK's HTTPS server on
// loopback as CAPI sends them (JSON, POST to the handler's path).
func TestServer(t *testing.T) {
	dir := t.TempDir()
	pool := selfSigned(t, dir)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	assert.NilError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	assert.NilError(t, l.Close())
	s, err := New(server.Options{Host: "127.0.0.1", Port: port, CertDir: dir}, &update.Updater{Clusters: noMachines{}})
	assert.NilError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	defer func() {
		cancel()
		assert.Check(t, <-done)
	}()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	catalog := Catalog()
	post := func(hook runtimecatalog.Hook, name string, req, resp any) {
		t.Helper()
		gvh, err := catalog.GroupVersionHook(hook)
		assert.NilError(t, err)
		body, err := json.Marshal(req)
		assert.NilError(t, err)
		url := fmt.Sprintf("https://127.0.0.1:%d%s", port, runtimecatalog.GVHToPath(gvh, name))
		var r *http.Response
		for i := 0; i < 50; i++ { // the server starts listening
			if r, err = client.Post(url, "application/json", bytes.NewReader(body)); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		assert.NilError(t, err)
		defer r.Body.Close()
		assert.Assert(t, is.Equal(r.StatusCode, http.StatusOK))
		assert.NilError(t, json.NewDecoder(r.Body).Decode(resp))
	}

	disc := &runtimehooksv1.DiscoveryResponse{}
	post(runtimehooksv1.Discovery, "", &runtimehooksv1.DiscoveryRequest{}, disc)
	hooks := map[string]string{}
	for _, h := range disc.Handlers {
		hooks[h.Name] = h.RequestHook.Hook
	}
	assert.Check(t, is.DeepEqual(hooks, map[string]string{CanUpdateMachine: "CanUpdateMachine", CanUpdateMachineSet: "CanUpdateMachineSet", UpdateMachine: "UpdateMachine"}))

	machine := func(v string) clusterv1.Machine {
		return clusterv1.Machine{TypeMeta: metav1.TypeMeta{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine"},
			ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "default"}, Spec: clusterv1.MachineSpec{ClusterName: "c1", Version: v}}
	}
	can := &runtimehooksv1.CanUpdateMachineResponse{}
	post(runtimehooksv1.CanUpdateMachine, CanUpdateMachine, &runtimehooksv1.CanUpdateMachineRequest{
		TypeMeta: metav1.TypeMeta{APIVersion: runtimehooksv1.GroupVersion.String(), Kind: "CanUpdateMachineRequest"},
		Current:  runtimehooksv1.CanUpdateMachineRequestObjects{Machine: machine("v1.31.14")},
		Desired:  runtimehooksv1.CanUpdateMachineRequestObjects{Machine: machine("v1.32.3")}}, can)
	assert.Check(t, is.Equal(can.GetStatus(), runtimehooksv1.ResponseStatusSuccess))
	assert.Check(t, is.Equal(string(can.MachinePatch.Patch), `[{"op":"replace","path":"/spec/version","value":"v1.32.3"}]`))

	canSet := &runtimehooksv1.CanUpdateMachineSetResponse{}
	post(runtimehooksv1.CanUpdateMachineSet, CanUpdateMachineSet, &runtimehooksv1.CanUpdateMachineSetRequest{}, canSet)
	assert.Check(t, is.Equal(canSet.GetStatus(), runtimehooksv1.ResponseStatusSuccess))
	assert.Check(t, is.Equal(canSet.GetMessage(), "no version change"))

	upd := &runtimehooksv1.UpdateMachineResponse{}
	post(runtimehooksv1.UpdateMachine, UpdateMachine, &runtimehooksv1.UpdateMachineRequest{
		Desired: runtimehooksv1.UpdateMachineRequestObjects{Machine: machine("v1.32.3")}}, upd)
	assert.Check(t, is.Equal(upd.GetStatus(), runtimehooksv1.ResponseStatusFailure))
	assert.Check(t, is.Equal(upd.GetMessage(), "reading Machine default/m: not found"))
}
