#!/usr/bin/env bash
# The installed package (docs/examples.md#installed-package): `cmake --install BUILD --prefix P`
# into a temporary prefix, then, from outside the source and build trees:
#   1. the files: P/include/hcomm/{hcomm.h,hcomm.hpp} (no driver.h; hcomm.hpp compiles with
#      P/include alone), P/lib/libhcomm.so*, P/lib/libhcsim_exec_driver.so, P/bin/hcsim,
#      P/lib/cmake/hcomm/hcommConfig{,Version}.cmake, P/lib/pkgconfig/hcomm.pc;
#   2. pkg-config: the version is the project's, and examples/c/hello_allreduce.c builds with
#      cc $(pkg-config --cflags --libs hcomm), C99 and -Wall -Werror, and finds P's libhcomm.so;
#   3. CMake: a two-line project with find_package(hcomm VERSION) + target_link_libraries(x
#      hcomm::hcomm) configures and builds; asking for a version the package is not
#      (99.0) fails;
#   4. P/bin/hcsim exec runs both programs on P/share/hcsim/topologies/a2-2node.json (4 ranks):
#      exit 0, every rank's sum right; once with the driver it finds itself, once with P's
#      driver named by HCSIM_EXEC_DRIVER.
# Usage: install_test.sh BUILD SRC VERSION
set -u
BUILD=$(realpath "$1"); SRC=$(realpath "$2"); VERSION=$3
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1
P=$TMP/prefix
pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); [ -n "${2:-}" ] && sed 's/^/    /' "$2" | tail -25; }
step() { # name log command...
  local name=$1 log=$2; shift 2
  if "$@" > "$log" 2>&1; then ok "$name"; else bad "$name: $*" "$log"; fi
}

# 1. files
step "cmake --install" install.txt cmake --install "$BUILD" --prefix "$P"
for f in include/hcomm/hcomm.h include/hcomm/hcomm.hpp lib/libhcomm.so lib/libhcomm.so.0 lib/libhcsim_exec_driver.so bin/hcsim \
  lib/cmake/hcomm/hcommConfig.cmake lib/cmake/hcomm/hcommConfigVersion.cmake lib/pkgconfig/hcomm.pc share/hcsim/topologies/a2-2node.json; do
  [ -e "$P/$f" ] && ok "installed $f" || bad "missing $f" install.txt
done
[ -x "$P/bin/hcsim" ] && ok "bin/hcsim is executable" || bad "bin/hcsim not executable"
[ ! -e "$P/include/hcomm/driver.h" ] && ok "driver.h not installed" || bad "driver.h installed"
printf '#include <hcomm/hcomm.hpp>\nint main() { return 0; }\n' > hpp.cpp
step "hcomm.hpp compiles with the installed headers only" hpp.txt c++ -std=c++17 -fsyntax-only -I"$P/include" hpp.cpp

# 2. pkg-config
export PKG_CONFIG_PATH=$P/lib/pkgconfig
v=$(pkg-config --modversion hcomm 2>&1)
[ "$v" = "$VERSION" ] && ok "pkg-config --modversion hcomm: $v" || bad "pkg-config --modversion hcomm: $v, want $VERSION"
cp "$SRC/examples/c/hello_allreduce.c" .
# shellcheck disable=SC2046
step "cc with pkg-config" cc_pc.txt cc -std=c99 -Wall -Wextra -Werror hello_allreduce.c $(pkg-config --cflags --libs hcomm) -o hello_pc
lib=$(ldd ./hello_pc 2>/dev/null | awk '/libhcomm.so/ { print $3 }')
[ -n "$lib" ] && [ "$(realpath "$lib")" = "$(realpath "$P/lib/libhcomm.so.0")" ] && ok "hello_pc loads P's libhcomm.so ($lib)" ||
  bad "hello_pc loads libhcomm from '$lib', want $P/lib"

# 3. CMake
mkdir -p proj
cp hello_allreduce.c proj/
cat > proj/CMakeLists.txt <<'EOF'
cmake_minimum_required(VERSION 3.16)
project(hello C)
find_package(hcomm ${WANT} REQUIRED)
add_executable(hello_cmake hello_allreduce.c)
target_link_libraries(hello_cmake PRIVATE hcomm::hcomm)
EOF
step "find_package(hcomm $VERSION): configure" cfg.txt cmake -S proj -B proj/build -DCMAKE_PREFIX_PATH="$P" -DWANT="$VERSION"
step "find_package(hcomm $VERSION): build" bld.txt cmake --build proj/build
if cmake -S proj -B proj/build99 -DCMAKE_PREFIX_PATH="$P" -DWANT=99.0 > cfg99.txt 2>&1; then
  bad "find_package(hcomm 99.0) succeeded" cfg99.txt
else
  grep -q 'requested version "99.0"' cfg99.txt && ok "find_package(hcomm 99.0) fails on the version" || bad "find_package(hcomm 99.0) failed otherwise" cfg99.txt
fi

# 4. the installed hcsim runs them
TOPO=$P/share/hcsim/topologies/a2-2node.json
run() { # name program [env...]
  local name=$1 prog=$2; shift 2
  env "$@" timeout 30 "$P/bin/hcsim" exec --topology "$TOPO" -n 4 --no-trace -- "$prog" > "$name.txt" 2>&1
  local rc=$?
  [ "$rc" -eq 0 ] && ok "$name: exit 0" || bad "$name: exit $rc" "$name.txt"
  local n; n=$(grep -cE '^rank [0-3]: all-reduce of 1048576 floats took [0-9.]+ us \(simulated\); 0 wrong elements$' "$name.txt")
  [ "$n" -eq 4 ] && ok "$name: 4 ranks right" || bad "$name: $n ranks right, want 4" "$name.txt"
}
[ -x proj/build/hello_cmake ] && run exec_cmake proj/build/hello_cmake -u HCSIM_EXEC_DRIVER
[ -x hello_pc ] && run exec_pc_installed_driver ./hello_pc HCSIM_EXEC_DRIVER="$P/lib/libhcsim_exec_driver.so"

echo "install_test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
