#!/usr/bin/env bash
# Runs clang-tidy (.clang-tidy) over the project's .cpp files with a build's compile database.
# Not part of CI yet: a developer aid.
#   scripts/tidy.sh                  every .cpp under src/ (build tree: build/dev)
#   scripts/tidy.sh FILE...          only these files
#   BUILD_DIR=build/release scripts/tidy.sh    another configured build tree
#   CLANG_TIDY=clang-tidy-16 scripts/tidy.sh   another clang-tidy
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
build="${BUILD_DIR:-build/dev}"
if [[ ! -f "$build/compile_commands.json" ]]; then
  echo "tidy: no $build/compile_commands.json; run: cmake --preset ${build##*/}" >&2
  exit 1
fi
tidy="${CLANG_TIDY:-}"
if [[ -z "$tidy" ]]; then
  if command -v clang-tidy-14 >/dev/null 2>&1; then tidy=clang-tidy-14; else tidy=clang-tidy; fi
fi

if [[ $# -gt 0 ]]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files --cached --others --exclude-standard -- src | grep -E '\.cpp$' || true)
fi
if [[ ${#files[@]} -eq 0 ]]; then
  echo "tidy: no files"
  exit 0
fi

# The compile commands are GCC's: let clang skip the warning flags it does not know.
status=0
for f in "${files[@]}"; do
  "$tidy" -p "$build" --quiet --extra-arg=-Wno-unknown-warning-option "$f" || status=1
done
exit $status
