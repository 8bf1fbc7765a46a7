package systemupgrade

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// The CLI's own goldens are the fakes' output, so the script is tested
// against the formats kubelet-compat really writes.
const cliTestdata = "../../cmd/kubelet-compat/app/testdata/"

// fakes are the programs upgrade.sh runs, as shell scripts on PATH. Each
// logs its arguments to $FAKE/calls; kubernetes-select keeps stage2 in
// $FAKE/stage2 so that kubelet-compat status answers for the kubelet that
// runs (status-before.json before the swap, status-after.json after it).
var fakes = map[string]string{
	// chroot ROOT CMD...: runs CMD here (the fakes stand for the node's programs).
	// The node's programs run with the node's PATH (KC_HOST_PATH, which
	// the test ends with a marker) and systemctl told to talk to PID 1.
	"chroot": `[ "$1" = "$FAKE/host" ] || { echo "chroot into $1" >&2; exit 9; }
case $PATH in *:/node-path-marker) ;; *) echo "chroot with PATH $PATH, not the node's" >&2; exit 9 ;; esac
[ "${SYSTEMD_IGNORE_CHROOT:-}" = 1 ] || { echo "chroot without SYSTEMD_IGNORE_CHROOT=1" >&2; exit 9; }
shift; exec "$@"`,
	"kubernetes-select": `case "$*" in
status) echo "stage1: $(cat "$FAKE/stage1") (symlink)"; echo "stage2: $(cat "$FAKE/stage2") (symlink)" ;;
"stage1 "*) echo "$2" >"$FAKE/stage1" ;;
"stage2 "*) echo "$2" >"$FAKE/stage2" ;;
"--restart-kubelet stage2 "*) echo "$3" >"$FAKE/stage2" ;;
*) exit 2 ;;
esac`,
	// $FAKE/unversioned: the version of kubernetes-unversioned installed.
	"dpkg-query": `case $3 in
'${Version}') cat "$FAKE/unversioned" ;;
*) [ "$FORMAT" = deb ] && printf 'install ok installed' ;;
esac`,
	"rpm": `[ "$1" != -q ] || [ "$FORMAT" = rpm ]`,
	// DPKG_DROPS: installing kubernetes-unversioned drops stage2's link,
	// as dpkg does when the package's directory takes its place.
	"dpkg":    `case "$*" in *kubernetes-unversioned*) [ -z "${DPKG_DROPS:-}" ] || echo none >"$FAKE/stage2" ;; esac`,
	"kubeadm": `:`,
	"kubelet-compat": `case $1 in
preflight) cat "$FAKE/preflight" ;;
status) if [ "$(cat "$FAKE/stage2")" = "$PREV" ]; then cat "$FAKE/status-before.json"; else cat "$FAKE/status-after.json"; fi ;;
esac`,
	"kubectl": `case "$*" in
"get node "*) echo "$(cat "$FAKE/node-ready") v${KUBELET_REPORTS:-$(cat "$FAKE/stage2")}+compat.1" ;;
"get pods "*) if [ "$(cat "$FAKE/stage2")" = "$PREV" ]; then cat "$FAKE/pods-before"; else [ -z "${PODS_FAIL:-}" ] || exit 1; cat "$FAKE/pods-after"; fi ;;
"get configmap kubeadm-config "*) printf 'apiServer: {}\nkubernetesVersion: v%s\n' "$CLUSTER" ;;
"get plans.upgrade.cattle.io "*) cat "$FAKE/plan" ;;
*) exit 2 ;;
esac`,
}

const podsCall = `kubectl get pods --all-namespaces --field-selector spec.nodeName=node-1 -o jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} {.status.phase} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`

const readyPods = "default/web-0 Running True\nkube-system/etcd-node-1 Running True\ndefault/done Succeeded False\n"

type scriptCase struct {
	name      string
	args      []string
	env       []string
	format    string // deb or rpm
	cluster   string // kubeadm-config's kubernetesVersion
	preflight string // a golden of the CLI
	after     func(string) string
	// before changes status-before.json (the status at the record).
	before    func(string) string
	nodeReady string
	// staleKubelet: the API keeps reporting the previous kubelet (the new
	// one never posts its status).
	staleKubelet bool
	podsBefore   string
	podsAfter    string
	failedMark   bool
	plan         string
	// unversioned is the node's kubernetes-unversioned (none: not the
	// image's 1.0.0-4).
	unversioned string

	wantErr   string
	wantCalls []string
	wantOut   []string
	stage2    string
}

func TestUpgradeScript(t *testing.T) {
	const prev, target = "1.30.14", "1.31.14"
	statusBefore, err := os.ReadFile(cliTestdata + "status.json.golden")
	assert.NilError(t, err)
	upgradeNode := []string{
		"kubernetes-select status",
		podsCall,
		"kubelet-compat preflight --node --from v1.30.14 --to v1.31.14 --kubeconfig /etc/kubernetes/kubelet.conf",
		"dpkg-query -W -f ${Status} kubernetes-unversioned",
		"dpkg-query -W -f ${Version} kubernetes-unversioned",
		"dpkg -i /var/lib/kubelet-compat/upgrade/1.31.14/kubernetes-1.31.14-node_1.31.14-2_amd64.deb /var/lib/kubelet-compat/upgrade/1.31.14/kubernetes-unversioned_1.0.0-4_all.deb",
		"kubernetes-select status",
		"kubernetes-select stage1 1.31.14",
		"kubeadm upgrade node",
		podsCall,
		"kubelet-compat record --kubeconfig /etc/kubernetes/kubelet.conf",
		"kubelet-compat status -o json --kubeconfig /etc/kubernetes/kubelet.conf",
		"kubernetes-select --restart-kubelet stage2 1.31.14",
	}
	gateOK := []string{
		"kubectl get node node-1 -o jsonpath={.status.conditions[?(@.type==\"Ready\")].status} {.status.nodeInfo.kubeletVersion}",
		podsCall,
		"kubelet-compat status -o json --kubeconfig /etc/kubernetes/kubelet.conf",
	}
	const configmapCall = "kubectl get configmap kubeadm-config -n kube-system -o jsonpath={.data.ClusterConfiguration}"
	rollback := []string{"kubelet-compat record --kubeconfig /etc/kubernetes/kubelet.conf", "kubernetes-select --restart-kubelet stage2 1.30.14"}
	cat := func(parts ...[]string) []string {
		var all []string
		for _, p := range parts {
			all = append(all, p...)
		}
		return all
	}
	for _, tc := range []scriptCase{
		{name: "worker, .deb: every step, then the gate passes", preflight: "preflight-1.30-1.31.table.golden",
			wantCalls: cat(upgradeNode, gateOK), stage2: target,
			wantOut: []string{"node node-1 (worker): 1.30.14 -> 1.31.14", "gate: node node-1 Ready, its pods Ready, no container restarted", "upgraded to 1.31.14"}},
		{name: "first control-plane node, RPM: kubeadm upgrade apply", format: "rpm", env: []string{"KC_ROLE=control-plane"},
			preflight: "preflight-1.30-1.31.table.golden", stage2: target,
			wantCalls: cat(upgradeNode[:3], []string{"dpkg-query -W -f ${Status} kubernetes-unversioned", "rpm -q kubernetes-unversioned",
				"rpm -U --replacepkgs /var/lib/kubelet-compat/upgrade/1.31.14/kubernetes-1.31.14-node-1.31.14-2.kc.x86_64.rpm", "kubernetes-select status",
				upgradeNode[7], configmapCall, "kubeadm upgrade apply --yes v1.31.14"}, upgradeNode[9:], gateOK),
			wantOut: []string{"first control-plane node of 1.31.14: kubeadm upgrade apply"}},
		{name: "next control-plane node: kubeadm upgrade node", env: []string{"KC_ROLE=control-plane"}, cluster: target,
			preflight: "preflight-1.30-1.31.table.golden", stage2: target,
			wantCalls: cat(upgradeNode[:8], []string{configmapCall}, upgradeNode[8:], gateOK)},
		{name: "kubernetes-unversioned as the node has it: not installed again (dpkg would put its directories in place of the links)",
			preflight: "preflight-1.30-1.31.table.golden", unversioned: "1.0.0-4", stage2: target,
			wantCalls: cat(upgradeNode[:5], []string{"dpkg -i /var/lib/kubelet-compat/upgrade/1.31.14/kubernetes-1.31.14-node_1.31.14-2_amd64.deb"}, upgradeNode[6:], gateOK),
			wantOut:   []string{"kubernetes-unversioned_1.0.0-4_all.deb: the node has this kubernetes-unversioned already: not reinstalled"}},
		{name: "a newer kubernetes-unversioned dropped stage2's selection: selected again, nothing restarted",
			preflight: "preflight-1.30-1.31.table.golden", unversioned: "1.0.0-3", env: []string{"DPKG_DROPS=1"}, stage2: target,
			wantCalls: cat(upgradeNode[:7], []string{"kubernetes-select stage2 1.30.14"}, upgradeNode[7:], gateOK),
			wantOut:   []string{"the packages dropped stage2's selection: kubernetes-select stage2 1.30.14"}},
		{name: "preflight: the patched kubelet restarts a container, refused before anything changed", preflight: "preflight-node.table.golden",
			wantErr:   "the patched kubelet would still lose 1 container(s) or pod(s) (above); the Plan does not allow it (KC_ALLOW_LOSS): nothing changed",
			wantCalls: upgradeNode[:3], stage2: prev},
		{name: "preflight: pods the patched kubelet still rejects, refused", preflight: "preflight-node-killers.table.golden",
			wantErr: "would still lose 4 container(s) or pod(s)", wantCalls: upgradeNode[:3], stage2: prev},
		{name: "preflight: no patch series for the target, refused", preflight: "preflight-1.15-1.16.table.golden",
			wantErr: "would still lose 1 container(s) or pod(s)", wantCalls: upgradeNode[:3], stage2: prev},
		{name: "preflight loss allowed by the Plan", preflight: "preflight-node.table.golden", env: []string{"KC_ALLOW_LOSS=true"},
			wantCalls: cat(upgradeNode, gateOK), stage2: target,
			wantOut: []string{"the patched kubelet loses 1 container(s) or pod(s); the Plan allows it (KC_ALLOW_LOSS=true)"}},
		{name: "gate: a container restarted across the swap, rolled back", preflight: "preflight-1.30-1.31.table.golden",
			after: func(s string) string {
				return strings.Replace(s, "          \"c-pinned-uid-app\"\n", "          \"c-pinned-uid-app-2\"\n", 1)
			},
			wantErr: "the health gate failed: stage2 is back on 1.30.14", failedMark: true, stage2: prev,
			wantCalls: cat(upgradeNode, gateOK, rollback),
			wantOut:   []string{"pod default/seccomp-node-1: runs container c-pinned-uid-app-2, created after the record (restarted)"}},
		{name: "gate: a pod that ran no container at the record (CrashLoopBackOff) runs one after the swap: not a restart",
			preflight: "preflight-1.30-1.31.table.golden", stage2: target, wantCalls: cat(upgradeNode, gateOK),
			before: func(s string) string {
				return strings.Replace(s, "\"runningContainers\": [\n          \"c-pinned-uid-app\"\n        ],", "\"runningContainers\": [],", 1)
			},
			after: func(s string) string {
				return strings.Replace(s, "          \"c-pinned-uid-app\"\n", "          \"c-pinned-uid-app-2\"\n", 1)
			}},
		{name: "gate: a static pod recreated under another UID, rolled back", preflight: "preflight-1.30-1.31.table.golden",
			after: func(s string) string { // the admission section, after staticPodsOnRecordedUID
				i := strings.LastIndex(s, `"uid": "etcd-uid"`)
				return s[:i] + `"uid": "etcd-uid-2"` + s[i+len(`"uid": "etcd-uid"`):]
			},
			wantErr: "the health gate failed", failedMark: true, stage2: prev, wantCalls: cat(upgradeNode, gateOK, rollback),
			wantOut: []string{"pod kube-system/etcd-node-1: runs under uid etcd-uid-2, was etcd-uid (recreated)"}},
		{name: "gate: the kubelet's decision restarts a legacy container, rolled back", preflight: "preflight-1.30-1.31.table.golden",
			after:   func(s string) string { return strings.Replace(s, "\"keep\": true", "\"keep\": false", 1) },
			wantErr: "the health gate failed", failedMark: true, stage2: prev, wantCalls: cat(upgradeNode, gateOK, rollback),
			wantOut: []string{"container default/seccomp-node-1/app (c-pinned-uid-app): the kubelet restarts it"}},
		{name: "gate: a pod not Ready within the timeout, rolled back", preflight: "preflight-1.30-1.31.table.golden",
			podsAfter: "default/web-0 Running False\n", wantErr: "the health gate failed", failedMark: true, stage2: prev,
			wantOut: []string{"gate: pods of node-1 not Ready after 1s:", "  default/web-0 (Running)"}},
		{name: "gate: the API server does not list the node's pods: no pass, rolled back", preflight: "preflight-1.30-1.31.table.golden",
			env: []string{"PODS_FAIL=1"}, wantErr: "the health gate failed", failedMark: true, stage2: prev,
			wantOut: []string{"gate: pods of node-1 not Ready after 1s:", "  (the API server did not list the node's pods)"}},
		{name: "gate: a pod not Ready before the upgrade does not count", preflight: "preflight-1.30-1.31.table.golden",
			podsBefore: "default/crashing Running False\n", podsAfter: "default/crashing Running False\ndefault/web-0 Running True\n",
			wantCalls: cat(upgradeNode, gateOK), stage2: target},
		{name: "gate: the node not Ready within the timeout, rolled back", preflight: "preflight-1.30-1.31.table.golden",
			nodeReady: "False", wantErr: "the health gate failed", failedMark: true, stage2: prev,
			wantOut: []string{"gate: node node-1 not Ready with kubelet v1.31.14 after 1s"}},
		{name: "gate: the node still Ready from the old kubelet only, rolled back", preflight: "preflight-1.30-1.31.table.golden",
			nodeReady: "True", staleKubelet: true, wantErr: "the health gate failed", failedMark: true, stage2: prev,
			wantOut: []string{"gate: node node-1 not Ready with kubelet v1.31.14 after 1s"}},
		{name: "a node whose gate failed before is not tried again", failedMark: true, stage2: prev,
			wantErr: "the health gate failed on this node before (/var/lib/kubelet-compat/upgrade/1.31.14.gate-failed)"},
		{name: "prepare: waits for the control-plane Plan", args: []string{"wait-plan", ControlPlanePlan}, plan: "1.31.14 True", stage2: prev,
			wantCalls: []string{"kubectl get plans.upgrade.cattle.io kubelet-compat-control-plane -n system-upgrade -o jsonpath={.status.latestVersion} {.status.conditions[?(@.type==\"Complete\")].status}"},
			wantOut:   []string{"Plan system-upgrade/kubelet-compat-control-plane is complete for 1.31.14"}},
	} {
		for _, shell := range shells(t) {
			t.Run(shell.name+"/"+tc.name, func(t *testing.T) { runScriptCase(t, tc, shell.path, statusBefore) })
		}
	}
}

type shell struct{ name, path string }

// shells are the tools upgrade.sh runs with: the machine's sh and awk, and
// the busybox applets of the upgrade image (where Debian's busybox-static
// is installed).
func shells(t *testing.T) []shell {
	all := []shell{{name: "system"}}
	if _, err := os.Stat("/bin/busybox"); err == nil {
		dir := t.TempDir()
		for _, a := range UpgradeApplets {
			assert.NilError(t, os.Symlink("/bin/busybox", filepath.Join(dir, a)))
		}
		all = append(all, shell{"busybox", dir})
	}
	return all
}

func runScriptCase(t *testing.T, tc scriptCase, applets string, statusBefore []byte) {
	const prev, target = "1.30.14", "1.31.14"
	same := func(s string) string { return s }
	{
		{
			fake := t.TempDir()
			host := filepath.Join(fake, "host")
			bin := filepath.Join(fake, "bin")
			pkgs := filepath.Join(fake, "packages")
			for _, d := range []string{host, bin, pkgs} {
				assert.NilError(t, os.MkdirAll(d, 0o755))
			}
			for name, body := range fakes {
				script := "#!/bin/sh\nprintf '%s\\n' \"" + name + " $*\" >>\"$FAKE/calls\"\n" + body + "\n"
				assert.NilError(t, os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755))
			}
			for _, p := range []string{"kubernetes-1.31.14-node_1.31.14-2_amd64.deb", "kubernetes-unversioned_1.0.0-4_all.deb",
				"kubernetes-1.31.14-node-1.31.14-2.kc.x86_64.rpm"} {
				assert.NilError(t, os.WriteFile(filepath.Join(pkgs, p), []byte(p), 0o644))
			}
			write := func(name, data string) {
				assert.NilError(t, os.WriteFile(filepath.Join(fake, name), []byte(data), 0o644))
			}
			or := func(s, def string) string {
				if s == "" {
					return def
				}
				return s
			}
			if tc.preflight != "" {
				data, err := os.ReadFile(cliTestdata + tc.preflight)
				assert.NilError(t, err)
				write("preflight", string(data))
			}
			if tc.after == nil {
				tc.after = same
			}
			if tc.before == nil {
				tc.before = same
			}
			write("status-before.json", tc.before(string(statusBefore)))
			write("status-after.json", tc.after(string(statusBefore)))
			write("stage1", prev)
			write("stage2", prev)
			write("node-ready", or(tc.nodeReady, "True"))
			if tc.staleKubelet {
				// The fake reports the version of stage2: make it the old one.
				tc.env = append(tc.env, "KUBELET_REPORTS="+prev)
			}
			write("pods-before", or(tc.podsBefore, readyPods))
			write("pods-after", or(tc.podsAfter, readyPods))
			write("plan", tc.plan)
			write("unversioned", or(tc.unversioned, "1.0.0-2"))
			if tc.failedMark && tc.wantErr != "" && tc.preflight == "" {
				mark := filepath.Join(host, "var/lib/kubelet-compat/upgrade/1.31.14.gate-failed")
				assert.NilError(t, os.MkdirAll(filepath.Dir(mark), 0o755))
				write("host/var/lib/kubelet-compat/upgrade/1.31.14.gate-failed", "2026-01-01T00:00:00Z\n")
			}

			sh, path := "sh", bin+":"+os.Getenv("PATH")
			if applets != "" {
				sh, path = filepath.Join(applets, "sh"), bin+":"+applets+":"+os.Getenv("PATH")
				// busybox's sh prefers its applets to PATH: name the fake chroot by path.
				tc.env = append([]string{"KC_CHROOT=" + filepath.Join(bin, "chroot")}, tc.env...)
			}
			cmd := exec.Command(sh, append([]string{"upgrade.sh"}, tc.args...)...)
			cmd.Env = append([]string{"PATH=" + path, "FAKE=" + fake, "PREV=" + prev,
				"FORMAT=" + or(tc.format, "deb"), "CLUSTER=" + or(tc.cluster, prev),
				"SYSTEM_UPGRADE_NODE_NAME=node-1", "SYSTEM_UPGRADE_PLAN_LATEST_VERSION=" + target,
				"KC_HOST=" + host, "KC_PACKAGES=" + pkgs, "KC_GATE_TIMEOUT=1", "KC_GATE_SETTLE=0", "KC_POLL=0.1",
				// The fakes stand for the node's programs: its PATH is the test's.
				"KC_HOST_PATH=" + path + ":/node-path-marker"}, tc.env...)
			out, err := cmd.CombinedOutput()
			if tc.wantErr != "" {
				assert.Check(t, err != nil, "want a failure, got success:\n%s", out)
				assert.Check(t, is.Contains(string(out), tc.wantErr))
			} else {
				assert.Check(t, err, "upgrade.sh failed:\n%s", out)
			}
			for _, w := range tc.wantOut {
				assert.Check(t, is.Contains(string(out), w))
			}
			calls, _ := os.ReadFile(filepath.Join(fake, "calls"))
			got := dedupe(strings.Split(strings.TrimSpace(string(calls)), "\n"))
			if tc.wantCalls != nil {
				assert.Check(t, is.DeepEqual(got, withChroot(tc.wantCalls, host)), "output:\n%s", out)
			}
			stage2, _ := os.ReadFile(filepath.Join(fake, "stage2"))
			assert.Check(t, is.Equal(strings.TrimSpace(string(stage2)), tc.stage2))
			_, err = os.Stat(filepath.Join(host, "var/lib/kubelet-compat/upgrade/1.31.14.gate-failed"))
			assert.Check(t, is.Equal(err == nil, tc.failedMark))
			if tc.stage2 == target {
				for _, p := range []string{"kubernetes-1.31.14-node_1.31.14-2_amd64.deb", "kubernetes-unversioned_1.0.0-4_all.deb"} {
					_, err := os.Stat(filepath.Join(host, "var/lib/kubelet-compat/upgrade/1.31.14", p))
					staged := tc.format != "rpm" && !(tc.unversioned == "1.0.0-4" && strings.HasPrefix(p, "kubernetes-unversioned"))
					assert.Check(t, is.Equal(err == nil, staged), "package %s staged on the node", p)
				}
			}
		}
	}
}

// withChroot is the call log wanted: every program but kubectl runs on the
// node, through chroot.
func withChroot(calls []string, host string) []string {
	var out []string
	for _, c := range calls {
		if !strings.HasPrefix(c, "kubectl ") {
			out = append(out, "chroot "+host+" "+c)
		}
		out = append(out, c)
	}
	return out
}

// dedupe drops the repeats of a poll.
func dedupe(lines []string) []string {
	var out []string
	for _, l := range lines {
		if len(out) == 0 || out[len(out)-1] != l {
			out = append(out, l)
		}
	}
	return out
}
