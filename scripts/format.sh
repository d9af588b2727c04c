#!/usr/bin/env bash
# Formats the project's C++ files in place with .clang-format (see scripts/check-format.sh).
#   scripts/format.sh              every file
#   scripts/format.sh FILE...      only these files
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=scripts/lib-cxx-files.sh
source "$root/scripts/lib-cxx-files.sh"
clang_format="$(troupe_clang_format)"

if [[ $# -gt 0 ]]; then
  files=("$@")
else
  cd "$root"
  mapfile -t files < <(troupe_cxx_files "$root")
fi
if [[ ${#files[@]} -eq 0 ]]; then
  echo "format: no C++ files"
  exit 0
fi
"$clang_format" -i --style=file "${files[@]}"
echo "format: formatted ${#files[@]} files with $("$clang_format" --version | head -n1)"
