#!/usr/bin/env bash
# Builds ZincSearch (an Elasticsearch-compatible search server written in Go)
# from the Go module proxy into a versioned cache folder and prints the
# binary's path. Does nothing when the binary is already there.
#
# The Elasticsearch sink's real-server smoke test runs it: no Elasticsearch
# or OpenSearch server runs on these machines. ZincSearch does not install
# with `go install`: its main package embeds web/dist (a built web UI, not
# in the module) and imports the pyroscope profiler, which does not build
# on Go 1.26 (profiling is off by default). So the module is copied out of
# the module cache, given an empty web/dist/index.html, the import removed,
# and built (about two minutes the first time).
#
# Run it with ZINC_TELEMETRY=false and ZINC_SENTRY=false (both are on by
# default and call outside), on 127.0.0.1 and a free port.
set -euo pipefail

ZINC_VERSION="${ZINC_VERSION:-0.4.10}"
CACHE_ROOT="${CONVEYOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/conveyor}"
OUT="${CACHE_ROOT}/zincsearch-${ZINC_VERSION}"
BIN="$OUT/zincsearch"

say() { echo "zincsearch.sh: $*" >&2; }

if [[ -x "$BIN" ]]; then
  echo "$BIN"
  exit 0
fi

export CGO_ENABLED=0
mod="github.com/zincsearch/zincsearch@v${ZINC_VERSION}"
say "downloading $mod"
dir=$(cd /tmp && GOFLAGS=-mod=mod go mod download -json "$mod" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
if [[ -z "$dir" || ! -d "$dir" ]]; then
  say "go mod download $mod gave no folder"
  exit 1
fi
src="$CACHE_ROOT/src/zincsearch-${ZINC_VERSION}"
rm -rf "$src"
mkdir -p "$src" "$OUT"
cp -r "$dir/." "$src/"
chmod -R u+w "$src"
mkdir -p "$src/web/dist"
: >"$src/web/dist/index.html"
# Drop the pyroscope profiler: its import, and the call that starts it
# (reached only with ZINC_PROFILER_ENABLED and a profiler server).
main="$src/cmd/zincsearch/main.go"
perl -0pi -e 's{\t"github.com/pyroscope-io/client/pyroscope"\n}{}; s{_, err := pyroscope\.Start\(pyroscope\.Config\{.*?\n\t\}\)\n}{err := fmt.Errorf("profiler of %s: not built in", ProfileID)\n}s' "$main"
grep -q '"fmt"' "$main" || sed -i 's/^import (/import (\n\t"fmt"/' "$main"
if grep -q 'pyroscope\.Start(\|pyroscope-io' "$main"; then say "could not remove pyroscope from $main"; exit 1; fi
say "building zincsearch v$ZINC_VERSION (first time: about two minutes)"
(cd "$src" && go mod tidy >/dev/null 2>&1 && go build -trimpath -ldflags="-s -w" -o "$BIN.tmp" ./cmd/zincsearch) || {
  say "build failed; the source is in $src"
  exit 1
}
mv "$BIN.tmp" "$BIN"
echo "$BIN"
