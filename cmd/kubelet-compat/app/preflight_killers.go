package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/internal/kubelet"
	"github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/internal/preflight"
	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"
)

// Defaults of the pod-killer checks.
const (
	defaultKubeletConfig  = "/var/lib/kubelet/config.yaml"
	kubeadmFlagsEnv       = "kubeadm-flags.env"
	kubeadmFlagsVar       = "KUBELET_KUBEADM_ARGS"
	cpuManagerStateFile   = "cpu_manager_state"
	deviceCheckpointFile  = "device-plugins/kubelet_internal_checkpoint"
	targetKubeletTimeout  = 30 * time.Second
	maxNodeFileSize       = 16 << 20
	defaultSwapWindow     = 40 * time.Second
	notCheckedPrefix      = "not checked: "
	killersWithoutAPIList = "node-affinity, taints, resources, eviction-pressure"
)

// killerOptions are preflight's flags for the checks besides container
// hashes.
type killerOptions struct {
	swapWindow        time.Duration
	gracePeriod       time.Duration
	kubeletConfigPath string
	targetFlags       string
	targetFlagsGiven  bool
	targetKubelet     string
	extraArgsFiles    []string
}

// defaultExtraArgsFiles hold KUBELET_EXTRA_ARGS: the RPMs' drop-in reads
// /etc/sysconfig/kubelet, Debian's packages /etc/default/kubelet.
var defaultExtraArgsFiles = []string{"/etc/sysconfig/kubelet", "/etc/default/kubelet"}

func (k *killerOptions) addFlags(fs *pflag.FlagSet) {
	positiveDurationVar(fs, &k.swapWindow, "swap-window", defaultSwapWindow, "how long the kubelet is expected to be down (or NotReady) during the swap")
	positiveDurationVar(fs, &k.gracePeriod, "node-monitor-grace-period", preflight.DefaultNodeMonitorGracePeriod, "kube-controller-manager's --node-monitor-grace-period: a node without status for that long is Unknown and tainted unreachable:NoExecute")
	fs.StringVar(&k.kubeletConfigPath, "kubelet-config", "", "the target kubelet's config file (default: the --config of the target flags, else "+defaultKubeletConfig+")")
	fs.StringVar(&k.targetFlags, "target-flags", "", "the target kubelet's command-line flags, as one shell-quoted string (default: "+kubeadmFlagsVar+" of <root-dir>/"+kubeadmFlagsEnv+")")
	fs.StringSliceVar(&k.extraArgsFiles, "extra-args-file", defaultExtraArgsFiles, "environment files whose KUBELET_EXTRA_ARGS follow KUBELET_KUBEADM_ARGS in the target flags (when --target-flags is not given; missing files are skipped)")
	fs.StringVar(&k.targetKubelet, "target-kubelet", "", "the target kubelet binary, an absolute path (root-owned, writable only by root): run as `PATH <flags> --version` (parses the flags, then exits) and `PATH --help` to check the node's flags and feature gates")
}

// nodeAPI is what the API server says about the node (nil fields without
// --kubeconfig).
type nodeAPI struct {
	name string
	node *v1.Node
	pods []*v1.Pod
}

// specPods are the pods of the report that have a spec, named as reported.
func specPods(pods []preflight.Pod) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range pods {
		if p.Object == nil {
			continue
		}
		c := p.Object.DeepCopy()
		c.Namespace, c.Name = p.Namespace, p.Name
		out = append(out, c)
	}
	return out
}

// manifestKillers runs the checks that apply to manifests: exec probes.
func (o *preflightOptions) manifestKillers(from, to kubeletcompat.Version, pods []preflight.Pod, r *preflight.Report) {
	r.Killers = append(r.Killers, preflight.ExecProbes(from, to, specPods(pods))...)
	// Without the node's config, the target's default feature gates.
	r.Killers = append(r.Killers, preflight.DeclaredFeatures(to, nil, specPods(pods))...)
	r.KillerNotes = append(r.KillerNotes, notCheckedPrefix+"node-affinity, taints, resources, cpu-manager, device-checkpoint, flags: they need the node (--node)")
}

// targetConfig reads the target's flags and config file; notes say what is
// missing.
func (o *preflightOptions) targetConfig() (preflight.KubeletConfig, []preflight.FlagArg, bool, []string) {
	var notes []string
	var args []string
	flagsKnown := true
	if o.targetFlagsGiven {
		words, err := preflight.SplitShellWords(o.targetFlags)
		if err != nil {
			notes = append(notes, "--target-flags: "+err.Error())
		}
		args = words
	} else {
		sources := []struct{ path, variable string }{{filepath.Join(o.rootDir, kubeadmFlagsEnv), kubeadmFlagsVar}}
		for _, p := range o.extraArgsFiles {
			sources = append(sources, struct{ path, variable string }{p, "KUBELET_EXTRA_ARGS"})
		}
		found := false
		for _, src := range sources {
			data, err := readNodeFile(src.path)
			switch {
			case errors.Is(err, os.ErrNotExist):
				continue
			case err != nil:
				notes = append(notes, fmt.Sprintf("%s: %v: skipped", src.path, err))
				continue
			}
			found = true
			v, _ := preflight.ParseEnvFile(data, src.variable)
			words, err := preflight.SplitShellWords(v)
			if err != nil {
				notes = append(notes, src.path+": "+err.Error())
			}
			args = append(args, words...)
		}
		if !found {
			flagsKnown = false
			var paths []string
			for _, src := range sources {
				paths = append(paths, src.path)
			}
			notes = append(notes, fmt.Sprintf("no %s and no --target-flags: the target's flags are taken as none", strings.Join(paths, ", ")))
		}
	}
	flags, _ := preflight.ParseFlagArgs(args)
	configPath := o.kubeletConfigPath
	if configPath == "" {
		configPath = defaultKubeletConfig
		for _, f := range flags {
			if f.Name == "config" && f.HasValue {
				configPath = f.Value
			}
		}
	}
	var cfg preflight.KubeletConfig
	data, err := readNodeFile(configPath)
	switch {
	case err != nil:
		notes = append(notes, fmt.Sprintf("kubelet config %s: %v: the kubelet's defaults and the flags are used (give --kubelet-config)", configPath, shortErr(err)))
	default:
		if cfg, err = preflight.ParseKubeletConfig(data); err != nil {
			notes = append(notes, fmt.Sprintf("kubelet config %s does not parse (%v): the kubelet's defaults and the flags are used", configPath, err))
			cfg = preflight.KubeletConfig{}
		}
	}
	if err := cfg.ApplyFlags(flags); err != nil {
		notes = append(notes, "target flags: "+err.Error())
	}
	return cfg, flags, flagsKnown, notes
}

func shortErr(err error) string {
	if errors.Is(err, os.ErrNotExist) {
		return "not found"
	}
	return err.Error()
}

// readNodeFile reads a regular file of at most 16 MiB without following a
// final symlink's target type surprises (no FIFOs, no devices).
func readNodeFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	if fi.Size() > maxNodeFileSize {
		return nil, fmt.Errorf("larger than %d bytes", maxNodeFileSize)
	}
	return os.ReadFile(path)
}

// nodeKillers runs every check on this node; what cannot be checked is one
// note.
func (o *preflightOptions) nodeKillers(ctx context.Context, env Env, from, to kubeletcompat.Version, pods []preflight.Pod, api *nodeAPI, r *preflight.Report) {
	add := func(f []preflight.Finding) { r.Killers = append(r.Killers, f...) }
	note := func(s string) {
		if s != "" {
			r.KillerNotes = append(r.KillerNotes, s)
		}
	}
	cfg, flags, flagsKnown, notes := o.targetConfig()
	for _, n := range notes {
		note(n)
	}

	if api == nil || api.node == nil {
		note(notCheckedPrefix + killersWithoutAPIList + ": no --kubeconfig (the node object and its pods come from the API server)")
	} else {
		add(preflight.NodeAffinity(to, api.node, api.pods))
		add(preflight.Taints(to, api.node, api.pods, o.swapWindow, o.gracePeriod))
		add(preflight.EvictionPressure(api.node, api.pods))
		alloc, err := preflight.Allocatable(api.node.Status.Capacity, api.node.Status.Allocatable, cfg)
		if err != nil {
			note(notCheckedPrefix + "resources: " + err.Error())
		} else {
			add(preflight.ResourceFit(alloc, api.pods))
			note("resources: target allocatable " + formatResources(alloc))
		}
	}

	execPods := specPods(pods)
	if api != nil && api.pods != nil {
		execPods = api.pods
	}
	add(preflight.ExecProbes(from, to, execPods))
	add(preflight.DeclaredFeatures(to, cfg.FeatureGates, execPods))

	cpuPath := filepath.Join(o.rootDir, cpuManagerStateFile)
	if data, err := readNodeFile(cpuPath); err != nil {
		note(fmt.Sprintf("cpu-manager: %s: %s: nothing to restore", cpuPath, shortErr(err)))
	} else {
		f, n := preflight.CPUManagerState(cpuPath, data, cfg)
		add(f)
		note(n)
	}

	devPath := filepath.Join(o.rootDir, deviceCheckpointFile)
	if data, err := readNodeFile(devPath); err != nil {
		note(fmt.Sprintf("device-checkpoint: %s: %s: nothing to restore", devPath, shortErr(err)))
	} else {
		var byUID map[string]string
		if api != nil {
			byUID = preflight.PodsByUID(api.pods)
		}
		f, n := preflight.DeviceCheckpoint(devPath, data, to, byUID)
		add(f)
		note(n)
	}

	subIDs := env.SubIDs
	if subIDs == nil {
		subIDs = hostSubIDs
	}
	add(preflight.UserNamespaceRange(to, cfg.UserNamespaces.IDsPerPod, func() preflight.SubIDs { return subIDs(ctx) }))

	if o.targetKubelet == "" {
		note(notCheckedPrefix + "flags: give --target-kubelet (the target binary parses the node's flags and lists its feature gates)")
		return
	}
	if !flagsKnown {
		note("flags: only the config file's feature gates are checked")
	}
	f, n := o.checkTargetFlags(ctx, env, flags, cfg.FeatureGates)
	add(f)
	for _, s := range n {
		note(s)
	}
}

// checkTargetFlags asks the target binary: `<target> <flags> --version`
// parses the flags and exits before anything else (never a second kubelet
// against the node), and `<target> --help` lists its flags and gates.
func (o *preflightOptions) checkTargetFlags(ctx context.Context, env Env, flags []preflight.FlagArg, gates map[string]bool) ([]preflight.Finding, []string) {
	bin, err := kubelet.TrustedBinary(o.targetKubelet, env.RootUID)
	if err != nil {
		return nil, []string{notCheckedPrefix + "flags: " + err.Error()}
	}
	var args []string
	for _, f := range flags {
		if f.Name == "version" || f.Name == "help" || f.Name == "h" {
			continue
		}
		if f.HasValue {
			args = append(args, "--"+f.Name+"="+f.Value)
		} else {
			args = append(args, "--"+f.Name)
		}
	}
	var dry preflight.DryParse
	out, ok, err := bin.Run(ctx, env.RootUID, targetKubeletTimeout, append(args, "--version")...)
	switch {
	case err != nil:
		dry.Why = err.Error()
	case ok && !preflight.PrintedVersion(out):
		dry.Why = fmt.Sprintf("%s --version printed %q, not a kubelet version", bin.Path, firstLine(out))
	default:
		dry = preflight.DryParse{Ran: true, OK: ok, Output: out}
	}
	var help *preflight.Help
	if hout, _, err := bin.Run(ctx, env.RootUID, targetKubeletTimeout, "--help"); err == nil {
		h := preflight.ParseHelp(hout)
		if len(h.Flags) > 0 {
			help = &h
		}
	}
	return preflight.TargetFlags(o.targetKubelet, flags, gates, dry, help)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func formatResources(l v1.ResourceList) string {
	var names []string
	for n := range l {
		names = append(names, string(n))
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		q := l[v1.ResourceName(n)]
		parts = append(parts, n+"="+q.String())
	}
	return strings.Join(parts, ", ")
}

// writeKillers prints the other pod killers after the container table.
func writeKillers(w io.Writer, r *preflight.Report) {
	if len(r.Killers) == 0 && len(r.KillerNotes) == 0 {
		return
	}
	fmt.Fprintf(w, "\nWhat else loses pods at the swap %s -> %s\n\n", r.From, r.To)
	if len(r.Killers) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "POD\tCHECK\tUNPATCHED\tPATCHED\tWHY (UNPATCHED)\tPATCHED KUBELET")
		unpatched, patched := 0, 0
		for _, f := range r.Killers {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", f.Pod, f.Check, f.Unpatched, f.Patched, f.Why, f.PatchedReason)
			if f.Unpatched == "summary" {
				continue
			}
			unpatched++
			if f.Patched != preflight.KeptAdmitted {
				patched++
			}
		}
		tw.Flush()
		fmt.Fprintf(w, "\npod killers: unpatched: %d finding(s); patched: %d (the rest are admitted: started before the swap)\n", unpatched, patched)
	} else {
		fmt.Fprintln(w, "pod killers: none found")
	}
	for _, n := range r.KillerNotes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}
