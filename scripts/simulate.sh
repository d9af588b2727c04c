#!/usr/bin/env bash
# Runs the control-plane simulator (docs/simulation.md) over a range of seeds: installs the
# dependencies (scripts/setup.sh), builds troupe_simulate in the release preset and runs it. Each
# failing seed is printed with the command that replays it; the last lines sum up the faults
# injected and what the runs reached. Exits with 1 when a seed fails.
#   scripts/simulate.sh --seeds 100000 --from 1     # ~22 minutes on one core
#   scripts/simulate.sh --seeds 1 --from 4711       # replay one seed (prints its trace hash)
# --plant-no-self-fence and --plant-skip-shard-fence plant the bugs the checkers must find.
#   TROUPE_JOBS   parallel build jobs (default: nproc)
set -euo pipefail

cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset release >/dev/null
cmake --build build/release -j "${TROUPE_JOBS:-$(nproc)}" --target troupe_simulate
exec build/release/tests/cluster/troupe_simulate "$@"
