# The node's container runtime built from the Go module proxy (owned by
# runtime/; see docs/runtime.md):
#   make runtime                                        every component, into _output/runtime/<name>-<version>/
#   make runtime RUNTIME_COMPONENTS=containerd@1.7.35,runc@1.5.3
#   make runtime-verify RUNTIME_COMPONENTS=runc@1.5.3   rebuild with an empty build cache, compare sha256

RUNTIME_COMPONENTS ?= all

.PHONY: runtime runtime-verify
runtime:
	$(GO) run ./runtime/cmd/build-runtime build -components "$(RUNTIME_COMPONENTS)"

runtime-verify:
	$(GO) run ./runtime/cmd/build-runtime verify -components "$(RUNTIME_COMPONENTS)"
