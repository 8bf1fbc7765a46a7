# Targets of the real-node e2e (owned by e2e/); see e2e/README.md. Run as root.
#   make e2e                  CI form: 1.20.15 -> 1.21.14, patched + unpatched control, 10 pods
#   make e2e E2E=full         chain 1.18.19 -> 1.19.16 -> 1.20.15 -> 1.21.14, 30 pods
#   make e2e E2E=steps E2E_VERSIONS=1.21.14,1.22.17,1.23.17
#                             any chain of matrix versions, 10 pods: an unpatched control per
#                             step N -> N+1 (its baseline on N patched, or on N as released
#                             while N is not built patched), then the patched chain on one set
#                             of containers; E2E_ARGS=-patched=false for the controls alone,
#                             -controls=false for the patched chain alone
#   make e2e E2E=steps E2E_STEPS=1.28.15:1.31.14[,from:to...]
#                             explicit steps (skip-level); with E2E_VERSIONS, after its chain
#   make e2e E2E=steps E2E_STEPS=1.31.14:1.30.14
#                             a ROLLBACK step (to older than from; also a chain that goes down):
#                             baseline on the newer kubelet patched, record, then the older kubelet
#                             patched (0 restarts) or as released (the control: what upstream restarts
#                             going down); static pods on the local provider only. A plan with a rollback
#                             also records against the NEW kubelet after each swap and adds a static pod born
#                             under each kubelet (E2E_ARGS=-record-after-swap=auto|true|false; -cli PATH: another
#                             kubelet-compat, e.g. one from before a fix); E2E_ARGS='-to-feature-gates
#                             RestartAllContainersOnContainerExits=false': gates of each step's target kubelet
#                             (1.37.2:1.36.5: both variants must lose the restartall pod, preflight must name it)
#   make e2e E2E=api          CI form in API mode: etcd + kube-apiserver + kube-controller-manager
#                             (endpointslice only; upgraded first), API pods, and the readiness
#                             watchers: every pod's Ready condition and a Service's EndpointSlices
#                             across each swap, probes of period 10 s and 30 s
#                             (E2E_ARGS=-readiness=false: without them, no controller manager)
#   make e2e E2E=api E2E_STEPS=1.32.13:1.33.13 [E2E_ARGS='-resize-gate -resize-pending between-kubelets']
#                             the in-place-resize checkpoints of 1.33 (e2e/README.md); -resize-gate:
#                             InPlacePodVerticalScaling on at 1.27 .. 1.32 (kube-apiserver and kubelet);
#                             -resize-pending while-old-kubelet|between-kubelets: a resize through the
#                             new kube-apiserver before the new kubelet runs, which the patched kubelet
#                             must actuate in place
#   make e2e E2E=admission    API mode: pods upstream rejects at re-admission (node label removed, cpu reserved,
#                             --max-pods lowered) and forged-status pods both kubelets must reject; unpatched
#                             control then patched, Ready windows
#   make e2e E2E=devices      API mode, chain 1.18.19 -> 1.19.16 -> 1.20.15 -> 1.21.14: pods using the extended resource
#                             of the e2e's device plugin (e2e/cmd/e2e-device-plugin); unpatched control per step,
#                             then the patched chain; Ready windows. One per machine (the kubelets' fixed
#                             /var/lib/kubelet/device-plugins); E2E_ARGS='-device-plugin-gap 15s': the plugin
#                             down across each swap, back 15 s after the new kubelet started
#   make e2e E2E=bench        1.20.15 -> 1.21.14 with 100 pods: the upgrade window
#   make e2e E2E=runtime [E2E_RUNTIME_STEPS=containerd@1.6.20:containerd@1.7.35,...] [E2E_RUNTIME_KUBELET=1.37.2]
#                             the CONTAINER RUNTIME swapped in place under a running kubelet (issue 35 §3), local
#                             provider, 10 static pods: per step, a baseline on the From containerd (an empty
#                             root), then SIGTERM to the run's containerd (its shims keep running), the To
#                             containerd started on the same root and state with its config written from the
#                             same description (version 2 for 1.x, 3 for 2.x), the kubelet (not restarted)
#                             reconnecting; 0 restarts, 0 sandboxes recreated, 0 UIDs changed asserted for the
#                             patched kubelet, then exec, logs, a genuine change and stop on an old container;
#                             then the same from the same start with the kubelet as released (the control,
#                             reported). Default road containerd@1.6.20 (Debian's) -> 1.7.35 -> 2.4.2 under 1.37.2;
#                             the builds come from make runtime (RUNTIME_COMPONENTS=containerd@1.7.35,
#                             containerd@2.4.2,runc@1.5.3,cni-plugins@1.10.0: runc and the CNI plugins move with them);
#                             E2E_ARGS=-runtime-chain: the road on ONE set of containers; each run ends by removing
#                             every pod through the CRI (a check)
#   make e2e E2E=runtime E2E_RUNTIME_STEPS=containerd@1.7.35:containerd@2.4.2 E2E_RUNTIME_ORDER=1.36.5:1.37.2
#                             the ORDER of the runtime step and the kubelet step, measured: runtime first
#                             (under the old kubelet), kubelet first (the runtime under the new one), and
#                             both in one window (the runtime swapped while no kubelet runs), each from one
#                             start, patched kubelets then as released
#   make e2e-try              a kind cluster of 1.20.15 held until Ctrl-C, with the commands to upgrade
#                             its control-plane node by hand to 1.21.14 printed (E2E_STEPS=from:to: another step)
#   make e2e E2E_PROVIDER=kind    kubeadm clusters on kind (1.20.15 -> 1.21.14; E2E=full: 1.18 -> 1.21);
#                                 the Docker engine that answers, else a private dockerd from Debian;
#                                 readiness watchers across each node's swap (E2E_ARGS=-readiness=false: without)
#   make e2e E2E_PROVIDER=kind E2E=steps E2E_STEPS=1.31.14:1.34.12
#                                 any step or chain on kind; a step up more than one minor is the skip-level
#                                 flow: the control plane one minor at a time, each worker's kubelet swapped once
#   make e2e E2E_PROVIDER=kind E2E=steps E2E_ROAD=1.30.14,1.31.14,containerd@1.7.35,1.32.13,containerd@2.4.2,1.33.13
#                                 a ROAD (issue 35 section 4): the kubelet chain on one cluster, and between its
#                                 steps every node's runtime moved in place (the project's runtime .debs staged,
#                                 runtime-select --restart-containerd) under the running kubelet; born on Debian's
#                                 containerd 1.6.20; 0 restarts asserted per node and move on the patched cluster,
#                                 exec and logs on an old container after each; one control cluster over the road
#   make e2e E2E_PROVIDER=kind E2E=fleet
#                                 the fleet roll-out (issue 22 section 4): 1 control-plane node and 4 workers,
#                                 1.30.14 -> 1.31.14 by system-upgrade-controller's Plans at concurrency 1 and 2,
#                                 the drain-based roll as the anchor, the naive in-place roll (SUC's Plans with the
#                                 released kubelets, no drain) as the second, a roll whose health gate fails on worker 3;
#                                 per node and in total: restarts, evictions, pod UIDs, the single replica's
#                                 unavailable seconds, endpoint removals, seconds (E2E_ARGS='-fleet-runs drain,naive,fault')
#   make e2e E2E_PROVIDER=kind E2E=fleet E2E_ARGS='-fleet-runs runtime'
#                                 our roll whose Plans carry KC_RUNTIME containerd@1.7.35: each node's Job runs
#                                 kubelet-compat cgroups --repair and moves containerd first, gated, then the kubelet
#   make e2e E2E_PROVIDER=kind E2E=capi
#                                 Cluster API (issue 49): a management cluster on kind with CAPI v1.13 (core, kubeadm
#                                 bootstrap and control plane), CAPD and this project's in-place extension, all built by
#                                 make capi-images; workload clusters CAPD makes of our node images (1 control plane,
#                                 MachineDeployments md-0 of 2 and md-1 of 1) bumped 1.30.14 -> 1.31.14 in place through
#                                 the extension (kc-roll per machine; the gate failing on md-1's machine: rolled back, its
#                                 Machine's update failed) and by CAPI's default rollout (every machine replaced);
#                                 E2E_ARGS='-fleet-runs capi' for one of them
#   make e2e E2E_PROVIDER=kind E2E=fleet E2E_VERSIONS=1.33.13,1.34.12,1.35.8,1.36.5,1.37.2 E2E_ARGS='-fleet-runs minors -controls=false'
#                                 one cluster (1 control plane, 2 workers) born at the first version and rolled by
#                                 our Plans minor after minor, unattended; the etcd bridge on the step to etcd 3.7
#   make e2e E2E_ARGS='-pods 20'  anything else for e2e/cmd/e2e
#   make e2e E2E_BUILD=false      use the binaries already in _output
#   make e2e-binaries [E2E=...] [E2E_PROVIDER=kind] [E2E_STEPS=...]
#                             build what that e2e needs first, as `make e2e` does: the e2e binary prints
#                             it (./_output/e2e/e2e -print-build -mode MODE ...: the mode table is the e2e's)
#   make e2e-cleanup          undo what a killed run's journal lists (.ci/run runs it first)
#   make kind-images [E2E=full] [KIND_SAVE=file]   the kind node images alone
#                             (E2E_ARGS=-controls=false: only what the patched chain needs)

E2E ?= ci
E2E_PROVIDER ?= local
E2E_ARGS ?=
# E2E_BUILD=false uses the binaries already in _output (e.g. while another
# harness run holds the work trees).
E2E_BUILD ?= true

# What each mode builds first (its versions patched and as released, the
# binaries, make runtime's or runtime-deb's components) is the e2e's mode
# table, not make's: e2e-binaries asks the e2e binary (-print-build,
# e2e/cmd/e2e/build.go) and runs the make invocations it prints.
# E2E=runtime: the runtime road under one kubelet, patched and as released.
E2E_RUNTIME_KUBELET ?= 1.37.2
E2E_RUNTIME_STEPS ?=
E2E_RUNTIME_ORDER ?=
# E2E=steps: the chain E2E_VERSIONS (a,b,c: a -> b, b -> c) and the steps
# E2E_STEPS (from:to,...). Also accepted by the other modes (they replace
# the mode's steps, and what is built is theirs). A step may go down (a
# rollback): every version is built patched and each step's target (the
# older kubelet of a rollback) as released.
E2E_VERSIONS ?=
E2E_STEPS ?=
# E2E=steps E2E_PROVIDER=kind E2E_ROAD=1.30.14,1.31.14,containerd@1.7.35,...:
# a road, the kubelet chain with the runtime moved in place between its steps
# (-road); its runtimes' packages come from make runtime-deb.
E2E_ROAD ?=
e2e_comma := ,
e2e_step_args := $(if $(E2E_VERSIONS),-versions $(E2E_VERSIONS)) $(if $(E2E_STEPS),-steps $(E2E_STEPS)) \
	$(if $(filter runtime,$(E2E)),-runtime-kubelet $(E2E_RUNTIME_KUBELET)) $(if $(E2E_RUNTIME_STEPS),-runtime-steps $(E2E_RUNTIME_STEPS)) \
	$(if $(E2E_RUNTIME_ORDER),-runtime-order $(E2E_RUNTIME_ORDER)) $(if $(E2E_ROAD),-road $(E2E_ROAD))
# Without versions, `make build VERSIONS=` would not build what the plan needs.
ifeq ($(E2E),steps)
ifeq ($(strip $(E2E_VERSIONS)$(E2E_STEPS)$(E2E_ROAD)),)
$(error E2E=steps needs E2E_VERSIONS=v1,v2,..., E2E_STEPS=from:to,... or E2E_ROAD=v1,v2,containerd@x.y.z,...)
endif
endif

.PHONY: e2e e2e-binaries e2e-binaries-local e2e-binaries-kind e2e-unit e2e-cleanup e2e-try kind-images
e2e: e2e-binaries
	$(GO) build -o _output/e2e/e2e ./e2e/cmd/e2e
	./_output/e2e/e2e -mode $(E2E) -provider $(E2E_PROVIDER) $(e2e_step_args) $(E2E_ARGS)

# A kind cluster of the CI step's from version (1.20.15; E2E_STEPS=from:to
# for another), held until Ctrl-C for upgrading its control-plane node by
# hand: it prints the commands (docs/operators-guide.md, "Trying it by hand
# on a test node"). Builds what the CI form on kind builds, then the images.
e2e-try:
	$(MAKE) e2e-binaries-kind E2E=ci
	$(GO) build -o _output/e2e/e2e ./e2e/cmd/e2e
	./_output/e2e/e2e -mode try -provider kind $(e2e_step_args) $(E2E_ARGS)

# Undo what a run killed with SIGKILL left: exactly what its journal
# (<root>/journal.json) lists. Nothing to do when there is no root; refused
# while a run holds the root. E2E_ARGS='-root DIR' for another root.
e2e-cleanup:
	$(GO) build -o _output/e2e/e2e ./e2e/cmd/e2e
	./_output/e2e/e2e -mode cleanup $(E2E_ARGS)

# What the plan needs (incremental: instant when built), then the CLI: the
# e2e binary prints one make invocation a line (-print-build: the kubelets
# patched and as released, kube-apiserver and the controller manager in
# API mode, make runtime's containerds for E2E=runtime; on kind, kubeadm
# and kubectl patched, the control plane as released for every version
# of the plan and the minors a skip-level step's control plane goes
# through, and a road's runtime .debs), and make runs them. The binary is
# built first even under `make -n` (the `+`; the loop runs too, as a line
# naming $(MAKE)), so that a dry run of a fresh clone asks a binary that
# exists.
e2e-binaries:
ifeq ($(E2E_BUILD),true)
	+$(GO) build -o _output/e2e/e2e ./e2e/cmd/e2e
	builds=$$(./_output/e2e/e2e -print-build -mode $(E2E) -provider $(E2E_PROVIDER) $(e2e_step_args)) && \
	echo "$$builds" | while read -r target vars; do $(MAKE) $$target $$vars || exit 1; done
endif
	$(GO) build -o _output/kubelet-compat ./cmd/kubelet-compat
e2e-binaries-local e2e-binaries-kind: e2e-binaries-%:
	+$(MAKE) e2e-binaries E2E_PROVIDER=$*

# The e2e's fast unit tests, with the pkg/ packages it shares with
# deploy/system-upgrade/sim (also part of `go test ./...`).
e2e-unit:
	$(GO) test -count=1 ./e2e/... ./pkg/controlplane/ ./pkg/kubelet/ ./pkg/proc/ ./pkg/procfs/...

# kind node images without a registry (e2e/README.md, "kind node images"):
# kubelet-compat/kind-node:v<ver>, _output/kind/images/<ver>.tar,
# _output/kind/rpms/{patched,unpatched}, for the versions of the E2E plan
# (ci: 1.20.15 1.21.14; full: 1.18.19 .. 1.21.14), on the Docker engine
# that answers, else on the private dockerd the e2e starts. The e2e builds
# them itself anyway; KIND_SAVE=file also writes the node images there
# (docker save), for a machine with Docker but no build tools (load them
# with docker load -i, copy _output/kind, run the e2e with
# E2E_ARGS=-kind-images=use E2E_BUILD=false).
KIND_SAVE ?=
kind-images: e2e-binaries-kind
	$(GO) build -o _output/e2e/e2e ./e2e/cmd/e2e
	./_output/e2e/e2e -mode images -provider kind -images-of $(E2E) $(e2e_step_args) $(if $(KIND_SAVE),-save $(KIND_SAVE)) $(E2E_ARGS)
