package app

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// fakeTargetKubelet is a kubelet 1.20 that knows --config, --max-pods,
// --network-plugin and the ExecProbeTimeout gate, refuses
// --network-plugin=bad (as a kubelet refuses a bad flag value), and logs its
// arguments.
func (f *fixture) fakeTargetKubelet() (bin, calls string) {
	bin = filepath.Join(f.dir, "bin", "kubelet-target")
	calls = filepath.Join(f.dir, "target-calls")
	f.write(bin, `#!/bin/sh
echo "$*" >> `+calls+`
for a in "$@"; do
  case "$a" in
  --help)
    cat <<'HELP'
Flags:
      --config string    The Kubelet will load its initial configuration from this file.
      --feature-gates mapStringBool   A set of key=value pairs. Options are:
                                      ExecProbeTimeout=true|false (BETA - default=true)
      --max-pods int32   Number of Pods that can run on this Kubelet. (default 110)
      --network-plugin string   The name of the network plugin.
      --version version[=true]   Print version information and quit
HELP
    exit 0;;
  --network-plugin=bad)
    echo "F0102 03:04:05.000000    4242 server.go:160] invalid argument \"bad\" for \"--network-plugin\" flag" >&2
    exit 255;;
  esac
done
echo "Flag --max-pods has been deprecated, This parameter should be set via the config file" >&2
echo "Kubernetes v1.20.15"
`)
	os.Chmod(bin, 0755)
	return bin, calls
}

var columnGap = regexp.MustCompile(`  +`)

func timeHours(h int) time.Duration { return time.Duration(h) * time.Hour }

func TestPreflightNodeKillers(t *testing.T) {
	f := newFixture(t, cri.APIv1)
	f.addStaticPods("v1.19.16", pod{file: "etcd.yaml", yaml: etcdYAML, uid: "pinned", created: beforeStart, ready: true})
	node := v1.Node{}
	node.Name = testNode
	node.Labels = map[string]string{"disk": "hdd"}
	node.Status.Capacity = v1.ResourceList{"cpu": resource.MustParse("2"), "memory": resource.MustParse("4Gi"), "pods": resource.MustParse("110")}
	mk := func(name string, hoursAgo int, cpu string) v1.Pod {
		p := v1.Pod{}
		p.Name, p.Namespace = name, "default"
		p.UID = types.UID("uid-" + name)
		p.Spec.NodeName = testNode
		p.CreationTimestamp = metav1.NewTime(now.Add(-timeHours(hoursAgo)))
		p.Status.Phase = v1.PodRunning
		p.Spec.Containers = []v1.Container{{Name: "c", Image: "busybox", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{"cpu": resource.MustParse(cpu)}}}}
		secs := int64(300)
		p.Spec.Tolerations = []v1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &secs},
			{Key: "node.kubernetes.io/unreachable", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &secs}}
		return p
	}
	web := mk("web", 3, "500m")
	web.Spec.NodeSelector = map[string]string{"disk": "ssd"}
	web.Spec.Containers[0].LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"check"}}}}
	batch := mk("batch", 1, "1100m")
	kubeconfig := apiServerWithNode(t, f.dir, &node, web, batch)

	f.write(filepath.Join(f.rootDir, "kubeadm-flags.env"), "KUBELET_KUBEADM_ARGS=\"--network-plugin=bad --max-pods=50\"\n")
	// The operator's KUBELET_EXTRA_ARGS follow kubeadm's, and win.
	f.write(filepath.Join(f.dir, "sysconfig-kubelet"), "KUBELET_EXTRA_ARGS=--max-pods=40\n")
	f.write(filepath.Join(f.rootDir, "config.yaml"), "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nkubeReserved: {cpu: 500m}\nfeatureGates: {DynamicKubeletConfig: true}\n")
	f.write(filepath.Join(f.rootDir, "cpu_manager_state"), `{"policyName":"static","defaultCpuSet":"0-1","checksum":1}`)
	f.write(filepath.Join(f.rootDir, "device-plugins", "kubelet_internal_checkpoint"),
		`{"Data":{"PodDeviceEntries":[{"PodUID":"uid-web","ContainerName":"c","ResourceName":"example.com/gpu","DeviceIDs":["d0"],"AllocResp":""}],"RegisteredDevices":{}},"Checksum":1}`)
	target, calls := f.fakeTargetKubelet()

	for _, format := range []string{"table", "json"} {
		t.Run(format, func(t *testing.T) {
			os.Remove(calls)
			if code := f.run("preflight", "--from", "v1.19.16", "--to", "v1.20.15", "--node", "--kubeconfig", kubeconfig,
				"--target-kubelet", target, "--swap-window", "50s", "-o", format); code != 0 {
				t.Fatalf("exit %d: %s", code, f.stderr.String())
			}
			// Paths under the test's temporary directory widen the table's
			// columns by a varying amount: the golden keeps single gaps.
			out := strings.ReplaceAll(f.stdout.String(), f.dir, "$DIR")
			if format == "table" {
				out = columnGap.ReplaceAllString(out, "  ")
			}
			golden.Assert(t, out, "preflight-node-killers."+format+".golden")
			// The target ran twice: the node's flags with --version last, and --help.
			log, err := os.ReadFile(calls)
			assert.NilError(t, err)
			assert.Equal(t, string(log), "--network-plugin=bad --max-pods=50 --max-pods=40 --version\n--help\n")
		})
	}

	// Flags that parse; --target-flags replaces kubeadm-flags.env.
	if code := f.run("preflight", "--from", "v1.19.16", "--to", "v1.20.15", "--node", "--kubeconfig", kubeconfig,
		"--target-kubelet", target, "--target-flags", "--max-pods 50 --config "+filepath.Join(f.rootDir, "config.yaml")); code != 0 {
		t.Fatalf("exit %d: %s", code, f.stderr.String())
	}
	assert.Assert(t, strings.Contains(f.stdout.String(), "parses the node's 2 flag(s)"), f.stdout.String())
	assert.Assert(t, !strings.Contains(f.stdout.String(), "refuses the node's flags"), f.stdout.String())

	// A target that is not there is a note, not an error.
	if code := f.run("preflight", "--from", "v1.19.16", "--to", "v1.20.15", "--node", "--kubeconfig", kubeconfig,
		"--target-kubelet", filepath.Join(f.dir, "missing")); code != 0 {
		t.Fatalf("exit %d: %s", code, f.stderr.String())
	}
	assert.Assert(t, strings.Contains(f.stdout.String(), "note: not checked: flags: kubelet binary "+filepath.Join(f.dir, "missing")+" does not exist"), f.stdout.String())
}
