#!/usr/bin/env bash
# One-stop set-up for a fresh Debian 12 machine (run as root, from the repository root or anywhere).
#   tools/setup.sh run    install missing Debian packages, build (Release), run the default scenario
#   tools/setup.sh test   install missing packages, build Release and ASan+UBSan, run every test, fuzz the loaders 30 s
# Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
JOBS=${JOBS:-$(nproc)}

PACKAGES=(build-essential cmake pkg-config ccache libsystemc-dev nlohmann-json3-dev libboost-graph-dev
          libsqlite3-dev sqlite3 libgtest-dev libbenchmark-dev time openmpi-bin libopenmpi-dev
          pybind11-dev python3-numpy)   # the Python module hcomm (docs/python.md)

FUZZ_PACKAGES=(clang libclang-rt-14-dev)   # test only: the loaders' libFuzzer target
TEST_PACKAGES=(python3-jsonschema)          # test only: plan_schema_test checks docs/plan.schema.json

install_packages() {  # install_packages [extra packages...]
  local missing=()
  for p in "${PACKAGES[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    if [ "$(id -u)" -ne 0 ]; then echo "setup: need root to install packages" >&2; exit 1; fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" > /dev/null
  fi
}

build() {  # build DIR [cmake args...]
  local dir=$1; shift
  cmake -S "$ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=Release "$@" > /dev/null
  cmake --build "$dir" -j "$JOBS"
}

case "${1:-}" in
  run)
    install_packages
    build build
    ./build/tools/hcsim run
    ;;
  test)
    install_packages "${FUZZ_PACKAGES[@]}" "${TEST_PACKAGES[@]}"
    build build
    (cd build && ctest --output-on-failure -j "$JOBS")
    # Second configuration: the whole suite under AddressSanitizer + UndefinedBehaviorSanitizer.
    build build-asan -DHCSIM_SANITIZE=ON -DHCSIM_BENCHMARKS=OFF
    (cd build-asan && ASAN_OPTIONS=detect_leaks=1:detect_stack_use_after_return=0 UBSAN_OPTIONS=print_stacktrace=1 \
       ctest --output-on-failure -j "$JOBS")
    # A short libFuzzer run over the JSON loaders (long runs: docs/fuzzing.md).
    bash tests/fuzz/run_short.sh 30
    ;;
  *)
    echo "usage: tools/setup.sh run|test" >&2
    exit 2
    ;;
esac
