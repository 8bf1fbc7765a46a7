# The node's container runtime built from the Go module proxy (owned by
# runtime/; see docs/runtime.md):
#   make runtime                                        every component, into _output/runtime/<name>-<version>/
#   make runtime RUNTIME_COMPONENTS=containerd@1.7.35,runc@1.5.3
#   make runtime-verify RUNTIME_COMPONENTS=runc@1.5.3   rebuild with an empty build cache, compare sha256
# and packaged like Kubernetes (cmd/build-packages -set runtime, the same
# description in pkg/layout, side by side under /usr/local/runtime/<component>/<version>,
# selected with runtime-select):
#   make runtime-rpm                                    make runtime, then its RPMs into $(RUNTIME_RPM_OUTPUT)
#   make runtime-deb                                    make runtime, then its .debs into $(RUNTIME_DEB_OUTPUT)
#   make runtime-deb-lint                               lintian on them: no error, no warning
#   make runtime-packages                               both
# RUNTIME_COMPONENTS chooses the components for both steps.

RUNTIME_COMPONENTS ?= all

RUNTIME_OUTPUT ?= _output/runtime
RUNTIME_RPM_OUTPUT ?= _output/runtime-rpms
RUNTIME_DEB_OUTPUT ?= _output/runtime-debs

.PHONY: runtime runtime-verify runtime-rpm runtime-deb runtime-deb-lint runtime-packages
runtime:
	$(GO) run ./runtime/cmd/build-runtime build -components "$(RUNTIME_COMPONENTS)" -output $(RUNTIME_OUTPUT)

runtime-verify:
	$(GO) run ./runtime/cmd/build-runtime verify -components "$(RUNTIME_COMPONENTS)"

runtime-rpm: rpm-deps runtime
	$(GO) run ./cmd/build-packages -set runtime -format rpm -input $(RUNTIME_OUTPUT) -output $(RUNTIME_RPM_OUTPUT) \
	  -versions "$(RUNTIME_COMPONENTS)" -source-date-epoch $(SOURCE_DATE_EPOCH) -jobs $(RPM_JOBS) $(if $(RPM_PAYLOAD),-payload $(RPM_PAYLOAD))

runtime-deb: deb-deps runtime
	$(GO) run ./cmd/build-packages -set runtime -format deb -input $(RUNTIME_OUTPUT) -output $(RUNTIME_DEB_OUTPUT) \
	  -versions "$(RUNTIME_COMPONENTS)" -source-date-epoch $(SOURCE_DATE_EPOCH) -jobs $(DEB_JOBS)

runtime-deb-lint: runtime-deb
	lintian --fail-on error,warning $(RUNTIME_DEB_OUTPUT)/*.deb

runtime-packages: runtime-rpm runtime-deb
