#!/usr/bin/env bash
# Fails when hcomm/ includes SystemC/TLM or anything from sim/ or models/, when libhcomm contains
# or needs SystemC symbols, when models/ includes hcomm/, when hcomm/src calls the Driver outside
# driver_port.cpp, or when an hcomm/src room includes a room above it. Usage: layering_test.sh SRC LIBHCOMM
set -u
SRC=$1
LIB=$2
bad=0
hits=$(grep -rnE '#\s*include\s*[<"](systemc|tlm|sysc/|sim/|models/)' "$SRC/hcomm" || true)
if [ -n "$hits" ]; then echo "hcomm/ includes simulator headers:"; echo "$hits"; bad=1; fi
hits=$(grep -rnE '#\s*include\s*[<"]hcomm/' "$SRC/models" || true)
if [ -n "$hits" ]; then echo "models/ includes hcomm/ headers:"; echo "$hits"; bad=1; fi
# Symbols: libhcomm must neither define nor reference SystemC (sc_core / sc_dt) or simulator code.
syms=$(nm -C "$LIB" 2>/dev/null | grep -E 'sc_core::|sc_dt::|tlm::|sim::|models::' | head -5)
if [ -n "$syms" ]; then echo "libhcomm references simulator symbols:"; echo "$syms"; bad=1; fi
# The CMake link interface of hcomm must not name SystemC.
if grep -nE 'target_link_libraries\(hcomm[^)]*(systemc|SystemC|hcsim_)' "$SRC/hcomm/CMakeLists.txt"; then
  echo "hcomm/CMakeLists.txt links SystemC or simulator targets"; bad=1
fi
# Inside libhcomm (docs/architecture.md#hcomm): only the driver port calls the Driver.
hits=$(grep -rnE '(\bdrv\s*->|(\bhcomm::|[^_[:alnum:]])driver\(\)|\bDriver\s*&)' "$SRC/hcomm/src" \
         --include='*.cpp' --include='*.h' | grep -vE '^[^:]*/hcomm/src/driver_port\.(h|cpp):' | grep -vE ':[0-9]+:\s*//' || true)
if [ -n "$hits" ]; then echo "hcomm/src calls the Driver outside driver_port.cpp:"; echo "$hits"; bad=1; fi
# No upward includes between hcomm/src rooms: core <- transport <- {p2p, algo} <- coll; the driver
# port sits under everything and includes core/ only.
check_room() {  # room, forbidden rooms (regex alternation)
  local room=$1 forbidden=$2 found
  found=$(grep -rnE "#\s*include\s*\"($forbidden)/" $room 2>/dev/null || true)
  if [ -n "$found" ]; then echo "upward include in hcomm/src/${room##*/src/}:"; echo "$found"; bad=1; fi
}
check_room "$SRC/hcomm/src/core" 'transport|p2p|algo|coll'
check_room "$SRC/hcomm/src/transport" 'p2p|algo|coll'
check_room "$SRC/hcomm/src/p2p" 'algo|coll'
check_room "$SRC/hcomm/src/algo" 'p2p|coll'
check_room "$SRC/hcomm/src/driver_port.h $SRC/hcomm/src/driver_port.cpp" 'transport|p2p|algo|coll'
if [ $bad -eq 0 ]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi
exit $bad
