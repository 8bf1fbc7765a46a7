package controlplane

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"testing"

	"gotest.tools/v3/assert"
	"k8s.io/client-go/tools/clientcmd"
)

func TestGenerate(t *testing.T) {
	p := PKI{Dir: t.TempDir()}
	assert.NilError(t, p.Generate(Server()))

	caPEM, err := os.ReadFile(p.CACert())
	assert.NilError(t, err)
	pool := x509.NewCertPool()
	assert.Assert(t, pool.AppendCertsFromPEM(caPEM))

	serving, err := tls.LoadX509KeyPair(p.ServingCert(), p.ServingKey())
	assert.NilError(t, err)
	leaf, err := x509.ParseCertificate(serving.Certificate[0])
	assert.NilError(t, err)
	_, err = leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"})
	assert.NilError(t, err, "the serving certificate must be valid for 127.0.0.1")

	admin, err := tls.LoadX509KeyPair(p.AdminCert(), p.AdminKey())
	assert.NilError(t, err)
	aleaf, err := x509.ParseCertificate(admin.Certificate[0])
	assert.NilError(t, err)
	assert.DeepEqual(t, aleaf.Subject.Organization, []string{"system:masters"})
	_, err = aleaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	assert.NilError(t, err)

	pub, err := os.ReadFile(p.SAPub())
	assert.NilError(t, err)
	block, _ := pem.Decode(pub)
	_, err = x509.ParsePKIXPublicKey(block.Bytes)
	assert.NilError(t, err)

	cfg, err := clientcmd.BuildConfigFromFlags("", p.Kubeconfig())
	assert.NilError(t, err)
	assert.Equal(t, cfg.Host, Server())
	assert.Assert(t, len(cfg.TLSClientConfig.CAData) > 0 && len(cfg.TLSClientConfig.CertData) > 0)
}
