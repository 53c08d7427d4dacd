// The algorithm knobs (docs/algorithms/README.md#selection, docs/config.md).
#include "core/algo_knob.h"

#include <cctype>
#include <cstdlib>

#include "core/log.h"

namespace hcomm::detail {

namespace {

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}
std::string trim(const std::string& s) {
  std::size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// Canonical family name for a user spelling; "" = automatic; "?" = unknown.
std::string canonical(const std::string& v) {
  const std::string u = upper(trim(v));
  if (u.empty() || u == "NA" || u == "AUTO") return "";
  if (u == "RING") return "ring";
  if (u == "H-D_R" || u == "HD" || u == "RHD" || u == "H-D" || u == "HALVING_DOUBLING" || u == "RECURSIVE_HALVING_DOUBLING")
    return "H-D_R";
  if (u == "NHR" || u == "NHR_V1") return "NHR";
  if (u == "NB") return "NB";
  if (u == "DOUBLE_TREE" || u == "TREE" || u == "DOUBLETREE") return "DOUBLE_TREE";
  if (u == "PAIRWISE") return "pairwise";
  if (u == "STAR") return "star";
  if (u == "MESH") return "mesh";
  if (u == "DOUBLE_RING" || u == "DOUBLERING") return "double_ring";
  if (u == "PIPELINE") return "pipeline";
  if (u == "AHC") return u;  // known to HCCL, not built here: fallback
  return "?";
}
const char* kAllowed = "NA, ring, H-D_R, NHR, NB, DOUBLE_TREE, pairwise, star, double_ring, mesh, pipeline (HCCL's AHC falls back)";

int op_index(const std::string& name) {
  const std::string u = upper(trim(name));
  const char* names[] = {"ALLREDUCE", "REDUCESCATTER", "ALLGATHER", "BROADCAST", "REDUCE", "SCATTER", "GATHER", "ALLTOALL"};
  for (int i = 0; i < 8; ++i)
    if (u == names[i]) return i;
  if (u == "ALLTOALLV" || u == "ALLTOALLVC") return 7;
  return -1;
}

// "level0:X;level1:Y" -> (X, Y); why on error.
bool parse_levels(const std::string& s, std::string* l0, std::string* l1, std::string* why) {
  std::size_t pos = 0;
  while (pos <= s.size()) {
    std::size_t semi = s.find(';', pos);
    const std::string part = trim(s.substr(pos, semi == std::string::npos ? std::string::npos : semi - pos));
    pos = semi == std::string::npos ? s.size() + 1 : semi + 1;
    if (part.empty()) continue;
    const std::size_t colon = part.find(':');
    if (colon == std::string::npos) { *why = "\"" + part + "\" is not level<N>:<algo>"; return false; }
    const std::string lv = upper(trim(part.substr(0, colon))), al = trim(part.substr(colon + 1));
    const std::string c = canonical(al);
    if (c == "?") { *why = "unknown algorithm \"" + al + "\" (allowed: " + kAllowed + ")"; return false; }
    if (lv == "LEVEL0") *l0 = c;
    else if (lv == "LEVEL1") *l1 = c;
    else if (lv == "LEVEL2") { /* super-pod level: no such tier in the simulated clusters; accepted, unused */ }
    else { *why = "unknown level \"" + part.substr(0, colon) + "\" (level0, level1, level2)"; return false; }
  }
  return true;
}

// Parse an HCOMM_ALGO / HCCL_ALGO value into `o` with source `by`.
bool parse_spec(const std::string& v, const char* by, AlgoOverride* o, std::string* why) {
  if (v.find('=') == std::string::npos) {
    std::string l0, l1;
    if (!parse_levels(v, &l0, &l1, why)) return false;
    if (o)
      for (int i = 0; i < 8; ++i) { o->level0[i] = l0; o->level1[i] = l1; o->by[i] = by; }
    return true;
  }
  std::size_t pos = 0;
  while (pos <= v.size()) {
    std::size_t slash = v.find('/', pos);
    const std::string part = trim(v.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos));
    pos = slash == std::string::npos ? v.size() + 1 : slash + 1;
    if (part.empty()) continue;
    const std::size_t eq = part.find('=');
    if (eq == std::string::npos) { *why = "\"" + part + "\" is not <op>=level0:...;level1:..."; return false; }
    const int i = op_index(part.substr(0, eq));
    if (i < 0) {
      *why = "unknown operation \"" + trim(part.substr(0, eq)) +
             "\" (allreduce, reducescatter, allgather, broadcast, reduce, scatter, alltoall)";
      return false;
    }
    std::string l0, l1;
    if (!parse_levels(part.substr(eq + 1), &l0, &l1, why)) return false;
    if (o) { o->level0[i] = l0; o->level1[i] = l1; o->by[i] = by; }
  }
  return true;
}

}  // namespace

std::string check_algo_value(const char* value, bool is_allreduce_knob) {
  if (!value) return "no value";
  std::string why;
  if (is_allreduce_knob) {
    const std::string c = canonical(value);
    if (c == "?") return std::string("unknown algorithm \"") + value + "\" (allowed: " + kAllowed + ")";
    return "";
  }
  return parse_spec(value, "", nullptr, &why) ? "" : why;
}

hcomm_result_t parse_algo_override(hcomm_context_t ctx, const char* config_algo, AlgoOverride* o) {
  *o = AlgoOverride{};
  std::string why;
  if (config_algo) {
    if (!parse_spec(config_algo, "config", o, &why)) {
      logf(ctx, 0, "config algo = \"%s\": %s", config_algo, why.c_str());
      return HCOMM_E_PARA;
    }
    return HCOMM_SUCCESS;
  }
  for (const char* env : {"HCCL_ALGO", "HCOMM_ALGO"}) {  // HCOMM_ALGO, read last, wins
    const char* v = std::getenv(env);
    if (!v || !*v) continue;
    if (!parse_spec(v, env, o, &why)) {
      logf(ctx, 0, "%s=\"%s\": %s", env, v, why.c_str());
      return HCOMM_E_PARA;
    }
  }
  if (const char* v = std::getenv("HCOMM_ALLREDUCE_ALGO"); v && *v) {
    const std::string c = canonical(v);
    if (c == "?") {
      logf(ctx, 0, "HCOMM_ALLREDUCE_ALGO=\"%s\": unknown algorithm (allowed: %s)", v, kAllowed);
      return HCOMM_E_PARA;
    }
    o->level0[0] = c == "mesh" ? "mesh" : "";
    o->level1[0] = c == "mesh" ? "" : c;
    o->by[0] = "HCOMM_ALLREDUCE_ALGO";
  }
  return HCOMM_SUCCESS;
}

}  // namespace hcomm::detail
