#!/usr/bin/env bash
# Installs the Debian packages the tests use, when they are missing.
set -euo pipefail
need=()
command -v kcat >/dev/null || need+=(kcat)
command -v unshare >/dev/null || need+=(util-linux)
# The Redis sink's tests (hack/redis.sh prints the binary).
command -v redis-server >/dev/null || need+=(redis-server)
# promtool (the chart's alert rules): Debian's 2.42. Its prometheus server has no Kubernetes
# discovery; the e2e tier's server comes from hack/prometheus.sh.
command -v promtool >/dev/null || need+=(prometheus)
if [[ ${#need[@]} -gt 0 ]]; then
  if [[ $(id -u) -ne 0 ]]; then echo "install-deps: need root to install ${need[*]}" >&2; exit 1; fi
  echo "install-deps: installing ${need[*]}" >&2
  apt-get update -qq
  # Packages are installed, never started: a policy-rc.d that refuses every service start
  # keeps Debian's prometheus (and redis-server) from listening on the machine's ports.
  policy=/usr/sbin/policy-rc.d
  had_policy=0; [[ -e $policy ]] && had_policy=1
  [[ $had_policy -eq 1 ]] || { printf '#!/bin/sh\nexit 101\n' >"$policy"; chmod +x "$policy"; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  [[ $had_policy -eq 1 ]] || rm -f "$policy"
fi
