package app

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/internal/manifest"
	"github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/internal/preflight"
	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	"github.com/spf13/cobra"
)

type preflightOptions struct {
	nodeOptions
	killerOptions
	runtimeCheckOptions
	from, to   string
	files      []string
	onNode     bool
	staticPods bool
	output     string
}

func newPreflightCommand(env Env) *cobra.Command {
	o := &preflightOptions{}
	cmd := &cobra.Command{
		Use:   "preflight --from VERSION --to VERSION (-f FILE|DIR... | --node)",
		Short: "Predict which containers an in-place kubelet upgrade restarts",
		Long: `preflight reports, for an in-place upgrade of the kubelet from --from to --to,
which containers an UNPATCHED kubelet would restart and why, and what the
patched kubelet (with a compat file written by record) does instead.

Reasons an unpatched kubelet restarts a container:
  - the hash algorithm changed: go-struct (<=1.15) -> json (1.16-1.30) ->
    name-image (1.31-1.37);
  - the spec sets fields the old kubelet did not know, so its hash did not
    cover them (securityContext.seccompProfile at 1.19, probe
    terminationGracePeriodSeconds at 1.21, ...);
  - a static pod without metadata.uid gets a new UID and is recreated: measured
    between 1.18 and 1.19 and between 1.20 and 1.21; other steps are not
    measured and reported as "may recreate pod".

Init containers are not hash-checked once they completed: they are reported
as kept unless their pod is recreated.

What else loses pods at the swap (a second table, same columns; CHECK names
the check). The new kubelet re-admits every pod when it starts; the patched
kubelet admits a pod the compat file lists (it ran before the swap) whatever
node affinity, taints, resource fit or eviction pressure say (as upstream's
NotEvictPodOnKubeletRestart):
  node-affinity      --node, --kubeconfig: nodeSelector or required node
                     affinity (matchExpressions, matchFields metadata.name)
                     that no longer matches the node's labels: upstream
                     rejects the pod (NodeAffinity; MatchNodeSelector <1.18).
  taints             --node, --kubeconfig: NoExecute taints a pod does not
                     tolerate (the kubelet rejects from 1.22: TaintToleration),
                     and the lowest tolerationSeconds for not-ready and
                     unreachable against --swap-window (default 40s): the node
                     is Unknown after --node-monitor-grace-period (40s) and the
                     controller evicts pods whose tolerationSeconds run out.
  resources          --node, --kubeconfig: replays the re-admission (oldest
                     first) against the allocatable the target computes:
                     node capacity minus kube-reserved, system-reserved and
                     eviction-hard of --kubelet-config and the target flags,
                     maxPods; reports OutOfcpu/OutOfmemory/OutOfpods/... pods,
                     newest first.
  eviction-pressure  --node, --kubeconfig: while the node has Memory/Disk/PID
                     pressure, the pods the eviction manager rejects (Evicted).
  exec-probe         every exec probe when the upgrade crosses 1.20: its
                     timeoutSeconds is enforced from 1.20 (KEP-1972).
  cpu-manager        --node: <root-dir>/cpu_manager_state whose policy (or, for
                     static, reserved CPUs) the target's config refuses: the
                     kubelet does not start.
  device-checkpoint  --node: the device-plugin checkpoint's format (v1 <= 1.19,
                     v2 >= 1.20) and whether the target reads it (v1 is not
                     read by 1.20.0-1.20.13 and 1.21.0-1.21.7: kubernetes#102882).
  flags              --node, --target-kubelet: the target binary parses the
                     node's flags (--target-flags, default KUBELET_KUBEADM_ARGS
                     of <root-dir>/kubeadm-flags.env and KUBELET_EXTRA_ARGS of
                     --extra-args-file) with --version appended
                     (it exits after parsing, before touching anything), and
                     its --help lists the flags and feature gates it knows.
etcd: on a control-plane node (--node, or -f with kubeadm's manifests), a
step from below 1.37 to 1.37 or later whose etcd static pod runs a 3.6 is
one note "etcd: ...": kubeadm 1.37 moves etcd to 3.7.0, which needs the
bridge etcd first (kubelet-compat etcd-bridge; the roll of deploy/system-upgrade
runs it with the Plan's KC_ETCD_BRIDGE_IMAGE).
A check whose inputs are missing (no --kubeconfig, no config file, no
--target-kubelet) is one "note: not checked: ..." line.

Pods come from manifests (-f, repeatable: files or directories of YAML or JSON,
multi-document YAML; kinds other than Pod are skipped with a note; pods are
treated as static pods unless --static-pods=false) or from this node (--node:
running containers and their stored hashes over CRI, specs from --manifest-dir
and --kubeconfig). Hashes of manifests are computed with the kubelet's
defaults applied.

Exit codes: 0 report written, 1 error.`,
		Example: `  kubelet-compat preflight --from v1.18.19 --to v1.19.16 -f /etc/kubernetes/manifests
  kubelet-compat preflight --from v1.30.14 --to v1.31.14 --node --kubeconfig /etc/kubernetes/kubelet.conf -o json
  kubelet-compat preflight --from v1.20.15 --to v1.21.14 --node --kubeconfig /etc/kubernetes/kubelet.conf \
      --target-kubelet /usr/local/kubernetes/1.21.14/stage2/usr/bin/kubelet --swap-window 60s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.targetFlagsGiven = cmd.Flags().Changed("target-flags")
			return runPreflight(cmd.Context(), env, o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.from, "from", "", "the kubelet version running now, e.g. v1.18.19 (required)")
	fs.StringVar(&o.to, "to", "", "the kubelet version to upgrade to, e.g. v1.19.16 (required)")
	fs.StringArrayVarP(&o.files, "filename", "f", nil, "pod manifest file or directory (repeatable)")
	fs.BoolVar(&o.onNode, "node", false, "check the containers running on this node instead of manifests")
	fs.BoolVar(&o.staticPods, "static-pods", true, "treat pods from -f as static pods (their UID may change)")
	fs.StringVarP(&o.output, "output", "o", "table", "output format: table or json")
	o.addRuntimeFlags(fs)
	o.addKubeconfigFlag(fs)
	fs.StringVar(&o.rootDir, "root-dir", defaultRootDir, "the kubelet's --root-dir (cpu_manager_state, device-plugins/kubelet_internal_checkpoint, kubeadm-flags.env)")
	o.killerOptions.addFlags(fs)
	o.runtimeCheckOptions.addFlags(fs)
	cmd.MarkFlagRequired("from")
	cmd.MarkFlagRequired("to")
	return cmd
}

func runPreflight(ctx context.Context, env Env, o *preflightOptions) error {
	if o.output != "table" && o.output != "json" {
		return fmt.Errorf("unknown output format %q (want table or json)", o.output)
	}
	from, err := kubeletcompat.ParseVersion(o.from)
	if err != nil {
		return fmt.Errorf("--from: %w", err)
	}
	to, err := kubeletcompat.ParseVersion(o.to)
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	if err := preflight.CheckVersions(from, to); err != nil {
		return err
	}
	if o.onNode == (len(o.files) > 0) {
		return fmt.Errorf("give either -f FILE|DIR or --node")
	}
	runtimeNotes, err := o.checkRuntime(ctx, env, from, to) // preflight_runtime.go
	if err != nil {
		return err
	}
	var pods []preflight.Pod
	var notes []string
	var api *nodeAPI
	if o.onNode {
		pods, notes, api, err = o.nodePods(ctx, env)
	} else {
		pods, notes, err = o.manifestPods()
	}
	if err != nil {
		return err
	}
	report, err := preflight.Run(from, to, pods, env.Now())
	if err != nil {
		return err
	}
	report.Notes = append(append(report.Notes, notes...), runtimeNotes...)
	report.Notes = append(report.Notes, etcdBridgeNotes(from, to, pods)...) // preflight_etcd.go
	if o.onNode {
		o.nodeKillers(ctx, env, from, to, pods, api, report)
	} else {
		o.manifestKillers(from, to, pods, report)
	}
	if o.output == "json" {
		return writeJSON(env.Stdout, report)
	}
	return writePreflightTable(env.Stdout, report)
}

func (o *preflightOptions) manifestPods() ([]preflight.Pod, []string, error) {
	sources, notes, err := manifest.Load(o.files)
	if err != nil {
		return nil, nil, err
	}
	var pods []preflight.Pod
	for _, s := range sources {
		src := s.File
		if s.Index > 0 {
			src = fmt.Sprintf("%s#%d", s.File, s.Index+1)
		}
		pods = append(pods, preflight.Pod{Namespace: manifest.Namespace(s.Pod), Name: s.Pod.Name, Source: src, Object: s.Pod, Static: o.staticPods})
	}
	return pods, notes, nil
}

func (o *preflightOptions) nodePods(ctx context.Context, env Env) ([]preflight.Pod, []string, *nodeAPI, error) {
	node, err := o.node(env)
	if err != nil {
		return nil, nil, nil, err
	}
	client, st, err := o.dialNode(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	defer client.Close()
	idx, err := o.loadSpecs(ctx, node)
	if err != nil {
		return nil, nil, nil, err
	}
	api := &nodeAPI{name: node}
	if o.kubeconfig != "" {
		if api.node, err = getNode(ctx, o.kubeconfig, node); err != nil {
			return nil, nil, nil, err
		}
		for i := range idx.apiPods {
			api.pods = append(api.pods, &idx.apiPods[i])
		}
	}
	bySandbox := map[string]*preflight.Pod{}
	var order []string
	for _, c := range st.containers {
		if c.State != cri.ContainerRunning {
			continue
		}
		p, ok := bySandbox[c.SandboxID]
		if !ok {
			sb := st.byID[c.SandboxID]
			p = &preflight.Pod{Namespace: c.PodNamespace, Name: c.PodName, Running: map[string]preflight.Running{}}
			if sb != nil {
				p.Static = sb.IsStatic()
			}
			if spec, ok := idx.lookup(sb, c); ok {
				p.Object, p.Source = spec.pod, spec.source
			}
			bySandbox[c.SandboxID] = p
			order = append(order, c.SandboxID)
		}
		image := c.Image
		if img, err := client.ContainerImage(ctx, c.ID); err == nil && img != "" {
			image = img
		}
		p.Running[c.Name] = preflight.Running{ID: c.ID, Hash: c.Hash, HashKnown: c.HashErr == nil, Image: image}
	}
	var pods []preflight.Pod
	for _, id := range order {
		pods = append(pods, *bySandbox[id])
	}
	sort.SliceStable(pods, func(i, j int) bool {
		return pods[i].Namespace+"/"+pods[i].Name < pods[j].Namespace+"/"+pods[j].Name
	})
	var notes []string
	if len(idx.sources) == 0 {
		notes = append(notes, "no pod specs: give --manifest-dir and/or --kubeconfig")
	}
	return pods, notes, api, nil
}

func writePreflightTable(w io.Writer, r *preflight.Report) error {
	step := "Upgrade"
	if from, err := kubeletcompat.ParseVersion(r.From); err == nil {
		if to, err := kubeletcompat.ParseVersion(r.To); err == nil && to.LessThan(from) {
			step = "Rollback"
		}
	}
	fmt.Fprintf(w, "%s %s -> %s (container hash: %s)\n\n", step, r.From, r.To, r.Eras)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POD\tCONTAINER\tUNPATCHED\tPATCHED\tWHY (UNPATCHED)\tPATCHED KUBELET")
	for _, row := range r.Rows {
		name := row.Container
		if row.Init {
			name += " (init)"
		}
		why := strings.Join(row.Reasons, "; ")
		if why == "" {
			why = "hash unchanged"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", row.Pod, name, row.Unpatched, row.Patched, why, row.PatchedReason)
	}
	tw.Flush()
	s := r.Summary
	fmt.Fprintf(w, "\nunpatched: %d of %d containers restart (pods recreated: %d, maybe: %d)", s.UnpatchedRestarts, s.Containers, s.UnpatchedRecreated, s.UnpatchedMaybe)
	if s.Unknown > 0 {
		fmt.Fprintf(w, ", %d unknown", s.Unknown)
	}
	if len(r.Rows) > 0 && r.Rows[0].Patched == preflight.NoSeries {
		fmt.Fprintf(w, "; patched: %s (no patch series)\n", preflight.NoSeries)
	} else {
		fmt.Fprintf(w, "; patched: %d restart\n", s.PatchedRestarts)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	writeKillers(w, r)
	return nil
}
