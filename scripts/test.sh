#!/usr/bin/env bash
# The whole CI run, also fine to run by hand:
#   1. scripts/setup.sh (Debian packages)
#   2. dev preset (Debug, ASan + UBSan, -Werror): configure, build everything, then
#      `ctest --preset dev`: every unit test plus format_check, layer_check (label lint) and
#      install_consumer (label packaging)
#   3. tsan preset (-O1 -g, TSan, -Werror): configure, build only the test binaries labelled
#      concurrency (target troupe_concurrency_tests), `ctest --preset tsan` (label concurrency)
#   4. release preset: build troupe_simulate only and run the whole-node simulator over seeds
#      1-1,000 with faults, with faults and moves, and with moves alone
# Before the ctest runs, a throwaway PostgreSQL cluster starts (scripts/postgres.sh) for the
# PostgreSQL plugin's tests, which find it through TROUPE_PG_URL, and a throwaway etcd
# (scripts/etcd.sh) for the cluster's etcd tests, which find it through TROUPE_ETCD_ENDPOINTS;
# both stop when the script exits. A TROUPE_PG_URL or TROUPE_ETCD_ENDPOINTS already set names the
# server to use instead, and nothing is started for it.
# A failing step does not stop the later ones (except a failed configure of the same preset),
# so one run reports everything; the exit status is non-zero if any step failed.
#
# Disk: the dev and tsan presets link the troupe libraries as shared objects (static copies in every
# sanitized test binary took 3.8 GB for dev alone, and a CI machine ran out of space), and ccache
# is off unless TROUPE_CCACHE=1 is set: a fresh clone gains almost nothing from it and its cache
# would take another few GB. (ccache reads any set CCACHE_DISABLE as "off" and rejects "0" as
# an invalid boolean, so the switch cannot be CCACHE_DISABLE=0; that spelling is taken as
# TROUPE_CCACHE=1 here, for those who followed the older comment.)
#
# Environment: TROUPE_CCACHE=1 to use ccache; TROUPE_JOBS (default: nproc) for both the build and
# ctest; ASAN_OPTIONS,
# UBSAN_OPTIONS and TSAN_OPTIONS are appended to the defaults below.
set -euo pipefail

cd "$(dirname "$0")/.."
root="$(pwd)"
jobs="${TROUPE_JOBS:-$(nproc)}"
start=$SECONDS

case "${CCACHE_DISABLE-unset}" in
  0 | false | no | disable) TROUPE_CCACHE=1 ;;
esac
if [[ "${TROUPE_CCACHE:-0}" == 1 ]]; then
  unset CCACHE_DISABLE
else
  export CCACHE_DISABLE=1
fi
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0:strict_string_checks=1:check_initialization_order=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$root/tests/sanitizers/tsan.supp${TSAN_OPTIONS:+:$TSAN_OPTIONS}"

failed=()
results=()

# step NAME COMMAND...: runs COMMAND, records the outcome and its duration; returns its status.
step() {
  local name="$1" t0=$SECONDS rc=0
  shift
  echo
  echo "==> [$name] $*"
  "$@" || rc=$?
  if [[ $rc -eq 0 ]]; then
    results+=("ok    $name ($((SECONDS - t0)) s)")
  else
    results+=("FAIL  $name ($((SECONDS - t0)) s, exit $rc)")
    failed+=("$name")
  fi
  return $rc
}

step "setup" scripts/setup.sh || exit 1

# -- servers: PostgreSQL for the persistence tests, etcd for the cluster tests -
pg_started=0
etcd_started=0
stop_etcd() {
  if [[ $etcd_started -eq 1 ]]; then
    scripts/etcd.sh stop || echo "test.sh: could not stop the test etcd" >&2
  fi
}
# Both servers stop on exit.
stop_servers() {
  stop_etcd
  stop_postgres
}
trap stop_servers EXIT
stop_postgres() {
  if [[ $pg_started -eq 1 ]]; then
    scripts/postgres.sh stop || echo "test.sh: could not stop the test PostgreSQL" >&2
  fi
}
start_postgres() {
  local url
  url="$(scripts/postgres.sh start)" || return 1
  pg_started=1
  export TROUPE_PG_URL="$url"
  echo "PostgreSQL for the tests: $TROUPE_PG_URL"
}
if [[ -z "${TROUPE_PG_URL:-}" ]]; then
  # Without a server the PostgreSQL cases would only skip: count that as a failure here.
  step "postgres: start" start_postgres || true
else
  echo "PostgreSQL for the tests (given): TROUPE_PG_URL is set"
fi

# -- etcd for the cluster tests -------------------------------------------------
start_etcd() {
  local endpoints
  endpoints="$(scripts/etcd.sh start)" || return 1
  etcd_started=1
  export TROUPE_ETCD_ENDPOINTS="$endpoints"
  echo "etcd for the tests: $TROUPE_ETCD_ENDPOINTS"
}
if [[ -z "${TROUPE_ETCD_ENDPOINTS:-}" ]]; then
  # Without a server the etcd cases would only skip: count that as a failure here.
  step "etcd: start" start_etcd || true
else
  echo "etcd for the tests (given): TROUPE_ETCD_ENDPOINTS=$TROUPE_ETCD_ENDPOINTS"
fi

junit_dev="$root/build/dev/ctest-junit.xml"
junit_tsan="$root/build/tsan/ctest-junit.xml"
rm -f "$junit_dev" "$junit_tsan"

# -- dev: ASan + UBSan ---------------------------------------------------------
if step "dev: configure" cmake --preset dev; then
  if step "dev: build" cmake --build --preset dev -j "$jobs"; then
    step "dev: ctest" ctest --preset dev -j "$jobs" --output-junit "$junit_dev" || true
  else
    # The lint checks need no build: still report them.
    step "dev: ctest (lint only)" ctest --preset dev -L lint --output-junit "$junit_dev" || true
  fi
fi

# -- tsan: the concurrency tests -----------------------------------------------
if step "tsan: configure" cmake --preset tsan; then
  if step "tsan: build" cmake --build --preset tsan -j "$jobs"; then
    step "tsan: ctest" ctest --preset tsan -j "$jobs" --output-junit "$junit_tsan" || true
  fi
fi

# -- release: the whole-node simulator over seeds 1-1,000 in each mode ------------
# (docs/simulation.md). Release, so that 3,000 runs of whole clusters take about a minute and a
# half of the two cores; every checker is on in every build. Each failing seed prints the
# command that replays it.
whole_node_campaign() {
  local sim=build/release/tests/cluster/troupe_simulate rc=0 mode from pid
  local per=$(((1000 + jobs - 1) / jobs))
  for mode in "" "--moves" "--moves --no-faults"; do
    local pids=()
    for ((from = 1; from <= 1000; from += per)); do
      # shellcheck disable=SC2086 # mode is zero or more flags
      "$sim" --whole-nodes $mode --from "$from" --seeds "$((from + per > 1001 ? 1001 - from : per))" &
      pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
  done
  return $rc
}
if step "release: configure" cmake --preset release; then
  if step "release: build troupe_simulate" cmake --build build/release -j "$jobs" --target troupe_simulate; then
    step "release: whole-node seeds 1-1,000, three modes" whole_node_campaign || true
  fi
fi

# -- summary -------------------------------------------------------------------
echo
echo "==> summary ($((SECONDS - start)) s)"
printf '  %s\n' "${results[@]}"
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "test.sh: FAILED: ${failed[*]}"
else
  echo "test.sh: all steps passed"
fi
# Last line: the test cases counted over both ctest runs.
python3 - "$junit_dev" "$junit_tsan" <<'PY'
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

passed = failed = skipped = 0
for name in sys.argv[1:]:
    path = Path(name)
    if not path.is_file():
        continue
    for case in ET.parse(path).getroot().iter("testcase"):
        status = case.get("status", "")
        if case.find("failure") is not None or case.find("error") is not None or status == "fail":
            failed += 1
        elif case.find("skipped") is not None or status in ("notrun", "disabled"):
            skipped += 1
        else:
            passed += 1
print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
PY
[[ ${#failed[@]} -eq 0 ]]
