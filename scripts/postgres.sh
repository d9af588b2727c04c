#!/usr/bin/env bash
# A throwaway PostgreSQL 15 cluster for tests and benchmarks: 127.0.0.1 only, a free port, data
# and socket dir in one temporary directory, fsync on.
#
#   scripts/postgres.sh start   starts it (or finds it running) and prints its URL
#   scripts/postgres.sh url     prints the URL of the running cluster (exit 1 if none)
#   scripts/postgres.sh stop    stops it and removes the temporary directory
#
# One cluster per checkout: its state file is named after the repository's path, so worktrees do
# not share one. A state file left by a killed run is cleaned up by the next start or stop.
# As root (initdb refuses root), initdb and pg_ctl run as the `postgres` OS user, which Debian's
# postgresql package creates. Environment: TROUPE_PG_BIN (default /usr/lib/postgresql/15/bin).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${TROUPE_PG_BIN:-/usr/lib/postgresql/15/bin}"
state="${TMPDIR:-/tmp}/troupe-postgres-$(printf '%s' "$root" | md5sum | cut -c1-12).state"

die() {
  echo "postgres.sh: $*" >&2
  exit 1
}

# as_owner CMD...: runs CMD as the cluster's owner (postgres when we are root).
as_owner() {
  if [[ "$(id -u)" -eq 0 ]]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# The state file holds two lines: the temporary directory and the port.
read_state() {
  dir="" port=""
  [[ -f "$state" ]] || return 1
  { read -r dir && read -r port; } <"$state" || true
  [[ -n "$dir" && -n "$port" ]]
}

running() {
  read_state || return 1
  [[ -d "$dir/data" ]] || return 1
  as_owner "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1 || return 1
  "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" -t 2
}

url() { echo "postgresql://postgres@127.0.0.1:$port/postgres"; }

# Stops whatever the state file names, running or not, and forgets it.
cleanup() {
  if read_state; then
    if [[ -d "$dir/data" ]]; then
      as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 20 stop >/dev/null 2>&1 ||
        as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w -t 20 stop >/dev/null 2>&1 || true
    fi
    # Only ever remove a directory this script made.
    if [[ "$dir" == */troupe-pg.* && -d "$dir" ]]; then
      rm -rf "$dir"
    fi
  fi
  rm -f "$state"
}

free_port() {
  python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

start() {
  if running; then
    url
    return 0
  fi
  cleanup
  [[ -x "$bin/initdb" ]] || die "no PostgreSQL 15 in $bin: run scripts/setup.sh"
  if [[ "$(id -u)" -eq 0 ]] && ! id postgres >/dev/null 2>&1; then
    die "no postgres OS user to run the cluster as: run scripts/setup.sh"
  fi

  dir="$(mktemp -d "${TMPDIR:-/tmp}/troupe-pg.XXXXXX")"
  chmod 755 "$dir"
  mkdir -p "$dir/sock"
  if [[ "$(id -u)" -eq 0 ]]; then chown postgres: "$dir" "$dir/sock"; fi
  if ! as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C \
    >"$dir/initdb.log" 2>&1; then
    cat "$dir/initdb.log" >&2
    rm -rf "$dir"
    die "initdb failed"
  fi

  # A free port can be taken between the check and the bind: try a few.
  local attempt
  for attempt in 1 2 3 4 5; do
    port="$(free_port)"
    printf '%s\n%s\n' "$dir" "$port" >"$state"
    if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 start \
      -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories=$dir/sock \
-c fsync=on -c synchronous_commit=on -c max_connections=200" >/dev/null 2>&1 &&
      "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" -t 10; then
      url
      return 0
    fi
    as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  done
  tail -n 20 "$dir/server.log" >&2 || true
  cleanup
  die "PostgreSQL did not start (attempt $attempt)"
}

case "${1:-}" in
  start) start ;;
  url)
    running || die "no cluster running for $root (scripts/postgres.sh start)"
    url
    ;;
  stop) cleanup ;;
  *)
    echo "usage: scripts/postgres.sh start|stop|url" >&2
    exit 2
    ;;
esac
