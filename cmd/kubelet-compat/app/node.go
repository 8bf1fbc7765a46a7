package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/internal/kubelet"
	"github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/internal/manifest"
	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// Defaults of the kubelet and containerd.
const (
	defaultManifestDir = "/etc/kubernetes/manifests"
	defaultRootDir     = "/var/lib/kubelet"
)

// nodeOptions are the flags of the commands that look at this node.
type nodeOptions struct {
	runtimeEndpoint string
	criTimeout      time.Duration
	nodeName        string
	manifestDir     string
	rootDir         string
	file            string
	kubeletPID      int
	kubeletPIDFile  string
	kubeletBinary   string
	kubeconfig      string
	lockTimeout     time.Duration
	force           bool
}

func (o *nodeOptions) addRuntimeFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.runtimeEndpoint, "runtime-endpoint", cri.DefaultRuntimeEndpoint, "CRI socket of the container runtime")
	positiveDurationVar(fs, &o.criTimeout, "cri-timeout", cri.DefaultCallTimeout, "timeout of each CRI call (positive)")
	fs.StringVar(&o.nodeName, "node-name", "", "the kubelet's node name (default: the hostname, lowercased, as the kubelet does)")
	fs.StringVar(&o.manifestDir, "manifest-dir", defaultManifestDir, "the kubelet's static pod manifest directory (--pod-manifest-path)")
}

func (o *nodeOptions) addFileFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.rootDir, "root-dir", defaultRootDir, "the kubelet's --root-dir")
	fs.StringVar(&o.file, "file", "", "the compat file (default: $"+kubeletcompat.PathEnv+", else <root-dir>/"+kubeletcompat.DefaultFileName+")")
}

func (o *nodeOptions) addKubeletFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.kubeletPID, "kubelet-pid", 0, "PID of the running kubelet (default: --kubelet-pidfile, else the main PID of systemd's kubelet.service, else the only root process of the host PID namespace running --kubelet-binary)")
	fs.StringVar(&o.kubeletPIDFile, "kubelet-pidfile", "", "file holding the running kubelet's PID (root-owned, writable only by root)")
	fs.StringVar(&o.kubeletBinary, "kubelet-binary", "", "the kubelet binary, an absolute path (default "+kubelet.DefaultBinary+"); the running kubelet must run it, and it is the only program run for the version (it must be a root-owned regular file only root may write)")
}

// addLockFlag is for the commands that change the compat file.
func (o *nodeOptions) addLockFlag(fs *pflag.FlagSet) {
	positiveDurationVar(fs, &o.lockTimeout, "lock-timeout", defaultLockTimeout, "how long to wait for another record or sweep to finish with the compat file (the lock <dir>/.<file>.lock)")
}

// addForceFlag is record's.
func (o *nodeOptions) addForceFlag(fs *pflag.FlagSet) {
	fs.BoolVar(&o.force, "force", false, "replace an existing file that is not a compat file")
}

func (o *nodeOptions) addKubeconfigFlag(fs *pflag.FlagSet) {
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig to read this node's pod specs from the API server (static pods are read from --manifest-dir)")
}

func (o *nodeOptions) compatPath() string {
	if o.file != "" {
		return o.file
	}
	return kubeletcompat.DefaultPath(o.rootDir)
}

func (o *nodeOptions) node(env Env) (string, error) {
	if o.nodeName != "" {
		return strings.ToLower(o.nodeName), nil
	}
	h, err := env.Hostname()
	if err != nil {
		return "", fmt.Errorf("node name: %w (use --node-name)", err)
	}
	return strings.ToLower(strings.TrimSpace(h)), nil
}

func (o *nodeOptions) dial(ctx context.Context) (*cri.Client, error) {
	return cri.Dial(ctx, o.runtimeEndpoint, cri.Options{Timeout: o.criTimeout})
}

// dialNode connects to the runtime and reads the node's sandboxes and
// containers; the caller closes the client.
func (o *nodeOptions) dialNode(ctx context.Context) (*cri.Client, *nodeState, error) {
	client, err := o.dial(ctx)
	if err != nil {
		return nil, nil, err
	}
	st, err := readNode(ctx, client)
	if err != nil {
		client.Close()
		return nil, nil, err
	}
	return client, st, nil
}

// runningKubelet is the kubelet process and its version.
type runningKubelet struct {
	pid     int
	start   time.Time
	version kubeletcompat.Version
}

// findKubelet identifies the running kubelet (see package kubelet: never by
// its name, never running anything found through /proc) and asks the
// configured binary, which that process runs, for the version.
func (o *nodeOptions) findKubelet(ctx context.Context, env Env) (*runningKubelet, error) {
	p, err := kubelet.Find(ctx, o.kubeletConfig(env))
	if err != nil {
		return nil, err
	}
	v, err := p.Binary.Version(ctx, env.RootUID)
	if err != nil {
		return nil, err
	}
	return &runningKubelet{pid: p.PID, start: p.StartTime, version: v}, nil
}

func (o *nodeOptions) kubeletConfig(env Env) kubelet.Config {
	binary := o.kubeletBinary
	if binary == "" {
		binary = env.KubeletBinary
	}
	return kubelet.Config{ProcRoot: env.ProcRoot, PID: o.kubeletPID, PIDFile: o.kubeletPIDFile, Binary: binary,
		Systemd: env.Systemd, RootUID: env.RootUID, Clocks: env.Clocks}
}

// recordedVersion is the version record writes: that of --kubelet-binary
// when given (the kubelet need not run), else the running kubelet's.
func (o *nodeOptions) recordedVersion(ctx context.Context, env Env) (kubeletcompat.Version, error) {
	if o.kubeletBinary != "" {
		return kubelet.Version(ctx, o.kubeletBinary, env.RootUID)
	}
	k, err := o.findKubelet(ctx, env)
	if err != nil {
		return kubeletcompat.Version{}, fmt.Errorf("%w (or give --kubelet-binary)", err)
	}
	return k.version, nil
}

// specIndex finds the spec of a running container's pod: static pods by
// namespace and name from the manifest directory, API pods by UID.
type specIndex struct {
	static map[string]manifest.Static // "namespace/name-node"
	byUID  map[string]*v1.Pod
	// mirrors are the API pods by the static-pod UID their mirror-pod
	// annotation names. Any user who may create pods can set that
	// annotation, so a mirror never stands for a UID an API pod has, and
	// only for a static sandbox of its own namespace and name.
	mirrors map[string]*v1.Pod
	sources []string
	// apiPods are the node's pods as the API server lists them (nil
	// without --kubeconfig).
	apiPods []v1.Pod
}

type podSpec struct {
	pod    *v1.Pod
	source string
	static *manifest.Static
}

func (o *nodeOptions) loadSpecs(ctx context.Context, node string) (*specIndex, error) {
	idx := &specIndex{static: map[string]manifest.Static{}, byUID: map[string]*v1.Pod{}, mirrors: map[string]*v1.Pod{}}
	statics, err := manifest.ReadStaticDir(o.manifestDir)
	switch {
	case errors.Is(err, os.ErrNotExist) && o.manifestDir == defaultManifestDir:
		// no static pods on this node
	case err != nil:
		return nil, err
	default:
		idx.sources = append(idx.sources, o.manifestDir)
	}
	for _, s := range statics {
		idx.static[manifest.Namespace(s.Pod)+"/"+manifest.StaticPodName(s.Pod.Name, node)] = s
	}
	if o.kubeconfig != "" {
		pods, err := listNodePods(ctx, o.kubeconfig, node)
		if err != nil {
			return nil, err
		}
		idx.apiPods = pods
		for i := range pods {
			p := &pods[i]
			idx.byUID[string(p.UID)] = p
			// A mirror pod carries the static pod's UID in an annotation.
			if uid := p.Annotations[cri.ConfigMirrorAnnotation]; uid != "" {
				idx.mirrors[uid] = p
			}
		}
		idx.sources = append(idx.sources, "API server")
	}
	return idx, nil
}

func coreClient(kubeconfig string) (*corev1client.CoreV1Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.Timeout = 30 * time.Second
	// Only the core/v1 client: the full clientset triples the binary.
	cs, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	return cs, nil
}

// getNode reads the node object.
func getNode(ctx context.Context, kubeconfig, node string) (*v1.Node, error) {
	cs, err := coreClient(kubeconfig)
	if err != nil {
		return nil, err
	}
	n, err := cs.Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading node %s: %w", node, err)
	}
	return n, nil
}

func listNodePods(ctx context.Context, kubeconfig, node string) ([]v1.Pod, error) {
	cs, err := coreClient(kubeconfig)
	if err != nil {
		return nil, err
	}
	list, err := cs.Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of node %s: %w", node, err)
	}
	return list.Items, nil
}

// lookup returns the pod spec of a container, preferring the static manifest
// (the kubelet runs the file, not the mirror pod).
func (idx *specIndex) lookup(sb *cri.Sandbox, c cri.Container) (podSpec, bool) {
	ns, name := c.PodNamespace, c.PodName
	if sb != nil {
		ns, name = sb.Namespace, sb.Name
	}
	if s, ok := idx.static[ns+"/"+name]; ok && (sb == nil || sb.IsStatic()) {
		s := s
		return podSpec{pod: s.Pod, source: s.Path, static: &s}, true
	}
	uid := c.PodUID
	if sb != nil && sb.UID != "" {
		uid = sb.UID
	}
	if p, ok := idx.byUID[uid]; ok {
		return podSpec{pod: p, source: "API server"}, true
	}
	if p, ok := idx.mirror(uid, ns, name); ok && (sb == nil || sb.IsStatic()) {
		return podSpec{pod: p, source: "API server"}, true
	}
	return podSpec{}, false
}

// mirror returns the mirror pod of the static pod that runs under uid as
// ns/name: the API pod whose config.mirror annotation names uid and that
// has the static pod's namespace and name, never one when an API pod has
// the UID itself (any pod creator can set the annotation).
func (idx *specIndex) mirror(uid, ns, name string) (*v1.Pod, bool) {
	p, ok := idx.mirrors[uid]
	if !ok || idx.byUID[uid] != nil || p.Namespace != ns || p.Name != name {
		return nil, false
	}
	return p, true
}

// container returns the named container of a pod spec (regular or init).
func container(pod *v1.Pod, name string) (*v1.Container, bool) {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i], false
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i], true
		}
	}
	return nil, false
}

// nodeState is the runtime's view with sandboxes by ID.
type nodeState struct {
	sandboxes  []cri.Sandbox
	byID       map[string]*cri.Sandbox
	containers []cri.Container
}

func readNode(ctx context.Context, client *cri.Client) (*nodeState, error) {
	sbs, err := client.ListSandboxes(ctx)
	if err != nil {
		return nil, err
	}
	cs, err := client.ListContainers(ctx)
	if err != nil {
		return nil, err
	}
	st := &nodeState{sandboxes: sbs, byID: map[string]*cri.Sandbox{}, containers: cs}
	for i := range sbs {
		st.byID[sbs[i].ID] = &st.sandboxes[i]
	}
	return st, nil
}
