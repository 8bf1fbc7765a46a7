#!/bin/sh
# upgrade.sh: the upgrade Job of deploy/system-upgrade (see README.md).
#
# Runs in the system-upgrade-controller's Job pod on the node it upgrades,
# with the node's root at $KC_HOST (/host); every step on the node runs
# there with chroot. Two modes:
#
#   upgrade.sh upgrade            upgrade this node to $SYSTEM_UPGRADE_PLAN_LATEST_VERSION
#   upgrade.sh wait-plan PLAN     wait until the Plan PLAN is Complete for that
#                                 version (the workers' prepare step)
#
# Environment (the Plan sets the KC_* variables, the controller the others):
#   SYSTEM_UPGRADE_NODE_NAME            this node
#   SYSTEM_UPGRADE_PLAN_LATEST_VERSION  the target version, e.g. 1.31.14
#   SYSTEM_UPGRADE_CONTROLLER_NAMESPACE is not set in Jobs: KC_NAMESPACE is
#   KC_ROLE           control-plane or worker
#   KC_ALLOW_LOSS     true: go on when preflight says the patched kubelet still loses a pod
#   KC_GATE_TIMEOUT   seconds the health gate waits for the node and its pods (300)
#   KC_GATE_SETTLE    seconds the gate lets the new kubelet work once it reports the node
#                     Ready, before it looks at the pods and the runtime (30)
#   KC_POLL           seconds between two looks (5)
#   KC_HOST           the node's root (/host)
#   KC_PACKAGES       the directory of the image holding the packages (/packages)
#   KC_KUBECONFIG     the node's kubeconfig, as the node sees it (/etc/kubernetes/kubelet.conf)
#   KC_NAMESPACE      the Plans' namespace (system-upgrade)
#   KC_KUBEADM_ARGS   more arguments for kubeadm upgrade (none)
#   KC_HOST_PATH      PATH of the commands run on the node (root's on Debian and RPM hosts)
#
# Exit status: 0 upgraded and healthy; 1 refused, failed, or the health gate
# failed (then stage2 is back on the previous version); 2 usage.
set -eu

PROG=kubelet-compat-upgrade
HOST=${KC_HOST:-/host}
PACKAGES=${KC_PACKAGES:-/packages}
NODE_KUBECONFIG=${KC_KUBECONFIG:-/etc/kubernetes/kubelet.conf}
NAMESPACE=${KC_NAMESPACE:-system-upgrade}
GATE_TIMEOUT=${KC_GATE_TIMEOUT:-300}
GATE_SETTLE=${KC_GATE_SETTLE:-30}
# The image's PATH is /bin: on the node, dpkg refuses to run without
# ldconfig and start-stop-daemon on PATH (/usr/sbin, /sbin), and the
# maintainer scripts and kubeadm expect root's PATH.
HOST_PATH=${KC_HOST_PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}
POLL=${KC_POLL:-5}
# Where the Job keeps its state on the node, as the node sees it.
STATE=/var/lib/kubelet-compat/upgrade

log() { echo "$PROG: $*"; }
die() {
	echo "$PROG: $*" >&2
	exit 1
}
# KC_CHROOT is for the unit test only: busybox's shell runs its own chroot
# applet whatever PATH says, so the test names its fake by path.
# SYSTEMD_IGNORE_CHROOT: systemctl (kubernetes-select --restart-kubelet,
# the packages' scripts) ignores start and stop when it believes it runs
# in a chroot; this one is the node's own root (the Job runs with the
# node's PID namespace and its / at /host), so it must talk to PID 1.
on_host() { PATH=$HOST_PATH SYSTEMD_IGNORE_CHROOT=1 ${KC_CHROOT:-chroot} "$HOST" "$@"; }

# version_of prints the version kubernetes-select status says STAGE serves.
version_of() {
	on_host kubernetes-select status | awk -v s="$1:" '$1 == s { print $2 }'
}

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
# runtime runs, "pod NAMESPACE/NAME UID ID,ID,...", and one per container
# created before the kubelet that the kubelet's decision restarts,
# "restart NAMESPACE/NAME/CONTAINER ID".
status_pods() {
	awk '
		function val(line) { sub(/^[^:]*: *"?/, "", line); sub(/"?,?$/, "", line); return line }
		/^  "[A-Za-z]+": / { top = val2key($0); sub2 = "" }
		/^    "[A-Za-z]+": / { sub2 = val2key($0) }
		function val2key(line) { sub(/^ *"/, "", line); sub(/".*/, "", line); return line }
		top == "legacyContainers" && /^    \{/ { pod = ""; ctr = ""; id = ""; keep = "" }
		top == "legacyContainers" && /^      "pod": / { pod = val($0) }
		top == "legacyContainers" && /^      "container": / { ctr = val($0) }
		top == "legacyContainers" && /^      "id": / { id = val($0) }
		top == "legacyContainers" && /^      "keep": / { keep = val($0) }
		top == "legacyContainers" && /^    \}/ { if (keep == "false") print "restart " pod "/" ctr " " id }
		top == "admission" && sub2 == "pods" && /^      \{/ { pod = ""; uid = ""; ids = ""; inrc = 0 }
		top == "admission" && sub2 == "pods" && /^        "pod": / { pod = val($0) }
		top == "admission" && sub2 == "pods" && /^        "uid": / { uid = val($0) }
		top == "admission" && sub2 == "pods" && /^        "runningContainers": \[\],?$/ { next }
		top == "admission" && sub2 == "pods" && /^        "runningContainers": \[/ { inrc = 1; next }
		inrc && /^        \]/ { inrc = 0 }
		inrc { ids = ids (ids == "" ? "" : ",") val(":" $0) }
		top == "admission" && sub2 == "pods" && /^      \}/ { print "pod " pod " " uid " " ids }'
}

# compare_pods prints what changed between two status_pods snapshots: a pod
# that runs under another UID (recreated), a pod that runs a container it
# did not run before in place of one it ran (a container restarted or
# re-created), and every container the kubelet's decision restarts. A pod
# that no longer runs at all (a Job's pod that completed) is not a restart
# (the pod check of the gate sees a pod that failed), nor is a container
# started in a pod that ran none at the record (one in CrashLoopBackOff:
# the new kubelet starts it without the old one's back-off).
compare_pods() {
	awk '
		phase == 1 { if ($1 == "pod") { uid[$2] = $3; n = split($4, a, ","); for (i = 1; i <= n; i++) had[$2 "," a[i]] = 1; ran[$2] = n }; next }
		$1 == "restart" { print "container " $2 " (" $3 "): the kubelet restarts it"; next }
		$1 == "pod" && ($2 in uid) {
			if ($3 != uid[$2]) { print "pod " $2 ": runs under uid " $3 ", was " uid[$2] " (recreated)"; next }
			if (ran[$2] == 0) next
			n = split($4, a, ",")
			for (i = 1; i <= n; i++) if (!(($2 "," a[i]) in had)) print "pod " $2 ": runs container " a[i] ", created after the record (restarted)"
		}' phase=1 "$1" phase=2 "$2"
}

# node_ready says whether the API server has this node Ready from the
# target's kubelet: the Ready condition alone is still the old kubelet's
# right after the swap.
node_ready() {
	set -- $(kubectl get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status} {.status.nodeInfo.kubeletVersion}')
	[ "${1:-}" = True ] || return 1
	case ${2:-} in "v$TARGET" | "v$TARGET+"*) return 0 ;; esac
	return 1
}

# pods_of_node prints "NAMESPACE/NAME PHASE READY" for every pod bound to
# this node.
pods_of_node() {
	kubectl get pods --all-namespaces --field-selector "spec.nodeName=$NODE" \
		-o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name} {.status.phase} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}'
}

# pods_not_ready prints the pods of the node that are neither Ready nor
# Succeeded, leaving out those listed in the file $1 (not Ready before the
# upgrade began); non-zero when the API server does not list them.
pods_not_ready() {
	pods_of_node >"$WORK/pods" || return 1
	awk -v before="$1" '
		BEGIN { while ((getline line < before) > 0) { split(line, f, " "); skip[f[1]] = 1 } }
		$2 != "Succeeded" && $3 != "True" && !($1 in skip) { print $1 " (" $2 ")" }' <"$WORK/pods"
}

# gate is the health gate: the node Ready from the target's kubelet, then
# GATE_SETTLE seconds for that kubelet's first syncs and probes (what it
# restarts or finds not Ready, it has by then), every pod of the node Ready
# within GATE_TIMEOUT seconds of the swap, and kubelet-compat status shows
# no container of the node restarted. It prints why it failed and returns
# non-zero.
gate() {
	deadline=$(($(date +%s) + GATE_TIMEOUT))
	while ! node_ready; do
		if [ "$(date +%s)" -ge "$deadline" ]; then
			log "gate: node $NODE not Ready with kubelet v$TARGET after ${GATE_TIMEOUT}s"
			return 1
		fi
		sleep "$POLL"
	done
	log "gate: node $NODE Ready with kubelet v$TARGET; letting it settle ${GATE_SETTLE}s"
	sleep "$GATE_SETTLE"
	while :; do
		# A failed list (the API server not answering) is no pass.
		if pods_not_ready "$WORK/unready-before" >"$WORK/unready"; then
			[ -s "$WORK/unready" ] || break
		else
			echo "(the API server did not list the node's pods)" >"$WORK/unready"
		fi
		if [ "$(date +%s)" -ge "$deadline" ]; then
			log "gate: pods of $NODE not Ready after ${GATE_TIMEOUT}s:"
			sed 's/^/  /' "$WORK/unready"
			return 1
		fi
		sleep "$POLL"
	done
	on_host kubelet-compat status -o json --kubeconfig "$NODE_KUBECONFIG" >"$WORK/status-after.json" ||
		{ log "gate: kubelet-compat status failed"; return 1; }
	status_pods <"$WORK/status-after.json" >"$WORK/after"
	compare_pods "$WORK/before" "$WORK/after" >"$WORK/changed"
	if [ -s "$WORK/changed" ]; then
		log "gate: containers of $NODE restarted across the swap (kubelet-compat status, from the container runtime):"
		sed 's/^/  /' "$WORK/changed"
		return 1
	fi
	log "gate: node $NODE Ready, its pods Ready, no container restarted"
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

# settle waits until the pods of the node that were Ready when the upgrade
# began (all but $WORK/unready-before) are Ready, at most GATE_TIMEOUT
# seconds; the gate judges what is still not Ready then.
settle() {
	deadline=$(($(date +%s) + GATE_TIMEOUT))
	until pods_not_ready "$WORK/unready-before" >"$WORK/unready" && [ ! -s "$WORK/unready" ]; do
		if [ "$(date +%s)" -ge "$deadline" ]; then
			log "pods of $NODE still not Ready after ${GATE_TIMEOUT}s; recording as they are:"
			sed 's/^/  /' "$WORK/unready"
			return 0
		fi
		sleep "$POLL"
	done
}

upgrade() {
	failed=$STATE/$TARGET.gate-failed
	[ ! -e "$HOST$failed" ] || die "the health gate failed on this node before ($failed): not trying again; remove the file to retry"
	PREVIOUS=$(version_of stage2)
	[ -n "$PREVIOUS" ] || die "kubernetes-select status names no version for stage2"
	if [ "$PREVIOUS" = "$TARGET" ]; then
		log "stage2 already serves $TARGET: nothing to do"
		return 0
	fi
	log "node $NODE ($ROLE): $PREVIOUS -> $TARGET"
	pods_of_node | awk '$2 != "Succeeded" && $3 != "True"' >"$WORK/unready-before" || true

	# 1. preflight: what the patched kubelet would still lose.
	target_kubelet=/usr/local/kubernetes/$TARGET/stage2/usr/bin/kubelet
	set -- --node --from "v$PREVIOUS" --to "v$TARGET" --kubeconfig "$NODE_KUBECONFIG"
	if [ -x "$HOST$target_kubelet" ]; then
		set -- "$@" --target-kubelet "$target_kubelet"
	fi
	on_host kubelet-compat preflight "$@" >"$WORK/preflight" || die "kubelet-compat preflight failed"
	cat "$WORK/preflight"
	losses=$(preflight_losses <"$WORK/preflight")
	if [ "$losses" -gt 0 ]; then
		if [ "${KC_ALLOW_LOSS:-false}" != true ]; then
			die "preflight: the patched kubelet would still lose $losses container(s) or pod(s) (above); the Plan does not allow it (KC_ALLOW_LOSS): nothing changed"
		fi
		log "preflight: the patched kubelet loses $losses container(s) or pod(s); the Plan allows it (KC_ALLOW_LOSS=true)"
	fi

	# 2. the target's packages, side by side with the running version.
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
	[ $# -gt 0 ] || die "the image has no .$format packages in $PACKAGES"
	if [ "$format" = deb ]; then
		on_host dpkg -i "$@" || die "dpkg -i failed"
	else
		on_host rpm -U --replacepkgs "$@" || die "rpm -U failed"
	fi
	# A newer kubernetes-unversioned puts the directories it ships back in
	# place of kubernetes-select's links: select the running kubelet again
	# (the links only, nothing restarts).
	if [ "$(version_of stage2)" != "$PREVIOUS" ]; then
		log "the packages dropped stage2's selection: kubernetes-select stage2 $PREVIOUS"
		on_host kubernetes-select stage2 "$PREVIOUS" || die "kubernetes-select stage2 $PREVIOUS failed"
	fi

	# 3. kubeadm.
	on_host kubernetes-select stage1 "$TARGET" || die "kubernetes-select stage1 $TARGET failed"
	# shellcheck disable=SC2086 # KC_KUBEADM_ARGS is a list of words
	if [ "$ROLE" = control-plane ] && ! kubectl get configmap kubeadm-config -n kube-system \
		-o jsonpath='{.data.ClusterConfiguration}' | grep -q "kubernetesVersion: v$TARGET\$"; then
		log "first control-plane node of $TARGET: kubeadm upgrade apply"
		on_host kubeadm upgrade apply --yes ${KC_KUBEADM_ARGS:-} "v$TARGET" || die "kubeadm upgrade apply v$TARGET failed"
	else
		on_host kubeadm upgrade node ${KC_KUBEADM_ARGS:-} || die "kubeadm upgrade node failed"
	fi

	# 4. record, right before the swap, once the node's pods that were Ready
	# before the upgrade are Ready again (kubeadm upgrade apply restarts the
	# API server: controllers that lose their lease exit and back off).
	settle
	on_host kubelet-compat record --kubeconfig "$NODE_KUBECONFIG" || die "kubelet-compat record failed"
	on_host kubelet-compat status -o json --kubeconfig "$NODE_KUBECONFIG" >"$WORK/status-before.json" ||
		die "kubelet-compat status failed"
	status_pods <"$WORK/status-before.json" >"$WORK/before"

	# 5. the swap. This pod's own container runs on the kubelet it replaces:
	# the patched kubelet keeps it (record listed it).
	on_host kubernetes-select --restart-kubelet stage2 "$TARGET" || die "kubernetes-select --restart-kubelet stage2 $TARGET failed"

	# 6. the health gate; a failed gate rolls the kubelet back.
	if ! gate; then
		log "rolling back: kubernetes-select --restart-kubelet stage2 $PREVIOUS"
		date -u +%Y-%m-%dT%H:%M:%SZ >"$HOST$failed"
		# record on the newer kubelet: the older patched kubelet then keeps
		# what it created and the UIDs its static pods run under.
		on_host kubelet-compat record --kubeconfig "$NODE_KUBECONFIG" ||
			log "warning: kubelet-compat record before the rollback failed: the way back restarts what upstream restarts"
		on_host kubernetes-select --restart-kubelet stage2 "$PREVIOUS" || die "the rollback to $PREVIOUS failed too"
		die "the health gate failed: stage2 is back on $PREVIOUS; the Job fails, which stops the Plan"
	fi
	log "node $NODE upgraded to $TARGET"
}

NODE=${SYSTEM_UPGRADE_NODE_NAME:-}
TARGET=${SYSTEM_UPGRADE_PLAN_LATEST_VERSION:-}
TARGET=${TARGET#v}
ROLE=${KC_ROLE:-worker}
[ -n "$NODE" ] || die "SYSTEM_UPGRADE_NODE_NAME is not set"
[ -n "$TARGET" ] || die "SYSTEM_UPGRADE_PLAN_LATEST_VERSION is not set"
case $ROLE in control-plane | worker) ;; *) die "KC_ROLE must be control-plane or worker, not $ROLE" ;; esac
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

case ${1:-upgrade} in
upgrade) upgrade ;;
wait-plan)
	[ $# -eq 2 ] || { echo "usage: $0 wait-plan PLAN" >&2; exit 2; }
	wait_plan "$2"
	;;
*)
	echo "usage: $0 [upgrade | wait-plan PLAN]" >&2
	exit 2
	;;
esac
