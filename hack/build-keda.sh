#!/usr/bin/env bash
# Builds KEDA's operator and its metrics API server (the external metrics adapter) from the Go
# module proxy into a versioned cache folder, and prints that folder. Does nothing when both
# binaries are already there.
#
# They are built in a scratch module of their own that requires only github.com/kedacore/keda/v2,
# so Go's minimal version selection takes exactly KEDA's own dependency versions (k8s.io v0.36.x):
# the metrics API server (sigs.k8s.io/custom-metrics-apiserver) does not compile against the
# k8s.io v0.37 that the main module and test/kedascale use.
set -euo pipefail

KEDA_VERSION="${KEDA_VERSION:-2.21.0}"
CACHE_ROOT="${CONVEYOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/conveyor}"
OUT="${CACHE_ROOT}/keda-${KEDA_VERSION}"
# Same setting as hack/build-test-binaries.sh: Go keeps one build cache per CGO setting.
export CGO_ENABLED=0

say() { echo "build-keda: $*" >&2; }

[[ -x "$OUT/keda-operator" && -x "$OUT/keda-adapter" && -d "$OUT/crd" ]] && { echo "$OUT"; exit 0; }

mod="$CACHE_ROOT/src/keda-$KEDA_VERSION"
mkdir -p "$mod" "$OUT"
if [[ ! -f "$mod/go.sum" ]]; then
  {
    echo "module conveyor.dev/keda-binaries"
    echo
    echo "go 1.26.0"
    echo
    echo "require github.com/kedacore/keda/v2 v$KEDA_VERSION"
    echo
    # KEDA's own go.mod carries this replace (the released v0.1.0 has no licence file); a replace
    # applies only in the main module, so ours repeats it.
    echo "replace github.com/nexus-rpc/nexus-proto-annotations v0.1.0 => github.com/nexus-rpc/nexus-proto-annotations v0.1.1-0.20260629224316-835bd8d49cb4"
    echo
    echo "exclude github.com/go-chi/chi/v5 v5.2.3"
  } >"$mod/go.mod"
  say "resolving github.com/kedacore/keda/v2 v$KEDA_VERSION modules"
  (cd "$mod" && go get -tool "github.com/kedacore/keda/v2/cmd/operator@v$KEDA_VERSION" \
    "github.com/kedacore/keda/v2/cmd/adapter@v$KEDA_VERSION")
fi
ldflags="-s -w -X github.com/kedacore/keda/v2/version.Version=$KEDA_VERSION"
start=$SECONDS
for b in operator adapter; do
  [[ -x "$OUT/keda-$b" ]] && continue
  say "building keda $b v$KEDA_VERSION (first time: several minutes)"
  (cd "$mod" && go build -trimpath -ldflags="$ldflags" -o "$OUT/keda-$b.tmp" "github.com/kedacore/keda/v2/cmd/$b")
  mv "$OUT/keda-$b.tmp" "$OUT/keda-$b"
done
# KEDA's CRDs, from the same module version.
src=$(cd "$mod" && go list -m -f '{{.Dir}}' github.com/kedacore/keda/v2)
rm -rf "$OUT/crd.tmp" && mkdir -p "$OUT/crd.tmp"
cp "$src"/config/crd/bases/*.yaml "$OUT/crd.tmp/" && chmod u+w "$OUT"/crd.tmp/*.yaml
rm -rf "$OUT/crd" && mv "$OUT/crd.tmp" "$OUT/crd"
(( SECONDS - start > 5 )) && say "built in $((SECONDS - start))s"
echo "$OUT"
