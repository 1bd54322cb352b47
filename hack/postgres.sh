#!/usr/bin/env bash
# Installs Debian's PostgreSQL server for the database connector tests and
# benchmarks, creates the unprivileged user the test servers run as
# (PostgreSQL refuses to run as root), and prints the folder of the server
# binaries (initdb, postgres). Fast and silent when everything is there.
#
# The tests (test/testkit/servers/pgtest) start their own server from
# these binaries: as user conveyor-pg, in a temporary data folder, on a free
# loopback port, with wal_level=logical. Set CONVEYOR_PG_BIN to use other
# binaries.
set -euo pipefail

PG_USER=${CONVEYOR_PG_USER:-conveyor-pg}

find_bin() {
  if [[ -n ${CONVEYOR_PG_BIN:-} && -x ${CONVEYOR_PG_BIN}/initdb ]]; then echo "$CONVEYOR_PG_BIN"; return 0; fi
  # The highest major version, compared numerically.
  local best
  best=$(for d in /usr/lib/postgresql/*/bin; do [[ -x $d/initdb && -x $d/postgres ]] && echo "$d"; done |
    sort -t/ -k5,5n | tail -n1)
  [[ -n $best ]] && echo "$best"
}

bin=$(find_bin || true)
if [[ -z $bin ]]; then
  if [[ $(id -u) -ne 0 ]]; then
    echo "postgres.sh: PostgreSQL server binaries are missing and installing them needs root (apt-get install postgresql)" >&2
    exit 1
  fi
  echo "postgres.sh: installing Debian's postgresql" >&2
  apt-get update -qq
  # The package's own "main" cluster is never used: do not create it.
  if [[ ! -e /etc/postgresql-common/createcluster.conf ]]; then
    mkdir -p /etc/postgresql-common
    echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.conf
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o Dpkg::Options::=--force-confold postgresql >/dev/null
  bin=$(find_bin || true)
  if [[ -z $bin ]]; then
    echo "postgres.sh: postgresql installed but no initdb under /usr/lib/postgresql/*/bin ($(ls /usr/lib/postgresql/ 2>&1))" >&2
    exit 1
  fi
fi

if [[ $(id -u) -eq 0 ]] && ! id -u "$PG_USER" >/dev/null 2>&1; then
  echo "postgres.sh: creating system user $PG_USER" >&2
  useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$PG_USER"
fi

echo "$bin"
