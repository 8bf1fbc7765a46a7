package app

import (
	"context"
	"fmt"

	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/spf13/cobra"
)

type sweepOptions struct {
	nodeOptions
	dryRun bool
}

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
    recreates the pod), unless the manifest sets that UID as metadata.uid.

sweep holds the lock record takes (<dir>/.<file>.lock) from its check to the
delete, so it never deletes a file record wrote meanwhile, and it deletes
only the very file it checked (same inode, size, mtime and ctime).

Exit codes:
  0  the file was deleted (with --dry-run: would be), or there is no file
  1  error, or the file changed while sweep checked it (nothing deleted)
  2  the file is kept: the listed containers or static pods still need it`,
		Example: `  kubelet-compat sweep --dry-run
  kubelet-compat sweep --kubeconfig /etc/kubernetes/kubelet.conf`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSweep(cmd.Context(), env, o) },
	}
	o.addRuntimeFlags(cmd.Flags())
	o.addFileFlags(cmd.Flags())
	o.addKubeletFlags(cmd.Flags())
	o.addKubeconfigFlag(cmd.Flags())
	o.addLockFlag(cmd.Flags())
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "say what would be done, delete nothing")
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
	var needs []string
	for _, l := range findLegacy(st, k.start, file.decider, idx, k.version) {
		if why := l.needsFile(); why != "" {
			needs = append(needs, fmt.Sprintf("container %s/%s (%s): %s", l.pod, l.c.Name, shortID(l.c.ID), why))
		}
	}
	for _, sp := range staticPodsNeedingFile(file.decider, st) {
		needs = append(needs, fmt.Sprintf("static pod %s runs under the recorded UID %s of %s", sp.Pod, sp.UID, sp.ManifestPath))
	}
	if len(needs) > 0 {
		for _, n := range needs {
			fmt.Fprintln(env.Stdout, n)
		}
		return &exitError{code: ExitKept, err: fmt.Errorf("keeping %s: %d legacy container(s) or static pod(s) still need it", path, len(needs))}
	}
	if o.dryRun {
		fmt.Fprintf(env.Stdout, "would delete %s: no running container needs it\n", path)
		return nil
	}
	if err := deleteChecked(path, checked); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "deleted %s: no running container needs it\n", path)
	return nil
}

func shortID(id string) string {
	if len(id) > 13 {
		return id[:13]
	}
	return id
}
