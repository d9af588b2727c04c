#!/usr/bin/env bash
# Runs the control-plane simulator, or with --whole-nodes the whole-node one (docs/simulation.md),
# over a range of seeds: installs the dependencies (scripts/setup.sh), builds troupe_simulate in
# the release preset and runs it. Each failing seed is printed with the command that replays it;
# the last lines sum up the faults injected and what the runs reached. Exits with 1 when a seed
# fails.
#   scripts/simulate.sh --seeds 100000 --from 1     # ~22 minutes on one core
#   scripts/simulate.sh --seeds 1 --from 4711       # replay one seed (prints its trace hash)
#   scripts/simulate.sh --whole-nodes --moves --seeds 1000
# --plant-no-self-fence and --plant-skip-shard-fence plant the bugs the control plane's checkers
# must find; with --whole-nodes, --plant-skip-flush and --plant-bounced-out-of-order those of the
# order checker (with --moves), --no-faults leaves only graceful moves (nothing may be lost), and
# --asks-only replays the world before its plain entity's tells (seeds found before them).
#   TROUPE_JOBS   parallel build jobs (default: nproc)
set -euo pipefail

cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset release >/dev/null
cmake --build build/release -j "${TROUPE_JOBS:-$(nproc)}" --target troupe_simulate
exec build/release/tests/cluster/troupe_simulate "$@"
