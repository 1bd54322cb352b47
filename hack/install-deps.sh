#!/usr/bin/env bash
# Installs the Debian packages the tests use, when they are missing.
set -euo pipefail
need=()
command -v kcat >/dev/null || need+=(kcat)
command -v unshare >/dev/null || need+=(util-linux)
# The Redis sink's tests (hack/redis.sh prints the binary).
command -v redis-server >/dev/null || need+=(redis-server)
if [[ ${#need[@]} -gt 0 ]]; then
  if [[ $(id -u) -ne 0 ]]; then echo "install-deps: need root to install ${need[*]}" >&2; exit 1; fi
  echo "install-deps: installing ${need[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
