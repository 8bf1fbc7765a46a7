package layout

// New returns the description of the packages, with the systemd units in
// unitDir (DefaultUnitDir on the nodes).
func New(unitDir string) Layout {
	return Layout{
		Set:         SetKubernetes,
		Current:     CurrentDir,
		Selector:    "kubernetes-select",
		UnitDir:     unitDir,
		Groups:      []Group{unversioned(unitDir), versioned(), master()},
		GuardScript: guardScript,
	}
}

// Default is New(DefaultUnitDir).
func Default() Layout { return New(DefaultUnitDir) }

func unversioned(unitDir string) Group {
	dir := func(p string) File { return File{Path: p, Type: Dir, Mode: 0o755} }
	shipped := func(p string, mode uint32, name string) File {
		return File{Path: p, Type: Regular, Mode: mode, Source: Source{Shipped, name}}
	}
	files := []File{
		dir(KubeRoot),
		dir(CurrentDir),
		// Empty directories: bind-mount points, or replaced by symlinks in
		// symlink mode.
		dir(CurrentDir + "/stage1"),
		dir(CurrentDir + "/stage2"),
		shipped("/usr/bin/kubernetes-select", 0o755, "kubernetes-select"),
		shipped(unitDir+"/kubelet.service", 0o644, "kubelet.service"),
		dir(unitDir + "/kubelet.service.d"),
		shipped(unitDir+"/kubelet-compat-sweep.service", 0o644, "kubelet-compat-sweep.service"),
		shipped(unitDir+"/"+SweepTimer, 0o644, SweepTimer),
		shipped(PresetDir+"/90-kubelet-compat.preset", 0o644, "90-kubelet-compat.preset"),
	}
	for _, l := range UnversionedLinks(unitDir) {
		files = append(files, File{Path: l.Path, Type: Symlink, Target: l.Target})
	}
	env := shipped(EnvFile(RPM), 0o644, "kubelet.sysconfig")
	env.Config = true
	files = append(files, env)
	return Group{
		Key: UnversionedKey,
		Packages: []Package{{
			Name:    UnversionedName,
			Summary: "Selects the current version of the side-by-side Kubernetes packages",
			Description: `Owns {{.Current}}/stage1 and {{.Current}}/stage2, which kubernetes-select points
at an installed kubernetes-<version>-kubeadm (stage1) and
kubernetes-<version>-node/-client (stage2), by symlink or bind mount; the
links /usr/bin/kubelet, kubeadm, kubectl, kubelet-compat and the kubelet
drop-in follow them. Also kubelet.service, {{.EnvFile}} and the
kubelet-compat sweeper (service and timer).`,
			Depends: []Dep{
				// kubernetes-select is a bash script; coreutils (stat,
				// mktemp, ln, mv) and util-linux (flock, mount) are
				// Essential on Debian.
				{RPM: "bash"},
				{RPM: "coreutils"},
				{RPM: "util-linux"},
				{RPM: "systemd", Deb: "systemd"},
				{RPM: "systemd", Phase: "post"},
				{RPM: "systemd", Phase: "preun"},
				{RPM: "systemd", Phase: "postun"},
				// deb-systemd-helper and deb-systemd-invoke of the
				// maintainer scripts.
				{Deb: "init-system-helpers (>= 1.54~)"},
			},
			Files:       files,
			EnableUnits: []string{SweepTimer},
		}},
	}
}

// guardDeps are what the removal guard runs: stat, chmod (coreutils) and
// flock (util-linux), Essential on Debian.
var guardDeps = []Dep{
	{RPM: "coreutils", Phase: "preun"},
	{RPM: "util-linux", Phase: "preun"},
}

var unversionedDep = Dep{RPM: UnversionedName, Deb: UnversionedName}

func versioned() Group {
	bin := func(p string, src Source) File { return File{Path: p, Type: Regular, Mode: 0o755, Source: src} }
	data := func(p string, src Source) File { return File{Path: p, Type: Regular, Mode: 0o644, Source: src} }
	nodeDeps := append([]Dep{unversionedDep}, guardDeps...)
	nodeDeps = append(nodeDeps,
		Dep{RPM: "iptables >= 1.4.21", Deb: "iptables (>= 1.4.21)",
			Note: "What the kubelet runs on the node, as upstream's kubelet package requires\n(CNI plugins come separately)."},
		Dep{RPM: "conntrack", Deb: "conntrack"},
		Dep{RPM: "ebtables", Deb: "ebtables"},
		Dep{RPM: "ethtool", Deb: "ethtool"},
		Dep{RPM: "iproute", Deb: "iproute2"},
		Dep{RPM: "socat", Deb: "socat"},
		Dep{RPM: "util-linux"},
	)
	return Group{
		Key:       VersionedKey,
		Versioned: true,
		Description: `Kubernetes {{.Version}} in the side-by-side layout: every file under
{{.KubeDir}}/stage1 and stage2. Built as three packages: node, kubeadm, client.`,
		Packages: []Package{
			{
				Name:     "node",
				Summary:  "Kubernetes {{.Version}} kubelet and kubelet-compat CLI (stage2)",
				Provides: "kubernetes-node",
				Depends:  nodeDeps,
				Description: `The kubelet of Kubernetes {{.Version}}, the kubelet-compat CLI and the
kubelet systemd drop-in, under {{.KubeDir}}/stage2. Select it with
"kubernetes-select stage2 {{.Version}}".`,
				Files: []File{
					bin("stage2/usr/bin/kubelet", Source{Harness, "kubelet"}),
					bin("stage2/usr/bin/kubelet-compat", Source{Kind: CLI}),
					data("stage2/"+DropInRel, Source{Shipped, "10-kubeadm.conf"}),
				},
				Guard: &Guard{Stage: "stage2", Unselectable: "stage2/usr/bin/kubelet"},
			},
			{
				Name:     "kubeadm",
				Summary:  "Kubernetes {{.Version}} kubeadm (stage1)",
				Provides: "kubernetes-kubeadm",
				Depends:  append([]Dep{unversionedDep}, guardDeps...),
				Description: `kubeadm of Kubernetes {{.Version}}, under {{.KubeDir}}/stage1. Select it
with "kubernetes-select stage1 {{.Version}}".`,
				Files: []File{bin("stage1/usr/bin/kubeadm", Source{Harness, "kubeadm"})},
				Guard: &Guard{Stage: "stage1", Unselectable: "stage1/usr/bin/kubeadm"},
			},
			{
				Name:     "client",
				Summary:  "Kubernetes {{.Version}} kubectl (stage2)",
				Provides: "kubernetes-client",
				Depends:  append([]Dep{unversionedDep}, guardDeps...),
				Description: `kubectl of Kubernetes {{.Version}} and its bash completion, under
{{.KubeDir}}/stage2; it follows the stage2 selection.`,
				Files: []File{
					bin("stage2/usr/bin/kubectl", Source{Harness, "kubectl"}),
					data("stage2/"+CompletionRel, Source{Kind: Completion}),
				},
				Guard: &Guard{Stage: "stage2"},
			},
		},
	}
}

// master is StarlingX's kubernetes-<ver>-master: the control-plane
// binaries in the version's stage2. No link of kubernetes-unversioned
// points at them and kubernetes-select does not look at them, so removing
// them is never refused.
func master() Group {
	bin := func(name string) File {
		return File{Path: "stage2/usr/bin/" + name, Type: Regular, Mode: 0o755, Source: Source{Harness, name}}
	}
	return Group{
		Key:       MasterKey,
		Versioned: true,
		Optional:  true,
		Description: `The control-plane binaries of Kubernetes {{.Version}} in the side-by-side
layout, under {{.KubeDir}}/stage2.`,
		Packages: []Package{{
			Name:     "master",
			Summary:  "Kubernetes {{.Version}} kube-apiserver, kube-controller-manager, kube-scheduler",
			Provides: "kubernetes-master",
			Depends:  []Dep{unversionedDep},
			Description: `kube-apiserver, kube-controller-manager and kube-scheduler of Kubernetes
{{.Version}}, under {{.KubeDir}}/stage2/usr/bin, for control planes that
run them as services rather than as kubeadm's static pods.`,
			Files: []File{bin("kube-apiserver"), bin("kube-controller-manager"), bin("kube-scheduler")},
		}},
	}
}

// guardScript: on removal (not on an upgrade of the same package), if
// current/STAGE is this version's STAGE directory (the same device and
// inode, through a symlink or a bind mount alike, as kubernetes-select
// finds it), the removal would leave the /usr/bin links dangling, or a
// bind mount on a deleted directory, and kubernetes-select could no longer
// tell the version that the skew rules start from; the package manager
// keeps a package whose script fails. The check holds the lock of
// kubernetes-select (flock on current/, the script's fd 9, released when
// it exits), waiting for it as a selection does: a selection in progress
// finishes first, and is seen. Then, still under the lock, the binary by
// which kubernetes-select tells that the stage is installed loses its
// execute bits: from then on kubernetes-select, which checks them under
// the same lock, refuses the version as not installed, so no selection can
// make it current while its files go. (Removing the file instead would
// make rpm warn that it could not remove it.)
const guardScript = `if {{.Removing}}; then
  if [ -d {{.Current}} ] && exec 9<{{.Current}}; then
    if ! flock -n 9; then
      echo "erasing {{.What}}: waiting for {{.Selector}} to finish" >&2
      if ! flock -w 300 9; then
        echo "refusing to erase {{.What}}: {{.Selector}} still holds the lock on {{.Current}} after 300s; try again when it has finished" >&2
        exit 1
      fi
    fi
  fi
  selected=$(stat -L -c %d:%i {{.Current}}/{{.Stage}} 2>/dev/null) || selected=
  this=$(stat -c %d:%i {{.This}} 2>/dev/null) || this=
  if [ -n "$selected" ] && [ "$selected" = "$this" ]; then
    echo "refusing to erase {{.What}}: it is the selected {{.Stage}}; select another version first ({{.Selector}} {{.Stage}} VERSION)" >&2
    exit 1
  fi
fi
{{- if .Unselectable}}
if {{.Removing}}; then
  chmod a-x {{.KubeDir}}/{{.Unselectable}} 2>/dev/null || :
fi
{{- end}}`
