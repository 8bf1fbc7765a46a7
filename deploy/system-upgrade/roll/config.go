package roll

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/versions"
)

// Config is the Job's environment, the Plans' interface: the same
// variables and defaults as the previous release's Job (upgrade.sh);
// README.md lists them.
type Config struct {
	Node      string // SYSTEM_UPGRADE_NODE_NAME
	Target    string // SYSTEM_UPGRADE_PLAN_LATEST_VERSION, without its v
	PlanName  string // SYSTEM_UPGRADE_PLAN_NAME
	PodUID    string // SYSTEM_UPGRADE_POD_UID
	Role      string // KC_ROLE: control-plane or worker
	AllowLoss bool   // KC_ALLOW_LOSS=true

	GateTimeout  int     // KC_GATE_TIMEOUT, seconds
	GateSettle   int     // KC_GATE_SETTLE, seconds
	GateSyncWait string  // KC_GATE_SYNC_WAIT, seconds as the gate is handed them
	ProbeWindow  int     // KC_PROBE_WINDOW, seconds
	Poll         Seconds // KC_POLL
	LockWait     int     // KC_LOCK_WAIT, seconds

	Host              string   // KC_HOST
	Packages          string   // KC_PACKAGES, in the Job's container
	NodeKubeconfig    string   // KC_KUBECONFIG, as the node sees it
	KubeletURL        string   // KC_KUBELET_URL
	KubeletCA         string   // KC_KUBELET_CA, as the Job sees it
	KubeletServerName string   // KC_KUBELET_SERVER_NAME
	TokenFile         string   // KC_TOKEN_FILE
	Namespace         string   // KC_NAMESPACE
	KubeadmArgs       []string // KC_KUBEADM_ARGS, split into words
	EtcdBridgeImage   string   // KC_ETCD_BRIDGE_IMAGE
	// Runtime is KC_RUNTIME (containerd@VERSION); RuntimeVersion its VERSION.
	Runtime, RuntimeVersion string
	HostPath                string // KC_HOST_PATH
	Chroot                  string // KC_CHROOT (tests)
}

// Seconds is a number of seconds as the Plan gives it (KC_POLL may be
// 0.1): its text, for the commands it is handed to, and its duration.
type Seconds struct {
	Text string
	D    time.Duration
}

func (s Seconds) String() string { return s.Text }

// ConfigFromEnv reads the Job's environment, refusing a bad value before
// the Job does anything.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	or := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	c := Config{
		Node:              getenv("SYSTEM_UPGRADE_NODE_NAME"),
		Target:            strings.TrimPrefix(getenv("SYSTEM_UPGRADE_PLAN_LATEST_VERSION"), "v"),
		PlanName:          getenv("SYSTEM_UPGRADE_PLAN_NAME"),
		PodUID:            getenv("SYSTEM_UPGRADE_POD_UID"),
		Role:              or("KC_ROLE", "worker"),
		AllowLoss:         getenv("KC_ALLOW_LOSS") == "true",
		GateSyncWait:      or("KC_GATE_SYNC_WAIT", "30"),
		Host:              or("KC_HOST", "/host"),
		Packages:          or("KC_PACKAGES", "/packages"),
		NodeKubeconfig:    or("KC_KUBECONFIG", "/etc/kubernetes/kubelet.conf"),
		KubeletURL:        or("KC_KUBELET_URL", "https://127.0.0.1:10250"),
		KubeletCA:         getenv("KC_KUBELET_CA"),
		KubeletServerName: getenv("KC_KUBELET_SERVER_NAME"),
		TokenFile:         or("KC_TOKEN_FILE", "/var/run/secrets/kubernetes.io/serviceaccount/token"),
		Namespace:         or("KC_NAMESPACE", "system-upgrade"),
		KubeadmArgs:       strings.Fields(getenv("KC_KUBEADM_ARGS")),
		EtcdBridgeImage:   getenv("KC_ETCD_BRIDGE_IMAGE"),
		Runtime:           getenv("KC_RUNTIME"),
		HostPath:          or("KC_HOST_PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"),
		Chroot:            getenv("KC_CHROOT"),
	}
	for _, n := range []struct {
		name, def string
		to        *int
	}{
		{"KC_GATE_TIMEOUT", "300", &c.GateTimeout},
		{"KC_GATE_SETTLE", "0", &c.GateSettle},
		{"KC_PROBE_WINDOW", "20", &c.ProbeWindow},
		{"KC_LOCK_WAIT", "1800", &c.LockWait},
	} {
		v, err := strconv.Atoi(or(n.name, n.def))
		if err != nil || v < 0 {
			return Config{}, fmt.Errorf("%s must be a number of seconds, not %q", n.name, getenv(n.name))
		}
		*n.to = v
	}
	poll := or("KC_POLL", "5")
	f, err := strconv.ParseFloat(poll, 64)
	if err != nil || f < 0 {
		return Config{}, fmt.Errorf("KC_POLL must be a number of seconds, not %q", poll)
	}
	c.Poll = Seconds{Text: poll, D: time.Duration(f * float64(time.Second))}
	switch {
	case c.Node == "":
		return Config{}, fmt.Errorf("SYSTEM_UPGRADE_NODE_NAME is not set")
	case c.Target == "":
		return Config{}, fmt.Errorf("SYSTEM_UPGRADE_PLAN_LATEST_VERSION is not set")
	case c.Role != "control-plane" && c.Role != "worker":
		return Config{}, fmt.Errorf("KC_ROLE must be control-plane or worker, not %s", c.Role)
	}
	if c.Runtime != "" {
		v, ok := runtimeVersion(c.Runtime)
		if !ok {
			return Config{}, fmt.Errorf("KC_RUNTIME must be containerd@VERSION (e.g. containerd@1.7.35), not %s", c.Runtime)
		}
		c.RuntimeVersion = v
	}
	return c, nil
}

// runtimeVersion is the VERSION of containerd@VERSION, as
// versions.ParseRef reads it.
func runtimeVersion(ref string) (string, bool) {
	r, err := versions.ParseRef(ref)
	if err != nil || r.Name != "containerd" {
		return "", false
	}
	return r.Version.String(), true
}
