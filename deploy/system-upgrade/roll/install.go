package roll

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// install is the target's packages side by side, stage1 and kubeadm.
// Each action is idempotent: a re-run after a Job killed in the middle
// does them again.
func (r *run) install() []action {
	var staged stagedPackages
	return []action{
		{"packages: stage", func(ctx context.Context) (err error) {
			staged, err = r.stagePackages(ctx)
			return err
		}},
		{"packages: install", func(ctx context.Context) error { return r.installPackages(ctx, staged) }},
		{"stage2: the running kubelet's", r.keepStage2},
		{"stage1: the target's", func(ctx context.Context) error {
			if res := r.onHostLogged(ctx, "kubernetes-select", "stage1", r.target); !res.OK() {
				return failRollf("kubernetes-select stage1 %s failed", r.target)
			}
			return nil
		}},
		{"etcd: bridge", r.etcdBridge},
		{"kubeadm: upgrade", r.kubeadmUpgrade},
	}
}

// packageFormat is deb or rpm: the package manager that installed
// kubernetes-unversioned on the node.
func (r *run) packageFormat(ctx context.Context) (string, error) {
	if res := r.onHost(ctx, "dpkg-query", "-W", "-f", "${Status}", "kubernetes-unversioned"); res.OK() && strings.Contains(string(res.Stdout), "install ok installed") {
		return "deb", nil
	}
	if res := r.onHost(ctx, "rpm", "-q", "kubernetes-unversioned"); res.OK() {
		return "rpm", nil
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	return "", dief("kubernetes-unversioned is installed neither by dpkg nor by rpm: not a node of kubelet-compat's packages")
}

// stagedPackages are the packages to install, by their paths on the
// node, and their format (deb or rpm).
type stagedPackages struct {
	format string
	paths  []string
}

// stagePackages copies the image's packages of the node's format to
// StagingDir/TARGET/ on the node, but the kubernetes-unversioned the node
// has installed already (dpkg -i of it again puts the empty directories
// it ships in place of kubernetes-select's links).
func (r *run) stagePackages(ctx context.Context) (stagedPackages, error) {
	format, err := r.packageFormat(ctx)
	if err != nil {
		return stagedPackages{}, err
	}
	dir := StagingDir + "/" + r.target
	if err := r.files.MkdirAll(dir); err != nil {
		return stagedPackages{}, dief("creating %s on the node: %v", dir, err)
	}
	entries, _ := os.ReadDir(r.cfg.Packages)
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), "."+format) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	staged := stagedPackages{format: format}
	for _, n := range names {
		if r.unversionedInstalled(ctx, format, n) {
			r.log("%s: the node has this kubernetes-unversioned already: not reinstalled", n)
			continue
		}
		if err := r.copyPackage(filepath.Join(r.cfg.Packages, n), dir+"/"+n); err != nil {
			return stagedPackages{}, dief("copying %s to %s on the node: %v", n, dir, err)
		}
		staged.paths = append(staged.paths, dir+"/"+n)
	}
	if len(staged.paths) == 0 {
		return stagedPackages{}, failRollf("the image has no .%s packages in %s", format, r.cfg.Packages)
	}
	return staged, nil
}

func (r *run) copyPackage(from, to string) error {
	f, err := os.Open(from)
	if err != nil {
		return err
	}
	defer f.Close()
	return copyIn(r.files, to, f)
}

// unversionedInstalled says whether the package file name is the
// kubernetes-unversioned the node has installed, same version and release.
func (r *run) unversionedInstalled(ctx context.Context, format, name string) bool {
	switch {
	case format == "deb" && strings.HasPrefix(name, "kubernetes-unversioned_") && strings.HasSuffix(name, ".deb"):
		// kubernetes-unversioned_VERSION_ARCH.deb
		v := strings.TrimPrefix(name, "kubernetes-unversioned_")
		if i := strings.LastIndex(v, "_"); i >= 0 {
			v = v[:i]
		}
		res := r.onHost(ctx, "dpkg-query", "-W", "-f", "${Version}", "kubernetes-unversioned")
		return res.OK() && strings.TrimRight(string(res.Stdout), "\n") == v
	case format == "rpm" && strings.HasPrefix(name, "kubernetes-unversioned-") && strings.HasSuffix(name, ".rpm"):
		// kubernetes-unversioned-VERSION-RELEASE.ARCH.rpm
		v := strings.TrimSuffix(strings.TrimPrefix(name, "kubernetes-unversioned-"), ".rpm")
		res := r.onHost(ctx, "rpm", "-q", "--qf", "%{VERSION}-%{RELEASE}.%{ARCH}", "kubernetes-unversioned")
		return res.OK() && strings.TrimRight(string(res.Stdout), "\n") == v
	}
	return false
}

// installPackages installs the staged packages by name: dpkg -i or
// rpm -U --replacepkgs, idempotent on a re-run.
func (r *run) installPackages(ctx context.Context, staged stagedPackages) error {
	if staged.format == "deb" {
		if res := r.onHostLogged(ctx, append([]string{"dpkg", "-i"}, staged.paths...)...); !res.OK() {
			return failRollf("dpkg -i failed")
		}
		return nil
	}
	if res := r.onHostLogged(ctx, append([]string{"rpm", "-U", "--replacepkgs"}, staged.paths...)...); !res.OK() {
		return failRollf("rpm -U failed")
	}
	return nil
}

// keepStage2 selects the running kubelet again when the packages dropped
// stage2's selection (a newer kubernetes-unversioned puts the directories
// it ships in place of kubernetes-select's links): the links only,
// nothing restarts.
func (r *run) keepStage2(ctx context.Context) error {
	if err := r.selectStatus(ctx); err != nil {
		return err
	}
	if r.sel.stage2 == r.previous {
		return nil
	}
	r.log("the packages dropped stage2's selection: kubernetes-select stage2 %s", r.previous)
	if res := r.onHostLogged(ctx, "kubernetes-select", "stage2", r.previous); !res.OK() {
		return failRollf("kubernetes-select stage2 %s failed", r.previous)
	}
	return nil
}

// kubeadmUpgrade runs kubeadm upgrade apply on the first control-plane
// node of the target (kubeadm's ClusterConfiguration names another
// version), kubeadm upgrade node everywhere else.
func (r *run) kubeadmUpgrade(ctx context.Context) error {
	applied := false
	if r.cfg.Role == "control-plane" {
		var err error
		if applied, err = r.clusterAt(ctx, r.target); err != nil {
			return err
		}
	}
	if r.cfg.Role == "control-plane" && !applied {
		r.log("first control-plane node of %s: kubeadm upgrade apply", r.target)
		if !r.naive {
			if err := r.save(func(s *State) { s.Kubeadm = "apply" }); err != nil {
				return dief("%v", err)
			}
		}
		argv := append(append([]string{"kubeadm", "upgrade", "apply", "--yes"}, r.cfg.KubeadmArgs...), "v"+r.target)
		if res := r.onHostLogged(ctx, argv...); !res.OK() {
			return failRollf("kubeadm upgrade apply v%s failed", r.target)
		}
		return nil
	}
	if res := r.onHostLogged(ctx, append([]string{"kubeadm", "upgrade", "node"}, r.cfg.KubeadmArgs...)...); !res.OK() {
		return failRollf("kubeadm upgrade node failed")
	}
	return nil
}
