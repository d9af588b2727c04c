#!/usr/bin/env bash
# Installs what building and testing troupe needs on Debian 12, from Debian packages only.
# Idempotent: when everything is present it changes nothing and touches no network.
# Runs as root, or through sudo otherwise. Prints one summary line.
set -euo pipefail

packages=(
  # toolchain
  g++ cmake ninja-build ccache pkg-config git python3
  # libraries (shared/DESIGN.md): Boost 1.81 with its compiled JSON and URL parts
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev
  libspdlog-dev libfmt-dev libcli11-dev zlib1g-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev googletest libbenchmark-dev libjemalloc-dev libmimalloc-dev
  # format, lint, sanitizer runtimes for clang
  clang-format-14 clang-tidy-14 libclang-rt-14-dev
  # persistence: the SQLite plugin; clang for the codec's libFuzzer target (fuzzer runtime is in
  # libclang-rt-14-dev above)
  libsqlite3-dev clang-14
  # persistence: the PostgreSQL plugin (libpqxx) and the server its tests start
  # (scripts/postgres.sh)
  libpqxx-dev postgresql
  # cluster: TLS for the transport (Boost.Asio SSL over OpenSSL); openssl makes test certificates;
  # etcd 3.4 holds the cluster's membership and shard ownership (tests start it with scripts/etcd.sh)
  libssl-dev openssl etcd-server
  # observability: the dashboard's end-to-end test drives headless Chromium
  chromium
)

# These two remove Boost 1.81 (libleatherman-dev conflicts with it) and pull in Boost 1.74:
# never install them, whatever is added above.
forbidden=(libcpp-hocon-dev libleatherman-dev)
for p in "${packages[@]}"; do
  for f in "${forbidden[@]}"; do
    if [[ "$p" == "$f" ]]; then
      echo "setup: refusing to install $f: it removes Boost 1.81" >&2
      exit 2
    fi
  done
done

installed() {
  [[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" == "installed" ]]
}

missing=()
for p in "${packages[@]}"; do
  installed "$p" || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi

as_root=()
if [[ "$(id -u)" -ne 0 ]]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "setup: missing ${missing[*]}; run as root or install sudo" >&2
    exit 1
  fi
  as_root=(sudo)
fi

export DEBIAN_FRONTEND=noninteractive
log="$(mktemp -t troupe-setup.XXXXXX)"
trap 'rm -f "$log"' EXIT
if ! "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q >"$log" 2>&1 ||
  ! "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends "${missing[@]}" >>"$log" 2>&1; then
  cat "$log" >&2
  echo "setup: apt-get failed while installing: ${missing[*]}" >&2
  exit 1
fi

still=()
for p in "${packages[@]}"; do
  installed "$p" || still+=("$p")
done
for f in "${forbidden[@]}"; do
  if installed "$f"; then
    echo "setup: warning: $f is installed; it conflicts with Boost 1.81" >&2
  fi
done
if [[ ${#still[@]} -gt 0 ]]; then
  cat "$log" >&2
  echo "setup: still missing after apt-get: ${still[*]}" >&2
  exit 1
fi
echo "setup: installed ${#missing[@]} of ${#packages[@]} packages: ${missing[*]}"
