# Targets of the Cluster API in-place update extension (owned by
# deploy/cluster-api/; see deploy/cluster-api/README.md). It is a Go module
# of its own: CAPI's dependencies stay out of the top go.mod.
#   make unit-cluster-api   vet and unit-test the extension (part of make verify, which CI runs after make test)

.PHONY: unit-cluster-api
unit-cluster-api:
	cd deploy/cluster-api && $(GO) vet ./... && $(GO) test -count=1 -timeout 10m ./...
