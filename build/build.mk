# Targets of the build harness (owned by build/).
.PHONY: build
build:
	@echo "build: not yet implemented" >&2; exit 1
