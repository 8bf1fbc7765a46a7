package kind

// The held cluster (make e2e-try): a kind cluster of the first step's from
// version, with the pod network, the workloads and the static pods Ready,
// held until SIGINT or SIGTERM for a person to upgrade a node by hand with
// the operator's guide; then deleted as every run's cluster is.

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/template"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/cleanup"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/kind/nodeimage"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/plan"
	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/report"
)

// TryCluster is the held cluster's name.
const TryCluster = "kc-try"

// Try builds what the plan's first step needs (BuildImages), brings up
// TryCluster on its from version, prints what to run by hand to out, and
// holds the cluster until ctx ends; the stack then deletes it and stops
// the engine.
func (k *Runner) Try(ctx context.Context, p plan.Plan, stack *cleanup.Stack, out io.Writer) error {
	p.Steps = p.Steps[:1]
	prov, err := k.Up(ctx, p, stack)
	if err != nil {
		return err
	}
	o := ScenarioOptions{Plan: p, LogDir: filepath.Join(p.ReportDir, "logs"), Workers: k.Workers}
	if err := preflight(ctx, prov, o); err != nil {
		return err
	}
	if err := checkDisk(ctx, prov, o); err != nil {
		return err
	}
	if err := prov.checkClustersFree(ctx, []string{TryCluster}); err != nil {
		return err
	}
	r := &ClusterRun{Provider: prov, Options: o, Report: &report.Report{}, Name: TryCluster, Steps: p.Steps, Patched: true}
	stack.Push("delete kind cluster "+TryCluster, func(ctx context.Context) error {
		if r.Cluster == nil {
			return nil
		}
		return r.Cluster.Delete(ctx, false)
	})
	if err := runActions(ctx, r, r.setupActions()); err != nil {
		return err
	}
	t := TryInfo{Cluster: TryCluster, From: p.Steps[0].From, To: p.Steps[0].To, Env: prov.Engine.Env, Workers: k.Workers,
		ImageTar: filepath.Join(p.Output, "kind", "images", p.Steps[0].To+".tar"), ApplyArgs: strings.Join(CgroupV1PreflightArgs(p.Steps[0].To), " ")}
	for _, glob := range nodeimage.NodePackages(t.To) {
		m, _ := filepath.Glob(filepath.Join(nodeimage.PackageDir(p.Output, "patched"), glob))
		t.Packages = append(t.Packages, m...)
	}
	if err := WriteTryInstructions(out, t); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// TryInfo is what the instructions of a held cluster name.
type TryInfo struct {
	Cluster, From, To string
	Workers           int
	// Env is the engine's environment (DOCKER_HOST of a private dockerd).
	Env []string
	// Packages are the To version's node .debs; ImageTar its images.
	Packages []string
	ImageTar string
	// ApplyArgs are the kubeadm upgrade apply flags the node needs.
	ApplyArgs string
}

var tryTemplate = template.Must(template.New("try").Parse(`
e2e try: cluster {{.Cluster}} is up on kubelet-compat/kind-node:v{{.From}} (1 control-plane node, {{.Workers}} workers), every pod Ready.
It stays up until you press Ctrl-C here; then it is deleted{{if .Env}} and the private Docker engine stopped{{end}}.

Upgrade its control-plane node to {{.To}} by hand, in another shell, as root, from this directory
(docs/operators-guide.md, "Trying it by hand on a test node"):
{{range .Env}}
  export {{.}}{{end}}
  docker exec {{.Cluster}}-control-plane crictl ps        # the containers' IDs and ATTEMPT before

  # stage {{.To}} beside {{.From}}: its packages and its images
  docker exec {{.Cluster}}-control-plane mkdir -p /root/stage{{range .Packages}}
  docker cp {{.}} {{$.Cluster}}-control-plane:/root/stage/{{end}}
  docker exec {{.Cluster}}-control-plane sh -c 'dpkg -i /root/stage/*.deb'
  docker exec -i {{.Cluster}}-control-plane ctr -n k8s.io images import - < {{.ImageTar}}

  # upgrade the node: docs/operators-guide.md, "Upgrading one node"
  docker exec -it {{.Cluster}}-control-plane bash
    kubelet-compat preflight --node --from v{{.From}} --to v{{.To}} --kubeconfig /etc/kubernetes/kubelet.conf \
      --target-kubelet /usr/local/kubernetes/{{.To}}/stage2/usr/bin/kubelet
    kubernetes-select stage1 {{.To}}
    kubeadm upgrade apply v{{.To}} --yes{{if .ApplyArgs}} {{.ApplyArgs}}{{end}}
    kubelet-compat record --kubeconfig /etc/kubernetes/kubelet.conf
    kubernetes-select --restart-kubelet stage2 {{.To}}
    kubelet-compat status --kubeconfig /etc/kubernetes/kubelet.conf
    crictl ps       # the same IDs, ATTEMPT unchanged, except what kubeadm upgrade apply replaced
`))

// WriteTryInstructions writes what to run by hand on a held cluster.
func WriteTryInstructions(w io.Writer, t TryInfo) error {
	if err := tryTemplate.Execute(w, t); err != nil {
		return fmt.Errorf("the instructions: %w", err)
	}
	return nil
}
