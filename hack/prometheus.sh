#!/usr/bin/env bash
# Builds the Prometheus server that the e2e tier runs as a pod (it discovers the worker pods
# through the API server, scrapes them and evaluates the chart's alert rules) into a versioned
# cache folder, and prints the binary's path. Does nothing when it is already there.
#
# Debian's prometheus package (2.42; test/chart uses its promtool) has no Kubernetes service
# discovery: Debian removed it ("Kubernetes support has been completely removed", its
# NEWS.Debian). So the server is built from the Go module proxy with Prometheus' own build tags
# that keep only the Kubernetes discovery (remove_all_sd,enable_kubernetes_sd): the other
# discoveries' cloud SDKs are not compiled. It is built in a scratch module of its own that
# requires only Prometheus, so minimal version selection takes Prometheus' own dependency
# versions. (test/kedascale's module links the same Prometheus version through KEDA, but there
# github.com/gobwas/glob v1.0.0 breaks the OpenTelemetry collector code the server links.)
set -euo pipefail

PROMETHEUS_MODULE_VERSION="${PROMETHEUS_MODULE_VERSION:-0.314.0}" # Prometheus 3.14.0
CACHE_ROOT="${CONVEYOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/conveyor}"
OUT="$CACHE_ROOT/prometheus-v$PROMETHEUS_MODULE_VERSION"
BIN="$OUT/prometheus"
# The same CGO setting as every other build: Go keeps one build cache per setting.
export CGO_ENABLED=0

say() { echo "prometheus.sh: $*" >&2; }

if [[ -x "$BIN" ]]; then
  echo "$BIN"
  exit 0
fi
mod="$CACHE_ROOT/src/prometheus-v$PROMETHEUS_MODULE_VERSION"
mkdir -p "$mod" "$OUT"
if [[ ! -f "$mod/go.sum" ]]; then
  {
    echo "module conveyor.dev/prometheus-server"
    echo
    echo "go 1.26.0"
    echo
    echo "require github.com/prometheus/prometheus v$PROMETHEUS_MODULE_VERSION"
    echo
    # Prometheus' own go.mod carries this replace; a replace applies only in the main module.
    echo "replace cloud.google.com/go => cloud.google.com/go v0.123.0"
  } >"$mod/go.mod"
  say "resolving github.com/prometheus/prometheus v$PROMETHEUS_MODULE_VERSION modules"
  (cd "$mod" && go get -tool "github.com/prometheus/prometheus/cmd/prometheus@v$PROMETHEUS_MODULE_VERSION")
fi
src=$(cd "$mod" && go list -m -f '{{.Dir}}' github.com/prometheus/prometheus)
release=$(cat "$src/VERSION")
say "building prometheus $release (Kubernetes discovery only; first time: minutes)"
start=$SECONDS
(cd "$mod" && go build -tags remove_all_sd,enable_kubernetes_sd \
  -ldflags="-s -w -X github.com/prometheus/common/version.Version=$release" \
  -o "$BIN.tmp" github.com/prometheus/prometheus/cmd/prometheus)
mv "$BIN.tmp" "$BIN"
(( SECONDS - start > 5 )) && say "built in $((SECONDS - start))s"
echo "$BIN"
