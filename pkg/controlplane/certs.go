// Package controlplane runs a control plane on the local node, the e2e's
// API mode and deploy/system-upgrade/sim's: etcd from Debian and the
// harness's kube-apiserver, on 127.0.0.1 only, with a throw-away CA, and
// upgrades the API server before the kubelet as upstream's version skew
// policy requires.
package controlplane

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// PKI is the control plane's throw-away key material, as files in Dir.
type PKI struct{ Dir string }

func (p PKI) CACert() string      { return filepath.Join(p.Dir, "ca.crt") }
func (p PKI) ServingCert() string { return filepath.Join(p.Dir, "apiserver.crt") }
func (p PKI) ServingKey() string  { return filepath.Join(p.Dir, "apiserver.key") }
func (p PKI) AdminCert() string   { return filepath.Join(p.Dir, "admin.crt") }
func (p PKI) AdminKey() string    { return filepath.Join(p.Dir, "admin.key") }
func (p PKI) SAKey() string       { return filepath.Join(p.Dir, "sa.key") }
func (p PKI) SAPub() string       { return filepath.Join(p.Dir, "sa.pub") }
func (p PKI) Kubeconfig() string  { return filepath.Join(p.Dir, "admin.kubeconfig") }

// Generate writes a CA, the API server's serving certificate for 127.0.0.1,
// an admin client certificate (system:masters), the service-account key
// pair and a kubeconfig for server.
func (p PKI) Generate(server string) error {
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return err
	}
	now := time.Now()
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubelet-compat-e2e-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(48 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	issue := func(serial int64, subject pkix.Name, usage x509.ExtKeyUsage, ips []net.IP, dns []string) ([]byte, *rsa.PrivateKey, error) {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return nil, nil, err
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: subject, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(48 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips, DNSNames: dns}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		return der, key, err
	}
	servingDER, servingKey, err := issue(2, pkix.Name{CommonName: "kube-apiserver"}, x509.ExtKeyUsageServerAuth,
		[]net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"})
	if err != nil {
		return err
	}
	adminDER, adminKey, err := issue(3, pkix.Name{CommonName: "kubelet-compat-e2e-admin", Organization: []string{"system:masters"}}, x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		return err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		p.CACert():      pemBlock("CERTIFICATE", caDER),
		p.ServingCert(): pemBlock("CERTIFICATE", servingDER),
		p.ServingKey():  pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(servingKey)),
		p.AdminCert():   pemBlock("CERTIFICATE", adminDER),
		p.AdminKey():    pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(adminKey)),
		p.SAKey():       pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey)),
		p.SAPub():       pemBlock("PUBLIC KEY", saPub),
	}
	files[p.Kubeconfig()] = []byte(Kubeconfig(server, files[p.CACert()], files[p.AdminCert()], files[p.AdminKey()]))
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// Kubeconfig renders a kubeconfig with embedded certificates.
func Kubeconfig(server string, ca, cert, key []byte) string {
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: admin
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: e2e
  context:
    cluster: e2e
    user: admin
current-context: e2e
`, server, b64(ca), b64(cert), b64(key))
}
