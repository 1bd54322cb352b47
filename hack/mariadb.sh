#!/usr/bin/env bash
# Installs Debian's MariaDB server (10.11) for the MySQL/MariaDB connector
# tests and benchmarks when it is missing, and prints the folder of its
# binaries (mariadbd, mariadb-install-db, mariadb). Fast and silent when
# everything is there.
#
# The tests (test/testkit/servers/mariadbtest) start their own server from
# these binaries: as the package's unprivileged user mysql, in a temporary
# data folder, on a free loopback port, with log_bin, binlog_format=ROW and
# GTIDs. The package's own service is never started. Set CONVEYOR_MARIADB_BIN
# to use other binaries.
set -euo pipefail

find_bin() {
  if [[ -n ${CONVEYOR_MARIADB_BIN:-} && -x ${CONVEYOR_MARIADB_BIN}/mariadbd ]]; then echo "$CONVEYOR_MARIADB_BIN"; return 0; fi
  local d
  for d in /usr/sbin /usr/bin /usr/local/bin; do
    [[ -x $d/mariadbd ]] && { echo "$d"; return 0; }
  done
  return 1
}

bin=$(find_bin || true)
if [[ -z $bin ]]; then
  if [[ $(id -u) -ne 0 ]]; then
    echo "mariadb.sh: the MariaDB server is missing and installing it needs root (apt-get install mariadb-server)" >&2
    exit 1
  fi
  echo "mariadb.sh: installing Debian's mariadb-server" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o Dpkg::Options::=--force-confold mariadb-server >/dev/null
  bin=$(find_bin || true)
  if [[ -z $bin ]]; then
    echo "mariadb.sh: mariadb-server installed but no mariadbd in /usr/sbin, /usr/bin or /usr/local/bin" >&2
    exit 1
  fi
fi
echo "$bin"
