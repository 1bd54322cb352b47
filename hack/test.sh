#!/usr/bin/env bash
# Runs every test tier and prints how long each took:
#   assets    build (or find cached) Kubernetes test binaries and tools
#   unit      pure tests and runtime tests against the embedded Kafka (kfake)
#   fuzz      each go test -fuzz target for FUZZTIME (4s)
#   cluster   conveyor-worker processes forming one cluster on kfake (test/cluster)
#   envtest   API behaviour and reconcilers against a real kube-apiserver
#   kedascale the derived ScaledObjects evaluated with KEDA's own scaler and
#             formula code against kfake (test/kedascale, a module of its own; it
#             shares its build with hack/build-keda.sh, which builds KEDA there)
#   e2e       the local cluster with real kubectl, helm and kcat; test/e2e/autoscale
#             runs it in a network namespace with real KEDA and the HPA
#   chaos     one fault at a time while records stream into PostgreSQL (test/chaos)
# Arguments name the tiers to run (hack/test.sh chaos e2e); none runs them all. The
# assets tier always runs: the others need what it exports.
set -euo pipefail
cd "$(dirname "$0")/.."
# The same cgo setting as the Makefile and the hack/ builds: one build cache for all.
export CGO_ENABLED=0

declare -a TIMINGS=()
declare -A ONLY=()
for t in "$@"; do ONLY[$t]=1; done
tier() {
  local name=$1; shift
  if (( ${#ONLY[@]} )) && [[ $name != assets && -z ${ONLY[$name]:-} ]]; then return 0; fi
  local start=$SECONDS
  echo "=== tier $name"
  "$@"
  TIMINGS+=("$name $((SECONDS - start))s")
}
report() {
  echo "=== tier timings"
  for t in "${TIMINGS[@]}"; do echo "  $t"; done
}
trap report EXIT

GOTEST_FLAGS=${GOTEST_FLAGS:-}
assets() {
  hack/install-deps.sh
  # PostgreSQL server binaries for the database connector tests (they start
  # their own server as an unprivileged user, see hack/postgres.sh).
  CONVEYOR_PG_BIN=$(hack/postgres.sh)
  export CONVEYOR_PG_BIN
  echo "CONVEYOR_PG_BIN=$CONVEYOR_PG_BIN"
  # MariaDB for the MySQL connector tests (same pattern, see hack/mariadb.sh).
  CONVEYOR_MARIADB_BIN=$(hack/mariadb.sh)
  export CONVEYOR_MARIADB_BIN
  echo "CONVEYOR_MARIADB_BIN=$CONVEYOR_MARIADB_BIN"
  CONVEYOR_REDIS_SERVER=$(hack/redis.sh)
  export CONVEYOR_REDIS_SERVER
  # The other servers are Go builds of modules of their own (first time: minutes each). They
  # run side by side with the Kubernetes and KEDA builds below: on a cold machine the builds
  # wait on module downloads and single-threaded links, and a second build fills those gaps.
  #   versitygw   the S3 server of the S3 sink's tests (hack/versitygw.sh)
  #   zincsearch  the Elasticsearch-compatible server of the Elasticsearch sink's smoke test
  #   prometheus  the server the e2e tier runs (Kubernetes discovery; Debian's has none)
  #   schema-registry  the schema registry of the converters' tests (hack/schema-registry.sh)
  local out s; out=$(mktemp -d)
  local -A pids=()
  for s in versitygw zincsearch prometheus schema-registry; do
    timed "hack/$s.sh" >"$out/$s" &
    pids[$s]=$!
  done
  KUBEBUILDER_ASSETS=$(timed hack/build-test-binaries.sh all)
  export KUBEBUILDER_ASSETS
  echo "KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS"
  # KEDA's operator and metrics API server, for test/e2e/autoscale and `make dev`.
  echo "KEDA=$(timed hack/build-keda.sh)"
  for s in versitygw zincsearch prometheus schema-registry; do
    wait "${pids[$s]}" || { echo "assets: hack/$s.sh failed" >&2; return 1; }
  done
  CONVEYOR_VERSITYGW=$(<"$out/versitygw") CONVEYOR_ZINCSEARCH=$(<"$out/zincsearch")
  CONVEYOR_PROMETHEUS=$(<"$out/prometheus") CONVEYOR_SCHEMA_REGISTRY=$(<"$out/schema-registry")
  rm -rf "$out"
  export CONVEYOR_VERSITYGW CONVEYOR_ZINCSEARCH CONVEYOR_PROMETHEUS CONVEYOR_SCHEMA_REGISTRY
  echo "CONVEYOR_REDIS_SERVER=$CONVEYOR_REDIS_SERVER CONVEYOR_VERSITYGW=$CONVEYOR_VERSITYGW"
  echo "CONVEYOR_ZINCSEARCH=$CONVEYOR_ZINCSEARCH"
  echo "CONVEYOR_PROMETHEUS=$CONVEYOR_PROMETHEUS CONVEYOR_SCHEMA_REGISTRY=$CONVEYOR_SCHEMA_REGISTRY"
}
# timed CMD...: runs CMD and, when it took more than a few seconds (a build, not a cache hit),
# says how long on stderr: the cold-machine figures of each step.
timed() {
  local start=$SECONDS rc=0
  "$@" || rc=$?
  (( SECONDS - start > 3 )) && echo "assets: $1 took $((SECONDS - start))s" >&2
  return $rc
}
pkgs_of() { go list "$@" 2>/dev/null || true; }

tier assets assets
unit_pkgs=$(go list ./... | grep -Ev '/test/(envtest|e2e|cluster|chaos|adversarial)(/|$)')
tier unit go test $GOTEST_FLAGS -count=1 $unit_pkgs
# Fuzz targets, a few seconds each (corpus in each package's testdata/fuzz).
fuzz() {
  local t
  for t in runtime/rest:FuzzRequestDecoding runtime/properties:FuzzParse runtime/configprovider:FuzzPlaceholders; do
    go test -run '^$' -fuzz "^${t##*:}\$" -fuzztime="${FUZZTIME:-4s}" "./${t%%:*}"
  done
}
tier fuzz fuzz
cluster_pkgs=$(pkgs_of ./test/cluster/...)
if [[ -n "$cluster_pkgs" ]]; then tier cluster go test $GOTEST_FLAGS -count=1 -p 1 -timeout 15m $cluster_pkgs; fi
envtest_pkgs=$(pkgs_of ./test/envtest/...)
# -p 4: each package runs its own kube-apiserver and waits on resyncs more than it computes
# (test/envtest/kafkaconnector: 173 s of wall time for 90 s of CPU), so the other packages
# run beside the longest one.
if [[ -n "$envtest_pkgs" ]]; then tier envtest go test $GOTEST_FLAGS -count=1 -p 4 $envtest_pkgs; fi
# -trimpath: the flags hack/build-keda.sh builds KEDA with in this module, so the scalers
# compiled for KEDA's binaries are reused here.
kedascale() { (cd test/kedascale && go test -trimpath $GOTEST_FLAGS -count=1 -timeout 20m ./...); }
tier kedascale kedascale
e2e_pkgs=$(pkgs_of ./test/e2e/...)
# -p 2: test/e2e and test/e2e/autoscale each run a local cluster of their own (their own
# temporary folder, free ports, pod IPs; autoscale's in a network namespace) and mostly wait
# (KEDA's polling, the HPA, resyncs): side by side they take about the longer one's time
# (353 s one after the other, about 210 s side by side).
if [[ -n "$e2e_pkgs" ]]; then tier e2e go test $GOTEST_FLAGS -count=1 -p 2 -timeout 20m $e2e_pkgs; fi
adversarial_pkgs=$(pkgs_of ./test/adversarial/...)
# -v: the tests print what each attack tried and what refused it.
if [[ -n "$adversarial_pkgs" ]]; then tier adversarial go test $GOTEST_FLAGS -count=1 -p 1 -timeout 15m -v $adversarial_pkgs; fi
chaos_pkgs=$(pkgs_of ./test/chaos/...)
# -v: the scenarios print their figures (conveyor-chaos: NAME=VALUE).
if [[ -n "$chaos_pkgs" ]]; then tier chaos go test $GOTEST_FLAGS -count=1 -p 1 -timeout 10m -v $chaos_pkgs; fi
