# Sourced by check-format.sh and format.sh: defines troupe_cxx_files, which prints, one per line
# and relative to the repository root, every C++ file (*.hpp, *.cpp) of the project's own code.
# In a git checkout these are the tracked files plus new files that are not ignored; elsewhere
# (an unpacked tarball) every file found under the same folders.

TROUPE_CXX_DIRS=(include src tests bench examples tools)

troupe_cxx_files() {
  local root="$1"
  if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git -C "$root" ls-files --cached --others --exclude-standard -- "${TROUPE_CXX_DIRS[@]}" |
      grep -E '\.(hpp|cpp)$' | sort -u |
      while IFS= read -r f; do
        # Skip files deleted in the work tree but still in the index.
        if [[ -f "$root/$f" ]]; then printf '%s\n' "$f"; fi
      done
  else
    local d
    for d in "${TROUPE_CXX_DIRS[@]}"; do
      if [[ -d "$root/$d" ]]; then
        (cd "$root" && find "$d" -type f \( -name '*.hpp' -o -name '*.cpp' \))
      fi
    done | sort
  fi
}

troupe_clang_format() {
  if [[ -n "${CLANG_FORMAT:-}" ]]; then
    printf '%s\n' "$CLANG_FORMAT"
  elif command -v clang-format-14 >/dev/null 2>&1; then
    printf '%s\n' clang-format-14
  elif command -v clang-format >/dev/null 2>&1; then
    printf '%s\n' clang-format
  else
    echo "clang-format not found: run scripts/setup.sh" >&2
    return 1
  fi
}
