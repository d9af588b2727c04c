#!/usr/bin/env bash
# Fails, listing the files, when any of the project's C++ files is not formatted as
# .clang-format says. Fix them with scripts/format.sh.
#   CLANG_FORMAT=<binary> overrides the clang-format to use (default: clang-format-14).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=scripts/lib-cxx-files.sh
source "$root/scripts/lib-cxx-files.sh"
clang_format="$(troupe_clang_format)"

mapfile -t files < <(troupe_cxx_files "$root")
if [[ ${#files[@]} -eq 0 ]]; then
  echo "check-format: no C++ files to check"
  exit 0
fi

bad=()
for f in "${files[@]}"; do
  if ! (cd "$root" && "$clang_format" --dry-run --Werror --style=file "$f" >/dev/null 2>&1); then
    bad+=("$f")
  fi
done

if [[ ${#bad[@]} -gt 0 ]]; then
  echo "check-format: ${#bad[@]} of ${#files[@]} files are not formatted ($("$clang_format" --version | head -n1)):"
  for f in "${bad[@]}"; do
    echo "  $f"
    # Show the first differences so the log alone tells what is wrong.
    (cd "$root" && "$clang_format" --style=file "$f" | diff -u --label "$f" --label "$f (formatted)" "$f" - | sed -n '3,14p' | sed 's/^/      /') || true
  done
  echo "check-format: run scripts/format.sh to fix them"
  exit 1
fi
echo "check-format: ${#files[@]} files formatted correctly"
