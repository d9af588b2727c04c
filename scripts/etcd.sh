#!/usr/bin/env bash
# A throwaway etcd (Debian's etcd-server, 3.4) for tests and benchmarks: 127.0.0.1 only, free
# ports, every member's data in one temporary directory.
#
#   scripts/etcd.sh start [--members N]   starts N members (default 1; 3 for fault tests), or
#                                         finds them running, and prints the client endpoints
#                                         ("127.0.0.1:P1,127.0.0.1:P2,...", TROUPE_ETCD_ENDPOINTS)
#   scripts/etcd.sh endpoints             prints the endpoints of the running members (exit 1 if none)
#   scripts/etcd.sh pids                  prints one line per member: name, pid, client endpoint
#   scripts/etcd.sh stop                  kills every member and removes the temporary directory
#
# One cluster per checkout: the state file is named after the repository's path, so worktrees do
# not share one; a state file left by a killed run is cleaned up by the next start or stop.
# Environment: TROUPE_ETCD_BIN (default /usr/bin/etcd).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${TROUPE_ETCD_BIN:-/usr/bin/etcd}"
state="${TMPDIR:-/tmp}/troupe-etcd-$(printf '%s' "$root" | md5sum | cut -c1-12).state"

die() {
  echo "etcd.sh: $*" >&2
  exit 1
}

# The state file: the temporary directory on the first line, then one line per member:
# "name pid client_port peer_port".
dir=""
members=()
read_state() {
  dir="" members=()
  [[ -f "$state" ]] || return 1
  local line first=1
  while IFS= read -r line; do
    if [[ $first -eq 1 ]]; then
      dir="$line"
      first=0
    elif [[ -n "$line" ]]; then
      members+=("$line")
    fi
  done <"$state"
  [[ -n "$dir" && ${#members[@]} -gt 0 ]]
}

endpoints() {
  local m name pid client peer out=""
  for m in "${members[@]}"; do
    read -r name pid client peer <<<"$m"
    out+="${out:+,}127.0.0.1:$client"
  done
  echo "$out"
}

# healthy PORT: etcd's /health answers {"health":"true"} once the member has a leader.
healthy() {
  python3 - "$1" <<'PY' >/dev/null 2>&1
import json, sys, urllib.request
with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/health", timeout=2) as r:
    sys.exit(0 if json.load(r).get("health") == "true" else 1)
PY
}

running() {
  read_state || return 1
  local m name pid client peer
  for m in "${members[@]}"; do
    read -r name pid client peer <<<"$m"
    kill -0 "$pid" 2>/dev/null || return 1
    healthy "$client" || return 1
  done
}

# Kills whatever the state file names, running or not, and forgets it.
cleanup() {
  if read_state; then
    local m name pid client peer
    for m in "${members[@]}"; do
      read -r name pid client peer <<<"$m"
      # Only a process that is an etcd of this directory (pids get reused).
      if [[ -r "/proc/$pid/cmdline" ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$dir"; then
        kill "$pid" 2>/dev/null || true
        local i
        for i in $(seq 1 50); do
          kill -0 "$pid" 2>/dev/null || break
          sleep 0.1
        done
        kill -9 "$pid" 2>/dev/null || true
      fi
    done
  fi
  # Only ever remove a directory this script made.
  if [[ "$dir" == */troupe-etcd.* && -d "$dir" ]]; then
    rm -rf "$dir"
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

# launch N: starts N members on fresh ports and records them; returns 1 if they do not all
# become healthy in 30 s.
launch() {
  local n="$1" i names=() clients=() peers=() cluster=""
  for ((i = 0; i < n; i++)); do
    names+=("m$i")
    clients+=("$(free_port)")
    peers+=("$(free_port)")
    cluster+="${cluster:+,}m$i=http://127.0.0.1:${peers[$i]}"
  done
  printf '%s\n' "$dir" >"$state"
  for ((i = 0; i < n; i++)); do
    "$bin" --name "${names[$i]}" --data-dir "$dir/${names[$i]}" \
      --listen-client-urls "http://127.0.0.1:${clients[$i]}" \
      --advertise-client-urls "http://127.0.0.1:${clients[$i]}" \
      --listen-peer-urls "http://127.0.0.1:${peers[$i]}" \
      --initial-advertise-peer-urls "http://127.0.0.1:${peers[$i]}" \
      --initial-cluster "$cluster" --initial-cluster-state new \
      --initial-cluster-token "troupe-$(basename "$dir")" \
      --logger zap --log-outputs "$dir/${names[$i]}.log" \
      </dev/null >/dev/null 2>&1 &
    printf '%s %s %s %s\n' "${names[$i]}" "$!" "${clients[$i]}" "${peers[$i]}" >>"$state"
  done
  read_state || return 1
  local deadline=$((SECONDS + 30)) m name pid client peer ok
  while ((SECONDS < deadline)); do
    ok=1
    for m in "${members[@]}"; do
      read -r name pid client peer <<<"$m"
      kill -0 "$pid" 2>/dev/null || return 1
      healthy "$client" || ok=0
    done
    [[ $ok -eq 1 ]] && return 0
    sleep 0.2
  done
  return 1
}

start() {
  local n=1
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --members)
        n="${2:-}"
        shift 2 || die "--members needs a number"
        ;;
      *) die "unknown option $1" ;;
    esac
  done
  [[ "$n" =~ ^[1-9][0-9]?$ ]] || die "--members needs a number from 1 to 99, not '$n'"
  if running && [[ ${#members[@]} -eq $n ]]; then
    endpoints
    return 0
  fi
  cleanup
  [[ -x "$bin" ]] || die "no etcd at $bin: run scripts/setup.sh (Debian's etcd-server)"

  # A free port can be taken between the check and the bind: try a few times.
  local attempt
  for attempt in 1 2 3; do
    dir="$(mktemp -d "${TMPDIR:-/tmp}/troupe-etcd.XXXXXX")"
    if launch "$n"; then
      endpoints
      return 0
    fi
    local log
    for log in "$dir"/*.log; do
      [[ -f "$log" ]] && tail -n 5 "$log" >&2
    done
    cleanup
  done
  die "etcd did not start ($n member(s), $attempt attempts)"
}

case "${1:-}" in
  start)
    shift
    start "$@"
    ;;
  endpoints)
    running || die "no etcd running for $root (scripts/etcd.sh start)"
    endpoints
    ;;
  pids)
    read_state || die "no etcd started for $root"
    for m in "${members[@]}"; do
      read -r name pid client peer <<<"$m"
      echo "$name $pid 127.0.0.1:$client"
    done
    ;;
  stop) cleanup ;;
  *)
    echo "usage: scripts/etcd.sh start [--members N]|endpoints|pids|stop" >&2
    exit 2
    ;;
esac
