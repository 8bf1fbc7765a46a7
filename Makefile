# kubelet-compat: the main job (`make`) builds every supported Kubernetes
# version with the compat patches; `make test` runs the unit tests and the
# checks that need no Kubernetes tree, `make verify` the tree-level checks
# (both in CI).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := all

# Our go.mod needs Go 1.27 (k8s.io/api v0.38): go1.27.3, fetched by the go
# command from the module proxy, is the one newer Go the project runs; it
# never switches by itself.
export GOTOOLCHAIN := go1.27.3
export GOFLAGS := -mod=mod -buildvcs=false
# Everything fetched or built outside the work tree lives here (toolchains,
# module cache of the Kubernetes trees, pristine sources).
export KC_CACHE ?= $(HOME)/.cache/kubelet-compat

GO ?= go

.PHONY: all test
all: build

# The pieces keep their own targets next to their code.
include build/build.mk
include rpm/rpm.mk
include deb/deb.mk
include e2e/e2e.mk
include deploy/system-upgrade/system-upgrade.mk
include deploy/cluster-api/cluster-api.mk
include runtime/runtime.mk
include hack/hack.mk
