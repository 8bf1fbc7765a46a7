# Targets of the Cluster API in-place update extension (owned by
# deploy/cluster-api/; see deploy/cluster-api/README.md). It is a Go module
# of its own: CAPI's dependencies stay out of the top go.mod.
#   make unit-cluster-api   vet and unit-test the extension (part of make verify, which CI runs after make test)
#   make capi-images [CAPI_NAMESPACES=default] [CAPI_UPGRADE_IMAGE=...] [CAPI_SETTINGS=gateTimeout=120,jobTTL=30]
#                           CAPI v1.13.6's core, kubeadm bootstrap and control-plane managers and CAPD (test
#                           v1.13.8) built from the Go module proxy (cached in $(KC_CACHE)/cluster-api/), the
#                           extension, their OCI layout tars in $(CAPI_OUTPUT)/images and one manifest
#                           $(CAPI_OUTPUT)/cluster-api.yaml with a self-signed CA's certificates (not in make test)

CAPI_OUTPUT ?= _output/cluster-api
CAPI_NAMESPACES ?= default
CAPI_UPGRADE_IMAGE ?=
# The ExtensionConfig's settings, KEY=VALUE separated by commas.
CAPI_SETTINGS ?=
capi_comma := ,

.PHONY: unit-cluster-api capi-images
unit-cluster-api:
	cd deploy/cluster-api && $(GO) vet ./... && $(GO) test -count=1 -timeout 10m ./...

capi-images:
	mkdir -p $(CAPI_OUTPUT)
	cd deploy/cluster-api && $(GO) run ./cmd/kc-capi-manifests -out $(abspath $(CAPI_OUTPUT)) \
		$(foreach ns,$(subst $(capi_comma), ,$(CAPI_NAMESPACES)),-namespace $(ns)) \
		$(if $(CAPI_UPGRADE_IMAGE),-upgrade-image $(CAPI_UPGRADE_IMAGE)) \
		$(foreach s,$(subst $(capi_comma), ,$(CAPI_SETTINGS)),-setting $(s))
