#!/usr/bin/env bash
# Installs Debian's redis-server for the Redis sink's tests and benchmarks
# when it is missing, and prints its path. With "start", also runs one in the
# foreground on a free loopback port with no persistence (--save ''), for
# trying the sink by hand; Ctrl-C stops it.
#
# The tests (test/testkit/servers) start their own servers from this binary,
# each on a free loopback port in a temporary folder. Set
# CONVEYOR_REDIS_SERVER to use another binary.
set -euo pipefail

bin=${CONVEYOR_REDIS_SERVER:-$(command -v redis-server || true)}
if [[ -z $bin ]]; then
  if [[ $(id -u) -ne 0 ]]; then
    echo "redis.sh: redis-server is missing and installing it needs root (apt-get install redis-server)" >&2
    exit 1
  fi
  echo "redis.sh: installing Debian's redis-server" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
  # The package's own service is not used.
  bin=$(command -v redis-server)
fi

if [[ ${1:-} == start ]]; then
  port=$(shuf -i 20000-60000 -n 1)
  dir=$(mktemp -d)
  echo "redis.sh: redis-server on 127.0.0.1:$port (redis.url=redis://127.0.0.1:$port), folder $dir" >&2
  exec "$bin" --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" --daemonize no
fi
echo "$bin"
