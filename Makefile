# stampede: run `make` for the list of targets.
.DEFAULT_GOAL := help
GO ?= go

.PHONY: help
help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# test: the main module's tests run last, through scripts/gotest.sh, so that
# the time each package took ends the output (slowest first).
# deploy/helm/chartcheck, a module of its own (Helm's SDK and the Kubernetes
# API types stay out of go.mod), renders the Helm chart and checks it; its
# first build compiles Helm and Kubernetes' modules (minutes: figures in
# deploy/helm/README.md), later ones take seconds.
TESTFLAGS = -race -count=1 -timeout 9m
# TESTPKGS lists the packages whose tests take longest first: go test starts
# test binaries in the order named, two (GOMAXPROCS) at a time, so the long
# ones overlap instead of ending the run one after another. ./... adds the
# rest; a package named twice runs once.
# TESTGOFLAGS adds -trimpath for the tests and the binaries they build: the
# build cache then serves a checkout, and the copies of the sources the
# run-local tests build from, whatever directory they are in (without it a
# fresh clone compiles every package again).
TESTGOFLAGS = $(strip $(GOFLAGS) -trimpath)
TESTPKGS = ./scripts/ ./deploy/ ./internal/loadgen/scenario/ ./internal/torture/ ./internal/catalog/ \
	./internal/lockx/ ./cmd/api/ ./internal/cachex/ ./cmd/torture/ ./...
# test-build: the tests that run the project's commands build them (go build,
# without -race) several at once: built here first, they find every package
# in the build cache instead of compiling the same ones side by side, which
# on a cold cache and a busy machine took local.sh start past its 5 minutes.
.PHONY: test-build
test-build: ## build every package once as the tests' own builds do (-trimpath, no -race), before make test's go test
	GOFLAGS='$(TESTGOFLAGS)' $(GO) build ./...

.PHONY: test
test: jaeger test-build ## go vet, then every test with the race detector against real Redis and Postgres, then each package's time (builds Jaeger first: make jaeger)
	$(GO) vet ./...
	cd bench && $(GO) vet ./... && $(GO) test -count=1 ./cmd/...
	cd deploy/helm/chartcheck && $(GO) vet ./... && $(GO) test -count=1 ./...
	GOFLAGS='$(TESTGOFLAGS)' GO=$(GO) bash scripts/gotest.sh $(TESTFLAGS) $(TESTPKGS)

# test-under-load: make test's go test with one busy process per core beside
# it (scripts/test-under-load.sh), COUNT times, to see what a busy machine
# does to the suite.
PKG ?= $(TESTPKGS)
.PHONY: test-under-load
test-under-load: COUNT ?= 1
test-under-load: jaeger test-build ## make test's go test with a CPU hog per core beside it (PKG=./..., COUNT=1 runs); a line per run, fails if one did
	GOFLAGS='$(TESTGOFLAGS)' PKG='$(PKG)' COUNT=$(COUNT) TESTFLAGS='$(TESTFLAGS)' GO=$(GO) bash scripts/test-under-load.sh

.PHONY: test-short
test-short: ## the tests that need no servers (go test -short)
	$(GO) test -short -count=1 ./...

DURATION ?= 2m
.PHONY: copy-check
copy-check: ## copy cachex, lockx and redistest into a fresh module with go-redis v9.22.0 (GOREDIS) and run go vet and their tests there
	bash scripts/copy-check.sh

.PHONY: torture
torture: ## the fault-injection checker: lock and reserve workloads against real servers (DURATION=2m, SEED=random)
	$(GO) run ./cmd/torture -duration $(DURATION) $(if $(SEED),-seed $(SEED))

.PHONY: dashboards
dashboards: ## regenerate the Grafana dashboards in dashboards/generated from the Go definitions (commit the result)
	$(GO) run ./dashboards/cmd/gendashboards

# up, up-minimal: the two compose variants bind the same host ports, so each
# stops the other first; both pull fresh base images (a stale cached one can
# be too old for go.mod) and wait until every service is healthy.
.PHONY: up
up: ## the live demo in Docker (compose.yaml): API x2, load, Prometheus (:9090), Grafana (:3000); stops the minimal variant, pulls, builds, waits until healthy
	docker compose -f compose.minimal.yaml down -v --remove-orphans
	docker compose -f compose.yaml pull --ignore-buildable
	docker compose -f compose.yaml build --pull
	docker compose -f compose.yaml up -d --wait
	@echo "Grafana http://127.0.0.1:3000  Prometheus http://127.0.0.1:9090  API http://127.0.0.1:8080 and :8081  loadgen http://127.0.0.1:9102/metrics"

.PHONY: up-minimal
up-minimal: ## the demo for small laptops (compose.minimal.yaml): one API, a cache and a lock Redis, a fifth of the catalog; stops the full variant first
	docker compose -f compose.yaml down -v --remove-orphans
	docker compose -f compose.minimal.yaml pull --ignore-buildable
	docker compose -f compose.minimal.yaml build --pull
	docker compose -f compose.minimal.yaml up -d --wait
	@echo "Grafana http://127.0.0.1:3000  Prometheus http://127.0.0.1:9090  API http://127.0.0.1:8080  loadgen http://127.0.0.1:9102/metrics"

.PHONY: down
down: ## stop both demo variants and drop their data
	docker compose -f compose.yaml down -v --remove-orphans
	docker compose -f compose.minimal.yaml down -v --remove-orphans

# jaeger: Jaeger v2 (an OpenTelemetry Collector distribution) with only what
# the project uses: the OTLP receiver, the batch processor, the memory
# storage and the query service (tools/jaeger/build.sh; tools/jaeger/README.md
# says how and why). The release is tools/jaeger/go.mod's, a module of its
# own so that the main go.mod stays lean, built with the release's own
# dependency versions. Cold (empty module and build caches) on a busy 2-core
# machine it took 207 to 792 s (165 to 190 s of CPU), 26 to 39% of the time
# and 32 to 34% of the CPU time the full distribution took right beside it
# (750 to 2265 s, 505 to 564 s of CPU; 315 s on the quiet machine); after
# that, seconds. Measured with
#   GOFLAGS=-modcacherw GOMODCACHE=$(mktemp -d) GOCACHE=$(mktemp -d) /usr/bin/time -v make jaeger
# A module build has no UI assets: the query API works, the UI page is a
# placeholder (compose's Jaeger image has the UI).
JAEGER_BIN ?= .tools/bin/jaeger
.PHONY: jaeger
jaeger: ## build Jaeger (traces; OTLP in, memory storage, query API) into .tools/bin/jaeger for run-local and the tests
	GO=$(GO) bash tools/jaeger/build.sh $(abspath $(JAEGER_BIN))
	@echo "built $(JAEGER_BIN) (Jaeger $$(sed -n 's|^require github.com/jaegertracing/jaeger \(v[0-9.]*\)$$|\1|p' tools/jaeger/go.mod), memory storage only)"

.PHONY: run-local
run-local: ## the stack without Docker: starts 4 Redis of its own on free ports (addresses in .run/env), the API on :8080, Jaeger if built (make jaeger; JAEGER=1 builds it first, JAEGER=0 leaves it out) and Prometheus on :9090 if installed; migrates and seeds db stampede; DEMO=1 also runs the demo load (metrics on :9102)
	$(if $(DEMO),DEMO=$(DEMO) )$(if $(JAEGER),JAEGER=$(JAEGER) )bash scripts/local.sh start

.PHONY: stop-local
stop-local: ## stop what run-local started (the API, experiment 5's near-cache API, the demo load, Jaeger, Prometheus and the Redis servers recorded in .run/)
	bash scripts/local.sh stop

# experiments: the guided experiments' commands as docs/experiments shows them,
# writing into EXPERIMENTS_DIR (the committed references unless set;
# TestExperimentCommandsParse keeps the two in step). loadgen reads the
# addresses make run-local wrote to $(RUN_DIR)/env: the API (LOADGEN_TARGET),
# its own /metrics listener (LOADGEN_METRICS_ADDR, the address run-local's
# Prometheus scrapes) and Jaeger (JAEGER_URL), unless the environment sets
# them. CONDITIONS labels the reports (how busy the machine was).
RUN_DIR ?= .run
EXPERIMENTS_DIR ?= docs/experiments
# Experiment 5's second API, the near cache on (scripts/local.sh near;
# make stop-local stops it).
NEAR_HTTP_ADDR ?= 127.0.0.1:8081
runenv = $(shell sed -n 's/^$(1)=//p' $(RUN_DIR)/env 2>/dev/null)
LOADGEN = $(GO) run ./cmd/loadgen -admin-token local-admin
.PHONY: experiments
experiments: export LOADGEN_TARGET ?= $(call runenv,LOADGEN_TARGET)
experiments: export LOADGEN_METRICS_ADDR ?= $(call runenv,LOADGEN_METRICS_ADDR)
experiments: export JAEGER_URL ?= $(call runenv,JAEGER_URL)
experiments: export LOADGEN_CONDITIONS ?= $(CONDITIONS)
experiments: export LOADGEN_NEAR_TARGET ?= http://$(NEAR_HTTP_ADDR)
experiments: export REDIS_URL ?= $(call runenv,REDIS_URL)
experiments: ## rerun the five guided experiments against make run-local into EXPERIMENTS_DIR (default docs/experiments: the committed reports; ~12 min)
	$(LOADGEN) -rate 200 -phases ttl,xfetch:1,xfetch:0.5 -phase-duration 60s -report-dir $(EXPERIMENTS_DIR)/01-stampede stampede
	$(LOADGEN) -rate 20 -duration 30s -skus 1,3,4,5,6,7,8,9,10,11 -stock 20 -pause-percent 5 -pause-ms 6000 -report-dir $(EXPERIMENTS_DIR)/02-lost-lock lostlock
	$(LOADGEN) -rate 200 -duration 90s -outage-at 30s -outage-for 30s -report-dir $(EXPERIMENTS_DIR)/03-redis-outage browse
	$(LOADGEN) -rate 200 -phases ttl,xfetch:1 -phase-duration 30s -report-dir $(EXPERIMENTS_DIR)/04-trace-a-stampede stampede
	NEAR_HTTP_ADDR=$(NEAR_HTTP_ADDR) bash scripts/local.sh near
	$(LOADGEN) -rate 200 -phases ttl,xfetch:1 -phase-duration 60s -report-dir $(EXPERIMENTS_DIR)/05-near-cache near

# experiments-busy: the experiments with one CPU hog per core beside them
# (scripts/with-hogs.sh), as on a laptop running other work; the reports say
# so. experiments-quiet: the same on a quiet machine; it refuses to start
# while the 1-minute load average is above half the cores, so a report
# labelled quiet was measured quiet.
.PHONY: experiments-busy
experiments-busy: ## make experiments beside one CPU hog per core; the reports are labelled busy
	bash scripts/with-hogs.sh $(MAKE) --no-print-directory experiments CONDITIONS="busy: $$(nproc) CPU hogs beside the run, one per core (make experiments-busy); load average $$(cut -d' ' -f1 /proc/loadavg) on $$(nproc) cores at the start"

.PHONY: experiments-quiet
experiments-quiet: ## make experiments on a quiet machine (refuses while the load average is above half the cores); the reports are labelled quiet
	@awk -v cores=$$(nproc) '{ if ($$1 > cores / 2) { printf "experiments-quiet: load average %s on %d cores: not quiet; stop other work first (or run make experiments-busy)\n", $$1, cores; exit 1 } }' /proc/loadavg
	$(MAKE) --no-print-directory experiments CONDITIONS="quiet: load average $$(cut -d' ' -f1 /proc/loadavg) on $$(nproc) cores at the start (make experiments-quiet)"

.PHONY: lint
lint: ## gofmt check and go vet
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# bench: COUNT rounds of every benchmark, one `go test -count 1` per round, so
# that the sides of each comparison alternate over the run and a burst of
# load on the machine hits both alike. A failed round adds a FAIL line, on
# which benchtable fails.
BENCHTIME ?= 1s
BENCHFLAGS = -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -count 1

.PHONY: bench
bench: COUNT ?= 3
bench: ## benchmarks of cachex and lockx vs go-redis and peer libraries, as a Markdown table (BENCHTIME=1s COUNT=3)
	@out="$$(mktemp)"; trap 'rm -f "$$out"' EXIT; \
	i=1; while [ $$i -le $(COUNT) ]; do \
		echo "== round $$i of $(COUNT)" >&2; \
		{ $(GO) test $(BENCHFLAGS) ./internal/cachex/ ./internal/lockx/ 2>&1 || echo "FAIL: go test ./internal/cachex/ ./internal/lockx/"; } | tee -a "$$out" >&2; \
		{ (cd bench && $(GO) test $(BENCHFLAGS) ./...) 2>&1 || echo "FAIL: go test ./... in bench/"; } | tee -a "$$out" >&2; \
		i=$$((i + 1)); \
	done; \
	cd bench && $(GO) run ./cmd/benchtable < "$$out"

.PHONY: bench-lock-scripts
bench-lock-scripts: ## what each step of a lock costs the Redis server (redis-benchmark, INFO commandstats), as a Markdown table (N=1000000 calls a step)
	bash bench/lockscripts.sh
