# Generators and verifiers (owned by hack/).
.PHONY: test
test:
	$(GO) test ./...
