package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/internal/manifest"
	"github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/internal/preflight"
	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	"github.com/spf13/cobra"
)

func newRecordCommand(env Env) *cobra.Command {
	o := &nodeOptions{}
	cmd := &cobra.Command{
		Use:   "record",
		Short: "Write the compat file before the kubelet binary is swapped",
		Long: `record writes the compat file that a patched kubelet reads after an in-place
upgrade: the version of the kubelet that runs now (from --kubelet-binary, or
the running kubelet process), the time, and for every static pod manifest in
--manifest-dir its path, sha256 and the UID its running sandbox has.

Run it on the node BEFORE the kubelet binary is replaced. The file is written
atomically (root-owned, mode 0644): it is either complete or not there. record
refuses when the file already records a newer kubelet version, unless the
kubelet that runs now is the recorded version and started after that file
was written (the node was rolled back to it). It holds
the lock sweep takes (<dir>/.<file>.lock) for its whole run.

Every container that runs is listed with the kubelet whose hash it carries.
record reads the file it replaces in any format kubelet-compat ever wrote
(v1alpha1, v1alpha2) and carries its history forward: a container the file
lists keeps its hash version. Where the file lists no containers (no file,
a v1alpha1 file, a file the kubelet ignores or --force replaces), each
container's stored hash is matched against what the running kubelet, the
kubelets the file names, and every other kubelet from 1.16 compute for its
spec (static pods from --manifest-dir, other pods from the API server with
--kubeconfig); a container no kubelet explains, or whose spec is not found,
is recorded as the running kubelet's with a warning.

record refuses a path that is not a regular file (FIFO, directory, symlink),
and an existing file that does not parse as a compat file of any format
unless --force. It removes the temporary files (.<file>.tmp-*) that
interrupted records left.

A manifest without a running sandbox is skipped with a warning; a manifest
that matches several running sandboxes of different UIDs is an error.

Exit codes: 0 recorded, 1 error (nothing written, an existing file unchanged).`,
		Example: `  kubelet-compat record
  kubelet-compat record --kubelet-binary /usr/bin/kubelet --manifest-dir /etc/kubernetes/manifests`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRecord(cmd.Context(), env, o) },
	}
	o.addRuntimeFlags(cmd.Flags())
	o.addFileFlags(cmd.Flags())
	o.addKubeletFlags(cmd.Flags())
	o.addKubeconfigFlag(cmd.Flags())
	o.addLockFlag(cmd.Flags())
	o.addForceFlag(cmd.Flags())
	return cmd
}

func runRecord(ctx context.Context, env Env, o *nodeOptions) error {
	// Under the lock sweep takes; checks of the target first (record_guard.go).
	release, err := o.prepareRecord(ctx, env)
	if err != nil {
		return err
	}
	defer release()
	node, err := o.node(env)
	if err != nil {
		return err
	}
	version, err := o.recordedVersion(ctx, env)
	if err != nil {
		return err
	}
	if kubeletcompat.EraOf(version) == kubeletcompat.EraUnknown {
		return fmt.Errorf("kubelet %s is not a version kubelet-compat knows (1.x up to 1.%d)", version, preflight.NewestKnownVersion().Minor)
	}
	statics, err := manifest.ReadStaticDir(o.manifestDir)
	switch {
	case errors.Is(err, os.ErrNotExist) && o.manifestDir == defaultManifestDir:
		warnf(env, "no manifest directory %s: recording no static pods", o.manifestDir)
	case err != nil:
		return err
	}
	client, st, err := o.dialNode(ctx)
	if err != nil {
		return err
	}
	defer client.Close()
	f := &kubeletcompat.File{
		APIVersion:      kubeletcompat.APIVersion,
		Kind:            kubeletcompat.Kind,
		PreviousVersion: version.String(),
		RecordedAt:      env.Now().UTC().Truncate(1e9),
	}
	// The mirror pods' status: what the previous kubelet last reported for
	// its static pods, which the next kubelet starts from (StaticPod.Ready,
	// Containers). Only with --kubeconfig; specs are read once.
	var idx *specIndex
	if len(statics) > 0 && o.kubeconfig != "" {
		if idx, err = o.loadSpecs(ctx, node); err != nil {
			return err
		}
	}
	var names []string
	if f.StaticPods, names, err = recordStaticPods(env, statics, st, idx, node); err != nil {
		return err
	}
	path := o.compatPath()
	hist, err := existingHistory(env, path, version, o.rolledBackTo(ctx, env, version))
	if err != nil {
		return err
	}
	// The pod specs: to infer hash versions (no per-container history),
	// and to record the spec of a {name, image} container for a rollback
	// (specHash); read once, and only when needed.
	var infer func(cri.Container) inference
	if hist == nil || hist.containers == nil {
		if idx == nil {
			if idx, err = o.loadSpecs(ctx, node); err != nil {
				return err
			}
		}
		// No per-container history: the stored hashes say who created what.
		infer = o.hashVersionInference(idx, st, hist, version)
	}
	var inferred []inference
	f.Containers, inferred = recordedContainers(st.containers, hist, version, infer)
	if idx == nil && needSpecHashes(f.Containers) {
		if idx, err = o.loadSpecs(ctx, node); err != nil {
			warnf(env, "%v: recording no container specs (a rollback to a kubelet of 1.30 or older restarts the containers of 1.31 or newer)", err)
			idx = &specIndex{}
		}
	}
	if missing := recordSpecHashes(f.Containers, st, idx); missing > 0 {
		warnf(env, "%d container(s) of 1.31 or newer have no pod spec (%s): their specs are not recorded, so a rollback to a kubelet of 1.30 or older restarts them", missing, o.noSpecWhere())
	}
	for _, in := range inferred {
		if in.warning != "" {
			warnf(env, "%s", in.warning)
		}
	}
	if err := writeRecord(env, path, f); err != nil {
		return err
	}
	printRecord(env, path, f, version, hist, inferred, names)
	return nil
}

// recordStaticPods are the static pods of the manifests that run on node
// (their running UID from the runtime's sandboxes), with their mirror
// pod's status when idx holds it, and a line for each.
func recordStaticPods(env Env, statics []manifest.Static, st *nodeState, idx *specIndex, node string) ([]kubeletcompat.StaticPod, []string, error) {
	var out []kubeletcompat.StaticPod
	var names []string
	for _, s := range statics {
		uid, podName, err := staticPodUID(st.sandboxes, s, node)
		if err != nil {
			return nil, nil, err
		}
		if uid == "" {
			warnf(env, "%s: no sandbox of static pod %s runs on node %s; not recorded", s.Path, podName, node)
			continue
		}
		if s.Pod.UID != "" && string(s.Pod.UID) != uid {
			warnf(env, "%s: metadata.uid %s differs from the running pod's UID %s; recording the running UID", s.Path, s.Pod.UID, uid)
		}
		sp := kubeletcompat.StaticPod{ManifestPath: s.Path, SHA256: kubeletcompat.ManifestSHA256(s.Data), UID: uid}
		sp.Ready, sp.Containers = mirrorStatus(idx, st, uid, manifest.Namespace(s.Pod), manifest.StaticPodName(s.Pod.Name, node))
		out = append(out, sp)
		names = append(names, fmt.Sprintf("  %s  uid %s  %s%s", podName, uid, s.Path, readySummary(sp)))
	}
	return out, names, nil
}

// writeRecord writes the file, owned by root (the kubelet ignores it
// otherwise).
func writeRecord(env Env, path string, f *kubeletcompat.File) error {
	if err := kubeletcompat.WriteFile(path, f); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if env.Geteuid() == 0 {
		if err := os.Chown(path, 0, 0); err != nil {
			return fmt.Errorf("chown root:root %s: %w", path, err)
		}
	} else {
		warnf(env, "not running as root: the kubelet ignores %s unless root owns it", path)
	}
	return nil
}

// printRecord says what record wrote.
func printRecord(env Env, path string, f *kubeletcompat.File, version kubeletcompat.Version, hist *compatHistory, inferred []inference, names []string) {
	fmt.Fprintf(env.Stdout, "recorded %s: previous kubelet %s at %s, %d container(s), %d static pod(s)\n", path, version, f.RecordedAt.Format("2006-01-02T15:04:05Z07:00"), len(f.Containers), len(f.StaticPods))
	if hist != nil && hist.apiVersion != kubeletcompat.APIVersion {
		fmt.Fprintf(env.Stdout, "  migrated from %s (previous kubelet %s), which lists no containers\n", hist.apiVersion, hist.previous)
	}
	if len(inferred) > 0 {
		fmt.Fprintf(env.Stdout, "  %s\n", inferenceSummary(inferred))
	}
	if older := otherHashVersions(f.Containers, version, -1); len(older) > 0 {
		fmt.Fprintf(env.Stdout, "  containers kept from earlier upgrades carry hashes of %s\n", strings.Join(older, ", "))
	}
	if newer := otherHashVersions(f.Containers, version, 1); len(newer) > 0 {
		fmt.Fprintf(env.Stdout, "  containers kept through a rollback carry hashes of %s\n", strings.Join(newer, ", "))
	}
	for _, n := range names {
		fmt.Fprintln(env.Stdout, n)
	}
}

// rolledBackTo says whether the node was rolled back to kubelet version
// after a newer kubelet recorded the compat file at recordedAt: the kubelet
// that runs now is that version and started after the record.
func (o *nodeOptions) rolledBackTo(ctx context.Context, env Env, version kubeletcompat.Version) func(kubeletcompat.Version, time.Time) bool {
	return func(newer kubeletcompat.Version, recordedAt time.Time) bool {
		k, err := o.findKubelet(ctx, env)
		if err != nil || k.version.Compare(version) != 0 || !k.start.After(recordedAt) {
			return false
		}
		fmt.Fprintf(env.Stdout, "the kubelet %s started after %s recorded the file it replaces: a rollback; the containers %s created are recorded as carrying its hash, with their specs\n", version, newer, newer)
		return true
	}
}

// staticPodUID finds the UID of the running sandbox of a static pod: the
// kubelet names it <pod>-<node> in the manifest's namespace and annotates it
// kubernetes.io/config.source=file. Ready sandboxes win; different UIDs
// among the candidates are an error rather than a guess.
func staticPodUID(sandboxes []cri.Sandbox, s manifest.Static, node string) (string, string, error) {
	ns, name := manifest.Namespace(s.Pod), manifest.StaticPodName(s.Pod.Name, node)
	podName := ns + "/" + name
	ready, notReady := map[string]bool{}, map[string]bool{}
	for _, sb := range sandboxes {
		if sb.Namespace != ns || sb.Name != name || !sb.IsStatic() || sb.UID == "" {
			continue
		}
		if sb.Ready {
			ready[sb.UID] = true
		} else {
			notReady[sb.UID] = true
		}
	}
	pick := ready
	if len(ready) == 0 {
		pick = notReady
	}
	switch len(pick) {
	case 0:
		return "", podName, nil
	case 1:
		for uid := range pick {
			return uid, podName, nil
		}
	}
	var uids []string
	for uid := range pick {
		uids = append(uids, uid)
	}
	sort.Strings(uids)
	return "", podName, fmt.Errorf("%s: static pod %s matches sandboxes of %d UIDs (%s); refusing to guess: wait until the old sandboxes are gone", s.Path, podName, len(uids), strings.Join(uids, ", "))
}

// otherHashVersions lists, newest first, the hash versions that the
// containers carry and that are older (side -1) or newer (side 1) than the
// running kubelet.
func otherHashVersions(containers []kubeletcompat.Container, running kubeletcompat.Version, side int) []string {
	seen := map[string]kubeletcompat.Version{}
	for _, c := range containers {
		if v, err := kubeletcompat.ParseVersion(c.HashVersion); err == nil && v.Compare(running) == side {
			seen[v.String()] = v
		}
	}
	var out []kubeletcompat.Version
	for _, v := range seen {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[j].LessThan(out[i]) })
	names := make([]string, len(out))
	for i, v := range out {
		names[i] = v.String()
	}
	return names
}
