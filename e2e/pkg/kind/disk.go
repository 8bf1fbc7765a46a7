package kind

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind/nodeimage"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
)

// importFactor is what one image archive costs a node that imports it,
// per byte of the archive: containerd keeps the layers and their
// unpacked snapshots. Measured on the chain 1.30 -> 1.37 on 3 nodes: 24.0
// GiB taken by its last step for 4.25 GiB of archives, 1.9 times.
const importFactor = 2.0

// diskMargin is left free besides: the nodes' logs, the kubelet's
// files, kubeadm's etcd backups.
const diskMargin = 2 << 30

// diskNeed is the space the largest cluster of the plan takes, in bytes:
// every node holds its first version (the node image's images, copied
// into the node's /var, and its packages) and imports and installs each
// version a step stages (a skip-level step's control-plane path too, which
// the workers load as well); before each step after the first (not after
// a skip-level step) the images and the packages of the step before's From
// go (RemoveLeftBehind, RemovePackages), so a chain holds about two
// versions at its peak. perNode is what one version costs a node. Clusters
// run one after the other and each is deleted after its run, so the
// largest one counts: the patched chain's, unless only the controls run.
func diskNeed(o ScenarioOptions, perNode func(version string) (int64, error)) (int64, error) {
	nodes := int64(1 + o.Workers)
	cost := func(v string) (int64, error) {
		size, err := perNode(v)
		return size * nodes, err
	}
	clusterNeed := func(steps []Step) (int64, error) {
		held, err := cost(steps[0].From)
		if err != nil {
			return 0, err
		}
		peak := held
		for i, st := range steps {
			if prev, ok := leftBehindBefore(steps, i); ok {
				c, err := cost(prev.From)
				if err != nil {
					return 0, err
				}
				held -= c
			}
			path, err := plan.ControlPlanePath(st)
			if err != nil {
				return 0, err
			}
			for _, v := range path {
				c, err := cost(v)
				if err != nil {
					return 0, err
				}
				held += c
			}
			peak = max(peak, held)
		}
		return peak, nil
	}
	var clusters [][]Step
	if !o.SkipPatched && len(o.Steps) > 0 {
		clusters = append(clusters, o.Steps)
	}
	if o.Controls {
		for _, st := range o.Steps {
			clusters = append(clusters, []Step{st})
		}
	}
	var most int64
	for _, steps := range clusters {
		n, err := clusterNeed(steps)
		if err != nil {
			return 0, err
		}
		most = max(most, n)
	}
	return most + diskMargin, nil
}

// checkDisk refuses a plan whose clusters would fill the file system of
// the engine's data root halfway through (a chain of eight versions takes
// some 27 GiB), before any cluster is made. An engine whose data root is
// not on this machine is not checked.
func checkDisk(ctx context.Context, p *Provider, o ScenarioOptions) error {
	info, err := p.Engine.Info(ctx)
	if err != nil {
		return err
	}
	var st syscall.Statfs_t
	if info.DockerRootDir == "" || syscall.Statfs(info.DockerRootDir, &st) != nil {
		return nil
	}
	need, err := diskNeed(o, func(v string) (int64, error) { return versionCost(o.Output, v) })
	if err != nil {
		return err
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	if free < need {
		return fmt.Errorf("the clusters need about %.1f GiB free under the engine's data root %s (every node imports each staged version's images), %.1f GiB are: free space or plan fewer versions", gb(need), info.DockerRootDir, gb(free))
	}
	p.logf("disk: the largest cluster needs about %.1f GiB under %s, %.1f GiB free", gb(need), info.DockerRootDir, gb(free))
	return nil
}

func gb(bytes int64) float64 { return float64(bytes) / (1 << 30) }

// versionCost is what version v costs one node: its images' archive
// imported (importFactor), its kubelet, kubeadm and kubectl installed, and
// their .debs staged beside them. Packages of 20 versions side by side
// took about 5 GiB a node before RemovePackages, which the first full road
// found (the check said 8.8 GiB; the nodes held 14 at its eighth version).
func versionCost(output, v string) (int64, error) {
	fi, err := os.Stat(filepath.Join(output, "kind", "images", v+".tar"))
	if err != nil {
		return 0, err
	}
	cost := int64(float64(fi.Size()) * importFactor)
	var files []string
	for _, b := range []string{"kubelet", "kubeadm", "kubectl"} {
		files = append(files, filepath.Join(output, v, b))
	}
	for _, glob := range nodeimage.NodePackages(v) {
		m, _ := filepath.Glob(filepath.Join(nodeimage.PackageDir(output, "patched"), glob))
		files = append(files, m...)
	}
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			cost += fi.Size()
		}
	}
	return cost, nil
}
