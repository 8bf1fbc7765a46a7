package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/kubelet"
	"github.com/kubelet-compat/kubelet-compat/pkg/proc"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Ports on 127.0.0.1, away from the defaults of a real control plane.
const (
	EtcdClientPort = 23790
	EtcdPeerPort   = 23800
	APIServerPort  = 16443
	// ControllerManagerPort is kube-controller-manager's secure port
	// (its default 10257 may serve another control plane on the host).
	ControllerManagerPort = 16457
	// ServiceCIDR is only an allocation range of the API server: no
	// traffic is ever routed to it.
	ServiceCIDR = "10.217.78.0/24"
)

// Options configure a control plane.
type Options struct {
	Dir    string // state: pki/, etcd/
	LogDir string
	// APIServer returns the kube-apiserver binary of a version.
	APIServer func(version string) string
	// Recorder records the processes in the run's journal (may be nil).
	Recorder proc.Recorder
	// FeatureGates returns the --feature-gates of kube-apiserver 1.minor
	// (nil function or empty map: none).
	FeatureGates func(minor int) map[string]bool
	// ControllerManager returns the kube-controller-manager binary of a
	// version; nil: none runs. It runs only Controllers.
	ControllerManager func(version string) string
	// Controllers is its --controllers (e.g. "endpointslice").
	Controllers string
	// Etcd is the etcd binary ("": etcd on PATH).
	Etcd string
}

// ControlPlane is etcd, one kube-apiserver and, when Options name it, one
// kube-controller-manager.
type ControlPlane struct {
	opts      Options
	PKI       PKI
	etcd      *proc.Process
	apiserver *proc.Process
	kcm       *proc.Process
	Version   string
	// KCMVersion is the running kube-controller-manager's version ("":
	// none runs).
	KCMVersion string
}

// Server is the API server's URL.
func Server() string { return fmt.Sprintf("https://127.0.0.1:%d", APIServerPort) }

// New prepares the PKI; Start starts etcd and the API server.
func New(o Options) (*ControlPlane, error) {
	cp := &ControlPlane{opts: o, PKI: PKI{Dir: filepath.Join(o.Dir, "pki")}}
	if err := cp.PKI.Generate(Server()); err != nil {
		return nil, fmt.Errorf("control plane certificates: %w", err)
	}
	return cp, nil
}

// Start starts a fresh etcd (empty data dir) and kube-apiserver version.
func (cp *ControlPlane) Start(ctx context.Context, version string) error {
	dataDir := filepath.Join(cp.opts.Dir, "etcd")
	if err := os.RemoveAll(dataDir); err != nil {
		return err
	}
	peer := fmt.Sprintf("http://127.0.0.1:%d", EtcdPeerPort)
	client := fmt.Sprintf("http://127.0.0.1:%d", EtcdClientPort)
	etcdBinary := cp.opts.Etcd
	if etcdBinary == "" {
		etcdBinary = "etcd"
	}
	etcd, err := proc.Start(cp.opts.Recorder, "etcd", etcdBinary, []string{"--name=e2e", "--data-dir=" + dataDir,
		"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer, "--initial-cluster=e2e=" + peer,
		"--unsafe-no-fsync"}, nil, filepath.Join(cp.opts.LogDir, "etcd.log"))
	if err != nil {
		return err
	}
	cp.etcd = etcd
	if err := waitHTTP(ctx, client+"/health", nil, 60*time.Second, etcd); err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	if err := cp.StartAPIServer(ctx, version); err != nil {
		return err
	}
	return cp.StartControllerManager(ctx, version)
}

// StartAPIServer starts kube-apiserver version on the running etcd.
func (cp *ControlPlane) StartAPIServer(ctx context.Context, version string) error {
	var gates map[string]bool
	if cp.opts.FeatureGates != nil {
		gates = cp.opts.FeatureGates(kubelet.Minor(version))
	}
	args := cp.apiServerArgs(kubelet.Minor(version), gates)
	ap, err := proc.Start(cp.opts.Recorder, "kube-apiserver "+version, cp.opts.APIServer(version), args, nil, filepath.Join(cp.opts.LogDir, "kube-apiserver.log"))
	if err != nil {
		return err
	}
	cp.apiserver, cp.Version = ap, version
	tlsCfg, err := cp.clientTLS()
	if err != nil {
		return err
	}
	if err := waitHTTP(ctx, Server()+"/readyz", tlsCfg, 3*time.Minute, ap); err != nil {
		return fmt.Errorf("kube-apiserver %s: %w (see %s)", version, err, filepath.Join(cp.opts.LogDir, "kube-apiserver.log"))
	}
	return nil
}

// apiServerArgs are the flags of kube-apiserver 1.minor.
func (cp *ControlPlane) apiServerArgs(minor int, gates map[string]bool) []string {
	p := cp.PKI
	args := []string{
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", EtcdClientPort),
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", APIServerPort),
		"--endpoint-reconciler-type=none",
		"--service-cluster-ip-range=" + ServiceCIDR,
		"--tls-cert-file=" + p.ServingCert(), "--tls-private-key-file=" + p.ServingKey(),
		"--client-ca-file=" + p.CACert(),
		"--authorization-mode=AlwaysAllow",
		"--service-account-key-file=" + p.SAPub(), "--service-account-signing-key-file=" + p.SAKey(),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--cert-dir=" + filepath.Join(cp.opts.Dir, "apiserver-certs"),
		"--allow-privileged=true",
	}
	if minor < 24 {
		// Removed in 1.24 (an unknown flag from then on); before, 0
		// turns the insecure port off.
		args = append(args, "--insecure-port=0")
	}
	if len(gates) > 0 {
		args = append(args, "--feature-gates="+kubelet.FeatureGatesFlag(gates))
	}
	return args
}

// UpgradeAPIServer replaces the running API server by version (etcd and
// its data stay), then the controller manager, if one runs: the control
// plane goes first, in upstream's order.
func (cp *ControlPlane) UpgradeAPIServer(ctx context.Context, version string) error {
	if err := cp.apiserver.Stop(ctx, 20*time.Second); err != nil {
		return err
	}
	if err := cp.StartAPIServer(ctx, version); err != nil {
		return err
	}
	if cp.kcm == nil {
		return nil
	}
	if err := cp.kcm.Stop(ctx, 20*time.Second); err != nil {
		return err
	}
	cp.kcm, cp.KCMVersion = nil, ""
	return cp.StartControllerManager(ctx, version)
}

// StartControllerManager starts kube-controller-manager version with only
// Options.Controllers (nothing when Options name no binary) and waits for
// its /healthz.
func (cp *ControlPlane) StartControllerManager(ctx context.Context, version string) error {
	if cp.opts.ControllerManager == nil {
		return nil
	}
	binary := cp.opts.ControllerManager(version)
	help, err := kubelet.AskHelp(ctx, binary)
	if err != nil {
		return err
	}
	args := cp.controllerManagerArgs(help)
	logFile := filepath.Join(cp.opts.LogDir, "kube-controller-manager.log")
	p, err := proc.Start(cp.opts.Recorder, "kube-controller-manager "+version, binary, args, nil, logFile)
	if err != nil {
		return err
	}
	cp.kcm, cp.KCMVersion = p, version
	// Its serving certificate is self-signed: only liveness is checked here.
	tlsCfg := &tls.Config{InsecureSkipVerify: true}
	if err := waitHTTP(ctx, fmt.Sprintf("https://127.0.0.1:%d/healthz", ControllerManagerPort), tlsCfg, 2*time.Minute, p); err != nil {
		return fmt.Errorf("kube-controller-manager %s: %w (see %s)", version, err, logFile)
	}
	return nil
}

// controllerManagerArgs are the flags of a kube-controller-manager whose
// --help is help: the admin kubeconfig, no leader election (one instance),
// only Options.Controllers, serving on 127.0.0.1 only.
func (cp *ControlPlane) controllerManagerArgs(help kubelet.Help) []string {
	kc := cp.PKI.Kubeconfig()
	args := []string{
		"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		"--leader-elect=false", "--controllers=" + cp.opts.Controllers,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", ControllerManagerPort),
		"--cert-dir=" + filepath.Join(cp.opts.Dir, "kcm-certs"),
	}
	if help.Flags["port"] {
		// The insecure port (10252 on every address) until 1.24 removed
		// the flag: 0 turns it off.
		args = append(args, "--port=0")
	}
	return args
}

// Stop stops the controller manager, the API server and etcd.
func (cp *ControlPlane) Stop(ctx context.Context) error {
	var errs []string
	for _, p := range []*proc.Process{cp.kcm, cp.apiserver, cp.etcd} {
		if p == nil {
			continue
		}
		if err := p.Stop(ctx, 20*time.Second); err != nil {
			errs = append(errs, err.Error())
		}
	}
	cp.kcm, cp.apiserver, cp.etcd, cp.KCMVersion = nil, nil, nil, ""
	if len(errs) > 0 {
		return fmt.Errorf("stopping the control plane: %s", strings.Join(errs, "; "))
	}
	return nil
}

// Client is a clientset for the admin kubeconfig.
func (cp *ControlPlane) Client() (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.PKI.Kubeconfig())
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 30 * time.Second
	return kubernetes.NewForConfig(cfg)
}

func (cp *ControlPlane) clientTLS() (*tls.Config, error) {
	pool := x509.NewCertPool()
	ca, err := os.ReadFile(cp.PKI.CACert())
	if err != nil {
		return nil, err
	}
	pool.AppendCertsFromPEM(ca)
	cert, err := tls.LoadX509KeyPair(cp.PKI.AdminCert(), cp.PKI.AdminKey())
	if err != nil {
		return nil, err
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}, nil
}

func waitHTTP(ctx context.Context, url string, tlsCfg *tls.Config, timeout time.Duration, p *proc.Process) error {
	client := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	deadline := time.Now().Add(timeout)
	var last string
	for {
		if ended, err := p.Exited(); ended {
			return fmt.Errorf("exited: %v", err)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s: %s", url, timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
