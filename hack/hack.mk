# Generators and verifiers (owned by hack/), and the test entry points.
#
# `make test` (CI's first step): formatting, unit tests (with the
# compat-file parser's and the sock_diag parser's fuzz seeds) and the
# runtime's patch series (generated, applying to their modules' source; the
# module zips, 21 MB for containerd v1.7.36 and v2.0.14-v2.4.2, come through the module cache);
# nothing in it needs a Kubernetes tree or an old Go toolchain, nor builds the runtime.
# `make verify` (CI's next step): go vet (every check, compiling every
# package again for its analysis), the Cluster API extension's module
# (deploy/cluster-api, vetted and tested on its own: controller-runtime and
# CAPI compiled cold alone take minutes), the race detector on the library (its
# dependencies compiled again with -race: over a minute cold, so out of the
# newcomer's `make test`), the tree-level checks, the library's build
# with the oldest supported tree's Go (go1.13.15, downloaded) and the
# staleness checks of everything generated (every pristine tree fetched,
# every minor's k8s.io/api compiled).

GO_PACKAGES := ./...

.PHONY: test verify verify-gofmt vet unit race verify-runtime-patches check-library verify-generated generate fuzz bench

test: deps verify-gofmt unit verify-runtime-patches

verify: deps vet unit-cluster-api race check-library verify-generated

# Debian packages the tests need (rpmbuild for the RPM tests, dpkg-deb and
# lintian for the .deb tests, patch for verify-patches, busybox for
# the upgrade image's chroot): pkg/hostdeps's lists,
# installed when missing.
.PHONY: deps
deps:
	$(GO) run ./hack/ensure-host rpm build deb system-upgrade

verify-gofmt:
	@bad=$$(git ls-files -co --exclude-standard '*.go' | xargs -r gofmt -l); \
	if [ -n "$$bad" ]; then echo "gofmt would change: $$bad (run gofmt -w)" >&2; exit 1; fi; \
	echo "gofmt: ok"

vet:
	$(GO) vet $(GO_PACKAGES)

# -vet=off: go vet's every check (make vet, a superset of the ones go test
# would run) is in make verify, which CI runs next; -ldflags=-w: no DWARF in
# the ~90 test binaries (a debugger is its only reader), which cuts their
# links. Both for make test's five minutes cold.
unit:
	$(GO) test -count=1 -vet=off -ldflags=-w -timeout 30m $(GO_PACKAGES)

race:
	$(GO) test -count=1 -race ./kubelet-compat/

# The runtime's patch series (runtime/patches; hack/runtimepatchgen) are what
# their fix sets generate and apply to their modules' source at the sums
# pkg/runtimebuild records, as `make runtime` applies them.
verify-runtime-patches:
	./hack/verify-runtime-patches

# The library is compiled into kubelet trees: prove it builds with their Go.
check-library:
	$(GO) run ./hack/check-library

# Generated files must match their generators' output.
verify-generated:
	./hack/verify-all

# Regenerate the v1.Container schemas (fast). The hash goldens come from real
# upstream trees and take long: make generate-hash-goldens.
generate:
	./hack/update-all

# Add a Kubernetes release, every generated part of it: make new-minor
# RELEASE=1.38.0 (hack/new-minor; docs/contributing.md, "Adding a minor").
.PHONY: new-minor
new-minor:
	@test -n "$(RELEASE)" || { echo "usage: make new-minor RELEASE=1.38.0" >&2; exit 2; }
	./hack/new-minor $(RELEASE)

.PHONY: generate-hash-goldens
generate-hash-goldens:
	$(GO) run ./hack/gen-hash-goldens

fuzz:
	$(GO) test ./kubelet-compat/ -run '^$$' -fuzz FuzzParse -fuzztime $${FUZZTIME:-60s}
	$(GO) test ./pkg/shimgroups/ -run '^$$' -fuzz FuzzParseUnixDiag -fuzztime $${FUZZTIME:-60s}

bench:
	$(GO) test ./kubelet-compat/ -run '^$$' -bench . -benchmem -count $${COUNT:-1}
