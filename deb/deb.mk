# Targets of the Debian packaging (owned by deb/); see rpm/README.md.
#   make deb                        the four versions of `make` into $(DEB_OUTPUT)
#   make deb DEB_VERSIONS=all       every version with a patch series (sets and minors work too)
#   make deb-lint                   lintian on $(DEB_OUTPUT): no error, no warning (overrides justified in the packages)
#   make deb-reproducible           build twice, compare every sha256
#   make deb-test                   quick tests on fake binaries, with cmd/build-packages' (also part of `make test`)
#   make deb-test-real              install into a debootstrapped Debian root with dpkg: two versions, select, remove (root)
#   make deb-releases               raise the revision of every group whose content changed (deb/releases.txt)
#   make packages                   make rpm and make deb

DEB_VERSIONS ?= 1.18.19 1.19.16 1.20.15 1.21.14
DEB_INPUT ?= $(RPM_INPUT)
DEB_OUTPUT ?= _output/debs
DEB_JOBS ?= $(shell nproc 2>/dev/null || echo 1)

.PHONY: deb deb-deps deb-lint deb-reproducible deb-test deb-releases deb-clean packages

# dpkg-deb (Essential), lintian (pkg/hostdeps, path deb).
deb-deps:
	$(GO) run ./hack/ensure-host deb

# The kubelet-compat CLI is the one `make rpm` packages (rpm-cli).
deb: deb-deps rpm-cli
	$(GO) run ./cmd/build-packages -format deb -input $(DEB_INPUT) -output $(DEB_OUTPUT) \
	  -versions "$(DEB_VERSIONS)" -kubelet-compat $(RPM_CLI) \
	  -source-date-epoch $(SOURCE_DATE_EPOCH) -jobs $(DEB_JOBS)

deb-lint: deb
	lintian --fail-on error,warning $(DEB_OUTPUT)/*.deb

deb-reproducible: deb
	rm -rf $(DEB_OUTPUT).rebuild
	$(MAKE) --no-print-directory deb DEB_OUTPUT=$(DEB_OUTPUT).rebuild DEB_JOBS=1 SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH)
	cd $(DEB_OUTPUT) && sha256sum -c $(abspath $(DEB_OUTPUT).rebuild)/SHA256SUMS
	rm -rf $(DEB_OUTPUT).rebuild

# With the command's tests: the golden sha256s of both formats' packages
# of fake binaries (cmd/build-packages/testdata/SHA256SUMS), its flags,
# and an interrupt stopping its dpkg-debs.
deb-test: deb-deps rpm-deps
	$(GO) test ./deb/... ./pkg/layout/... ./pkg/packaging/... ./cmd/build-packages/...

deb-releases:
	$(GO) test -count=1 -run TestReleasesUpToDate ./deb/ -update-releases

deb-clean:
	rm -rf $(DEB_OUTPUT)

packages: rpm deb


# Installs the .debs with dpkg into a Debian root that debootstrap makes
# (cached under $(KC_CACHE)/deb-test-real): two versions side by side and
# kubernetes-unversioned, kubernetes-select both ways in both modes, the
# other version removed, the selected one refused. Fake binaries unless
# DEB_TEST_REAL_INPUT names a harness output with two versions
# (DEB_TEST_REAL_VERSIONS="1.20.15 1.21.14"; the CLI of rpm-cli). As root.
DEB_TEST_REAL_INPUT ?=
DEB_TEST_REAL_VERSIONS ?=
.PHONY: deb-test-real
deb-test-real: $(if $(DEB_TEST_REAL_INPUT),rpm-cli)
	$(GO) run ./hack/ensure-host deb deb-test-real
	DEB_TEST_REAL=1 $(if $(DEB_TEST_REAL_INPUT),DEB_TEST_REAL_INPUT=$(abspath $(DEB_TEST_REAL_INPUT)) DEB_TEST_REAL_CLI=$(abspath $(RPM_CLI)) DEB_TEST_REAL_VERSIONS="$(DEB_TEST_REAL_VERSIONS)") \
	  $(GO) test -count=1 -timeout 60m -v -run TestRealDebianRoot ./deb/
