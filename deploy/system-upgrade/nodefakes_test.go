package systemupgrade

import (
	"regexp"
	"strings"
)

// The CLI's own goldens are the fakes' output, so the Job is tested
// against the formats kubelet-compat really writes.
const cliTestdata = "../../cmd/kubelet-compat/app/testdata/"

// fakes are the node's programs the Job runs, as shell scripts on PATH. Each
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
"stage1 "*)
	# As the real one: stage1 never older than stage2.
	s2=$(cat "$FAKE/stage2")
	if [ "$2" != "$s2" ] && [ "$(printf '%s\n%s\n' "$2" "$s2" | sort -V | head -n 1)" = "$2" ]; then
		echo "kubernetes-select: refusing stage1 $2: older than stage2 $s2, select stage2 first (use --force to override)" >&2; exit 1
	fi
	echo "$2" >"$FAKE/stage1" ;;
"stage2 "*) echo "$2" >"$FAKE/stage2" ;;
"--restart-kubelet stage2 "*) echo "$3" >"$FAKE/stage2" ;;
*) exit 2 ;;
esac`,
	// runtime-select keeps containerd's selection in $FAKE/containerd
	// (system: Debian's) and the containerd that runs in
	// $FAKE/containerd-runs; list prints $FAKE/runtime-installed.
	// RUNTIME_RESTART_FAILS=VERSION: containerd does not come back on it,
	// and runtime-select undoes the switch (containerd restarted on the
	// previous selection), exit 1.
	"runtime-select": `case "$*" in
status) echo "containerd: $(cat "$FAKE/containerd")"; echo "runc: system"; echo "crictl: system"; echo "cni: system" ;;
list) cat "$FAKE/runtime-installed" ;;
"--restart-containerd containerd "*)
	[ "$3" = system ] || grep -qx "containerd $3" "$FAKE/runtime-installed" || { echo "runtime-select: containerd $3 is not installed" >&2; exit 1; }
	if [ "$(cat "$FAKE/containerd")" = "$3" ]; then echo "containerd: $3 already selected"; exit 0; fi
	echo $(($(cat "$FAKE/runtime-swaps" 2>/dev/null || echo 0) + 1)) >"$FAKE/runtime-swaps"
	if [ "${RUNTIME_RESTART_FAILS:-}" = "$3" ]; then
		echo "runtime-select: containerd: switch undone, it serves $(cat "$FAKE/containerd") as before" >&2
		cat "$FAKE/containerd" >"$FAKE/containerd-runs"; exit 1
	fi
	echo "$3" >"$FAKE/containerd"; echo "$3" >"$FAKE/containerd-runs"; echo "containerd: selected $3" ;;
*) exit 2 ;;
esac`,
	// systemctl show: containerd.service's KillMode (KILLMODE, process unless said).
	"systemctl": `case "$*" in "show -p KillMode containerd") echo "KillMode=${KILLMODE:-process}" ;; *) exit 2 ;; esac`,
	// $FAKE/unversioned: the version of kubernetes-unversioned installed.
	"dpkg-query": `case $3 in
'${Version}') cat "$FAKE/unversioned" ;;
*) [ "$FORMAT" = deb ] && printf 'install ok installed' ;;
esac`,
	"rpm": `[ "$1" != -q ] || [ "$FORMAT" = rpm ]`,
	// DPKG_DROPS: installing kubernetes-unversioned drops stage2's link,
	// as dpkg does when the package's directory takes its place.
	"dpkg": `case "$*" in *kubernetes-unversioned*) [ -z "${DPKG_DROPS:-}" ] || echo none >"$FAKE/stage2" ;; esac`,
	// kubeadm rewrites what kubeadm upgrade rewrites on a node: the kubelet's
	// configuration and, on a control-plane node, the static pods'
	// manifests (keeping its own backup of them, as kubeadm does).
	// KUBEADM_FAILS: kubeadm upgrade fails.
	// kubeadm config images list: the target's images, its etcd
	// KUBEADM_ETCD (3.5.16-0 unless said).
	"kubeadm": `case "$*" in "config images list --kubernetes-version v"*)
for c in kube-apiserver kube-controller-manager kube-scheduler kube-proxy; do echo "registry.k8s.io/$c:$4"; done
echo "registry.k8s.io/coredns/coredns:v1.11.3"; echo "registry.k8s.io/pause:3.10"; echo "${KUBEADM_ETCD:-registry.k8s.io/etcd:3.5.16-0}" ;;
"upgrade "*)
[ -z "${KUBEADM_FAILS:-}" ] || exit 1
v=${CLUSTER_TARGET:-1.31.14}
mkdir -p "$FAKE/host/var/lib/kubelet"
echo "kubeadm's kubelet configuration for v$v" >"$FAKE/host/var/lib/kubelet/config.yaml"
echo "KUBELET_KUBEADM_ARGS=\"--v$v\"" >"$FAKE/host/var/lib/kubelet/kubeadm-flags.env"
if [ -d "$FAKE/host/etc/kubernetes/manifests" ]; then
	b="$FAKE/host/etc/kubernetes/tmp/kubeadm-backup-manifests-2026"; mkdir -p "$b"; cp "$FAKE/host/etc/kubernetes/manifests/"* "$b/"
	for m in kube-apiserver kube-controller-manager kube-scheduler; do echo "image: registry.k8s.io/$m:v$v" >"$FAKE/host/etc/kubernetes/manifests/$m.yaml"; done
	[ -z "${ETCD_IMAGE:-}" ] || echo "image: $ETCD_IMAGE" >"$FAKE/host/etc/kubernetes/manifests/etcd.yaml"
fi ;;
esac`,
	// crictl: the runtime's exited containers, $FAKE/crictl lines "POD-UID ID EXIT-CODE";
	// version: the containerd that runs ($FAKE/containerd-runs; system is
	// Debian's 1.6.20). CRICTL_MISSING: the node has no crictl.
	"crictl": `[ -z "${CRICTL_MISSING:-}" ] || { echo "chroot: failed to run command 'crictl': No such file or directory" >&2; exit 127; }
case "$*" in
version) r=$(cat "$FAKE/containerd-runs"); [ "$r" != system ] || r=1.6.20~ds1
	printf 'Version:  0.1.0\nRuntimeName:  containerd\nRuntimeVersion:  v%s\nRuntimeApiVersion:  v1\n' "$r" ;;
"ps -a -q --label io.kubernetes.pod.uid="*) awk -v u="${5#io.kubernetes.pod.uid=}" '$1 == u { print $2 }' "$FAKE/crictl" ;;
"inspect "*) awk -v id="$2" '$2 == id { printf "{\n  \"status\": {\n    \"id\": \"%s\",\n    \"state\": \"CONTAINER_EXITED\",\n    \"exitCode\": %s,\n", $2, $3 }' "$FAKE/crictl" ;;
*) exit 2 ;;
esac`,
	// kubelet-compat etcd-bridge refuses without --bridge-image, as the
	// CLI does when a bridge is needed (the fake always needs one).
	"kubelet-compat": `case $1 in
# preflight judges the runtime --runtime names, else the one that runs
# (the node's probe): PREFLIGHT_RUNTIME_OLD lists the containerd versions
# that do not serve the target kubelet, PREFLIGHT_PROBE_OLD those the probe
# alone refuses (the probe contradicting the matrix), PREFLIGHT_FROM_OLD
# those that do not serve the running kubelet (a note).
preflight) if [ -n "${PREFLIGHT_REFUSES:-}" ]; then echo "kubelet-compat: $PREFLIGHT_REFUSES" >&2; exit 1; fi
	rt=$(cat "$FAKE/containerd-runs") old=" ${PREFLIGHT_RUNTIME_OLD:-} ${PREFLIGHT_PROBE_OLD:-} " args="$*"
	case $args in *" --runtime containerd@"*) rt=${args##*--runtime containerd@}; rt=${rt%% *}; old=" ${PREFLIGHT_RUNTIME_OLD:-} " ;; esac
	case $old in *" $rt "*) echo "kubelet-compat: runtime: kubelet 1.31 needs CRI v1, which containerd $rt does not serve (it answers v1alpha2): first move the runtime to containerd 1.7.35 (make runtime RUNTIME_COMPONENTS=containerd@1.7.35)" >&2; exit 1 ;; esac
	cat "$FAKE/preflight"
	case " ${PREFLIGHT_FROM_OLD:-} " in *" $rt "*) echo "note: runtime: --from: kubelet 1.30 needs CRI v1, which containerd $rt does not serve (it answers v1alpha2): is the running kubelet on another runtime endpoint?" ;; esac ;;
etcd-bridge) case "$*" in *" --bridge-image "*) echo "etcd-bridge: bridged: etcd 3.6.16 serves with kubeadm's flags" ;;
	*) echo "kubelet-compat: etcd $ETCD_BEFORE -> $KUBEADM_ETCD crosses 3.6 -> 3.7: the bridge etcd (3.6.11 or later) must run first; give --bridge-image" >&2; exit 1 ;; esac ;;
# CGROUPS_REPAIR_FAILS_AT=N: only the Nth call fails (the first runs
# before the preflight, the second right before the restart).
cgroups) n=$(($(cat "$FAKE/cgroups-calls" 2>/dev/null || echo 0) + 1)); echo $n >"$FAKE/cgroups-calls"
	if [ -n "${CGROUPS_REPAIR_FAILS:-}" ] || [ "${CGROUPS_REPAIR_FAILS_AT:-}" = "$n" ]; then echo "kubelet-compat: container 26305e1f26a1: process 314 is not the one runc started any more: left alone" >&2; exit 1; fi
	echo "put back: kube-system/kube-proxy-zdlz7 sandbox 26305e1f26a1: process 314 out of its devices cgroup" ;;
record) : >"$FAKE/recorded" ;;
picture) : >"$FAKE/pictured" ;;
# gate: the Go gate's verdict (pkg/gate, tested there) at each call, from
# $FAKE/gate: lines "EXIT VERDICT", the last one repeating (none: passed).
gate) n=$(($(cat "$FAKE/gate-calls" 2>/dev/null || echo 0) + 1)); echo $n >"$FAKE/gate-calls"
	line=$(sed -n "${n}p" "$FAKE/gate"); [ -n "$line" ] || line=$(sed -n '$p' "$FAKE/gate"); [ -n "$line" ] || line="0 passed"
	echo "gate on node node-1: ${line#* }"; echo "default/plain-node-1 uid plain-uid: kept, synced"
	[ "${line%% *}" = 0 ] || echo "kubelet-compat: ${line#* }" >&2
	exit "${line%% *}" ;;
# Before any record of this roll the file is not in force: status lists
# no admission pods (app/status_admission.go), as on a node whose last
# file is an old roll's or none.
# After a runtime swap, the previous kubelet on the new containerd:
# status-runtime.json.
status) if [ "$(cat "$FAKE/stage2")" != "$PREV" ]; then cat "$FAKE/status-after.json"
	elif [ -e "$FAKE/recorded" ] && [ "$(cat "$FAKE/containerd-runs")" != "$(cat "$FAKE/containerd-initial")" ]; then cat "$FAKE/status-runtime.json"
	elif [ -e "$FAKE/recorded" ]; then cat "$FAKE/status-before.json"
	else awk '/^    "pods": \[$/ { print "    \"pods\": []"; skip = 1; next } skip && /^    \]$/ { skip = 0; next } !skip' "$FAKE/status-before.json"; fi ;;
esac`,
	// kubectl: the API server, and the kubelet's own endpoint for its
	// readiness probes' results (prober_probe_total, $FAKE/probes-before or
	// probes-after: lines "NAMESPACE POD UID CONTAINER ready|unready|flaky";
	// each read is one more probe of each container; a flaky one failed
	// once, then passes).
	"kubectl": `case "$*" in
"--kubeconfig "*" get --raw /metrics/probes") if [ "$(cat "$FAKE/stage2")" = "$PREV" ]; then f=probes-before; else [ -z "${PROBES_FAIL:-}" ] || exit 1; f=probes-after; fi
	n=$(($(cat "$FAKE/probe-reads" 2>/dev/null || echo 0) + 1)); echo $n >"$FAKE/probe-reads"
	echo '# HELP prober_probe_total [ALPHA] Cumulative number of a liveness, readiness or startup probe for a container by result.'
	awk -v n=$n '{ s = $5 == "unready" ? 0 : n; f = $5 == "ready" ? 0 : $5 == "flaky" ? 1 : n
		printf "prober_probe_total{container=\"%s\",namespace=\"%s\",pod=\"%s\",pod_uid=\"%s\",probe_type=\"Readiness\",result=\"failed\"} %d\n", $4, $1, $2, $3, f
		printf "prober_probe_total{container=\"%s\",namespace=\"%s\",pod=\"%s\",pod_uid=\"%s\",probe_type=\"Readiness\",result=\"successful\"} %d\n", $4, $1, $2, $3, s
		printf "prober_probe_total{container=\"%s\",namespace=\"%s\",pod=\"%s\",pod_uid=\"%s\",probe_type=\"Liveness\",result=\"successful\"} %d\n", $4, $1, $2, $3, n }' "$FAKE/$f" ;;
"get events "*) cat "$FAKE/events" ;;
"--kubeconfig "*" get --raw /metrics") [ "$(cat "$FAKE/kubelet-metrics")" != - ] || exit 1; cat "$FAKE/kubelet-metrics" ;;
"get pod -n "*" --ignore-not-found "*) awk -v p="$4/$5" '$1 == p { printf "%s %s", $2, $3 }' "$FAKE/api-pods" ;;
"get node "*) echo "$(cat "$FAKE/node-ready") v${KUBELET_REPORTS:-$(cat "$FAKE/stage2")}+compat.1" ;;
"get pods "*) if [ "$(cat "$FAKE/stage2")" = "$PREV" ]; then cat "$FAKE/pods-before"; else [ -z "${PODS_FAIL:-}" ] || exit 1; cat "$FAKE/pods-after"; fi ;;
"get configmap kubeadm-config "*) [ -z "${KUBEADM_CONFIG_FAILS:-}" ] || { echo "error: the server is currently unable to handle the request" >&2; exit 1; }
	printf 'apiServer: {}\nkubernetesVersion: v%s\n' "$CLUSTER" ;;
"get plans.upgrade.cattle.io "*) cat "$FAKE/plan" ;;
*) exit 2 ;;
esac`,
}

const (
	probesCall  = "kubectl --kubeconfig $WORK/kubelet.kubeconfig get --raw /metrics/probes"
	statusCall  = "kubelet-compat status -o json --kubeconfig /etc/kubernetes/kubelet.conf"
	pictureCall = "kubelet-compat picture --node-name node-1 -o /var/lib/kubelet-compat/roll/picture.json"
	// gateCall: the Go gate's verdict on the kubelet's swap.
	gateCall = "kubelet-compat gate --picture /var/lib/kubelet-compat/roll/picture.json --step kubelet --node-name node-1 --timeout T --poll 0.1s --fixed-wait 30s --require-record"
)

// workDir is the script's temporary directory in the calls (mktemp -d).
var workDir = regexp.MustCompile(`\S*/tmp/tmp\.[A-Za-z0-9]+`)

// gateLost is kubelet-compat gate's verdict on a container of the picture
// that runs under a new ID (status: restarted).
const gateLost = "2 lost: default/seccomp-node-1 uid pinned-uid: restarted: container app runs as c-pinned-uid-app-2, was c-pinned-uid-app"

// gateTimes are the gate's times in its call (the time left, when the
// runtime came back): T.
var gateTimes = regexp.MustCompile(`(--timeout|--since) \S+`)

const readyPods = "default/web-0 Running True\nkube-system/etcd-node-1 Running True\ndefault/done Succeeded False\n"

// readyProbes are the kubelet's readiness probes of the status golden's
// pods, all passing (default/seccomp-node-1 has none).
const readyProbes = "default plain-node-1 plain-uid app ready\nkube-system etcd-node-1 etcd-uid etcd ready\n"

// syncedMetrics is the new kubelet's /metrics once it has finished its
// first sync of the status golden's 3 pods.
const syncedMetrics = "# HELP kubelet_admission_rejections_total [ALPHA] Cumulative number pod admission rejections by the Kubelet.\n" +
	"kubelet_pod_worker_duration_seconds_bucket{operation_type=\"create\",le=\"+Inf\"} 3\n" +
	"kubelet_pod_worker_duration_seconds_sum{operation_type=\"create\"} 0.42\n" +
	"kubelet_pod_worker_duration_seconds_count{operation_type=\"create\"} 3\n" +
	"kubelet_pod_worker_duration_seconds_count{operation_type=\"sync\"} 7\n"

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
