# Targets of the RPM packaging (owned by rpm/); see rpm/README.md.
#   make rpm                        the four versions of `make` into $(RPM_OUTPUT)
#   make rpm RPM_VERSIONS=all       every version with a patch series (sets and minors work too)
#   make rpm RPM_VERSIONS=1.21.14   one version (kubernetes-unversioned is always built)
#   make rpm-reproducible           build twice, compare every sha256
#   make rpm-test                   quick tests on fake binaries (also part of `make test`)
#   make rpm-test-real              the same checks on the real harness output (minutes)
#   make rpm-releases               raise the release of every template whose content changed (rpm/releases.txt)

RPM_VERSIONS ?= 1.18.19 1.19.16 1.20.15 1.21.14
# Harness output: $(RPM_INPUT)/<ver>/{kubelet,kubeadm,kubectl}.
RPM_INPUT ?= _output
RPM_OUTPUT ?= _output/rpms
# The kubelet-compat CLI for the node packages: built from ./cmd/kubelet-compat
# unless set to a prebuilt binary.
RPM_KUBELET_COMPAT ?=
RPM_CLI := $(or $(RPM_KUBELET_COMPAT),_output/.rpm/kubelet-compat)
RPM_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
# rpm payload compression; empty: w2.xzdio, as EL's own packages. w6.xzdio
# makes the RPMs ~20% smaller for ~3x the CPU time. EL7 reads gzdio and xzdio only.
RPM_PAYLOAD ?=
# Every mtime and the build time inside the RPMs. Default: the commit time of
# HEAD, so rebuilding one commit gives byte-identical RPMs; outside git,
# 1577836800 (2020-01-01). An exported SOURCE_DATE_EPOCH wins.
ifeq ($(origin SOURCE_DATE_EPOCH),undefined)
SOURCE_DATE_EPOCH := $(shell git log -1 --format=%ct 2>/dev/null || echo 1577836800)
endif

.PHONY: rpm rpm-deps rpm-cli rpm-reproducible rpm-test rpm-test-real rpm-releases rpm-clean

# rpmbuild comes from Debian's rpm package here (pkg/hostdeps;
# build-packages checks it too); EL build hosts have rpm-build.
rpm-deps:
	$(GO) run ./hack/ensure-host rpm

rpm-cli:
ifeq ($(RPM_KUBELET_COMPAT),)
	@ls cmd/kubelet-compat/*.go >/dev/null 2>&1 || { \
	  echo "rpm: ./cmd/kubelet-compat does not exist yet, so there is no kubelet-compat CLI for the node packages;" >&2; \
	  echo "rpm: set RPM_KUBELET_COMPAT=/path/to/kubelet-compat to package a prebuilt one" >&2; exit 1; }
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -ldflags='-s -w -buildid=' -o $(RPM_CLI) ./cmd/kubelet-compat
endif

rpm: rpm-deps rpm-cli
	$(GO) run ./cmd/build-packages -format rpm -input $(RPM_INPUT) -output $(RPM_OUTPUT) \
	  -versions "$(RPM_VERSIONS)" -kubelet-compat $(RPM_CLI) \
	  -source-date-epoch $(SOURCE_DATE_EPOCH) -jobs $(RPM_JOBS) $(if $(RPM_PAYLOAD),-payload $(RPM_PAYLOAD))

# Builds a second time elsewhere and checks every RPM against the first build.
rpm-reproducible: rpm
	rm -rf $(RPM_OUTPUT).rebuild
	$(MAKE) --no-print-directory rpm RPM_OUTPUT=$(RPM_OUTPUT).rebuild SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH)
	cd $(RPM_OUTPUT) && sha256sum -c $(abspath $(RPM_OUTPUT).rebuild)/SHA256SUMS
	rm -rf $(RPM_OUTPUT).rebuild

rpm-test: rpm-deps
	$(GO) test ./rpm/...

rpm-test-real: rpm-deps rpm-cli
	RPM_TEST_REAL_INPUT=$(abspath $(RPM_INPUT)) RPM_TEST_REAL_CLI=$(abspath $(RPM_CLI)) \
	RPM_TEST_REAL_VERSIONS="$(RPM_VERSIONS)" \
	  $(GO) test -count=1 -timeout 90m -v -run TestRealHarnessOutput ./rpm/

# After a change of rpm/templates or pkg/layout: the build refuses content
# that rpm/releases.txt does not record. Commit the file it rewrites.
rpm-releases:
	$(GO) test -count=1 -run TestReleasesUpToDate ./rpm/ -update-releases

rpm-clean:
	rm -rf $(RPM_OUTPUT) _output/.rpm

