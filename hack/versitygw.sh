#!/usr/bin/env bash
# Builds versitygw (an S3 server on a POSIX folder, Apache-2.0) from the Go
# module proxy into ~/.cache/conveyor/versitygw-<version>/ for the S3 sink's
# tests and benchmarks, and prints the binary's path. Does nothing when it
# is there (the first build takes about 3 minutes on two cores). With
# "start", also runs one in the foreground on a free loopback port serving a
# temporary folder, for trying the sink by hand.
set -euo pipefail

VERSION="${VERSITYGW_VERSION:-1.8.0}"
CACHE_ROOT="${CONVEYOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/conveyor}"
OUT="$CACHE_ROOT/versitygw-$VERSION"
bin=${CONVEYOR_VERSITYGW:-$OUT/versitygw}

if [[ ! -x $bin ]]; then
  echo "versitygw.sh: building versitygw v$VERSION (first time: about 3 minutes)" >&2
  mkdir -p "$OUT"
  # Outside any module, so the main module's go.mod is not touched.
  (cd "$OUT" && CGO_ENABLED=0 GOBIN="$OUT/gobin" GOFLAGS=-mod=mod go install -trimpath -ldflags="-s -w" "github.com/versity/versitygw/cmd/versitygw@v$VERSION")
  mv "$OUT/gobin/versitygw" "$OUT/versitygw"
  rmdir "$OUT/gobin" 2>/dev/null || true
  bin=$OUT/versitygw
fi

if [[ ${1:-} == start ]]; then
  port=$(shuf -i 20000-60000 -n 1)
  dir=$(mktemp -d)
  access=conveyor secret=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
  echo "versitygw.sh: S3 on http://127.0.0.1:$port, access key $access, secret $secret, folder $dir" >&2
  exec "$bin" --port "127.0.0.1:$port" --access "$access" --secret "$secret" --health /health posix "$dir"
fi
echo "$bin"
