# Conveyor developer targets. `make test` and `make dev` work on a fresh machine:
# they build what they need (Kubernetes test binaries, controller-gen, helm) into
# ~/.cache/conveyor first.

# One cgo setting for every build, test, vet and tool build: Go keys its build cache on it,
# so a second setting compiles the whole tree (and its dependencies) a second time.
export CGO_ENABLED := 0

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c

BIN ?= bin
TOOLS = $(shell hack/build-test-binaries.sh tools)
CONTROLLER_GEN = $(TOOLS)/controller-gen

.PHONY: all
all: build

.PHONY: generate
generate:
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths="./api/..."

.PHONY: manifests
manifests:
	$(CONTROLLER_GEN) rbac:roleName=conveyor-operator crd paths="./api/..." paths="./controllers/..." \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	hack/sync-chart-crds.sh

.PHONY: build
build:
	CGO_ENABLED=0 go build -trimpath -o $(BIN)/conveyor .
	CGO_ENABLED=0 go build -trimpath -o $(BIN)/conveyor-worker ./runtime/cmd/conveyor-worker

# The main job: a local Kubernetes cluster (no Docker) with Kafka, Conveyor installed by
# its Helm chart and config/samples running; prints what runs and how to look at it.
# Ctrl-C stops everything. Needs root (pods run in their own mount namespaces).
DEV_DIR ?= /tmp/conveyor-dev
.PHONY: dev
dev:
	@echo "==> building $(BIN)/localcluster (the first build compiles the Kubernetes client libraries: minutes)"
	go build -o $(BIN)/localcluster ./test/localcluster/cmd/localcluster
	exec $(BIN)/localcluster dev --dir $(DEV_DIR) $(DEV_FLAGS)

.PHONY: envtest-assets
envtest-assets:
	hack/build-test-binaries.sh all

.PHONY: test
test:
	hack/test.sh

# Benchmarks (not part of `make test`): one figure per line,
# "conveyor-bench: NAME=VALUE"; read them against the targets in the issues.
.PHONY: bench
bench:
	go run ./test/bench
	CONVEYOR_PG_BIN=$$(hack/postgres.sh) go run ./test/bench/postgres
	CONVEYOR_MARIADB_BIN=$$(hack/mariadb.sh) go run ./test/bench/mysql
	go run ./test/bench/cluster
	CONVEYOR_REDIS_SERVER=$$(hack/redis.sh) CONVEYOR_VERSITYGW=$$(hack/versitygw.sh) go run ./test/bench/sinks
	CONVEYOR_SCHEMA_REGISTRY=$$(hack/schema-registry.sh) CONVEYOR_VERSITYGW=$$(hack/versitygw.sh) go run ./test/bench/schemas
	go run ./test/bench/elasticsearch
	go run ./test/bench/share
	KUBEBUILDER_ASSETS=$$(hack/build-test-binaries.sh all) go run ./test/bench/operator
	KUBEBUILDER_ASSETS=$$(hack/build-test-binaries.sh all) go run ./test/bench/keda

.PHONY: lint
lint:
	go vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }

.PHONY: verify-generated
verify-generated: generate manifests 
	@go mod tidy -diff >/dev/null || { echo "go.mod or go.sum is not tidy: run 'go mod tidy' and commit"; exit 1; }
	@(cd test/kedascale && go mod tidy -diff >/dev/null) || { echo "test/kedascale/go.mod is not tidy (it follows the main module through its replace line): run 'cd test/kedascale && go mod tidy' and commit"; exit 1; }
	@git diff --exit-code --stat -- . || { echo "generated files are stale: run 'make generate manifests' and commit"; exit 1; }
	@test -z "$$(git status --porcelain --untracked-files=all -- api config charts)" || { git status --porcelain -- api config charts; echo "generated files are untracked: commit them"; exit 1; }
