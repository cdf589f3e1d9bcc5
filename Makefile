# stampede: run `make` for the list of targets.
.DEFAULT_GOAL := help
GO ?= go

.PHONY: help
help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: test
test: ## go vet, then every test with the race detector against real Redis and Postgres
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 9m ./...

.PHONY: test-short
test-short: ## the tests that need no servers (go test -short)
	$(GO) test -short -count=1 ./...

.PHONY: lint
lint: ## gofmt check and go vet
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
