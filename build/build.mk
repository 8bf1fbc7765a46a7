# Targets of the build harness (owned by build/); see build/README.md.
#   make                                  the four versions (set "default"), patched, into _output/<ver>/
#   make build VERSIONS=1.21.14           one version
#   make build VERSIONS=all               every version with a patch series (sets: default, ci, all; pkg/matrix/matrix.json)
#   make build PATCHED=false              upstream as released, into _output/<ver>-unpatched/
#   make build BINARIES=kubelet,kube-apiserver
#   make verify-trees                     patch, run the tree's verify-boilerplate/verify-bazel on the series, build the kubelet and run the patched packages' tests, per version
#   make verify-upstream                  only the tree's verify-boilerplate/verify-bazel on the series (seconds)
#   make bench-trees [COUNT=5]            the sync loop's cost of kubeletcompat per tree: the series' BenchmarkSyncPodCompat
#                                         (SyncPod of an unchanged pod, kubeletcompat off and on), medians and their ratio

VERSIONS ?=
PATCHED ?= true
BINARIES ?= kubelet,kubeadm,kubectl

KCBUILD = $(GO) run ./build/cmd/kcbuild

.PHONY: build verify-trees verify-upstream bench-trees
build:
	$(KCBUILD) build -versions "$(VERSIONS)" -patched=$(PATCHED) -binaries "$(BINARIES)"

verify-trees:
	$(KCBUILD) verify-trees -versions "$(VERSIONS)"

verify-upstream:
	$(KCBUILD) verify-trees -checks-only -versions "$(VERSIONS)"

bench-trees:
	$(KCBUILD) bench-trees -versions "$(VERSIONS)" -count $${COUNT:-5}
