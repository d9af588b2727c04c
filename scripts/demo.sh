#!/usr/bin/env bash
# Installs the dependencies (scripts/setup.sh), builds the release preset and runs the live
# cluster demo, troupe_cluster_demo: nodes a, b and c in one process (TCP on 127.0.0.1, etcd
# modelled in-process, shopping carts persisted to SQLite in a temporary directory) under load,
# while node d joins, node b leaves gracefully and node c is killed. It prints every shard move
# as it happens and ends with its checks; it exits with 1 when one of them fails (about 25 s).
#   TROUPE_JOBS   parallel build jobs (default: nproc)
#   DEMO_ARGS     arguments for the demo (e.g. --seconds-per-phase 2 --carts 500 --quiet)
#   DEMO_BENCH    seed, core or sharding: the earlier demo instead, the bank example and the
#                 two-node example, then that benchmark (seed: the hot-keys benchmark's table, the
#                 guide's workload beside its published figures, and build/release/bench/seed.svg)
#   BENCH_ARGS    extra arguments for the benchmark (e.g. --runs 1)
set -euo pipefail

cd "$(dirname "$0")/.."
jobs="${TROUPE_JOBS:-$(nproc)}"
build=build/release

if [[ -n "${DEMO_BENCH:-}" ]]; then
  example_target=troupe_example_bank
  remote_target=troupe_example_two_nodes
  bench_target="troupe_bench_${DEMO_BENCH}"
  targets=("$example_target" "$remote_target" "$bench_target")
  programs=("$build/examples/bank/$example_target" "$build/examples/two_nodes/$remote_target"
    "$build/bench/$bench_target")
else
  demo_target=troupe_cluster_demo
  targets=("$demo_target")
  programs=("$build/examples/cluster_demo/$demo_target")
fi

scripts/setup.sh
cmake --preset release

# Build just these programs; say clearly which one the tree does not define yet.
known_targets="$(ninja -C "$build" -t targets all 2>/dev/null | sed 's/:.*//')"
for target in "${targets[@]}"; do
  if ! grep -qx "$target" <<<"$known_targets"; then
    echo "demo: the build defines no target '$target' (see examples/ and bench/)" >&2
    exit 1
  fi
done
cmake --build --preset release -j "$jobs" --target "${targets[@]}"

for program in "${programs[@]}"; do
  if [[ ! -x "$program" ]]; then
    echo "demo: $program was not built" >&2
    exit 1
  fi
done

if [[ -z "${DEMO_BENCH:-}" ]]; then
  echo "==> ${programs[0]} ${DEMO_ARGS:-}"
  # shellcheck disable=SC2086  # DEMO_ARGS is a list of words on purpose
  exec "${programs[0]}" ${DEMO_ARGS:-}
fi

echo "==> ${programs[0]}"
"${programs[0]}"
echo
echo "==> ${programs[1]}"
"${programs[1]}"
echo
echo "==> ${programs[2]} ${BENCH_ARGS:-}"
# shellcheck disable=SC2086  # BENCH_ARGS is a list of words on purpose
"${programs[2]}" ${BENCH_ARGS:-}
