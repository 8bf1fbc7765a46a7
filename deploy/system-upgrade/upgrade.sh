#!/bin/sh
# upgrade.sh: the upgrade Job of deploy/system-upgrade (see README.md).
#
# Runs in the system-upgrade-controller's Job pod on the node it upgrades,
# with the node's root at $KC_HOST (/host); every step on the node runs
# there with chroot. Three modes:
#
#   upgrade.sh upgrade            upgrade this node to $SYSTEM_UPGRADE_PLAN_LATEST_VERSION
#   upgrade.sh wait-plan PLAN     wait until the Plan PLAN is Complete for that
#                                 version (the workers' prepare step)
#   upgrade.sh naive              the naive in-place roll k3s and rke2 users run
#                                 today (the e2e's anchor, with the packages as
#                                 released): the packages, stage1, kubeadm, the
#                                 kubelet swapped and restarted; no preflight, no
#                                 record, no roll's state, no gate, no rollback
#
# The Job can be killed at any line and run again (SUC creates a failed Job
# again once its TTL has passed and its Plan changed): the roll's state is
# kept on the node, in
# /var/lib/kubelet-compat/roll/ (state, the picture, the backup of what
# kubeadm rewrites), under a lock (flock) every run takes, and each run goes
# on from what the state says. See README.md, "The roll's state".
#
# Environment (the Plan sets the KC_* variables, the controller the others):
#   SYSTEM_UPGRADE_NODE_NAME            this node
#   SYSTEM_UPGRADE_PLAN_LATEST_VERSION  the target version, e.g. 1.31.14
#   SYSTEM_UPGRADE_PLAN_NAME            the Plan (its Job pods are not judged by the gate)
#   SYSTEM_UPGRADE_POD_UID              this Job's pod (when the controller sets it)
#   SYSTEM_UPGRADE_CONTROLLER_NAMESPACE is not set in Jobs: KC_NAMESPACE is
#   KC_ROLE           control-plane or worker
#   KC_ALLOW_LOSS     true: go on when preflight says the patched kubelet still loses a pod
#   KC_GATE_TIMEOUT   seconds the health gate waits for the node and its pods (300)
#   KC_GATE_SETTLE    an optional floor: seconds the gate waits once the node is Ready
#                     before its first look (0: it ends as soon as its checks pass)
#   KC_GATE_SYNC_WAIT seconds after the runtime step that stand in for the kubelet's sync record
#                     (the evidence that it synced each pod) when it writes none: an
#                     earlier build (30; the kubelet step requires the record)
#   KC_PROBE_WINDOW   seconds a look at the readiness probes spans when the counters
#                     since the kubelet's start do not prove readiness (20)
#   KC_POLL           seconds between two looks (5)
#   KC_LOCK_WAIT      seconds a Job waits for another one's lock on this node (1800)
#   KC_HOST           the node's root (/host)
#   KC_PACKAGES       the directory of the image holding the packages (/packages)
#   KC_KUBECONFIG     the node's kubeconfig, as the node sees it (/etc/kubernetes/kubelet.conf)
#   KC_KUBELET_URL    the kubelet's own server, on the node (https://127.0.0.1:10250)
#   KC_KUBELET_CA     the CA of its serving certificate, as the Job sees it
#                     ($KC_HOST/var/lib/kubelet/pki/kubelet.crt, else the cluster's CA)
#   KC_KUBELET_SERVER_NAME  the name in that certificate (the node's host name)
#   KC_TOKEN_FILE     the Job's credentials for the kubelet (its service account token)
#   KC_NAMESPACE      the Plans' namespace (system-upgrade)
#   KC_KUBEADM_ARGS   more arguments for kubeadm upgrade (none)
#   KC_ETCD_BRIDGE_IMAGE  the bridge etcd's image, a 3.6 of 3.6.11 or later (e.g.
#                     registry.k8s.io/etcd:3.6.16-0), which the control-plane nodes
#                     must have or be able to pull: a control-plane node whose
#                     kubeadm step moves its etcd from 3.6 to 3.7 runs kubelet-compat
#                     etcd-bridge with it before kubeadm; without it such a step is
#                     refused (none; see README.md, "etcd 3.6 -> 3.7: the bridge")
#   KC_RUNTIME        containerd@VERSION (e.g. containerd@1.7.35): the runtime step before the
#                     kubelet's, when containerd's selection (runtime-select status) is another:
#                     kubelet-compat cgroups --repair (containers out of their cgroups, which
#                     containerd 1.7+ kills at its start), runtime-select
#                     --restart-containerd under the running kubelet, gated as
#                     the kubelet's swap is, rolled back alone (none: no runtime step; see
#                     README.md, "The runtime step")
#   KC_HOST_PATH      PATH of the commands run on the node (root's on Debian and RPM hosts)
#
# Exit status: 0 upgraded and its gate passed (by this Job or one before it
# on this node); 1 refused, failed, or the health gate failed (then the
# node is back on the previous version, configuration included); 2 usage.
set -eu

PROG=kubelet-compat-upgrade
HOST=${KC_HOST:-/host}
PACKAGES=${KC_PACKAGES:-/packages}
NODE_KUBECONFIG=${KC_KUBECONFIG:-/etc/kubernetes/kubelet.conf}
NAMESPACE=${KC_NAMESPACE:-system-upgrade}
GATE_TIMEOUT=${KC_GATE_TIMEOUT:-300}
GATE_SETTLE=${KC_GATE_SETTLE:-0}
GATE_SYNC_WAIT=${KC_GATE_SYNC_WAIT:-30}
PROBE_WINDOW=${KC_PROBE_WINDOW:-20}
LOCK_WAIT=${KC_LOCK_WAIT:-1800}
KUBELET_URL=${KC_KUBELET_URL:-https://127.0.0.1:10250}
TOKEN_FILE=${KC_TOKEN_FILE:-/var/run/secrets/kubernetes.io/serviceaccount/token}
# The image's PATH is /bin: on the node, dpkg refuses to run without
# ldconfig and start-stop-daemon on PATH (/usr/sbin, /sbin), and the
# maintainer scripts and kubeadm expect root's PATH.
HOST_PATH=${KC_HOST_PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}
POLL=${KC_POLL:-5}
ETCD_BRIDGE_IMAGE=${KC_ETCD_BRIDGE_IMAGE:-}
RUNTIME=${KC_RUNTIME:-}
# The version of RUNTIME (runtime_version), set once RUNTIME is checked.
RT_VERSION=
# Where the Job stages the packages on the node, as the node sees it.
STATE=/var/lib/kubelet-compat/upgrade
# The roll's state on the node, as the node sees it, and as the Job does.
ROLL=/var/lib/kubelet-compat/roll
R=$HOST$ROLL
# What kubeadm upgrade rewrites on a node that a rollback puts back.
KUBELET_FILES="/var/lib/kubelet/config.yaml /var/lib/kubelet/kubeadm-flags.env"
MANIFESTS=/etc/kubernetes/manifests

log() { echo "$PROG: $*"; }
die() {
	echo "$PROG: $*" >&2
	exit 1
}
now() { date -u +%Y-%m-%dT%H:%M:%SZ; }
# runtime_version prints the VERSION of containerd@VERSION, MAJOR.MINOR.PATCH
# with its leading v cut, and fails for anything else: the one place this
# script reads KC_RUNTIME (and the state's runtime). It mirrors Go's
# versions.ParseRef (pkg/versions) for the one runtime this Job selects;
# TestRuntimeVersionMirrorsParseRef feeds both the same table.
runtime_version() {
	case $1 in containerd@*) ;; *) return 1 ;; esac
	set -- "${1#containerd@}"
	set -- "${1#v}"
	echo "$1" | grep -Eqx '(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)' || return 1
	echo "$1"
}
# KC_CHROOT is for the unit test only: busybox's shell runs its own chroot
# applet whatever PATH says, so the test names its fake by path.
# SYSTEMD_IGNORE_CHROOT: systemctl (kubernetes-select --restart-kubelet,
# the packages' scripts) ignores start and stop when it believes it runs
# in a chroot; this one is the node's own root (the Job runs with the
# node's PID namespace and its / at /host), so it must talk to PID 1.
# The roll's lock (fd 9) is not handed to what runs on the node: a daemon
# a package's script starts would hold it after the Job.
on_host() { PATH=$HOST_PATH SYSTEMD_IGNORE_CHROOT=1 ${KC_CHROOT:-chroot} "$HOST" "$@" 9>&-; }
# on_host_locking is on_host with the roll's lock handed over: for flock.
on_host_locking() { PATH=$HOST_PATH SYSTEMD_IGNORE_CHROOT=1 ${KC_CHROOT:-chroot} "$HOST" "$@"; }

# lock takes the roll's lock, $ROLL/lock on the node, for as long as this
# Job runs (the lock belongs to fd 9, which the kernel closes when the Job
# dies): two Jobs on one node (a Plan whose version changed mid-roll) never
# interleave. The image's busybox has no flock: the node's (util-linux) locks
# fd 9, which it inherits.
lock() {
	mkdir -p "$R"
	exec 9>>"$R/lock"
	rc=0
	on_host_locking flock -n 9 || rc=$?
	case $rc in
	0) return 0 ;;
	1) log "another upgrade Job holds $ROLL/lock on this node: waiting for it (at most ${LOCK_WAIT}s)" ;;
	*) die "flock on the node failed (exit $rc; util-linux's flock is needed on the node): not running without the roll's lock" ;;
	esac
	on_host_locking flock -w "$LOCK_WAIT" 9 ||
		die "another upgrade Job still holds $ROLL/lock after ${LOCK_WAIT}s: not interleaving with it"
}

# st prints KEY of the roll's state (nothing when unset or no roll).
st() {
	[ -f "$R/state" ] || return 0
	awk -v k="$1" 'index($0, k "=") == 1 { print substr($0, length(k) + 2) }' "$R/state"
}

# st_set KEY=VALUE... sets keys of the roll's state, atomically: a new file,
# synced, renamed over the old one.
st_set() {
	if [ -f "$R/state" ]; then cp "$R/state" "$R/state.new"; else : >"$R/state.new"; fi
	for kv; do
		awk -v k="${kv%%=*}" 'index($0, k "=") != 1' "$R/state.new" >"$R/state.new2"
		printf '%s\n' "$kv" >>"$R/state.new2"
		mv "$R/state.new2" "$R/state.new"
	done
	sync "$R/state.new" 2>/dev/null || sync
	mv "$R/state.new" "$R/state"
}

# put FILE writes standard input to FILE atomically (a dot file beside it,
# which the kubelet's manifest directory ignores, renamed over it).
put() {
	cat >"${1%/*}/.${1##*/}.kc-new"
	sync "${1%/*}/.${1##*/}.kc-new" 2>/dev/null || sync
	mv "${1%/*}/.${1##*/}.kc-new" "$1"
}

# select_status reads kubernetes-select status once; version_of STAGE then
# prints the version it said STAGE serves.
select_status() { on_host kubernetes-select status >"$WORK/select" || die "kubernetes-select status failed"; }
version_of() { awk -v s="$1:" '$1 == s { print $2 }' "$WORK/select"; }

# package_format prints deb or rpm: which package manager installed
# kubernetes-unversioned on the node.
package_format() {
	if on_host dpkg-query -W -f '${Status}' kubernetes-unversioned 2>/dev/null | grep -q 'install ok installed'; then
		echo deb
	elif on_host rpm -q kubernetes-unversioned >/dev/null 2>&1; then
		echo rpm
	else
		die "kubernetes-unversioned is installed neither by dpkg nor by rpm: not a node of kubelet-compat's packages"
	fi
}
# unversioned_installed says whether FILE (a package's file name) is the
# kubernetes-unversioned the node has installed, same version and release:
# dpkg -i of it again replaces kubernetes-select's links current/stage1 and
# current/stage2 with the empty directories the package ships (measured on
# a kind node: the kubelet's binary gone from under the running kubelet).
unversioned_installed() { # FORMAT FILE
	case $1:$2 in
	deb:kubernetes-unversioned_*.deb)
		v=${2#kubernetes-unversioned_}
		[ "$(on_host dpkg-query -W -f '${Version}' kubernetes-unversioned 2>/dev/null)" = "${v%_*.deb}" ]
		;;
	rpm:kubernetes-unversioned-*.rpm)
		v=${2#kubernetes-unversioned-}
		[ "$(on_host rpm -q --qf '%{VERSION}-%{RELEASE}.%{ARCH}' kubernetes-unversioned 2>/dev/null)" = "${v%.rpm}" ]
		;;
	*) return 1 ;;
	esac
}
# preflight_losses reads kubelet-compat preflight's table and prints how
# many containers and pods the PATCHED kubelet still loses: its "patched: N
# restart" and "pod killers: ...; patched: N" lines, the containers whose spec
# it could not find (", N unknown") and, when the target has no patch series
# ("patched: n/a"), 1.
preflight_losses() {
	awk '
		/^unpatched: [0-9]+ of [0-9]+ containers restart/ {
			if (match($0, /; patched: [0-9]+ restart/)) n += substr($0, RSTART + 11) + 0
			else if ($0 ~ /; patched: n\/a/) n++
			if (match($0, /, [0-9]+ unknown/)) n += substr($0, RSTART + 2) + 0
		}
		/^pod killers: unpatched: / {
			if (match($0, /; patched: [0-9]+/)) n += substr($0, RSTART + 11) + 0
		}
		END { print n + 0 }'
}

# status_pods reads kubelet-compat status -o json (two-space indentation,
# one key per line, as the CLI writes it) and prints one line per pod the
# runtime runs, "pod NAMESPACE/NAME UID ID,ID,...".
status_pods() {
	awk '
		function val(line) { sub(/^[^:]*: *"?/, "", line); sub(/"?,?$/, "", line); return line }
		/^  "[A-Za-z]+": / { top = val2key($0); sub2 = "" }
		/^    "[A-Za-z]+": / { sub2 = val2key($0) }
		function val2key(line) { sub(/^ *"/, "", line); sub(/".*/, "", line); return line }
		top == "admission" && sub2 == "pods" && /^      \{/ { pod = ""; uid = ""; ids = ""; inrc = 0 }
		top == "admission" && sub2 == "pods" && /^        "pod": / { pod = val($0) }
		top == "admission" && sub2 == "pods" && /^        "uid": / { uid = val($0) }
		top == "admission" && sub2 == "pods" && /^        "runningContainers": \[\],?$/ { next }
		top == "admission" && sub2 == "pods" && /^        "runningContainers": \[/ { inrc = 1; next }
		inrc && /^        \]/ { inrc = 0 }
		inrc { ids = ids (ids == "" ? "" : ",") val(":" $0) }
		top == "admission" && sub2 == "pods" && /^      \}/ { print "pod " pod " " uid " " ids }'
}

# kubelet_kubeconfig writes the kubeconfig the Job reads the kubelet with:
# the kubelet's own server on the node (the Job's pod has the node's
# network), checked against the kubelet's serving certificate, whose key is
# readable by root on the node alone; the Job's service account token as
# credentials (a file the kubeconfig names: no secret on a command line).
kubelet_kubeconfig() {
	ca=${KC_KUBELET_CA:-}
	if [ -z "$ca" ]; then
		ca=$HOST/etc/kubernetes/pki/ca.crt
		[ ! -f "$HOST/var/lib/kubelet/pki/kubelet.crt" ] || ca=$HOST/var/lib/kubelet/pki/kubelet.crt
	fi
	name=${KC_KUBELET_SERVER_NAME:-$(cat /proc/sys/kernel/hostname 2>/dev/null || echo "$NODE")}
	cat >"$WORK/kubelet.kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: kubelet
  cluster:
    server: $KUBELET_URL
    certificate-authority: $ca
    tls-server-name: $name
users:
- name: job
  user:
    tokenFile: $TOKEN_FILE
contexts:
- name: kubelet
  context:
    cluster: kubelet
    user: job
current-context: kubelet
KUBECONFIG
}

# probe_sample FILE reads the kubelet's readiness probe results, its
# prober_probe_total counters on /metrics/probes (the kubelet's own
# server), into FILE: "POD-UID CONTAINER RESULT COUNT" per readiness probe
# series. Non-zero when the kubelet does not answer.
probe_sample() {
	kubectl --kubeconfig "$WORK/kubelet.kubeconfig" get --raw /metrics/probes >"$WORK/metrics" || return 1
	awk '
		function lab(k) { return match($0, "[{,]" k "=\"[^\"]*\"") ? substr($0, RSTART + length(k) + 3, RLENGTH - length(k) - 4) : "" }
		/^prober_probe_total\{/ && lab("probe_type") == "Readiness" { print lab("pod_uid"), lab("container"), lab("result"), $NF + 0 }' "$WORK/metrics" >"$1"
}

# readiness NOW PODS judges PODS (see judge) on the probe sample just
# taken ($WORK/probes-b) twice: on the counters since the kubelet started
# (they start at zero with its process: one success and no failure since
# then is the prober's last word; the runtime step's gate counts from
# PROBE_BASE, the sample taken right before the runtime swap, for the
# kubelet did not restart) and, once KC_PROBE_WINDOW has passed since the window's first sample
# ($WORK/probes-a, taken at $probes_a_at), on the window. A pod Ready by
# either is Ready: the first needs no window when the counters already
# prove it; the second lets a pod whose probe failed once since the start
# (an application starting) pass on a clean window.
readiness() {
	if [ -n "$PROBE_BASE" ]; then cp "$PROBE_BASE" "$WORK/probes-zero"; else : >"$WORK/probes-zero"; fi
	judge "$WORK/probes-zero" "$WORK/probes-b" "$1" "$2" "$PROBE_SINCE" >"$WORK/judged-start"
	if [ $(($(date +%s) - probes_a_at)) -ge "$PROBE_WINDOW" ]; then
		judge "$WORK/probes-a" "$WORK/probes-b" "$1" "$2" >"$WORK/judged-window"
		mv "$WORK/probes-b" "$WORK/probes-a"
		probes_a_at=$(date +%s)
	else
		: >"$WORK/judged-window"
	fi
	# Ready since the start; else the window's verdict when there is one.
	# Test ($2 in w), never read w[$2] first: awk creates an element it
	# reads, and in the first KC_PROBE_WINDOW seconds (no window yet) that
	# turned every failure into an empty line.
	awk 'phase == 1 { w[$2] = $0; next }
		$1 == "ok" { print; next }
		($2 in w) { print w[$2]; next }
		{ print }' phase=1 "$WORK/judged-window" phase=2 "$WORK/judged-start"
}

# pods_of NOW A B prints "NAMESPACE/NAME UID CONTAINERS" for every pod NOW
# (status_pods) runs, CONTAINERS its containers with a readiness probe in
# sample A or B (comma-separated; - when none).
pods_of() {
	awk '
		phase == 1 { if ($1 == "pod") { name[$3] = $2; order[++n] = $3 }; next }
		phase == 2 && !(($1 " " $2) in seen) { seen[$1 " " $2] = 1; c[$1] = c[$1] (c[$1] == "" ? "" : ",") $2; next }
		END { for (i = 1; i <= n; i++) print name[order[i]], order[i], (c[order[i]] == "" ? "-" : c[order[i]]) }' phase=1 "$1" phase=2 "$2" "$3"
}

# judge A B NOW PODS [SINCE] judges the pods of PODS ("NAMESPACE/NAME UID
# CONTAINERS") that NOW (status_pods, the runtime) runs under that UID, on
# the node's evidence: "ok LINE" for a Ready one, "no NAMESPACE/NAME (why)"
# for one that runs no container (the runtime) or one of whose CONTAINERS
# had no readiness probe success, or a failure, from sample A to sample B
# (the kubelet's prober; SINCE names A in the reasons). A pod NOW does not
# run is left to judge_gone.
judge() {
	awk -v since="${5:-since the last look}" '
		phase == 1 { a[$1 " " $2 " " $3] = $4; next }
		phase == 2 { b[$1 " " $2 " " $3] = $4; next }
		phase == 3 { if ($1 == "pod") { runs[$3] = 1; ids[$3] = $4 }; next }
		!($2 in runs) { next }
		ids[$2] == "" { print "no " $1 " (runs no container: the runtime)"; next }
		{
			why = ""
			n = split($3 == "-" ? "" : $3, c, ",")
			for (i = 1; i <= n && why == ""; i++) {
				k = $2 " " c[i]
				if (!((k " successful") in b) && !((k " failed") in b) && !((k " unknown") in b)) {
					why = "container " c[i] ": no readiness probe result from the kubelet"
					break
				}
				s = b[k " successful"] - a[k " successful"]
				f = b[k " failed"] - a[k " failed"]
				u = b[k " unknown"] - a[k " unknown"]
				if (s <= 0 || f > 0 || u > 0) why = "container " c[i] ": readiness probe " s " successful, " f " failed, " u " unknown " since ": the kubelet'"'"'s prober"
			}
			if (why == "") print "ok " $0
			else print "no " $1 " (" why ")"
		}' phase=1 "$1" phase=2 "$2" phase=3 "$3" phase=4 "$4"
}

# probe_evidence BASE SAMPLE NOW PODS prints, for every readiness-probed
# container of PODS ("NAMESPACE/NAME UID CONTAINERS") that NOW (status_pods)
# runs, its probe results from BASE to SAMPLE (probe_sample; BASE empty:
# since the kubelet started): what the gate's readiness rested on, for the
# Job's log.
probe_evidence() {
	awk 'phase == 0 { n[$1 " " $2 " " $3] = -$4; next }
		phase == 1 { n[$1 " " $2 " " $3] += $4; next }
		phase == 2 { if ($1 == "pod") runs[$3] = 1; next }
		$3 != "-" && !($2 in runs) { print $1 " (" $2 "): not run by the runtime under that UID" }
		$3 != "-" && ($2 in runs) {
			k = split($3, c, ",")
			for (i = 1; i <= k; i++) printf "%s %s: readiness probe %d successful, %d failed, %d unknown\n", $1, c[i], n[$2 " " c[i] " successful"], n[$2 " " c[i] " failed"], n[$2 " " c[i] " unknown"]
		}' phase=0 "$1" phase=1 "$2" phase=2 "$3" phase=3 "$4"
}

# kubelet_version prints the version of the kubelet the node runs, from
# kubelet-compat status -o json (the kubelet's process on the node).
kubelet_version() { awk -F'"' '$2 == "kubeletVersion" { print $4; exit }' "$1"; }

# runtime_end POD UID prints why the runtime does not show every container
# of the pod exited with code 0 (crictl on the node); nothing when it does.
runtime_end() {
	if ! on_host crictl ps -a -q --label "io.kubernetes.pod.uid=$2" >"$WORK/containers" 2>"$WORK/crictl.err" </dev/null; then
		echo "pod $1: crictl on the node failed ($(head -n 1 "$WORK/crictl.err")): how its containers ended is not known"
		return 0
	fi
	if [ ! -s "$WORK/containers" ]; then
		echo "pod $1: gone from the runtime without a trace (no container of it left): not assumed complete"
		return 0
	fi
	while read -r id; do
		code=$(on_host crictl inspect "$id" </dev/null | awk '/"exitCode":/ { gsub(/[^0-9-]/, "", $2); print $2; exit }')
		[ "$code" = 0 ] || echo "pod $1: container $id ended with exit code ${code:-unknown} (the runtime)"
	done <"$WORK/containers"
}

# kubelet_rejections prints the new kubelet's admission rejections since it
# started, from its own /metrics (kubelet_admission_rejections_total, a
# kubelet's since 1.31 or so; 0 when it exports the counter without a
# series yet): "N (REASON n, ...)"; nothing when the kubelet has no such
# counter; "?" when it does not answer.
kubelet_rejections() {
	kubectl --kubeconfig "$WORK/kubelet.kubeconfig" get --raw /metrics >"$WORK/kubelet-metrics" </dev/null 2>/dev/null || {
		echo "?"
		return 0
	}
	# A counter with no series yet is exported by its HELP line alone: 0.
	awk '/^# (HELP|TYPE) kubelet_admission_rejections_total / { found = 1 }
		/^kubelet_admission_rejections_total\{/ {
			found = 1; n += $NF
			if ($NF + 0 > 0 && match($0, /reason="[^"]*"/)) r = r (r == "" ? "" : ", ") substr($0, RSTART + 8, RLENGTH - 9) " " ($NF + 0)
		}
		END { if (found) print (n + 0) (r == "" ? "" : " (" r ")") }' "$WORK/kubelet-metrics"
}

# judge_gone prints why each pod of the picture that the runtime no longer
# runs under its UID fails the gate, in this order:
#  1. unless the new kubelet's own count of admission rejections says none
#     since it started, the kubelet's events about it since the swap: a
#     Warning (a rejection's NodeAffinity, OutOf<resource>,
#     UnexpectedAdmissionError, Evicted, Preempting, ...; not Unhealthy,
#     BackOff, FailedPreStopHook, FailedKillPod, which a pod being deleted
#     also gets, nor FailedMount, which a new kubelet reports for a running
#     pod's ConfigMap volume before its cache has it: the kubelet rejects a
#     pod at admission, before its volumes, with an event of its own)
#     fails it (API objects: they can only fail the gate, and
#     with the count at 0 they cannot: a FailedMount of a pod torn down, or
#     an event a tenant wrote, stops no roll);
#  2. the runtime (crictl on the node): every container exited with code 0,
#     it completed (a Job's pod): passes;
#  3. the new kubelet's own count of admission rejections: any since the
#     swap (or no answer) fails every other gone pod;
#  4. deleted through the API (gone from it, another UID under its name, or
#     a deletion timestamp: a controller's rolling update, a user): its
#     containers' end is the deletion's, not judged;
#  5. else a pod that was Ready at the picture fails (it ended non-zero, or
#     left no trace); one that was not is not judged.
# The Job pods of this roll (SYSTEM_UPGRADE_POD_UID) and of its Plan (SUC's
# Job names) are not judged.
judge_gone() {
	# (a pod that runs under another UID is judge_node's "recreated")
	awk 'phase == 1 { if ($1 == "pod") { runs[$3] = 1; names[$2] = 1 }; next }
		$1 == "pod" && !($3 in runs) && !($2 in names) { print $2, $3 }' phase=1 "$WORK/after" phase=2 "$R/before" >"$WORK/gone"
	[ -s "$WORK/gone" ] || return 0
	jobpods=" $(st jobpods) "
	since=$(st "$SWAP_KEY")
	rejections=$(kubelet_rejections)
	# The runtime step's gate: the kubelet did not restart, its count is
	# since the picture's.
	case $REJECT_BASE:$rejections in
	[0-9]*:[0-9]*)
		n=$((${rejections%% *} - REJECT_BASE))
		[ "$n" = 0 ] && rejections=0 || rejections="$n (of ${rejections} since the kubelet started)"
		;;
	esac
	while read -r pod uid; do
		case $jobpods in *" $uid "*)
			log "gate: $pod ($uid) is a Job pod of this roll: not judged" >&2
			continue
			;;
		esac
		# SUC names its Jobs apply-<plan>-on-<node>-with-<hash>.
		case ${SYSTEM_UPGRADE_PLAN_NAME:+$pod} in "$NAMESPACE/apply-${SYSTEM_UPGRADE_PLAN_NAME:-}-on-"*)
			log "gate: $pod ($uid) is a Job pod of Plan $SYSTEM_UPGRADE_PLAN_NAME: not judged" >&2
			continue
			;;
		esac
		# The kubelet's own count of rejections since it started, when it
		# has one, rules them out: a gone pod's warnings are then its
		# deletion's (FailedMount while its volumes are torn down), or
		# events anyone allowed to create them in its namespace wrote.
		case $rejections in
		0 | "0 "*) : >"$WORK/events" ;;
		*)
			if ! kubectl get events -n "${pod%%/*}" --field-selector "involvedObject.uid=$uid,source=kubelet" \
				-o jsonpath='{range .items[*]}{.type} {.reason} {.lastTimestamp}{"\n"}{end}' >"$WORK/events" </dev/null; then
				echo "pod $pod: gone from the runtime, and the API server did not list the kubelet's events about it: a rejection is not ruled out"
				continue
			fi
			;;
		esac
		awk -v since="$since" -v pod="$pod" '$1 == "Warning" && $2 !~ /^(Unhealthy|BackOff|FailedPreStopHook|FailedKillPod|FailedMount)$/ && ($3 == "" || $3 >= since) {
			print "pod " pod ": the kubelet reported " $2 " (" $1 (($3 == "") ? "" : ", " $3) "): rejected"; exit }' "$WORK/events" >"$WORK/rejected"
		if [ -s "$WORK/rejected" ]; then
			cat "$WORK/rejected"
			continue
		fi
		runtime_end "$pod" "$uid" >"$WORK/end"
		if [ ! -s "$WORK/end" ]; then
			log "gate: $pod ($uid) completed: every container exited with code 0 (the runtime)" >&2
			continue
		fi
		case $rejections in
		"" | 0 | "0 "*) ;;
		"?")
			echo "$(head -n 1 "$WORK/end"); the kubelet's $KUBELET_URL/metrics did not answer: a rejection is not ruled out"
			continue
			;;
		*)
			echo "$(head -n 1 "$WORK/end"); the kubelet rejected $rejections pod(s) since the swap (kubelet_admission_rejections_total)"
			continue
			;;
		esac
		if ! got=$(kubectl get pod -n "${pod%%/*}" "${pod#*/}" --ignore-not-found -o jsonpath='{.metadata.uid} {.metadata.deletionTimestamp}' </dev/null); then
			echo "$(head -n 1 "$WORK/end"); the API server did not say whether it was deleted"
			continue
		fi
		# shellcheck disable=SC2086 # the UID and the deletion time, two words
		set -- $got
		how=
		if [ -z "${1:-}" ]; then
			how="gone from it"
		elif [ "$1" != "$uid" ]; then
			how="its name is pod $1's now"
		elif [ -n "${2:-}" ]; then
			how="deleted at $2"
		fi
		if [ -n "$how" ]; then
			log "gate: $pod ($uid) was deleted through the API ($how): its containers' end is the deletion's, not judged" >&2
			continue
		fi
		if awk -v u="$uid" '$2 == u { found = 1 } END { exit !found }' "$R/ready-before"; then
			cat "$WORK/end"
		else
			log "gate: $pod ($uid), not Ready at the picture, ended ($(head -n 1 "$WORK/end")): not judged" >&2
		fi
	done <"$WORK/gone"
}

# node_ready says whether the API server has this node Ready from the
# gate's kubelet (GATE_KUBELET: the target's, or the running one's under the
# runtime step): the Ready condition alone is still the old kubelet's
# right after the swap. The API's word can only hold the gate back: the
# pass rests on the node's own evidence (gate).
node_ready() {
	set -- $(kubectl get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status} {.status.nodeInfo.kubeletVersion}')
	[ "${1:-}" = True ] || return 1
	case ${2:-} in "v$GATE_KUBELET" | "v$GATE_KUBELET+"*) return 0 ;; esac
	return 1
}

# judge_node is the node's verdict on the kubelet's own account
# (kubelet-compat gate, against the picture taken right before the swap,
# $ROLL/picture.json): every pod of the picture synced by the kubelet since
# GATE_SINCE (the kubelet step: since it started; the runtime step: since
# the runtime came back), on the kubelet's sync record (a kubelet without
# one: KC_GATE_SYNC_WAIT seconds after that, as the fixed settle did); no
# container of them restarted, killed or gone (a sidecar too, while its pod
# runs on), no pod recreated. Pods gone whole are judge_gone's. It waits at
# most until the gate's deadline and logs the gate's evidence per pod;
# non-zero when the gate did not pass.
judge_node() {
	left=$((deadline - $(date +%s)))
	[ "$left" -gt 0 ] || left=1
	rc=0
	on_host kubelet-compat gate --picture "$ROLL/picture.json" --step "$GATE_STEP" ${GATE_SINCE:+--since "$GATE_SINCE"} --node-name "$NODE" \
		--timeout "${left}s" --poll "${POLL}s" --fixed-wait "${GATE_SYNC_WAIT}s" ${GATE_REQUIRE_RECORD:+--require-record} >"$WORK/gate" 2>"$WORK/gate.err" </dev/null || rc=$?
	case $rc in
	0 | 4)
		log "gate: every pod of the picture synced by the kubelet, no container of them restarted or lost (kubelet-compat gate):"
		sed 's/^/  /' "$WORK/gate"
		return 0
		;;
	2) log "gate: pods of $NODE restarted, recreated or lost across the swap (kubelet-compat gate):" ;;
	3) log "gate: the kubelet has not synced every pod of the picture since the swap within ${GATE_TIMEOUT}s (kubelet-compat gate):" ;;
	*) log "gate: kubelet-compat gate failed (exit $rc): $(sed -n '$s/^kubelet-compat: //p' "$WORK/gate.err")" ;;
	esac
	sed 's/^/  /' "$WORK/gate"
	return 1
}

# gate is the health gate, against the picture saved before the swap
# ($ROLL/picture.json, $ROLL/before, $ROLL/ready-before): the node Ready
# from the target's kubelet (API), then, within GATE_TIMEOUT seconds of the
# swap, on the node's evidence: the kubelet's own account of every pod of
# the picture (judge_node: synced since the swap, no container restarted,
# killed or gone, no pod recreated), the kubelet running is the target's
# (kubelet-compat status, the process), every pod Ready at the picture is
# Ready again (the runtime runs its containers; the kubelet's readiness
# probes pass), and no pod of the picture was rejected or is gone
# unexplained (judge_gone). It ends at the first look where all of it holds
# (GATE_SETTLE is an optional floor before the first look). Pods created
# after the picture are logged, not judged (judge_node fails one the
# kubelet killed). It prints why it failed and returns non-zero. The
# runtime step's gate is the same against its own picture, with the
# running kubelet (gate_runtime).
gate() {
	started=$(date +%s)
	deadline=$((started + GATE_TIMEOUT))
	while ! node_ready; do
		if [ "$(date +%s)" -ge "$deadline" ]; then
			log "gate: node $NODE not Ready with kubelet v$GATE_KUBELET after ${GATE_TIMEOUT}s"
			return 1
		fi
		sleep "$POLL"
	done
	ready_at=$(date +%s)
	# The window's first sample; the counters since the kubelet's start
	# need none.
	probe_sample "$WORK/probes-a" || : >"$WORK/probes-a"
	probes_a_at=$ready_at
	log "gate: node $NODE Ready with kubelet v$GATE_KUBELET ($((ready_at - started))s)"
	if [ "$GATE_SETTLE" -gt 0 ]; then
		log "gate: waiting the floor KC_GATE_SETTLE ${GATE_SETTLE}s before the first look"
		sleep "$GATE_SETTLE"
	fi
	judge_node || return 1
	while :; do
		: >"$WORK/unready"
		: >"$WORK/after"
		if ! on_host kubelet-compat status -o json --kubeconfig "$NODE_KUBECONFIG" >"$WORK/status-after.json"; then
			echo "(kubelet-compat status failed: what the runtime runs is not known)" >"$WORK/unready"
		else
			v=$(kubelet_version "$WORK/status-after.json")
			case $v in
			"v$GATE_KUBELET" | "v$GATE_KUBELET+"* | "v$GATE_KUBELET-"*)
				status_pods <"$WORK/status-after.json" >"$WORK/after"
				if probe_sample "$WORK/probes-b"; then
					cp "$WORK/probes-b" "$WORK/probes-last"
					readiness "$WORK/after" "$R/ready-before" | sed -n 's/^no //p' >>"$WORK/unready"
				else
					echo "(the kubelet's $KUBELET_URL/metrics/probes did not answer: readiness not established)" >>"$WORK/unready"
				fi
				;;
			*) echo "(the node runs kubelet ${v:-of no version} (kubelet-compat status), not v$GATE_KUBELET)" >"$WORK/unready" ;;
			esac
		fi
		[ -s "$WORK/unready" ] || break
		if [ "$(date +%s)" -ge "$deadline" ]; then
			log "gate: pods Ready before the swap not Ready again after ${GATE_TIMEOUT}s (the runtime, the kubelet's readiness probes):"
			sed 's/^/  /' "$WORK/unready"
			return 1
		fi
		sleep "$POLL"
	done
	judge_gone >"$WORK/changed"
	if [ -s "$WORK/changed" ]; then
		log "gate: pods of $NODE rejected or gone across the swap (the runtime, the kubelet):"
		sed 's/^/  /' "$WORK/changed"
		return 1
	fi
	awk 'phase == 1 { if ($1 == "pod") had[$3] = 1; next } $1 == "pod" && !($3 in had) { print $2 " (" $3 ")" }' \
		phase=1 "$R/before" phase=2 "$WORK/after" >"$WORK/new"
	if [ -s "$WORK/new" ]; then
		log "gate: pods created after the picture, logged and not judged:"
		sed 's/^/  /' "$WORK/new"
	fi
	if [ -s "$WORK/probes-last" ]; then
		log "gate: the readiness probes of the pods Ready at the picture, $PROBE_SINCE (its prober):"
		probe_evidence "$WORK/probes-zero" "$WORK/probes-last" "$WORK/after" "$R/ready-before" | sed 's/^/  /'
	fi
	log "gate: passed: node $NODE runs kubelet v$GATE_KUBELET$GATE_ON; $(wc -l <"$R/ready-before" | tr -d ' ') pod(s) Ready at the picture are Ready again under their UIDs; no container restarted, no pod recreated or rejected (gate: $(($(date +%s) - started))s)"
}

wait_plan() {
	plan=$1
	log "waiting for Plan $NAMESPACE/$plan to complete version $TARGET"
	while :; do
		got=$(kubectl get plans.upgrade.cattle.io "$plan" -n "$NAMESPACE" \
			-o jsonpath='{.status.latestVersion} {.status.conditions[?(@.type=="Complete")].status}' 2>/dev/null || true)
		if [ "$got" = "$TARGET True" ]; then
			log "Plan $NAMESPACE/$plan is complete for $TARGET"
			return 0
		fi
		sleep "$POLL"
	done
}

# settle waits, before the record, until every pod the runtime runs is
# Ready by the node's evidence (readiness), at most GATE_TIMEOUT seconds
# (kubeadm upgrade apply restarts the API server: controllers that lose
# their lease exit and back off), and writes those Ready to $WORK/ready; the
# gate judges the readiness of those alone.
settle() {
	deadline=$(($(date +%s) + GATE_TIMEOUT))
	probe_sample "$WORK/probes-a" || fail_roll "the kubelet's $KUBELET_URL/metrics/probes did not answer"
	probes_a_at=$(date +%s)
	while :; do
		on_host kubelet-compat status -o json --kubeconfig "$NODE_KUBECONFIG" >"$WORK/status-now.json" ||
			fail_roll "kubelet-compat status failed"
		status_pods <"$WORK/status-now.json" >"$WORK/now"
		probe_sample "$WORK/probes-b" || fail_roll "the kubelet's $KUBELET_URL/metrics/probes did not answer"
		pods_of "$WORK/now" "$WORK/probes-a" "$WORK/probes-b" >"$WORK/pods"
		readiness "$WORK/now" "$WORK/pods" >"$WORK/judged"
		sed -n 's/^no //p' "$WORK/judged" >"$WORK/unready"
		[ -s "$WORK/unready" ] || break
		if [ "$(date +%s)" -ge "$deadline" ]; then
			log "pods of $NODE not Ready after ${GATE_TIMEOUT}s (the runtime, the kubelet's readiness probes); recording as they are, the gate will not judge their readiness:"
			sed 's/^/  /' "$WORK/unready"
			break
		fi
		sleep "$POLL"
	done
	sed -n 's/^ok //p' "$WORK/judged" >"$WORK/ready"
}

# backup saves what kubeadm upgrade rewrites on this node, before it runs:
# the kubelet's configuration (KUBELET_FILES) and the static pods'
# manifests, into $ROLL/backup (written whole, then renamed).
backup() {
	rm -rf "$R/backup.new"
	mkdir -p "$R/backup.new/kubelet"
	for f in $KUBELET_FILES; do
		[ ! -f "$HOST$f" ] || cp -p "$HOST$f" "$R/backup.new/kubelet/"
	done
	if [ -d "$HOST$MANIFESTS" ]; then
		mkdir "$R/backup.new/manifests"
		for m in "$HOST$MANIFESTS"/*.yaml; do
			[ ! -f "$m" ] || cp -p "$m" "$R/backup.new/manifests/"
		done
	fi
	sync
	rm -rf "$R/backup"
	mv "$R/backup.new" "$R/backup"
}

# put_back SAVED FILE NAME makes FILE what SAVED is (atomically, a dot file
# renamed over it), or removes FILE when nothing was saved (the roll wrote
# it), and says so.
put_back() {
	if [ -f "$1" ]; then
		cmp -s "$1" "$2" 2>/dev/null && return 0
		mkdir -p "${2%/*}"
		cp -p "$1" "${2%/*}/.${2##*/}.kc-new"
		mv "${2%/*}/.${2##*/}.kc-new" "$2"
		log "rollback: $3 put back as it was before the roll"
	elif [ -e "$2" ]; then
		rm -f "$2"
		log "rollback: $3 removed (the roll wrote it; there was none before)"
	fi
}

# etcd_minor prints MAJOR.MINOR of the etcd image a manifest names.
etcd_minor() { sed -n 's/.*image:.*etcd:v\{0,1\}\([0-9]*\.[0-9]*\).*/\1/p' "$1" | head -n 1; }

# restore puts back what kubeadm rewrote (backup): the kubelet's
# configuration and the static pods' manifests, except an etcd manifest
# whose etcd minor version changed (a manifest does not downgrade etcd's
# data: kubeadm's own rollback restores its data backup for that).
restore() {
	b=$R/backup
	if [ ! -d "$b" ]; then
		log "rollback: no backup in $ROLL/backup: the kubelet's configuration and the manifests are left as they are"
		return 0
	fi
	for f in $KUBELET_FILES; do
		put_back "$b/kubelet/${f##*/}" "$HOST$f" "$f"
	done
	[ -d "$b/manifests" ] || return 0
	rm -f "$WORK"/restored-*
	for m in "$HOST$MANIFESTS"/*.yaml "$b/manifests"/*.yaml; do
		[ -f "$m" ] || continue
		n=${m##*/}
		[ ! -e "$WORK/restored-$n" ] || continue
		: >"$WORK/restored-$n"
		if [ "$n" = etcd.yaml ] && [ -f "$b/manifests/$n" ] && [ -f "$HOST$MANIFESTS/$n" ]; then
			was=$(etcd_minor "$b/manifests/$n")
			is=$(etcd_minor "$HOST$MANIFESTS/$n")
			if [ "$was" != "$is" ]; then
				log "rollback: $MANIFESTS/etcd.yaml left at kubeadm's etcd $is (was $was): a manifest does not downgrade etcd's data"
				continue
			fi
		fi
		put_back "$b/manifests/$n" "$HOST$MANIFESTS/$n" "$MANIFESTS/$n"
	done
}

# rollback WHY puts the node back as it was before the roll: the kubelet's
# configuration and the manifests kubeadm rewrote (restore), stage2 with a
# kubelet restart (so that the previous kubelet starts on its own
# configuration), then stage1. Every step is idempotent: a Job killed in the middle
# leaves the state "rolling-back", and the next one does it again. The
# verdict "rolled-back" is written once all of it is done.
rollback() {
	st_set phase=rolling-back "reason=$1"
	log "rolling back to $PREVIOUS ($1)"
	select_status
	if [ "$(version_of stage2)" != "$PREVIOUS" ]; then
		# record on the newer kubelet: the older patched kubelet then keeps
		# what it created and the UIDs its static pods run under.
		on_host kubelet-compat record --kubeconfig "$NODE_KUBECONFIG" ||
			log "warning: kubelet-compat record before the rollback failed: the way back restarts what upstream restarts"
	fi
	restore
	# stage2 first: kubernetes-select refuses a stage1 older than stage2.
	if [ "$(version_of stage2)" != "$PREVIOUS" ]; then
		log "rollback: kubernetes-select --restart-kubelet stage2 $PREVIOUS"
		on_host kubernetes-select --restart-kubelet stage2 "$PREVIOUS" ||
			die "the rollback failed: kubernetes-select --restart-kubelet stage2 $PREVIOUS failed (the next Job tries again)"
	fi
	if [ "$(version_of stage1)" != "$PREV_STAGE1" ]; then
		log "rollback: kubernetes-select stage1 $PREV_STAGE1"
		on_host kubernetes-select stage1 "$PREV_STAGE1" || die "the rollback failed: kubernetes-select stage1 $PREV_STAGE1 failed (the next Job tries again)"
	fi
	# The marker of a failed gate, as before the roll's state (the e2e and
	# operators look for it): written once the rollback is done, before
	# its verdict, so that a Job killed in between leaves no rolled-back
	# node without it (the next Job finishes the rollback again).
	if [ "$1" = "the health gate failed" ]; then
		mkdir -p "$HOST$STATE"
		now >"$HOST$STATE/$TARGET.gate-failed"
	fi
	st_set phase=rolled-back "rolled_back_at=$(now)"
	if [ -n "$(st runtime_passed_at)" ]; then
		rtv=$(st runtime)
		rtv=$(runtime_version "$rtv") || true
		log "rollback: containerd $rtv of this roll's runtime step (its gate passed) stays selected, under kubelet $PREVIOUS (each step is gated and rolled back alone); runtime-select --restart-containerd containerd $(st runtime_previous) on the node puts it back"
	fi
	if [ "$(st kubeadm)" = apply ]; then
		log "rollback: not rolled back: what kubeadm upgrade apply changed in the cluster (kubeadm-config, kube-proxy, CoreDNS, RBAC) and the certificates it renewed; kubeadm's own backups stay in /etc/kubernetes/tmp"
	fi
	log "rolled back: stage2 and stage1 serve $PREVIOUS and $PREV_STAGE1, the kubelet's configuration and the static pods' manifests are as before the roll; the target's packages stay installed side by side"
}

# fail_roll WHY: a step failed after the backup; the node is put back and
# the Job fails. The naive roll has no backup and no way back: the Job
# fails where the step failed.
fail_roll() {
	[ -z "$NAIVE" ] || die "$1: the naive roll has no rollback; node $NODE is left as it is and the Job fails"
	log "$1"
	# In the runtime step, or after it before the kubelet's began: the
	# runtime is what the roll changed.
	case $(st phase) in runtime-swapping | runtime-passed)
		runtime_rollback "$1"
		die "$1: node $NODE is back on containerd $RT_PREV, its kubelet untouched ($PREVIOUS); the Job fails, which stops the Plan"
		;;
	esac
	rollback "$1"
	die "$1: node $NODE rolled back to $PREVIOUS; the Job fails, which stops the Plan"
}

# etcd_bridge: on a control-plane node whose manifest runs a 3.6 etcd (only
# a 3.6 can need the bridge), before kubeadm moves it: the etcd image the
# target's kubeadm wants, and kubelet-compat etcd-bridge, which decides and
# bridges when 3.6 -> 3.7 (see README.md, "etcd 3.6 -> 3.7: the bridge").
# The image comes from `kubeadm config images list` of stage1's kubeadm,
# which is the target's by now and the very binary that runs the upgrade: it
# names the etcd from the same table kubeadm upgrade writes into the
# manifest. The manifest kubeadm writes would be exact too, but it is there
# only once kubeadm has started 3.7, which is what panics: too late. The
# list reads no ClusterConfiguration: a cluster that pins etcd's image tag
# (etcd.local.imageTag) gets a bridge it may not need, which is harmless.
# The roll's state notes etcd_bridge=begun, then done once etcd-bridge
# ended 0 (bridged, or no bridge needed): a re-run after a kill runs it again
# while begun (it goes on from its own state on the node), not once done.
etcd_bridge() {
	[ -z "$NAIVE" ] && [ "$ROLE" = control-plane ] && [ -f "$HOST$MANIFESTS/etcd.yaml" ] || return 0
	case $(etcd_minor "$HOST$MANIFESTS/etcd.yaml") in 3.6) ;; *) return 0 ;; esac
	case $(st etcd_bridge) in
	done)
		log "etcd: bridged by a Job before this one (the roll's state): not again"
		return 0
		;;
	begun) log "a Job before this one died in kubelet-compat etcd-bridge: it goes on from its own state" ;;
	esac
	running=$(sed -n 's/^[[:space:]]*image:[[:space:]]*\([^[:space:]]*etcd:[^[:space:]]*\).*/\1/p' "$HOST$MANIFESTS/etcd.yaml" | head -n 1)
	want=$(on_host kubeadm config images list --kubernetes-version "v$TARGET" 2>"$WORK/kubeadm-images.err" |
		awk -F/ '$NF ~ /^etcd:/ { print; exit }') || true
	[ -n "$want" ] || fail_roll "kubeadm config images list --kubernetes-version v$TARGET named no etcd image ($(sed -n '$p' "$WORK/kubeadm-images.err"))"
	case $want in
	*:3.6.* | *:v3.6.*)
		log "etcd: kubeadm v$TARGET wants $want, the node runs $running: within 3.6, no bridge"
		return 0
		;;
	esac
	log "etcd: kubeadm v$TARGET wants $want, the node runs $running: kubelet-compat etcd-bridge first"
	set -- --target-etcd-image "$want"
	[ -z "$ETCD_BRIDGE_IMAGE" ] || set -- "$@" --bridge-image "$ETCD_BRIDGE_IMAGE"
	st_set etcd_bridge=begun
	if ! on_host kubelet-compat etcd-bridge "$@"; then
		why="etcd $running -> $want"
		[ -n "$ETCD_BRIDGE_IMAGE" ] || why="$why; KC_ETCD_BRIDGE_IMAGE is not set"
		fail_roll "kubelet-compat etcd-bridge failed ($why)"
	fi
	st_set etcd_bridge=done
}

# install_and_kubeadm: the target's packages side by side, stage1, kubeadm.
# Each step is idempotent: a re-run after a Job killed in the middle does
# them again.
install_and_kubeadm() {
	format=$(package_format)
	mkdir -p "$HOST$STATE/$TARGET"
	set --
	for p in "$PACKAGES"/*."$format"; do
		[ -e "$p" ] || continue
		if unversioned_installed "$format" "${p##*/}"; then
			log "${p##*/}: the node has this kubernetes-unversioned already: not reinstalled"
			continue
		fi
		cp "$p" "$HOST$STATE/$TARGET/"
		set -- "$@" "$STATE/$TARGET/${p##*/}"
	done
	[ $# -gt 0 ] || fail_roll "the image has no .$format packages in $PACKAGES"
	if [ "$format" = deb ]; then
		on_host dpkg -i "$@" || fail_roll "dpkg -i failed"
	else
		on_host rpm -U --replacepkgs "$@" || fail_roll "rpm -U failed"
	fi
	# A newer kubernetes-unversioned puts the directories it ships back in
	# place of kubernetes-select's links: select the running kubelet again
	# (the links only, nothing restarts).
	select_status
	if [ "$(version_of stage2)" != "$PREVIOUS" ]; then
		log "the packages dropped stage2's selection: kubernetes-select stage2 $PREVIOUS"
		on_host kubernetes-select stage2 "$PREVIOUS" || fail_roll "kubernetes-select stage2 $PREVIOUS failed"
	fi

	on_host kubernetes-select stage1 "$TARGET" || fail_roll "kubernetes-select stage1 $TARGET failed"
	etcd_bridge
	# The first control-plane node of the version applies; the API server
	# must say which one this is (a failed read is not "not yet applied").
	cluster_config=
	if [ "$ROLE" = control-plane ]; then
		cluster_config=$(kubectl get configmap kubeadm-config -n kube-system -o jsonpath='{.data.ClusterConfiguration}' </dev/null 2>"$WORK/kubeadm-config.err") ||
			fail_roll "the API server did not return kubeadm-config ($(head -n 1 "$WORK/kubeadm-config.err")): whether this node is the first control-plane node of $TARGET is not known"
	fi
	# shellcheck disable=SC2086 # KC_KUBEADM_ARGS is a list of words
	if [ "$ROLE" = control-plane ] && ! printf '%s\n' "$cluster_config" | grep -q "kubernetesVersion: v$TARGET\$"; then
		log "first control-plane node of $TARGET: kubeadm upgrade apply"
		[ -n "$NAIVE" ] || st_set kubeadm=apply
		on_host kubeadm upgrade apply --yes ${KC_KUBEADM_ARGS:-} "v$TARGET" || fail_roll "kubeadm upgrade apply v$TARGET failed"
	else
		on_host kubeadm upgrade node ${KC_KUBEADM_ARGS:-} || fail_roll "kubeadm upgrade node failed"
	fi
}

# record_and_swap: the record, right before the swap, once the node's pods
# are Ready (settle); the picture the gate judges against, saved on the
# node; then the swap. This pod's own container runs on the kubelet it
# replaces: the patched kubelet keeps it (record listed it).
record_and_swap() {
	picture
	st_set phase=swapping "swapped_at=$(now)"
	swap
}

# picture: the record once the node's pods are Ready (settle), and the
# picture a gate judges against, saved on the node ($ROLL/picture.json,
# kubelet-compat picture: what the runtime runs, by pod UID and container
# ID, and the kubelet's process; $ROLL/before, $ROLL/ready-before): the
# kubelet's swap's and the runtime step's.
picture() {
	# kubelet-compat status lists the pods the runtime runs only while a
	# file is in force: a first record gives settle the pods to judge (on
	# kind, settle judged none without it, and so the gate judged no
	# pod's readiness); the record that counts is the one after it.
	on_host kubelet-compat record --kubeconfig "$NODE_KUBECONFIG" || fail_roll "kubelet-compat record failed"
	settle
	on_host kubelet-compat record --kubeconfig "$NODE_KUBECONFIG" || fail_roll "kubelet-compat record failed"
	on_host kubelet-compat picture --node-name "$NODE" -o "$ROLL/picture.json" </dev/null || fail_roll "kubelet-compat picture failed"
	on_host kubelet-compat status -o json --kubeconfig "$NODE_KUBECONFIG" >"$WORK/status-before.json" ||
		fail_roll "kubelet-compat status failed"
	status_pods <"$WORK/status-before.json" | put "$R/before"
	awk 'phase == 1 { if ($1 == "pod") p[$3] = 1; next } ($2 in p)' phase=1 "$R/before" phase=2 "$WORK/ready" | put "$R/ready-before"
	log "the picture: $(grep -c '^pod ' "$R/before" || true) pod(s) the runtime runs, $(wc -l <"$R/ready-before" | tr -d ' ') of them Ready (the runtime, the kubelet's readiness probes), $(awk '$3 != "-" { n += split($3, c, ",") } END { print n + 0 }' "$R/ready-before") container(s) of those with a readiness probe: saved in $ROLL"
	awk '{ print "  " $1 " (" $2 "): " ($3 == "-" ? "no readiness probe" : "readiness-probed " $3) }' "$R/ready-before"
}

# swap: the target's kubelet in place of the running one (kubernetes-select
# switches stage2's links, then restarts the kubelet).
swap() {
	on_host kubernetes-select --restart-kubelet stage2 "$TARGET" || fail_roll "kubernetes-select --restart-kubelet stage2 $TARGET failed"
}

# gate_kubelet and gate_runtime say what the gate judges: the kubelet's
# swap (the target's kubelet, its counters since it started: it restarted)
# or the runtime step's (the running kubelet on the new containerd, its
# counters since the picture before the runtime swap: it did not restart,
# and its next syncs on the new containerd are where it would restart a
# container).
gate_kubelet() {
	# The target is this image's patched kubelet, which writes the sync
	# record: no fixed wait in its place.
	GATE_KUBELET=$TARGET GATE_ON= SWAP_KEY=swapped_at GATE_STEP=kubelet GATE_SINCE= GATE_REQUIRE_RECORD=1
	PROBE_BASE= PROBE_SINCE="since the kubelet started" REJECT_BASE=
}
gate_runtime() {
	# The running kubelet may be an earlier build without the record.
	GATE_KUBELET=$PREVIOUS GATE_ON=" on containerd $RT_VERSION" SWAP_KEY=runtime_swapped_at GATE_STEP=runtime GATE_REQUIRE_RECORD=
	GATE_SINCE=$(st runtime_back_at)
	PROBE_BASE=$R/probes-base PROBE_SINCE="since the runtime swap" REJECT_BASE=$(st runtime_rejections)
}

# runtime_selected prints containerd's selection, as runtime-select status
# says it: a version, system (the distribution's), or unknown (LINK).
runtime_selected() {
	on_host runtime-select status >"$WORK/runtime-status" 2>"$WORK/runtime-status.err" </dev/null || return 1
	awk '$1 == "containerd:" { sub(/^containerd: */, ""); print; exit }' "$WORK/runtime-status"
}

# runtime_runs prints the version of the containerd that answers the CRI
# (crictl version's RuntimeVersion, without its v): the process, not the
# selection (runtime-select switches the link before it restarts
# containerd). Non-zero, crictl's status, when it does not answer.
runtime_runs() {
	on_host crictl version >"$WORK/crictl-version" 2>"$WORK/crictl.err" </dev/null || return $?
	awk '$1 == "RuntimeVersion:" { v = $2; sub(/^v/, "", v); print v; exit }' "$WORK/crictl-version"
}

# wait_runtime VERSION waits, at most GATE_TIMEOUT seconds, until the
# containerd that answers the CRI is VERSION (system: any, the
# distribution's version is its own); else WHY says what answered.
wait_runtime() {
	started=$(date +%s)
	while :; do
		got=$(runtime_runs) || got=
		case $1:$got in
		system:?* | "$1:$1" | "$1:$1"[!0-9]*)
			log "runtime: containerd $1 answers the CRI (crictl version: v$got, $(($(date +%s) - started))s)"
			return 0
			;;
		esac
		if [ "$(date +%s)" -ge $((started + GATE_TIMEOUT)) ]; then
			WHY="containerd $1 does not answer the CRI after ${GATE_TIMEOUT}s (crictl version: ${got:+containerd v$got answers}${got:-$(head -n 1 "$WORK/crictl.err")})"
			return 1
		fi
		sleep "$POLL"
	done
}

# runtime_plan decides a new roll's runtime step (KC_RUNTIME), before
# anything changed: none when containerd's selection is the one asked for
# (runtime-select status); refused when that version is not installed
# (runtime-select list), the selection could not be put back (unknown),
# containerd's unit would stop its shims with it (KillMode), or crictl
# cannot say which containerd runs. Sets RT_STEP and RT_PREV, the
# selection a rollback puts back.
runtime_plan() {
	RT_STEP=
	[ -n "$RUNTIME" ] || return 0
	sel=$(runtime_selected) ||
		die "KC_RUNTIME $RUNTIME: runtime-select status failed on the node ($(head -n 1 "$WORK/runtime-status.err"); is runtime-unversioned installed?): nothing changed"
	if [ "$sel" = "$RT_VERSION" ]; then
		log "runtime: containerd $RT_VERSION is selected already (runtime-select status): no runtime step"
		return 0
	fi
	case $sel in
	system | [0-9]*) ;;
	*) die "KC_RUNTIME $RUNTIME: containerd's selection is ${sel:-not said} (runtime-select status), which a rollback could not select again: nothing changed" ;;
	esac
	on_host runtime-select list >"$WORK/runtime-list" </dev/null || die "KC_RUNTIME $RUNTIME: runtime-select list failed on the node: nothing changed"
	if ! grep -qx "containerd $RT_VERSION" "$WORK/runtime-list"; then
		have=$(awk '$1 == "containerd" { printf "%s%s", (n++ ? ", " : ""), $0 }' "$WORK/runtime-list")
		die "KC_RUNTIME $RUNTIME: containerd $RT_VERSION is not installed on the node (runtime-select list: ${have:-no containerd}; install runtime-containerd-$RT_VERSION): nothing changed"
	fi
	# The restart must stop containerd alone: its shims, and so the
	# containers, outlive it only with KillMode=process (Debian's and
	# containerd's units; runtime-select's drop-in keeps it). Killing the
	# shims restarted 11 of 11 containers in the runtime e2e's negative
	# control (docs/results.md).
	kill_mode=$(on_host systemctl show -p KillMode containerd </dev/null 2>/dev/null) || kill_mode=
	[ "$kill_mode" = KillMode=process ] ||
		die "KC_RUNTIME $RUNTIME: containerd.service has ${kill_mode:-no KillMode (systemctl show -p KillMode containerd failed)}: restarting it would stop its shims, and so every container, with it (it must be process): nothing changed"
	rc=0
	runs=$(runtime_runs) || rc=$?
	[ "$rc" = 0 ] && [ -n "$runs" ] ||
		die "KC_RUNTIME $RUNTIME: crictl version failed on the node (exit $rc: $(head -n 1 "$WORK/crictl.err")): the runtime step needs crictl to see which containerd runs: nothing changed"
	RT_STEP=1 RT_PREV=$sel
	log "runtime: containerd $sel -> $RT_VERSION (KC_RUNTIME $RUNTIME; runs now: $runs): the runtime step first, under kubelet $PREVIOUS, then the kubelet's"
}

# runtime_cgroups puts back, with kubelet-compat cgroups --repair, every
# running container whose process left a cgroup runc gave it (cgroup v1,
# the systemd driver): its shim reports no process, and containerd 1.7 or
# later kills such a shim at its start as leaked, and the pod with it. It
# fails while a container's shim no longer answers at its address (a
# pod's shim group split in two), which nothing can put back.
# Before the runtime step's preflight (which refuses such a containerd
# while one is out) and right before the restart. Non-zero with WHY.
runtime_cgroups() {
	rc=0
	on_host kubelet-compat cgroups --repair >"$WORK/cgroups" 2>"$WORK/cgroups.err" </dev/null || rc=$?
	while IFS= read -r line; do log "runtime: cgroups: $line"; done <"$WORK/cgroups"
	[ "$rc" = 0 ] && return 0
	WHY="kubelet-compat cgroups --repair failed ($(sed -n '$s/^kubelet-compat: //p' "$WORK/cgroups.err")): containerd $RT_VERSION would kill those pods at its start"
	return 1
}

# runtime_swap: the runtime step under the running kubelet: the picture,
# as before the kubelet's swap; the kubelet's counters the gate then counts
# from (its syncs and rejections, its readiness probes); then
# runtime-select --restart-containerd, which stops containerd alone (its
# shims, and so the containers, go on: the unit's KillMode=process; never
# kill them), and the new containerd's answer on the CRI. Its state is
# runtime-swapping from before the picture.
runtime_swap() {
	picture
	rejections=$(kubelet_rejections)
	case ${rejections%% *} in "" | *[!0-9]*) rejections= ;; *) rejections=${rejections%% *} ;; esac
	probe_sample "$WORK/probes-base" || fail_roll "the kubelet's $KUBELET_URL/metrics/probes did not answer"
	put "$R/probes-base" <"$WORK/probes-base"
	st_set "runtime_rejections=$rejections" "runtime_swapped_at=$(now)"
	runtime_cgroups || fail_roll "$WHY"
	log "runtime: runtime-select --restart-containerd containerd $RT_VERSION (containerd stopped alone: its shims, and so the containers, go on)"
	on_host runtime-select --restart-containerd containerd "$RT_VERSION" </dev/null ||
		fail_roll "runtime-select --restart-containerd containerd $RT_VERSION failed"
	wait_runtime "$RT_VERSION" || fail_roll "$WHY"
	st_set "runtime_back_at=$(now)"
}

# runtime_gate_or_rollback: the runtime step's verdict, written on the
# node; a failed gate selects the previous containerd back and fails the
# Job, the kubelet untouched.
runtime_gate_or_rollback() {
	gate_runtime
	log "gate: the runtime step's gate: kubelet v$PREVIOUS on containerd $RT_VERSION, against the picture before the runtime swap"
	if gate; then
		st_set phase=runtime-passed "runtime_passed_at=$(now)"
		gate_kubelet
		log "node $NODE: containerd $RT_VERSION runs under kubelet $PREVIOUS and its gate passed: now the kubelet's step"
		return 0
	fi
	runtime_rollback "the runtime step's health gate failed"
	die "the runtime step's health gate failed: node $NODE is back on containerd $RT_PREV, its kubelet untouched ($PREVIOUS); the Job fails, which stops the Plan"
}

# runtime_rollback WHY selects the containerd of before the roll again
# (runtime-select --restart-containerd: containerd stopped alone again)
# under the state runtime-rolling-back, and waits for its answer on the
# CRI; the kubelet was not touched. Idempotent: a Job killed in it leaves
# runtime-rolling-back, and the next one does it again. The verdict
# rolled-back (and a failed gate's marker) once it is done.
runtime_rollback() {
	st_set phase=runtime-rolling-back "reason=$1"
	log "rolling the runtime back to containerd $RT_PREV ($1)"
	sel=$(runtime_selected) || die "the rollback failed: runtime-select status failed (the next Job tries again)"
	if [ "$sel" != "$RT_PREV" ]; then
		log "rollback: runtime-select --restart-containerd containerd $RT_PREV"
		on_host runtime-select --restart-containerd containerd "$RT_PREV" </dev/null ||
			die "the rollback failed: runtime-select --restart-containerd containerd $RT_PREV failed (the next Job tries again)"
	fi
	wait_runtime "$RT_PREV" || die "the rollback failed: $WHY (the next Job tries again)"
	if [ "$1" = "the runtime step's health gate failed" ]; then
		mkdir -p "$HOST$STATE"
		now >"$HOST$STATE/$TARGET.gate-failed"
	fi
	st_set phase=rolled-back "rolled_back_at=$(now)"
	log "rolled back: containerd $RT_PREV is selected and answers the CRI; the kubelet was not touched (stage2 and stage1 serve $PREVIOUS and $PREV_STAGE1)"
}

# naive: the in-place roll without kubelet-compat's record, gate or
# rollback, as k3s's and rke2's upgrade images do it: the Job ends once the
# new kubelet is started. A Job run again on a node whose stage2 serves the
# target (the new kubelet restarted this very container) has nothing left
# to do.
naive() {
	select_status
	PREVIOUS=$(version_of stage2)
	[ -n "$PREVIOUS" ] || die "kubernetes-select status names no version for stage2"
	if [ "$PREVIOUS" = "$TARGET" ]; then
		log "stage2 serves $TARGET already: node $NODE is upgraded (naive)"
		return 0
	fi
	log "node $NODE ($ROLE): $PREVIOUS -> $TARGET, naive: in place, no record, no gate, no rollback"
	install_and_kubeadm
	swap
	log "node $NODE: the kubelet of $TARGET started (naive: nothing judged)"
}

# gate_or_rollback: the gate's verdict, written on the node.
gate_or_rollback() {
	gate_kubelet
	if gate; then
		st_set phase=passed "passed_at=$(now)"
		log "node $NODE upgraded to $TARGET"
		return 0
	fi
	rollback "the health gate failed"
	die "the health gate failed: node $NODE is back on $PREVIOUS; the Job fails, which stops the Plan"
}

# archive ends the record of a finished roll: kept as $ROLL/last-roll.
archive() {
	mv "$R/state" "$R/last-roll"
	rm -rf "$R/before" "$R/ready-before" "$R/probes-base" "$R/backup"
}

# preflight_kubelet [NAME@VERSION] runs kubelet-compat preflight of the
# kubelet's step on the node into $WORK/preflight: on the runtime the node
# runs (its probe), or on the one NAME@VERSION names (the runtime matrix:
# the runtime the kubelet would run on after the runtime step). Non-zero
# when preflight refuses: its one line, the last on stderr, in WHY.
preflight_kubelet() {
	target_kubelet=/usr/local/kubernetes/$TARGET/stage2/usr/bin/kubelet
	on=${1:-}
	set -- --node --from "v$PREVIOUS" --to "v$TARGET" --kubeconfig "$NODE_KUBECONFIG"
	if [ -x "$HOST$target_kubelet" ]; then
		set -- "$@" --target-kubelet "$target_kubelet"
	fi
	[ -z "$on" ] || set -- "$@" --runtime "$on"
	rc=0
	on_host kubelet-compat preflight "$@" >"$WORK/preflight" 2>"$WORK/preflight.err" || rc=$?
	cat "$WORK/preflight.err" >&2
	[ "$rc" != 0 ] || return 0
	WHY=$(sed -n '$s/^kubelet-compat: //p' "$WORK/preflight.err")
	WHY=${WHY:-it failed (above)}
	return 1
}

# preflight_judge reads preflight's table ($WORK/preflight): what the
# patched kubelet would still lose, unless the Plan allows it, and on a
# control-plane node etcd's 3.6 -> 3.7 without the bridge's image. Non-zero
# with why in WHY.
preflight_judge() {
	cat "$WORK/preflight"
	losses=$(preflight_losses <"$WORK/preflight")
	if [ "$losses" -gt 0 ]; then
		if [ "${KC_ALLOW_LOSS:-false}" != true ]; then
			WHY="preflight: the patched kubelet would still lose $losses container(s) or pod(s) (above); the Plan does not allow it (KC_ALLOW_LOSS)"
			return 1
		fi
		log "preflight: the patched kubelet loses $losses container(s) or pod(s); the Plan allows it (KC_ALLOW_LOSS=true)"
	fi
	# preflight's note of a step whose kubeadm moves etcd from 3.6 to 3.7
	# (kubelet-compat preflight, app/preflight_etcd.go): without the
	# bridge's image, refused now rather than after the packages.
	if [ "$ROLE" = control-plane ] && [ -z "$ETCD_BRIDGE_IMAGE" ] && grep -q '^note: etcd: ' "$WORK/preflight"; then
		WHY="preflight: this step's kubeadm moves etcd from 3.6 to 3.7, which needs the bridge etcd first (above), and the Plan names no bridge image (KC_ETCD_BRIDGE_IMAGE)"
		return 1
	fi
}

# new_roll: a roll this node has no state of. Everything before the first
# change: the kubelet's server answers, the runtime step (runtime_plan),
# preflight. With a runtime step, preflight judges the kubelet's step on
# the runtime it will run on (--runtime KC_RUNTIME): a refusal there is the
# Job's, before anything changed; a refusal only for the node's runtime
# today is what the runtime step fixes, so the node's own is not asked
# first. The runtime step runs first (docs/results.md: measured in every
# order, the runtime first recommended wherever the running kubelet runs on
# the new runtime; where it does not, preflight's --from note, the kubelet
# must go first, which this Job does not do: refused), then the kubelet's
# (kubelet_begin).
new_roll() {
	if [ "$s2" = "$TARGET" ]; then
		die "stage2 already serves $TARGET, but this node has no record of a roll to it ($ROLL/state): it was selected outside this Plan, and no gate passed here; not certifying"
	fi
	failed=$STATE/$TARGET.gate-failed
	[ ! -e "$HOST$failed" ] || die "the health gate failed on this node before ($failed): not trying again; remove the file to retry"
	PREVIOUS=$s2 PREV_STAGE1=$(version_of stage1)
	log "node $NODE ($ROLE): $PREVIOUS -> $TARGET"
	probe_sample "$WORK/probes-a" ||
		die "the kubelet's $KUBELET_URL/metrics/probes did not answer (the gate's evidence of readiness): nothing changed"
	runtime_plan

	# 1. preflight: what the patched kubelet would still lose.
	if [ -n "$RT_STEP" ]; then
		runtime_cgroups || die "$WHY: nothing changed"
		preflight_kubelet "$RUNTIME" ||
			die "kubelet-compat preflight refused this step on containerd $RT_VERSION (KC_RUNTIME), the runtime its kubelet would run on: $WHY: nothing changed"
		from=$(sed -n 's/^note: runtime: --from: //; s/: is the running kubelet on another runtime endpoint?$//p' "$WORK/preflight" | head -n 1)
		[ -z "$from" ] || die "KC_RUNTIME containerd $RT_VERSION does not serve the running kubelet $PREVIOUS (preflight: $from): the kubelet's step comes first there (docs/runtime.md), and this Job runs the runtime step before it only; roll the kubelet without KC_RUNTIME first: nothing changed"
	else
		# A refusal (a target the node's runtime does not serve, a bad
		# version) is preflight's last line on stderr: the Job's one line.
		preflight_kubelet || die "kubelet-compat preflight refused this step: $WHY: nothing changed"
	fi
	preflight_judge || die "$WHY: nothing changed"

	rm -f "$R/state"
	if [ -n "$RT_STEP" ]; then
		# 2. the runtime step: the state first, with the selection to put
		# back; the picture; the switch; its gate.
		st_set "target=$TARGET" "previous=$PREVIOUS" "stage1=$PREV_STAGE1" "jobpods=${SYSTEM_UPGRADE_POD_UID:-}" \
			"runtime=$RUNTIME" "runtime_previous=$RT_PREV" phase=runtime-swapping "began_at=$(now)"
		runtime_swap
		runtime_gate_or_rollback
		kubelet_begin
		return
	fi
	# 2. the roll's state on the node: what kubeadm rewrites, saved, then
	# the record of the roll.
	backup
	st_set "target=$TARGET" "previous=$PREVIOUS" "stage1=$PREV_STAGE1" "jobpods=${SYSTEM_UPGRADE_POD_UID:-}" phase=begun "began_at=$(now)"
}

# kubelet_begin: the kubelet's step after the runtime step passed its
# gate: preflight again, on the containerd that runs now (the node's
# probe); a refusal selects the previous containerd back (fail_roll in
# runtime-passed); then the backup and the state begun.
kubelet_begin() {
	preflight_kubelet || fail_roll "kubelet-compat preflight refused the kubelet's step on containerd $RT_VERSION, which runs now: $WHY"
	preflight_judge || fail_roll "$WHY"
	backup
	st_set phase=begun "began_at=$(now)"
}

# rerun_runtime: a Job before this one died in the runtime step
# (runtime-swapping): the switch took (containerd's selection is the new
# one): its gate against the saved picture; it did not: the picture, the
# switch and the gate again. Never a verdict without the gate.
rerun_runtime() {
	[ "$s2" = "$PREVIOUS" ] || fail_roll "stage2 serves $s2 in the runtime step, not $PREVIOUS"
	sel=$(runtime_selected) || fail_roll "runtime-select status failed"
	if [ "$sel" = "$RT_VERSION" ]; then
		log "a Job before this one died after the runtime swap, before its gate's verdict: the gate runs against the picture it saved ($(st runtime_swapped_at))"
		wait_runtime "$RT_VERSION" || fail_roll "$WHY"
		# Died before it saw the runtime back: syncs count from now.
		[ -n "$(st runtime_back_at)" ] || st_set "runtime_back_at=$(now)"
	elif [ "$sel" = "$RT_PREV" ]; then
		log "a Job before this one died before the runtime swap took (containerd $sel is selected): taking the picture again"
		runtime_swap
	else
		fail_roll "containerd's selection is $sel, neither $RT_PREV nor $RT_VERSION"
	fi
	runtime_gate_or_rollback
}

upgrade() {
	lock
	kubelet_kubeconfig
	gate_kubelet
	select_status
	s2=$(version_of stage2)
	[ -n "$s2" ] || die "kubernetes-select status names no version for stage2"
	rt=$(st target)
	if [ -n "$rt" ] && [ "$rt" != "$TARGET" ]; then
		phase=$(st phase)
		case $phase in
		passed | rolled-back) ;;
		*)
			log "this node has an unfinished roll to $rt (its state: $phase), of a Job of another version: rolling it back before the roll to $TARGET"
			want=$TARGET
			TARGET=$rt PREVIOUS=$(st previous) PREV_STAGE1=$(st stage1) RT_PREV=$(st runtime_previous)
			case $phase in
			runtime-swapping | runtime-rolling-back) runtime_rollback "interrupted by a roll to $want" ;;
			*) rollback "interrupted by a roll to $want" ;;
			esac
			TARGET=$want
			select_status
			s2=$(version_of stage2)
			;;
		esac
		log "the last roll of this node (to $rt) ended $(st phase): kept as $ROLL/last-roll"
		archive
		rt=
	fi
	if [ -n "$rt" ]; then
		PREVIOUS=$(st previous) PREV_STAGE1=$(st stage1) RT_PREV=$(st runtime_previous)
		RUNTIME=$(st runtime) RT_VERSION=
		[ -z "$RUNTIME" ] || RT_VERSION=$(runtime_version "$RUNTIME") ||
			die "$ROLL/state on the node has the runtime '$RUNTIME', not containerd@VERSION"
		[ -z "${SYSTEM_UPGRADE_POD_UID:-}" ] || st_set "jobpods=$(st jobpods) $SYSTEM_UPGRADE_POD_UID"
		phase=$(st phase)
		case $phase in
		passed)
			[ "$s2" = "$TARGET" ] || die "this node's roll to $TARGET passed its gate ($(st passed_at)), but stage2 now serves $s2: not certifying"
			log "stage2 serves $TARGET and this node's gate passed ($(st passed_at)): certified"
			return 0
			;;
		rolled-back)
			die "the health gate failed on this node before ($(st reason), rolled back $(st rolled_back_at)): not trying again; remove $ROLL/state (and $STATE/$TARGET.gate-failed) on the node to retry"
			;;
		rolling-back)
			log "a Job before this one died while rolling back: finishing the rollback"
			rollback "$(st reason)"
			die "$(st reason): node $NODE is back on $PREVIOUS; the Job fails, which stops the Plan"
			;;
		runtime-rolling-back)
			log "a Job before this one died while rolling the runtime back: finishing it"
			runtime_rollback "$(st reason)"
			die "$(st reason): node $NODE is back on containerd $RT_PREV, its kubelet untouched ($PREVIOUS); the Job fails, which stops the Plan"
			;;
		runtime-swapping)
			rerun_runtime
			kubelet_begin
			;;
		runtime-passed)
			[ "$s2" = "$PREVIOUS" ] || fail_roll "stage2 serves $s2 before the kubelet's step, not $PREVIOUS"
			log "the runtime step (containerd $RT_VERSION) passed its gate in a Job before this one ($(st runtime_passed_at)): not again; now the kubelet's step"
			kubelet_begin
			;;
		swapping)
			if [ "$s2" = "$TARGET" ]; then
				log "a Job before this one died after the swap, before its gate's verdict: the gate runs against the picture it saved ($(st swapped_at))"
				gate_or_rollback
				return
			fi
			[ "$s2" = "$PREVIOUS" ] || fail_roll "stage2 serves $s2, neither $PREVIOUS nor $TARGET"
			log "a Job before this one died at the swap, which did not happen: taking the picture again"
			record_and_swap
			gate_or_rollback
			return
			;;
		begun)
			case $s2 in
			"$PREVIOUS") ;;
			# A newer kubernetes-unversioned puts its directories in place of
			# the links; the packages' step selects the running kubelet again.
			none) log "stage2 selects none (the packages a Job before this one installed dropped its link): the packages' step selects $PREVIOUS again" ;;
			*) fail_roll "stage2 serves $s2 before the swap, not $PREVIOUS" ;;
			esac
			log "a Job before this one died before the swap: going on from the packages (node $NODE ($ROLE): $PREVIOUS -> $TARGET)"
			;;
		*) die "$ROLL/state on the node has the unknown phase '$phase'" ;;
		esac
	else
		new_roll
	fi
	# 3. the packages, stage1 and kubeadm; 4. the record and the swap; 5.
	# the gate, or the rollback.
	install_and_kubeadm
	record_and_swap
	gate_or_rollback
}

NODE=${SYSTEM_UPGRADE_NODE_NAME:-}
TARGET=${SYSTEM_UPGRADE_PLAN_LATEST_VERSION:-}
TARGET=${TARGET#v}
ROLE=${KC_ROLE:-worker}
[ -n "$NODE" ] || die "SYSTEM_UPGRADE_NODE_NAME is not set"
[ -n "$TARGET" ] || die "SYSTEM_UPGRADE_PLAN_LATEST_VERSION is not set"
case $ROLE in control-plane | worker) ;; *) die "KC_ROLE must be control-plane or worker, not $ROLE" ;; esac
[ -z "$RUNTIME" ] || RT_VERSION=$(runtime_version "$RUNTIME") ||
	die "KC_RUNTIME must be containerd@VERSION (e.g. containerd@1.7.35), not $RUNTIME"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
NAIVE=

case ${1:-upgrade} in
upgrade) upgrade ;;
naive)
	NAIVE=1
	naive
	;;
wait-plan)
	[ $# -eq 2 ] || { echo "usage: $0 wait-plan PLAN" >&2; exit 2; }
	wait_plan "$2"
	;;
*)
	echo "usage: $0 [upgrade | wait-plan PLAN | naive]" >&2
	exit 2
	;;
esac
