#!/usr/bin/env bash
# The live cluster demo with one OS process per node: installs the dependencies
# (scripts/setup.sh), builds troupe_cluster_demo with the release preset, starts a throwaway
# etcd on 127.0.0.1 (scripts/etcd.sh) and runs the demo with --processes. Nodes a, b and c are
# processes of their own (TCP on 127.0.0.1, shopping carts persisted to one SQLite file); the
# demo's own process drives the load as a proxy node. Under load node d starts and joins, node b
# gets SIGTERM and leaves gracefully, node c gets SIGKILL. It prints every shard move as it
# happens and ends with its checks; it exits with 1 when one of them fails (about 30 s).
# Whatever way the script ends, etcd, the demo and its node processes end with it, and the
# temporary directory holding etcd's data, the journal and the activation logs goes.
#   TROUPE_JOBS        parallel build jobs (default: nproc)
#   TROUPE_BUILD_DIR   the build directory (default: build/release, the release preset's)
#   DEMO_ARGS          arguments for the demo (e.g. --seconds-per-phase 2 --carts 500 --quiet)
set -euo pipefail

cd "$(dirname "$0")/.."
jobs="${TROUPE_JOBS:-$(nproc)}"
build="${TROUPE_BUILD_DIR:-build/release}"
target=troupe_cluster_demo
program="$build/examples/cluster_demo/$target"

scripts/setup.sh
cmake --preset release -B "$build"

# Build just this program; say clearly when the tree does not define it.
known_targets="$(ninja -C "$build" -t targets all 2>/dev/null | sed 's/:.*//')"
if ! grep -qx "$target" <<<"$known_targets"; then
  echo "cluster-demo: the build defines no target '$target' (see examples/)" >&2
  exit 1
fi
cmake --build "$build" -j "$jobs" --target "$target"
if [[ ! -x "$program" ]]; then
  echo "cluster-demo: $program was not built" >&2
  exit 1
fi

# A temporary directory of our own, for etcd's state and data (so scripts/etcd.sh neither
# reuses nor stops an etcd someone else started for this checkout) and for the demo's files.
scratch="$(mktemp -d "${TMPDIR:-/tmp}/troupe-cluster-demo.XXXXXX")"
driver=""
# shellcheck disable=SC2317  # run by the trap below
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  if [[ -n "$driver" ]] && kill -0 "$driver" 2>/dev/null; then
    # The node processes die with the driver (the kernel sends them SIGKILL).
    kill -TERM "$driver" 2>/dev/null || true
    local _
    for _ in {1..50}; do
      kill -0 "$driver" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$driver" 2>/dev/null || true
    wait "$driver" 2>/dev/null || true
  fi
  TMPDIR="$scratch" scripts/etcd.sh stop || true
  rm -rf "$scratch"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

endpoints="$(TMPDIR="$scratch" scripts/etcd.sh start)"
echo "==> etcd at $endpoints"
echo "==> $program --processes --etcd $endpoints ${DEMO_ARGS:-}"
# In the background, so that a signal to this script stops the demo at once (above).
# shellcheck disable=SC2086  # DEMO_ARGS is a list of words on purpose
TMPDIR="$scratch" "$program" --processes --etcd "$endpoints" ${DEMO_ARGS:-} &
driver=$!
status=0
wait "$driver" || status=$?
driver=""
exit "$status"
