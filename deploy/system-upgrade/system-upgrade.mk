# Targets of the fleet roll-out with Rancher's system-upgrade-controller
# (owned by deploy/system-upgrade/); see deploy/system-upgrade/README.md.
#   make suc                       build system-upgrade-controller v0.20.1 from the Go module proxy
#                                  (static, cached in $(KC_CACHE)/system-upgrade/)
#   make suc-image                 its image, an OCI image layout tar in $(SUC_OUTPUT)
#   make suc-plans SUC_VERSION=1.31.14 [SUC_CONCURRENCY=2] [SUC_CORDON=true] [SUC_ALLOW_LOSS=true]
#                  [SUC_ETCD_BRIDGE_IMAGE=registry.k8s.io/etcd:3.6.16-0] [SUC_RUNTIME=containerd@1.7.35]
#                                  the controller's manifest and the Plans in $(SUC_OUTPUT)
#   make suc-upgrade-image SUC_VERSION=1.31.14 [SUC_PACKAGES=_output/debs]
#                                  the upgrade Job's image: kc-roll, busybox's chroot, the target's kubectl
#                                  and the target's packages (make deb / make rpm first)
#   make suc-test                  the unit tests (the Job's engine against fakes, the Plans' goldens)
#   make suc-sim [SUC_SIM_NODES=1000] [SUC_SIM_CONCURRENCY=1%,5%,10%] [SUC_SIM_SCALE=10] [SUC_SIM_FAIL=3]
#                                  SUC and the Plans against kwok nodes on a real API server (make build
#                                  VERSIONS=1.31.14 PATCHED=false BINARIES=kube-apiserver,kube-controller-manager,kube-scheduler first)

SUC_OUTPUT ?= _output/system-upgrade
SUC_VERSION ?=
SUC_CONCURRENCY ?= 1
SUC_CORDON ?= false
SUC_ALLOW_LOSS ?= false
SUC_GATE_TIMEOUT ?= 300
SUC_ETCD_BRIDGE_IMAGE ?=
SUC_RUNTIME ?=
SUC_PACKAGES ?= $(DEB_OUTPUT)
SUC_KUBECTL ?= _output/$(SUC_VERSION)/kubectl
SUC_SIM_NODES ?= 1000
SUC_SIM_CONCURRENCY ?= 1%,5%,10%
SUC_SIM_SCALE ?= 10
SUC_SIM_FAIL ?= 3
SUC_SIM_FLAGS ?=
SUC_CMD = $(GO) run ./deploy/system-upgrade/cmd/system-upgrade

.PHONY: suc suc-image suc-plans suc-upgrade-image suc-test suc-sim

suc:
	$(SUC_CMD) controller

suc-image:
	mkdir -p $(SUC_OUTPUT)
	$(SUC_CMD) controller-image -o $(SUC_OUTPUT)/system-upgrade-controller.oci.tar

suc-plans:
	@test -n "$(SUC_VERSION)" || { echo "give SUC_VERSION, e.g. make suc-plans SUC_VERSION=1.31.14" >&2; exit 2; }
	mkdir -p $(SUC_OUTPUT)
	$(SUC_CMD) plans -version $(SUC_VERSION) -concurrency $(SUC_CONCURRENCY) -cordon=$(SUC_CORDON) \
	  -allow-loss=$(SUC_ALLOW_LOSS) -gate-timeout $(SUC_GATE_TIMEOUT) -etcd-bridge-image '$(SUC_ETCD_BRIDGE_IMAGE)' \
	  -runtime '$(SUC_RUNTIME)' -o $(SUC_OUTPUT)/system-upgrade-$(SUC_VERSION).yaml

# busybox-static (pkg/hostdeps, path system-upgrade).
suc-upgrade-image:
	@test -n "$(SUC_VERSION)" || { echo "give SUC_VERSION, e.g. make suc-upgrade-image SUC_VERSION=1.31.14" >&2; exit 2; }
	$(GO) run ./hack/ensure-host system-upgrade
	mkdir -p $(SUC_OUTPUT)
	$(SUC_CMD) upgrade-image -version $(SUC_VERSION) -packages $(SUC_PACKAGES) -kubectl $(SUC_KUBECTL) \
	  -o $(SUC_OUTPUT)/upgrade-$(SUC_VERSION).oci.tar

suc-test:
	$(GO) test ./deploy/system-upgrade/...

suc-sim:
	$(SUC_CMD) sim -nodes $(SUC_SIM_NODES) -concurrency $(SUC_SIM_CONCURRENCY) -scale $(SUC_SIM_SCALE) \
	  -fail $(SUC_SIM_FAIL) $(SUC_SIM_FLAGS)
