package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/internal/kubelet"
	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	"github.com/kubelet-compat/kubelet-compat/pkg/gate"
	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

type pictureOptions struct {
	nodeOptions
	output string
}

func newPictureCommand(env Env) *cobra.Command {
	o := &pictureOptions{}
	cmd := &cobra.Command{
		Use:   "picture -o FILE",
		Short: "Before a kubelet or runtime swap: write the node's picture, which gate judges the node against",
		Long: `picture writes what the container runtime runs, every pod of every
namespace (sandbox IDs, pod UIDs, container IDs, attempts, states), and the
running kubelet's identity (its PID and start time from /proc, found as the
other commands find it) to FILE. gate judges the node against it after the
swap.

FILE is written whole or not at all (a temporary file beside it, synced,
then renamed over it), mode 0600.

Exit codes: 0 written, 1 error (nothing written, an existing FILE unchanged).`,
		Example: `  kubelet-compat picture -o /var/lib/kubelet-compat/picture.json`,
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return runPicture(cmd.Context(), env, o) },
	}
	fs := cmd.Flags()
	fs.StringVarP(&o.output, "output", "o", "", "the picture file to write (required)")
	o.addPictureRuntimeFlags(fs)
	o.addKubeletFlags(fs)
	return cmd
}

// addPictureRuntimeFlags are the runtime flags picture and gate take.
func (o *nodeOptions) addPictureRuntimeFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.runtimeEndpoint, "runtime-endpoint", cri.DefaultRuntimeEndpoint, "CRI socket of the container runtime")
	positiveDurationVar(fs, &o.criTimeout, "cri-timeout", cri.DefaultCallTimeout, "timeout of each CRI call (positive)")
	fs.StringVar(&o.nodeName, "node-name", "", "the kubelet's node name (default: the hostname, lowercased, as the kubelet does)")
}

func runPicture(ctx context.Context, env Env, o *pictureOptions) error {
	if o.output == "" {
		return errors.New("-o FILE is required: the picture file to write")
	}
	node, err := o.node(env)
	if err != nil {
		return err
	}
	p, err := o.takePicture(ctx, env, node)
	if err != nil {
		return err
	}
	data, err := gate.MarshalPicture(p)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(o.output, data, 0600); err != nil {
		return err
	}
	running := 0
	for _, sb := range p.Runtime.ReadyPods() {
		running += len(p.Runtime.RunningIn(sb.ID))
	}
	fmt.Fprintf(env.Stdout, "picture %s: node %s, %d pod(s), %d running container(s); kubelet pid %d started %s (%s)\n",
		o.output, node, len(p.Runtime.ReadyPods()), running, p.Kubelet.PID, stamp(p.Kubelet.StartedAt), p.KubeletFoundBy)
	return nil
}

// takePicture finds the running kubelet and reads the runtime's view of
// every pod, timed by env.Now.
func (o *nodeOptions) takePicture(ctx context.Context, env Env, node string) (*gate.Picture, error) {
	k, err := kubelet.Find(ctx, o.kubeletConfig(env))
	if err != nil {
		return nil, err
	}
	now, api, err := o.takeSnapshot(ctx, env)
	if err != nil {
		return nil, err
	}
	return &gate.Picture{APIVersion: gate.PictureAPIVersion, Kind: gate.PictureKind, Node: node,
		Kubelet: gate.Kubelet{PID: k.PID, StartedAt: k.StartTime.UTC()}, KubeletFoundBy: k.FoundBy,
		CRIAPIVersion: api, Runtime: *now}, nil
}

// takeSnapshot reads the runtime's view of every pod, timed by env.Now
// when the reading began, and the CRI API the runtime answered.
func (o *nodeOptions) takeSnapshot(ctx context.Context, env Env) (*snapshot.Snapshot, string, error) {
	taken := env.Now().UTC()
	client, err := o.dial(ctx)
	if err != nil {
		return nil, "", err
	}
	rt := snapshot.New(client)
	defer rt.Close()
	s, err := rt.Take(ctx, "")
	if err != nil {
		return nil, "", fmt.Errorf("reading the runtime's pods: %w", err)
	}
	s.Taken = taken
	return s, client.APIVersion(), nil
}
