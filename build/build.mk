# Targets of the build harness (owned by build/).
.PHONY: build
build:
	@echo "build: not yet implemented" >&2; exit 1

# Recompute kubelet-compat/testdata/hashes.golden inside every real upstream
# tree of build/matrix (slow: toolchains, modules and compiles; one tree at a
# time). HASH_GOLDEN_VERSIONS=1.18.19,1.21 regenerates only those minors.
HASH_GOLDEN_VERSIONS ?=
.PHONY: hash-goldens
hash-goldens:
	$(GO) run ./hack/gen-hash-goldens -versions '$(HASH_GOLDEN_VERSIONS)'

# Cheap and offline; `make test` runs the same check as a Go test.
.PHONY: verify-hash-goldens
verify-hash-goldens:
	$(GO) run ./hack/verify-hash-goldens
