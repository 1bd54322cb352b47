#!/usr/bin/env bash
# Builds KEDA's operator and its metrics API server (the external metrics adapter) from the Go
# module proxy into a versioned cache folder, and prints that folder. Does nothing when both
# binaries are already there.
#
# They are built in test/kedascale's module, which links KEDA's scalers for its own tests and
# lists both commands as tools (its go.mod's `tool` lines keep their dependencies there): one
# module graph, and the same flags as the kedascale tier's go test (CGO_ENABLED=0, -trimpath, see
# hack/test.sh), so Go's build cache compiles KEDA's scalers and their cloud SDKs once for both.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
mod="$root/test/kedascale"
CACHE_ROOT="${CONVEYOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/conveyor}"
# Same setting as the Makefile and hack/test.sh: Go keeps one build cache per CGO setting.
export CGO_ENABLED=0

say() { echo "build-keda: $*" >&2; }

linked=$(cd "$mod" && go list -m -f '{{.Version}}' github.com/kedacore/keda/v2)
KEDA_VERSION="${KEDA_VERSION:-${linked#v}}"
if [[ "v$KEDA_VERSION" != "$linked" ]]; then
  say "KEDA_VERSION=$KEDA_VERSION, but test/kedascale/go.mod requires github.com/kedacore/keda/v2 $linked: change both together"
  exit 1
fi
OUT="${CACHE_ROOT}/keda-${KEDA_VERSION}"

[[ -x "$OUT/keda-operator" && -x "$OUT/keda-adapter" && -d "$OUT/crd" ]] && { echo "$OUT"; exit 0; }

mkdir -p "$OUT"
ldflags="-s -w -X github.com/kedacore/keda/v2/version.Version=$KEDA_VERSION"
start=$SECONDS
# Both commands in one go build: their shared packages compile once and the two links overlap.
tmp="$OUT/build.tmp"
rm -rf "$tmp" && mkdir -p "$tmp"
say "building keda operator and adapter v$KEDA_VERSION (first time: several minutes)"
(cd "$mod" && go build -trimpath -ldflags="$ldflags" -o "$tmp/" \
  "github.com/kedacore/keda/v2/cmd/operator" "github.com/kedacore/keda/v2/cmd/adapter")
for b in operator adapter; do mv "$tmp/$b" "$OUT/keda-$b"; done
rmdir "$tmp"
# KEDA's CRDs, from the same module version.
src=$(cd "$mod" && go list -m -f '{{.Dir}}' github.com/kedacore/keda/v2)
rm -rf "$OUT/crd.tmp" && mkdir -p "$OUT/crd.tmp"
cp "$src"/config/crd/bases/*.yaml "$OUT/crd.tmp/" && chmod u+w "$OUT"/crd.tmp/*.yaml
rm -rf "$OUT/crd" && mv "$OUT/crd.tmp" "$OUT/crd"
(( SECONDS - start > 5 )) && say "built in $((SECONDS - start))s"
echo "$OUT"
