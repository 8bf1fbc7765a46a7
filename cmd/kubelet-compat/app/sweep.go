package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/spf13/cobra"
)

type sweepOptions struct {
	nodeOptions
	dryRun bool
	// releaseWaived deletes the file although pods run on its admission
	// waivers (waiverHolders), and names them.
	releaseWaived bool
	// grace is how long after the kubelet's start the file is kept anyway.
	grace time.Duration
	// podResourcesEndpoint is the kubelet's pod-resources socket; "" means
	// <root-dir>/pod-resources/kubelet.sock.
	podResourcesEndpoint string
}

// defaultGrace is sweep's --grace: the kubelet admits its pods and starts
// their first sync within seconds of its start and syncs every pod again
// every --sync-frequency (1m by default); ten minutes leave room for a slow
// start (a slow API server, volumes that take their time to mount).
const defaultGrace = 10 * time.Minute

func newSweepCommand(env Env) *cobra.Command {
	o := &sweepOptions{}
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Delete the compat file once no running container needs it",
		Long: `sweep deletes the compat file when nothing running depends on it any more,
and never while something might:

  - a running container created before the kubelet started (legacy) needs the
    file unless its stored hash equals the hash the running kubelet computes
    for its spec; a legacy container whose spec is not found (static pods come
    from --manifest-dir, other pods from the API server with --kubeconfig)
    is assumed to need it;
  - a running static pod whose unchanged manifest the file maps to the UID it
    runs under needs it (without the file the kubelet derives another UID and
    recreates the pod), unless the manifest sets that UID as metadata.uid;
  - a pod the kubelet admitted despite its node affinity, node selector or
    taints needs it: the runtime shows it ran before the kubelet (a running
    container the file lists, or a recorded static pod's sandbox; never its
    API status), and the node (its labels and NoExecute taints, read with
    --kubeconfig) no longer matches its spec, so the kubelet's next start
    without the file would reject it and kill it. A pod with a nodeSelector
    or required node affinity counts when the node cannot be read (no
    --kubeconfig). --release-waived deletes the file anyway and names the
    pods that lose their waiver;
  - the kubelet that runs now must have taken in every pod the runtime runs
    (a ready sandbox, or one with a running container): its admission reads
    the file, and so does its first sync of the pod (1.33 to 1.36 record the
    resources of listed containers as actuated). The evidence is the
    kubelet's own answer on its pod-resources socket
    (<root-dir>/pod-resources/kubelet.sock, --pod-resources-endpoint): it
    names the pods its pod manager holds, which a pod enters right before its
    admission. Pods are matched by namespace and name. Asked only when
    nothing else keeps the file (the grace included) and something runs; no
    answer is an error;
  - never within --grace (default 10m) of the kubelet's start, whatever the
    above says: a pod taken in is synced right away and again every
    --sync-frequency, and the grace is the margin for it. --grace 0s turns
    the grace off, not the pod check.

sweep holds the lock record takes (<dir>/.<file>.lock) from its check to the
delete, so it never deletes a file record wrote meanwhile, and it deletes
only the very file it checked (same inode, size, mtime and ctime).

Exit codes:
  0  the file was deleted (with --dry-run: would be), or there is no file
  1  error, or the file changed while sweep checked it (nothing deleted)
  2  the file is kept: the listed containers, static pods, pods on an
     admission waiver or pods not yet admitted still need it, or the kubelet
     started less than --grace ago (the lines on stdout say which, and until
     when)`,
		Example: `  kubelet-compat sweep --dry-run
  kubelet-compat sweep --kubeconfig /etc/kubernetes/kubelet.conf
  kubelet-compat sweep --kubeconfig /etc/kubernetes/kubelet.conf --release-waived`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSweep(cmd.Context(), env, o) },
	}
	o.addRuntimeFlags(cmd.Flags())
	o.addFileFlags(cmd.Flags())
	o.addKubeletFlags(cmd.Flags())
	o.addKubeconfigFlag(cmd.Flags())
	o.addLockFlag(cmd.Flags())
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "say what would be done, delete nothing")
	cmd.Flags().BoolVar(&o.releaseWaived, "release-waived", false, "delete the file although pods run on its node affinity or taint waivers (the kubelet's next start rejects and kills them); names them")
	nonNegativeDurationVar(cmd.Flags(), &o.grace, "grace", defaultGrace, "keep the file at least this long after the kubelet's start (0s: no grace; the kubelet must still have every running pod)")
	cmd.Flags().StringVar(&o.podResourcesEndpoint, "pod-resources-endpoint", "", "the kubelet's pod-resources socket, asked which pods it has (default unix://<root-dir>/pod-resources/kubelet.sock)")
	return cmd
}

func runSweep(ctx context.Context, env Env, o *sweepOptions) error {
	path := o.compatPath()
	// Check and delete under the lock record takes (see lock.go).
	checked, release, err := o.lockForSweep(ctx, path)
	if err != nil {
		return err
	}
	defer release()
	if checked == nil {
		fmt.Fprintf(env.Stdout, "no compat file at %s: nothing to do\n", path)
		return nil
	}
	node, err := o.node(env)
	if err != nil {
		return err
	}
	k, err := o.findKubelet(ctx, env)
	if err != nil {
		return err
	}
	file := readCompatFile(path, env.OwnerUID, k.version, k.start)
	if file.state == kubeletcompat.FileIgnored && file.decider.File() == nil {
		return fmt.Errorf("compat file %s is not valid (%s); not deleting what cannot be checked", path, file.Reason)
	}
	if file.state == kubeletcompat.FilePending {
		// record runs just before the swap; deleting the file now would take
		// the protection away from the swap it was recorded for.
		return &exitError{code: ExitKept, err: fmt.Errorf("keeping %s: %s (delete it by hand if that upgrade was abandoned)", path, file.Reason)}
	}
	client, st, err := o.dialNode(ctx)
	if err != nil {
		return err
	}
	defer client.Close()
	idx, err := o.loadSpecs(ctx, node)
	if err != nil {
		return err
	}
	holders, err := waiverHolders(file.decider, st, idx, k.version, o.nodeSource(ctx, node))
	if err != nil {
		return fmt.Errorf("cannot tell which pods run on an admission waiver: %w; not deleting %s", err, path)
	}
	needs := fileNeeds(findLegacy(st, k.start, file.decider, idx, k.version), staticPodsNeedingFile(file.decider, st), nil)
	var why []string
	if len(needs) > 0 {
		why = append(why, fmt.Sprintf("%d legacy container(s) or static pod(s) still need it", len(needs)))
	}
	if !o.releaseWaived && len(holders) > 0 {
		needs = append(needs, fileNeeds(nil, nil, holders)...)
		why = append(why, fmt.Sprintf("%d pod(s) started before the kubelet would be rejected without it (node affinity or taints; --release-waived deletes it anyway)", len(holders)))
	}
	if env.Now().Before(k.start.Add(o.grace)) {
		at := graceEnd(k.start, o.grace).Format(time.RFC3339)
		needs = append(needs, fmt.Sprintf("the kubelet (pid %d) started at %s, less than the grace period of %s ago: not before %s",
			k.pid, k.start.UTC().Format(time.RFC3339), o.grace, at))
		why = append(why, fmt.Sprintf("the kubelet started less than --grace %s ago (until %s)", o.grace, at))
	}
	if len(needs) == 0 {
		// Nothing running needs the file any more, provided the kubelet
		// has taken every pod in: ask it. Not before the grace has passed:
		// the file is kept anyway, and List makes the kubelet's device
		// manager drop the allocations of pods it does not have yet.
		missing, err := o.podsNotAdmitted(ctx, env, st)
		if err != nil {
			return fmt.Errorf("cannot ask the kubelet which pods it has admitted: %w; not deleting %s", err, path)
		}
		for _, sb := range missing {
			needs = append(needs, fmt.Sprintf("pod %s/%s (uid %s) runs, but the kubelet (pid %d) has not admitted it yet (its pod-resources List does not name it)", sb.Namespace, sb.Name, sb.UID, k.pid))
		}
		if len(missing) > 0 {
			why = append(why, fmt.Sprintf("%d running pod(s) the kubelet has not admitted yet", len(missing)))
		}
	}
	if len(needs) > 0 {
		for _, n := range needs {
			fmt.Fprintln(env.Stdout, n)
		}
		return &exitError{code: ExitKept, err: fmt.Errorf("keeping %s: %s", path, strings.Join(why, "; "))}
	}
	released := ""
	if len(holders) > 0 {
		released = fmt.Sprintf("; %d pod(s) lose their admission waiver (--release-waived)", len(holders))
	}
	if o.dryRun {
		fmt.Fprintf(env.Stdout, "would delete %s: no running container needs it%s\n", path, released)
		for _, h := range holders {
			fmt.Fprintln(env.Stdout, h.loseLine(true))
		}
		return nil
	}
	if err := deleteChecked(path, checked); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "deleted %s: no running container needs it%s\n", path, released)
	for _, h := range holders {
		fmt.Fprintln(env.Stdout, h.loseLine(false))
	}
	return nil
}

// fileNeeds is what runs and still needs the compat file, one line each in
// sweep's words: the legacy containers the file lists that need it
// (needsFile), the static pods on a recorded UID and the pods on an
// admission waiver.
func fileNeeds(legacy []legacyContainer, statics []staticPodNeed, holders []waiverHolder) []string {
	var needs []string
	for _, l := range legacy {
		if why := l.needsFile(); why != "" {
			needs = append(needs, fmt.Sprintf("container %s/%s (%s): %s", l.pod, l.c.Name, shortID(l.c.ID), why))
		}
	}
	for _, sp := range statics {
		needs = append(needs, fmt.Sprintf("static pod %s runs under the recorded UID %s of %s", sp.Pod, sp.UID, sp.ManifestPath))
	}
	for _, h := range holders {
		needs = append(needs, h.keepLine())
	}
	return needs
}

// graceEnd is when the grace after the kubelet's start ends, in whole
// seconds rounded up (UTC): "not before" must not be early.
func graceEnd(start time.Time, grace time.Duration) time.Time {
	return start.Add(grace).Add(time.Second - 1).Truncate(time.Second).UTC()
}

func shortID(id string) string {
	if len(id) > 13 {
		return id[:13]
	}
	return id
}
