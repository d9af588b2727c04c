#!/usr/bin/env bash
# Builds the release preset and runs the bank example and the two-node example (remote refs over
# TCP on 127.0.0.1, in one process), then a benchmark: by default the hot-keys
# benchmark's table (troupe_bench_seed: the guide's workload beside its published figures, and
# build/release/bench/seed.svg).
#   TROUPE_JOBS   parallel build jobs (default: nproc)
#   DEMO_BENCH    seed (default), core or sharding: which benchmark runs
#   BENCH_ARGS    extra arguments for it (e.g. --runs 1)
set -euo pipefail

cd "$(dirname "$0")/.."
jobs="${TROUPE_JOBS:-$(nproc)}"
build=build/release
example_target=troupe_example_bank
remote_target=troupe_example_two_nodes
bench_target="troupe_bench_${DEMO_BENCH:-seed}"
example="$build/examples/bank/$example_target"
remote_example="$build/examples/two_nodes/$remote_target"
bench="$build/bench/$bench_target"

scripts/setup.sh
cmake --preset release

# Build just these programs; say clearly which one the tree does not define yet.
known_targets="$(ninja -C "$build" -t targets all 2>/dev/null | sed 's/:.*//')"
for target in "$example_target" "$remote_target" "$bench_target"; do
  if ! grep -qx "$target" <<<"$known_targets"; then
    echo "demo: the build defines no target '$target' (see examples/ and bench/)" >&2
    exit 1
  fi
done
cmake --build --preset release -j "$jobs" --target "$example_target" "$remote_target" \
  "$bench_target"

for program in "$example" "$remote_example" "$bench"; do
  if [[ ! -x "$program" ]]; then
    echo "demo: $program was not built" >&2
    exit 1
  fi
done

echo "==> $example"
"$example"
echo
echo "==> $remote_example"
"$remote_example"
echo
echo "==> $bench ${BENCH_ARGS:-}"
# shellcheck disable=SC2086  # BENCH_ARGS is a list of words on purpose
"$bench" ${BENCH_ARGS:-}
