#!/usr/bin/env bash
# Fails when hcomm/ includes SystemC/TLM or anything from sim/ or models/, when libhcomm contains
# or needs SystemC symbols, or when models/ includes hcomm/. Usage: layering_test.sh SRC LIBHCOMM
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
if [ $bad -eq 0 ]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi
exit $bad
