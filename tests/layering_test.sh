#!/usr/bin/env bash
# Fails when hcomm/ includes SystemC/TLM or anything from sim/ or models/, when libhcomm contains
# or needs SystemC symbols, when models/ includes hcomm/, SystemC or sim/, when the rooms of
# models/ include each other's internals or form an include cycle, when hcomm/src calls the Driver
# outside driver_port.cpp, when an hcomm/src room includes a room above it (or recovery/ more than
# core, discovery, route, coll), when hcomm declares a global function pointer or registers
# through a static initialiser, when sim/'s loaders
# (sim/src/config/) reach SystemC, the shell or the runner, or when sim/ constructs models
# anywhere but sim/src/elaborate.cpp.
# Usage: layering_test.sh SRC LIBHCOMM
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
hits=$(grep -rnE '(\bdrv\s*(->|\.\s*(runtime|rdma|host|observer)\b)|(\bhcomm::|[^_[:alnum:]])drivers?\(\)|\b(Driver|DeviceRuntime|RdmaNic|HostChannel|DriverObserver)\s*[&*])' "$SRC/hcomm/src" \
         --include='*.cpp' --include='*.h' | grep -vE '^[^:]*/hcomm/src/driver_port\.(h|cpp):' | grep -vE ':[0-9]+:\s*//' || true)
if [ -n "$hits" ]; then echo "hcomm/src calls the Driver outside driver_port.cpp:"; echo "$hits"; bad=1; fi
# No upward includes between hcomm/src rooms (docs/architecture.md#hcomm): core <- discovery <- route <-
# transport <- {p2p, algo} <- coll <- recovery <- init. A room includes only rooms below it (p2p and
# algo, siblings, not each other); a folder of hcomm/src not in this order fails (place it first).
# The driver port sits under everything and includes core/ only.
declare -A LEVEL=([core]=0 [discovery]=1 [route]=2 [transport]=3 [p2p]=4 [algo]=4 [coll]=5 [recovery]=6 [init]=7)
for dir in "$SRC/hcomm/src"/*/; do
  room=$(basename "$dir")
  if [ -z "${LEVEL[$room]:-}" ]; then echo "hcomm/src/$room is not a room of the order (tests/layering_test.sh LEVEL)"; bad=1; continue; fi
  while IFS=: read -r file line inc; do
    [ -z "$inc" ] && continue
    other=${inc#*\"}; other=${other%%/*}
    [ "$other" = "$room" ] || [ "$other" = hcomm ] && continue
    if [ -z "${LEVEL[$other]:-}" ] || [ "${LEVEL[$other]}" -ge "${LEVEL[$room]}" ]; then
      echo "upward include in hcomm/src/$room: ${file#$SRC/}:$line: $inc"; bad=1
    fi
  done < <(grep -rnoE '#\s*include\s*"[a-z0-9_]+/' "$dir" 2>/dev/null)
done
# The recovery drives the collectives (coll/run.h rerun) and the routing (route/route.h) and reads
# discovery's view; of transport and algo it calls only the resets of the state they own
# (transport/relay.h drop_channels, algo/mesh.h forget_mesh_debts); p2p not at all.
hits=$(grep -rnE '#\s*include\s*"[a-z0-9_]+/' "$SRC/hcomm/src/recovery" | grep -vE '#\s*include\s*"(core|discovery|route|coll|recovery|hcomm)/|#\s*include\s*"(transport/relay|algo/mesh)\.h"' || true)
if [ -n "$hits" ]; then echo "hcomm/src/recovery includes beyond core, discovery, route, coll (and the two resets):"; echo "$hits"; bad=1; fi
# State ownership (docs/architecture.md#hcomm): every field of the context (hcomm_context_s) and
# of a communicator (hcomm_comm_s) is written by one room only (the room that creates the object
# counts: core/ fills in what comes from the configuration); the others read it or call the
# owner's functions. Writes are found as assignments, compound assignments, increments and
# mutating calls through the names the library gives these objects (c->, comm->, ctx->, ...->ctx->).
# The owners of the fields that several rooms used to write are pinned (FIELD:ROOM); `rec` is
# recovery/'s state struct in both (CommRecovery, ContextRecovery).
OWNED="rdma_unfenced:transport pulled_from:algo mesh_owed:algo relay_chans:transport relay_chan_list:transport relay_stages:transport reservations:route next_event:core rec:recovery mark_base:coll op_seq:coll"
fields=$(for st in hcomm_comm_s hcomm_context_s; do
  awk "/^struct $st \\{/,/^};/" "$SRC/hcomm/src/core/objects.h" | sed -E 's#//.*##' |
    grep -oE '[a-z_][a-z0-9_]*\s*(\{[^}]*\}|=[^=;,][^;,]*)?\s*[;,]' | grep -oE '^[a-z_][a-z0-9_]*'
done | sort -u)
if [ "$(printf '%s\n' $fields | wc -l)" -lt 50 ]; then echo "state ownership: found only $(printf '%s\n' $fields | wc -l) fields in core/objects.h"; bad=1; fi
# Every write of such a field (or of a member of it, c->rec.lost), once: "FIELD ROOM FILE:LINE".
m='(\b(c|comm|ctx)|->ctx)->[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*'
all_writes=$(grep -rnoE "$m\s*(\[[^]]*\]\s*)?(=[^=]|\+=|-=|\|=|\+\+|--|\.(push_back|emplace_back|clear|assign|insert|erase|resize|pop_back|emplace|swap|reset)\b)|(\+\+|--)$m" \
    "$SRC/hcomm/src" --include='*.cpp' --include='*.h' |
  sed -E "s#^$SRC/hcomm/src/##" |
  sed -nE 's#^(([^/:]+)/)?([^:]+):([0-9]+):(\+\+|--)?.*->([a-z_][a-z0-9_]*)(\.[a-z_][a-z0-9_]*)*\s*(\[.*|=.*|\+=.*|-=.*|\|=.*|\+\+|--)?$#\6 \2 \1\3:\4#p' |
  awk '{ if ($2 ~ /[.:]/) { $3 = $2; $2 = "." } print }')
for field in $fields; do
  rooms=$(printf '%s\n' "$all_writes" | awk -v f="$field" '$1 == f { print $2 }' | sort -u)
  if [ "$(printf '%s' "$rooms" | grep -c .)" -gt 1 ]; then
    echo "$field is written by more than one room: $(echo $rooms)"
    printf '%s\n' "$all_writes" | awk -v f="$field" '$1 == f { print "  " $3 }'
    bad=1
  fi
done
for fo in $OWNED; do
  field=${fo%%:*}; owner=${fo#*:}
  hits=$(printf '%s\n' "$all_writes" | awk -v f="$field" -v o="$owner" '$1 == f && $2 != o { print "  " $3 }')
  if [ -n "$hits" ]; then echo "$field is $owner's, written elsewhere:"; echo "$hits"; bad=1; fi
done
hits=$(grep -nE '#\s*include\s*"[a-z0-9_]+/' "$SRC/hcomm/src/driver_port.h" "$SRC/hcomm/src/driver_port.cpp" | grep -vE '#\s*include\s*"(core|hcomm)/' || true)
if [ -n "$hits" ]; then echo "the driver port includes more than core/:"; echo "$hits"; bad=1; fi
# No global function pointers in hcomm (a room reaches a room above it through an interface it is
# given, core/recovery.h, never through a pointer someone set): no declaration or definition of a
# pointer to function named g_*, no extern pointer to function, no object registering itself
# from a static initialiser (a struct whose constructor runs at load time, instantiated at
# namespace scope: "} g_x;").
hits=$(grep -rnE '\(\s*\*\s*g_[A-Za-z0-9_]*\s*\)|extern[^;]*\(\s*\*\s*[A-Za-z_]|^\s*\}\s*g_[A-Za-z0-9_]*\s*;' \
         "$SRC/hcomm/src" "$SRC/hcomm/include" --include='*.cpp' --include='*.h' | grep -vE ':[0-9]+:\s*//' || true)
if [ -n "$hits" ]; then echo "hcomm has a global function pointer or a static-initialiser registration:"; echo "$hits"; bad=1; fi

# models/ is plain C++: no SystemC or TLM, nothing from sim/ (the SystemC face is sim/npu_tlm.h).
hits=$(grep -rnE '#\s*include\s*[<"](systemc|tlm|sysc/|sim/)' "$SRC/models" || true)
if [ -n "$hits" ]; then echo "models/ includes SystemC or simulator headers:"; echo "$hits"; bad=1; fi

# Rooms of models/ (docs/models/README.md): a room's files (src/<room>/, include/models/<room>/)
# include other rooms only through these interface headers; everything else in a room is its
# own. No room file includes the composers (models/machine.h, models/network.h): they stand above
# every room and reach the rooms' classes, never the other way. No include cycles between rooms.
ROOMS="mem link npu nic net"
declare -A IFACE=(
  [mem]="hbm.h reduce.h huge_alloc.h host_memory.h"
  [link]="link_params.h port.h pcie.h links.h"
  [npu]="address_map.h npu_params.h task.h task_host.h regmap.h machine_listener.h"
  [nic]="dcqcn_params.h congestion_control.h rc_transport.h rdma.h rdma_engine.h rdma_network.h"
  [net]="net_params.h policies.h switch.h flow_tier.h"
)
edges=""
for room in $ROOMS; do
  files=$(ls "$SRC/models/src/$room"/*.cpp "$SRC/models/include/models/$room"/*.h 2>/dev/null)
  for f in $files; do
    while IFS= read -r inc; do
      [ -z "$inc" ] && continue
      case "$inc" in
        models/machine.h|models/network.h)
          echo "room file $f includes the composer $inc"; bad=1 ;;
        models/*/*)
          other=${inc#models/}; other=${other%%/*}; name=${inc##*/}
          [ "$other" = "$room" ] && continue
          if [[ " ${IFACE[$other]:-} " != *" $name "* ]]; then echo "$f: room $room includes $inc, not an interface header of $other"; bad=1; fi
          edges="$edges$room $other"$'\n' ;;
      esac
    done < <(sed -nE 's/^\s*#\s*include\s*"(models\/[^"]+)".*/\1/p' "$f")
  done
done
# The network side never reaches the NPU side, not even through headers it includes.
reach() {  # print every models/ header reachable from file $1
  local todo=("$1") seen=" " f inc
  while [ ${#todo[@]} -gt 0 ]; do
    f=${todo[0]}; todo=("${todo[@]:1}")
    for inc in $(sed -nE 's/^\s*#\s*include\s*"(models\/[^"]+)".*/\1/p' "$f"); do
      [[ "$seen" == *" $inc "* ]] && continue
      seen="$seen$inc "; echo "$inc"
      [ -f "$SRC/models/include/$inc" ] && todo+=("$SRC/models/include/$inc")
    done
  done
}
for f in "$SRC/models/src/net"/*.cpp "$SRC/models/include/models/net"/*.h "$SRC/models/include/models/network.h"; do
  hits=$(reach "$f" | grep -E '^models/(npu|link|mem)/|^models/machine\.h' || true)
  if [ -n "$hits" ]; then echo "$f reaches NPU-side headers:"; echo "$hits"; bad=1; fi
done
if ! printf '%s' "$edges" | sort -u | tsort >/dev/null 2>&1; then
  echo "include cycle between models rooms:"; printf '%s' "$edges" | sort -u; bad=1
fi

# sim/ (docs/architecture.md#sim): the loaders (sim/src/config/, sim/include/sim/config/) are
# plain C++ — no SystemC or TLM, not even through the headers they include, and nothing from the
# SystemC side (sim/src/systemc/, sim/src/driver/, kernel.h, driver.h, npu_tlm.h), elaboration or the runner.
sim_reach() {  # print every sim/ or models/ header reachable from file $1 (and its SystemC includes)
  local todo=("$1") seen=" " f inc
  while [ ${#todo[@]} -gt 0 ]; do
    f=${todo[0]}; todo=("${todo[@]:1}")
    sed -nE 's/^\s*#\s*include\s*<((systemc|tlm|sysc\/)[^>]*)>.*/\1/p' "$f"
    for inc in $(sed -nE 's/^\s*#\s*include\s*"((sim|models)\/[^"]+)".*/\1/p' "$f"); do
      [[ "$seen" == *" $inc "* ]] && continue
      seen="$seen$inc "; echo "$inc"
      for dir in "$SRC/sim/include" "$SRC/models/include"; do [ -f "$dir/$inc" ] && todo+=("$dir/$inc"); done
    done
  done
}
for f in "$SRC/sim/src/config"/* "$SRC/sim/include/sim/config"/*; do
  hits=$(sim_reach "$f" | grep -E '^(systemc|tlm|sysc/)|^sim/(kernel|driver|npu_tlm|runner|device_heap)\.h$|^sim/driver/' || true)
  hits2=$(grep -nE '#\s*include\s*"(systemc|run|driver)/|#\s*include\s*"elaborate\.h"' "$f" || true)
  if [ -n "$hits$hits2" ]; then echo "$f (a loader) reaches SystemC, the shell or the runner:"; echo "$hits$hits2"; bad=1; fi
done
# The runner's parts (sim/src/run/) sit below the runner: they take its value types from
# sim/run_types.h and never include sim/runner.h.
hits=$(grep -rnE '#\s*include\s*"sim/runner\.h"' "$SRC/sim/src/run" || true)
if [ -n "$hits" ]; then echo "sim/src/run includes the runner above it:"; echo "$hits"; bad=1; fi
# Only elaboration maps a Topology to models: no other sim/ file adds NPUs, links, switches,
# hosts or root complexes to a machine or network.
hits=$(grep -rnE '(\.|->)(add_npu|add_link|add_switch|add_host|add_pcie_switch[a-z_]*|add_root_complex|attach_host|attach_network)\(' \
         "$SRC/sim" --include='*.cpp' --include='*.h' | grep -vE '^[^:]*/sim/src/elaborate\.cpp:' || true)
if [ -n "$hits" ]; then echo "models constructed outside sim/src/elaborate.cpp:"; echo "$hits"; bad=1; fi

# No class of models/ or sim/ is defined across more than one room (docs/architecture.md#the-house):
# a room is a folder of models/src or sim/src (the files directly in src/ are the top room); a
# class's methods are defined in the room that owns it. Definitions are found at the start of a
# line (the house style), as `Class::method(`.
split_classes=$(
  for top in models sim; do
    grep -rnE '^[A-Za-z][^;{(]*[ *&]([A-Z][A-Za-z0-9_]*)::~?[A-Za-z_][A-Za-z0-9_]*\(' "$SRC/$top/src" --include='*.cpp' |
      sed -E "s#^$SRC/$top/src/##; s#^([^/:]+):[0-9]+:#.:#; s#^([^/]+)/[^:]*:[0-9]+:#\\1:#" |
      sed -E 's#^([^:]+):.*[ *&]([A-Z][A-Za-z0-9_]*)::~?[A-Za-z_][A-Za-z0-9_]*\(.*#'"$top"' \2 \1#'
  done | sort -u | awk '{rooms[$1" "$2] = rooms[$1" "$2] " " $3; n[$1" "$2]++} END {for (c in n) if (n[c] > 1) print c ":" rooms[c]}' | sort)
hits=$(printf '%s\n' "$split_classes" | grep . || true)
if [ -n "$hits" ]; then echo "classes defined across rooms (top, class: rooms):"; echo "$hits"; bad=1; fi
# Inside a room, a file defines its own class's methods, not a slice of a bigger class: a class
# of models/, sim/ or hcomm/ whose methods are defined in several files fails.
sliced=$(for top in models sim hcomm; do
  grep -rnE '^[A-Za-z][^;{(]*[ *&]([A-Z][A-Za-z0-9_]*)::~?[A-Za-z_][A-Za-z0-9_]*\(' "$SRC/$top/src" --include='*.cpp' |
    sed -E 's#^([^:]+):[0-9]+:.*[ *&]([A-Z][A-Za-z0-9_]*)::~?[A-Za-z_][A-Za-z0-9_]*\(.*#\2 \1#' | sort -u |
    awk '{n[$1]++} END {for (c in n) if (n[c] > 1) print c}'
done | sort -u)
for c in $sliced; do echo "class $c is defined across several files (one file per class)"; bad=1; done

if [ $bad -eq 0 ]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi
exit $bad
