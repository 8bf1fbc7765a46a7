package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/spf13/cobra"
)

type statusOptions struct {
	nodeOptions
	output string
	// grace is sweep's --grace, to say until when sweep keeps the file.
	grace time.Duration
}

func newStatusCommand(env Env) *cobra.Command {
	o := &statusOptions{}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the compat file and the containers created before the kubelet started",
		Long: `status shows what the running kubelet does with the containers its predecessor
created: the kubelet's start time and version, the compat file's state as the
kubelet sees it (active, absent, or ignored and why), and for every running
container created before the kubelet started (legacy): its pod, creation time,
stored hash, the hash the running kubelet computes for its spec, and the
decision of the kubelet-compat library (keep or restart, with the reason).

It says why the file is still in force (the listed containers that run, the
static pods on a recorded UID, the pods that run on an admission waiver: the
kubelet's next start without the file would reject them for node affinity
or taints) and until when sweep keeps it (--grace after the kubelet's start,
then until nothing running needs it and the kubelet has every running pod),
and, for every pod the container runtime runs, whether the kubelet counts it
as started before itself and which admission rejections it admits it
despite: node affinity and taints while the file is in force, resource fit
and eviction only for a kubelet started within 1h after the record. The
evidence is what the runtime runs, never API status; whether a pod would be
rejected is judged on its spec and the node's labels and taints (the node is
read with --kubeconfig).

Pod specs come from --manifest-dir (static pods) and, with --kubeconfig, from
the API server.

Exit codes: 0 shown, 1 error.`,
		Example: `  kubelet-compat status
  kubelet-compat status -o json --kubeconfig /etc/kubernetes/kubelet.conf`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runStatus(cmd.Context(), env, o) },
	}
	o.addRuntimeFlags(cmd.Flags())
	o.addFileFlags(cmd.Flags())
	o.addKubeletFlags(cmd.Flags())
	o.addKubeconfigFlag(cmd.Flags())
	cmd.Flags().StringVarP(&o.output, "output", "o", "table", "output format: table or json")
	nonNegativeDurationVar(cmd.Flags(), &o.grace, "grace", defaultGrace, "sweep's --grace, to say until when sweep keeps the compat file")
	return cmd
}

type statusReport struct {
	Node           string          `json:"node"`
	KubeletPID     int             `json:"kubeletPID"`
	KubeletVersion string          `json:"kubeletVersion"`
	KubeletStart   time.Time       `json:"kubeletStart"`
	CRIAPI         string          `json:"criAPIVersion"`
	File           compatFileState `json:"compatFile"`
	Legacy         []legacyStatus  `json:"legacyContainers"`
	StaticPods     []staticPodNeed `json:"staticPodsOnRecordedUID,omitempty"`
	// InForce says why the file is in force and until when (nil when it
	// is not in force).
	InForce *inForceStatus `json:"inForce,omitempty"`
	// Admission is what the kubelet does with the pods the runtime runs
	// when an admission handler rejects them.
	Admission admissionStatus `json:"admission"`
}

type legacyStatus struct {
	Pod         string    `json:"pod"`
	Container   string    `json:"container"`
	ID          string    `json:"id"`
	Created     time.Time `json:"created"`
	StoredHash  string    `json:"storedHash"`
	CurrentHash string    `json:"currentHash,omitempty"`
	SpecSource  string    `json:"specSource,omitempty"`
	Keep        *bool     `json:"keep,omitempty"`
	Decision    string    `json:"decision"`
}

func runStatus(ctx context.Context, env Env, o *statusOptions) error {
	if o.output != "table" && o.output != "json" {
		return fmt.Errorf("unknown output format %q (want table or json)", o.output)
	}
	node, err := o.node(env)
	if err != nil {
		return err
	}
	k, err := o.findKubelet(ctx, env)
	if err != nil {
		return err
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
	path := o.compatPath()
	r := statusReport{Node: node, KubeletPID: k.pid, KubeletVersion: k.version.String(), KubeletStart: k.start.UTC(),
		CRIAPI: client.APIVersion(), File: readCompatFile(path, env.OwnerUID, k.version, k.start), Legacy: []legacyStatus{}}
	compat := r.File.decider
	legacy := findLegacy(st, k.start, compat, idx, k.version)
	for _, l := range legacy {
		ls := legacyStatus{Pod: l.pod, Container: l.c.Name, ID: l.c.ID, Created: l.c.CreatedAt.UTC(), StoredHash: fmt.Sprintf("%x", l.c.Hash)}
		if l.c.HashErr != nil {
			ls.StoredHash = "none"
		}
		if l.hasSpec {
			ls.SpecSource = l.spec.source
		}
		switch {
		case l.container == nil:
			ls.Decision = "unknown: " + l.needsFile()
		case l.init:
			ls.Decision = "init container: not hash-checked"
		case l.currentErr != nil:
			ls.Decision = "unknown: " + l.currentErr.Error()
		default:
			ls.CurrentHash = fmt.Sprintf("%x", l.currentHash)
			image, err := client.ContainerImage(ctx, l.c.ID)
			if err != nil {
				return err
			}
			d := compat.Decide(l.container, kubeletcompat.RunningContainer{ID: l.c.ID, Hash: l.c.Hash, CreatedAt: l.c.CreatedAt, Image: image})
			keep := d.Keep
			ls.Keep, ls.Decision = &keep, d.Reason
		}
		r.Legacy = append(r.Legacy, ls)
	}
	r.StaticPods = staticPodsNeedingFile(compat, st)
	holders, err := waiverHolders(compat, st, idx, k.version, o.nodeSource(ctx, node))
	if err != nil {
		return fmt.Errorf("cannot tell which pods run on an admission waiver: %w", err)
	}
	r.InForce = inForce(compat, st, legacy, r.StaticPods, holders, k.start, env.Now(), o.grace)
	r.Admission = admission(compat, st, k.start, holders)
	if o.output == "json" {
		return writeJSON(env.Stdout, r)
	}
	return writeStatusTable(env.Stdout, r)
}

func writeJSON(w io.Writer, v interface{}) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func writeStatusTable(w io.Writer, r statusReport) error {
	fmt.Fprintf(w, "node %s: kubelet %s (pid %d) started %s, CRI %s\n", r.Node, r.KubeletVersion, r.KubeletPID, r.KubeletStart.Format(time.RFC3339), r.CRIAPI)
	f := r.File
	switch f.State {
	case kubeletcompat.FileActive.String():
		fmt.Fprintf(w, "compat file %s: active, previous kubelet %s recorded %s, %d container(s), %d static pod(s)\n", f.Path, f.PreviousVersion, f.RecordedAt.Format(time.RFC3339), f.Containers, f.StaticPods)
	case kubeletcompat.FilePending.String():
		fmt.Fprintf(w, "compat file %s: pending, %s; recorded %s, %d container(s), %d static pod(s)\n", f.Path, f.Reason, f.RecordedAt.Format(time.RFC3339), f.Containers, f.StaticPods)
	case kubeletcompat.FileAbsent.String():
		fmt.Fprintf(w, "compat file %s: absent (the kubelet behaves as upstream)\n", f.Path)
	default:
		fmt.Fprintf(w, "compat file %s: ignored: %s\n", f.Path, f.Reason)
	}
	if len(r.Legacy) == 0 {
		fmt.Fprintln(w, "no running container is listed in the compat file or was created before the kubelet started")
	} else {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "POD\tCONTAINER\tCREATED\tSTORED\tCURRENT\tKEEP\tDECISION")
		for _, l := range r.Legacy {
			keep := "?"
			if l.Keep != nil {
				keep = map[bool]string{true: "yes", false: "no"}[*l.Keep]
			}
			cur := l.CurrentHash
			if cur == "" {
				cur = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", l.Pod, l.Container, l.Created.Format(time.RFC3339), l.StoredHash, cur, keep, l.Decision)
		}
		tw.Flush()
	}
	if r.InForce != nil {
		writeInForce(w, r.InForce, r.StaticPods)
	}
	writeAdmission(w, r.Admission)
	return nil
}
