package roll

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// The fake node's programs, as upgrade_test.go's shell fakes.

func ok(out string) Result             { return Result{Stdout: []byte(out)} }
func exit(code int, err string) Result { return Result{Code: code, Stderr: []byte(err)} }

func (f *fakeNode) program(argv []string) Result {
	args := argv[1:]
	all := strings.Join(args, " ")
	if filepath.Base(argv[0]) == "ctr" {
		return f.ctrRun(argv[0], args)
	}
	if strings.HasPrefix(argv[0], "/usr/local/runtime/containerd/") && filepath.Base(argv[0]) == "containerd" {
		return f.containerdMigrate(args)
	}
	switch argv[0] {
	case "kubernetes-select":
		return f.kubernetesSelect(args)
	case "runtime-select":
		return f.runtimeSelect(args)
	case "systemctl":
		if all == "show -p KillMode containerd" {
			return ok("KillMode=" + or(f.getenv("KILLMODE"), "process") + "\n")
		}
		return exit(2, "")
	case "dpkg-query":
		if args[2] == "${Version}" {
			return ok(f.unversioned)
		}
		if f.getenv("FORMAT") == "deb" {
			return ok("install ok installed")
		}
		return ok("")
	case "rpm":
		if args[0] == "-q" && f.getenv("FORMAT") != "rpm" {
			return exit(1, "")
		}
		return ok("")
	case "dpkg":
		if strings.Contains(all, "kubernetes-unversioned") && f.getenv("DPKG_DROPS") != "" {
			f.stage2 = "none"
		}
		return ok("")
	case "kubeadm":
		return f.kubeadm(args)
	case "crictl":
		return f.crictlRun(args)
	case "kubelet-compat":
		return f.kubeletCompat(args)
	}
	return exit(127, "chroot: failed to run command '"+argv[0]+"': No such file or directory\n")
}

func (f *fakeNode) kubernetesSelect(args []string) Result {
	switch {
	case len(args) == 1 && args[0] == "status":
		return ok("stage1: " + f.stage1 + " (symlink)\nstage2: " + f.stage2 + " (symlink)\n")
	case len(args) == 2 && args[0] == "stage1":
		// As the real one: stage1 never older than stage2.
		if args[1] != f.stage2 && versionLess(args[1], f.stage2) {
			return exit(1, "kubernetes-select: refusing stage1 "+args[1]+": older than stage2 "+f.stage2+", select stage2 first (use --force to override)\n")
		}
		f.stage1 = args[1]
	case len(args) == 2 && args[0] == "stage2":
		f.stage2 = args[1]
	case len(args) == 3 && args[0] == "--restart-kubelet" && args[1] == "stage2":
		f.stage2 = args[2]
	default:
		return exit(2, "")
	}
	return ok("")
}

// versionLess compares dotted versions as sort -V does.
func versionLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		x, _ := strconv.Atoi(pa[i])
		y, _ := strconv.Atoi(pb[i])
		if x != y {
			return x < y
		}
	}
	return len(pa) < len(pb)
}

// runtimeSelect keeps containerd's selection and the containerd that
// runs. RUNTIME_RESTART_FAILS=VERSION: containerd does not come back on
// it, and runtime-select undoes the switch, exit 1.
func (f *fakeNode) runtimeSelect(args []string) Result {
	all := strings.Join(args, " ")
	switch {
	case all == "status":
		return ok("containerd: " + f.containerd + "\nrunc: system\ncrictl: system\ncni: system\n")
	case all == "list":
		return ok(f.runtimeInstalled)
	case len(args) == 3 && args[0] == "--restart-containerd" && args[1] == "containerd":
		v := args[2]
		if v != "system" && !strings.Contains("\n"+f.runtimeInstalled, "\ncontainerd "+v+"\n") {
			return exit(1, "runtime-select: containerd "+v+" is not installed\n")
		}
		if f.containerd == v {
			return ok("containerd: " + v + " already selected\n")
		}
		if cfg, _ := os.ReadFile(f.hostFile(ContainerdConfig)); (v == "system" || strings.HasPrefix(v, "1.")) && strings.HasPrefix(string(cfg), "version = 3") {
			f.containerdRuns = f.containerd
			return exit(1, "runtime-select: containerd "+v+" does not start (failed to load TOML: unsupported config version 3): switch undone\n")
		}
		if f.getenv("RUNTIME_RESTART_FAILS") == v {
			f.containerdRuns = f.containerd
			return exit(1, "runtime-select: containerd: switch undone, it serves "+f.containerd+" as before\n")
		}
		f.containerd, f.containerdRuns = v, v
		return ok("containerd: selected " + v + "\n")
	}
	return exit(2, "")
}

// kubeadm rewrites what kubeadm upgrade rewrites on a node: the kubelet's
// configuration and, on a control-plane node, the static pods' manifests.
func (f *fakeNode) kubeadm(args []string) Result {
	all := strings.Join(args, " ")
	if strings.HasPrefix(all, "config images list --kubernetes-version v") {
		var b strings.Builder
		for _, c := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy"} {
			b.WriteString("registry.k8s.io/" + c + ":" + args[4] + "\n")
		}
		b.WriteString("registry.k8s.io/coredns/coredns:v1.11.3\nregistry.k8s.io/pause:3.10\n")
		b.WriteString(or(f.getenv("KUBEADM_ETCD"), "registry.k8s.io/etcd:3.5.16-0") + "\n")
		return ok(b.String())
	}
	if !strings.HasPrefix(all, "upgrade ") {
		return ok("")
	}
	if f.getenv("KUBEADM_FAILS") != "" {
		return exit(1, "")
	}
	v := or(f.getenv("CLUSTER_TARGET"), targetVersion)
	write := func(name, data string) {
		os.MkdirAll(filepath.Dir(f.hostFile(name)), 0o755)
		os.WriteFile(f.hostFile(name), []byte(data), 0o644)
	}
	write("/var/lib/kubelet/config.yaml", "kubeadm's kubelet configuration for v"+v+"\n")
	write("/var/lib/kubelet/kubeadm-flags.env", "KUBELET_KUBEADM_ARGS=\"--v"+v+"\"\n")
	if fi, err := os.Stat(f.hostFile(ManifestsDir)); err == nil && fi.IsDir() {
		entries, _ := os.ReadDir(f.hostFile(ManifestsDir))
		for _, e := range entries {
			data, _ := os.ReadFile(f.hostFile(ManifestsDir + "/" + e.Name()))
			write("/etc/kubernetes/tmp/kubeadm-backup-manifests-2026/"+e.Name(), string(data))
		}
		for _, m := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
			write(ManifestsDir+"/"+m+".yaml", "image: registry.k8s.io/"+m+":v"+v+"\n")
		}
		if img := f.getenv("ETCD_IMAGE"); img != "" {
			write(ManifestsDir+"/etcd.yaml", "image: "+img+"\n")
		}
	}
	return ok("")
}

// crictlRun: the runtime's exited containers (lines "POD-UID ID EXIT-CODE"),
// and the containerd that runs (system is Debian's 1.6.20).
func (f *fakeNode) crictlRun(args []string) Result {
	if f.getenv("CRICTL_MISSING") != "" {
		return exit(127, "chroot: failed to run command 'crictl': No such file or directory\n")
	}
	all := strings.Join(args, " ")
	switch {
	case all == "version":
		r := f.containerdRuns
		if r == "system" {
			r = "1.6.20~ds1"
		}
		return ok("Version:  0.1.0\nRuntimeName:  containerd\nRuntimeVersion:  v" + r + "\nRuntimeApiVersion:  v1\n")
	case strings.HasPrefix(all, "ps -a -q --label io.kubernetes.pod.uid="):
		uid := strings.TrimPrefix(args[4], "io.kubernetes.pod.uid=")
		var b strings.Builder
		for _, l := range lines(f.crictl) {
			if p := strings.Fields(l); p[0] == uid {
				b.WriteString(p[1] + "\n")
			}
		}
		return ok(b.String())
	case args[0] == "inspect":
		for _, l := range lines(f.crictl) {
			if p := strings.Fields(l); p[1] == args[1] {
				return ok(fmt.Sprintf("{\n  \"status\": {\n    \"id\": \"%s\",\n    \"state\": \"CONTAINER_EXITED\",\n    \"exitCode\": %s,\n", p[1], p[2]))
			}
		}
		return ok("")
	}
	return exit(2, "")
}

func (f *fakeNode) kubeletCompat(args []string) Result {
	all := strings.Join(args, " ")
	switch args[0] {
	case "preflight":
		// preflight judges the runtime --runtime names, else the one that
		// runs (the node's probe).
		if r := f.getenv("PREFLIGHT_REFUSES"); r != "" {
			return exit(1, "kubelet-compat: "+r+"\n")
		}
		rt, old := f.containerdRuns, " "+f.getenv("PREFLIGHT_RUNTIME_OLD")+" "+f.getenv("PREFLIGHT_PROBE_OLD")+" "
		if _, after, found := strings.Cut(all, " --runtime containerd@"); found {
			rt, old = strings.Fields(after)[0], " "+f.getenv("PREFLIGHT_RUNTIME_OLD")+" "
		}
		if strings.Contains(old, " "+rt+" ") {
			return exit(1, "kubelet-compat: runtime: kubelet 1.31 needs CRI v1, which containerd "+rt+" does not serve (it answers v1alpha2): first move the runtime to containerd 1.7.35 (make runtime RUNTIME_COMPONENTS=containerd@1.7.35)\n")
		}
		out := f.preflight
		if strings.Contains(" "+f.getenv("PREFLIGHT_FROM_OLD")+" ", " "+rt+" ") {
			out += "note: runtime: --from: kubelet 1.30 needs CRI v1, which containerd " + rt + " does not serve (it answers v1alpha2): is the running kubelet on another runtime endpoint?\n"
		}
		return ok(out)
	case "etcd-bridge":
		if strings.Contains(all, " --bridge-image ") {
			return ok("etcd-bridge: bridged: etcd 3.6.16 serves with kubeadm's flags\n")
		}
		return exit(1, "kubelet-compat: etcd "+f.getenv("ETCD_BEFORE")+" -> "+f.getenv("KUBEADM_ETCD")+" crosses 3.6 -> 3.7: the bridge etcd (3.6.11 or later) must run first; give --bridge-image\n")
	case "cgroups":
		f.cgroupsCalls++
		if f.getenv("CGROUPS_REPAIR_FAILS") != "" || f.getenv("CGROUPS_REPAIR_FAILS_AT") == strconv.Itoa(f.cgroupsCalls) {
			return exit(1, "kubelet-compat: container 26305e1f26a1: process 314 is not the one runc started any more: left alone\n")
		}
		return ok("put back: kube-system/kube-proxy-zdlz7 sandbox 26305e1f26a1: process 314 out of its devices cgroup\n")
	case "record":
		f.recorded = true
		return ok("")
	case "picture":
		return ok("")
	case "gate":
		// the Go gate's verdict at each call: "EXIT VERDICT", the last
		// repeating (none: passed).
		f.gateCalls++
		line := "0 passed"
		if len(f.gate) > 0 {
			line = f.gate[min(f.gateCalls, len(f.gate))-1]
		}
		code, verdict, _ := strings.Cut(line, " ")
		res := ok("gate on node node-1: " + verdict + "\ndefault/plain-node-1 uid plain-uid: kept, synced\n")
		res.Code, _ = strconv.Atoi(code)
		if res.Code != 0 {
			res.Stderr = []byte("kubelet-compat: " + verdict + "\n")
		}
		f.gateLog = append(f.gateLog, gateVerdict{call: len(f.calls), code: res.Code})
		return res
	case "status":
		switch {
		case f.stage2 != prevVersion:
			return ok(f.statusAfter)
		case f.recorded && f.containerdRuns != f.containerdInitial:
			return ok(f.statusRuntime)
		case f.recorded:
			return ok(f.statusBefore)
		}
		// Before any record of this roll the file is not in force: status
		// lists no admission pods.
		return ok(withoutAdmissionPods(f.statusBefore))
	}
	return exit(2, "")
}

// kubectl: the API server, and the kubelet's own endpoint for its
// readiness probes' results (lines "NAMESPACE POD UID CONTAINER
// ready|unready|flaky"; each read is one more probe of each container; a
// flaky one failed once, then passes).
func (f *fakeNode) kubectl(args []string) Result {
	all := strings.Join(args, " ")
	switch {
	case strings.HasPrefix(all, "--kubeconfig ") && strings.HasSuffix(all, " get --raw /metrics/probes"):
		probes := f.probesBefore
		if n, _ := strconv.Atoi(f.getenv("PROBES_FLAKY")); f.probeFails < n && f.probeReads > 0 {
			// The reads after the first (the check before anything
			// changed) fail n times.
			f.probeFails++
			return exit(1, "error: flaky: Unauthorized\n")
		}
		if f.stage2 != prevVersion {
			if f.getenv("PROBES_FAIL") != "" {
				return exit(1, "")
			}
			probes = f.probesAfter
		}
		f.probeReads++
		n := f.probeReads
		var b strings.Builder
		b.WriteString("# HELP prober_probe_total [ALPHA] Cumulative number of a liveness, readiness or startup probe for a container by result.\n")
		for _, l := range lines(probes) {
			p := strings.Fields(l)
			s, fl := n, n
			if p[4] == "unready" {
				s = 0
			}
			switch p[4] {
			case "ready":
				fl = 0
			case "flaky":
				fl = 1
			}
			series := func(typ, result string, v int) {
				fmt.Fprintf(&b, "prober_probe_total{container=%q,namespace=%q,pod=%q,pod_uid=%q,probe_type=%q,result=%q} %d\n", p[3], p[0], p[1], p[2], typ, result, v)
			}
			series("Readiness", "failed", fl)
			series("Readiness", "successful", s)
			series("Liveness", "successful", n)
		}
		return ok(b.String())
	case strings.HasPrefix(all, "get events "):
		return ok(f.events)
	case strings.HasPrefix(all, "--kubeconfig ") && strings.HasSuffix(all, " get --raw /metrics"):
		if f.kubeletMetrics == "-" {
			return exit(1, "")
		}
		return ok(f.kubeletMetrics)
	case strings.HasPrefix(all, "get pod -n ") && strings.Contains(all, " --ignore-not-found "):
		for _, l := range lines(f.apiPods) {
			if p := append(strings.Fields(l), "", ""); p[0] == args[3]+"/"+args[4] {
				return ok(p[1] + " " + p[2])
			}
		}
		return ok("")
	case strings.HasPrefix(all, "get node "):
		return ok(f.nodeReady + " v" + or(f.getenv("KUBELET_REPORTS"), f.stage2) + "+compat.1")
	case strings.HasPrefix(all, "get configmap kubeadm-config "):
		if f.getenv("KUBEADM_CONFIG_FAILS") != "" {
			return exit(1, "error: the server is currently unable to handle the request\n")
		}
		return ok("apiServer: {}\nkubernetesVersion: v" + f.getenv("CLUSTER") + "\n")
	case strings.HasPrefix(all, "get plans.upgrade.cattle.io "):
		return ok(f.plan)
	}
	return exit(2, "")
}

var admissionPods = regexp.MustCompile(`(?ms)^    "pods": \[$.*?^    \]$`)

// withoutAdmissionPods is a status -o json whose admission section lists
// no pods (no compat file in force).
func withoutAdmissionPods(s string) string {
	return admissionPods.ReplaceAllString(s, `    "pods": []`)
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// ctrRun is ctr deprecations list as 1.7 and later print it:
// CTR_DEPRECATIONS (IDs without the prefix, space-separated) in use,
// CTR_FAILS=1 an error; CTR_PATH, when set, the only path ctr answers at
// (the selection's).
func (f *fakeNode) ctrRun(path string, args []string) Result {
	if want := f.getenv("CTR_PATH"); want != "" && path != want {
		return exit(127, "chroot: failed to run command '"+path+"': No such file or directory\n")
	}
	if strings.Join(args, " ") != "deprecations list" {
		return exit(2, "")
	}
	if f.getenv("CTR_FAILS") != "" {
		return exit(1, "ctr: failed to dial \"/run/containerd/containerd.sock\": context deadline exceeded\n")
	}
	ids := strings.Fields(f.getenv("CTR_DEPRECATIONS"))
	if len(ids) == 0 {
		return ok("")
	}
	var b strings.Builder
	b.WriteString("ID    LAST OCCURRENCE    MESSAGE    \n")
	for _, id := range ids {
		b.WriteString("io.containerd.deprecation/" + id + "    2026-12-07T10:00:00Z    deprecated\n")
	}
	return ok(b.String())
}

// containerdMigrate is a 2.x containerd's config migrate of
// ContainerdConfig: version 3 (the file as it was, under a version 3
// line); a file in that form already, as it is. MIGRATE_FAILS=1: an error.
func (f *fakeNode) containerdMigrate(args []string) Result {
	if strings.Join(args, " ") != "--config "+ContainerdConfig+" config migrate" {
		return exit(2, "")
	}
	if f.getenv("MIGRATE_FAILS") != "" {
		return exit(1, "containerd: failed to load TOML: toml: line 3: expected '.' or '=', but got 'x' instead\n")
	}
	data, err := os.ReadFile(f.hostFile(ContainerdConfig))
	if err != nil {
		return exit(1, err.Error()+"\n")
	}
	if strings.HasPrefix(string(data), "version = 3\n") {
		return ok(string(data))
	}
	return ok("version = 3\n" + strings.TrimPrefix(string(data), "version = 2\n"))
}
