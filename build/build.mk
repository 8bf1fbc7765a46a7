# Targets of the build harness (owned by build/); see build/README.md.
#   make                                  the four versions, patched, into _output/<ver>/
#   make build VERSIONS=1.21.14           one version
#   make build PATCHED=false              upstream as released, into _output/<ver>-unpatched/
#   make build BINARIES=kubelet,kube-apiserver
#   make verify-trees                     patch, build the kubelet and run the patched packages' tests, per version

VERSIONS ?=
PATCHED ?= true
BINARIES ?= kubelet,kubeadm,kubectl

KCBUILD = $(GO) run ./build/cmd/kcbuild

.PHONY: build verify-trees
build:
	$(KCBUILD) build -versions "$(VERSIONS)" -patched=$(PATCHED) -binaries "$(BINARIES)"

verify-trees:
	$(KCBUILD) verify-trees -versions "$(VERSIONS)"
