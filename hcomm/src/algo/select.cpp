// Algorithm selection (docs/algorithms/README.md#selection).
#include "algo/select.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/log.h"

namespace hcomm::detail {

namespace {

const Family* const kFamilies[] = {&kRing, &kHd, &kNhr, &kNb, &kTree, &kPairwise, &kStar};

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
  if (u == "PIPELINE" || u == "AHC" || u == "DOUBLE_RING") return u;  // known to HCCL, not built here: fallback
  return "?";
}
const char* kAllowed = "NA, ring, H-D_R, NHR, NB, DOUBLE_TREE, pairwise, star, mesh (HCCL's pipeline and AHC fall back)";

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

const Family* family_named(const std::string& c) {
  for (const Family* f : kFamilies)
    if (c == f->name) return f;
  return nullptr;
}

double mesh_cost(CollOp op, const Shape& s, std::uint64_t bytes) {
  const LinkCost h = hccs_cost();
  const double D = static_cast<double>(bytes), L = s.local;
  switch (op) {
    case CollOp::AllReduce: return 2 * h.alpha_ns + 2 * D / L * h.beta_ns_per_byte + D / L * h.gamma_ns_per_byte;
    case CollOp::ReduceScatter: return h.alpha_ns + D / L * (h.beta_ns_per_byte + h.gamma_ns_per_byte);
    case CollOp::AllGather: return h.alpha_ns + D / L * h.beta_ns_per_byte;
    default: return -1;
  }
}

bool mesh_does(CollOp op) { return op == CollOp::AllReduce || op == CollOp::ReduceScatter || op == CollOp::AllGather; }

Choice make(Choice::Kind k, const Family* f, const Shape& s, CollOp op, std::uint64_t bytes) {
  Choice c;
  c.kind = k;
  c.family = f;
  if (k == Choice::Mesh) {
    c.name = "mesh";
    c.est_ns = mesh_cost(op, s, bytes);
  } else if (k == Choice::Hier) {
    c.name = std::string("mesh+") + f->name;
    const double inner = f->cost(op, s.servers, bytes / std::max<std::uint32_t>(1, s.local), roce_cost());
    c.est_ns = inner < 0 ? -1 : mesh_cost(op, s, bytes) + inner;
  } else {
    c.name = f->name;
    c.est_ns = f->cost(op, s.n, bytes, s.servers > 1 ? roce_cost() : hccs_cost());
  }
  return c;
}

}  // namespace

LinkCost hccs_cost() { return LinkCost{2000.0, 1.0 / 28.0, 1.0 / 100.0}; }
LinkCost roce_cost() { return LinkCost{10000.0, 1.0 / 25.0, 1.0 / 100.0}; }

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

Choice select_algo(hcomm_comm_t comm, CollOp op, std::uint64_t bytes, const Shape& s) {
  const int oi = static_cast<int>(op == CollOp::Gather ? CollOp::Reduce : op);  // gather: internal, follows reduce
  const std::string& l0 = comm->algo.level0[oi];
  const std::string& l1 = comm->algo.level1[oi];
  // The forced choice, if it can run.
  const std::string& forced = s.servers > 1 ? l1 : (l0.empty() ? l1 : l0);
  if (!forced.empty()) {
    Choice c;
    bool ok = false;
    if (forced == "mesh") {
      ok = s.servers == 1 && s.mesh && mesh_does(op);
      if (ok) c = make(Choice::Mesh, nullptr, s, op, bytes);
    } else if (const Family* f = family_named(forced)) {
      if (f->cost(op, s.n, bytes, roce_cost()) >= 0) {
        ok = true;
        c = s.servers > 1 && op == CollOp::AllReduce && s.mesh && s.local > 1 ? make(Choice::Hier, f, s, op, bytes)
                                                                                : make(Choice::Flat, f, s, op, bytes);
      }
    }
    if (ok) {
      c.by = comm->algo.by[oi];
      return c;
    }
    logf(comm->ctx, 1, "Rank%u %s: %s=%s does not do %s on %u server(s) x %u rank(s); selecting automatically", comm->rank,
         coll_op_name(op), comm->algo.by[oi].c_str(), forced.c_str(), coll_op_name(op), s.servers, s.local);
  }
  // Automatic: every candidate's estimate; ties go to the earlier candidate.
  std::vector<Choice> cand;
  if (s.servers == 1 && s.mesh && mesh_does(op)) cand.push_back(make(Choice::Mesh, nullptr, s, op, bytes));
  for (const Family* f : kFamilies) {
    if (s.servers > 1 && op == CollOp::AllReduce && s.mesh && s.local > 1) {
      Choice h = make(Choice::Hier, f, s, op, bytes);
      if (h.est_ns >= 0) cand.push_back(h);
    }
    if (f == &kStar && s.servers > 1) continue;  // star is an intra-server algorithm
    Choice c = make(Choice::Flat, f, s, op, bytes);
    if (c.est_ns >= 0) cand.push_back(c);
  }
  std::stable_sort(cand.begin(), cand.end(), [](const Choice& a, const Choice& b) { return a.est_ns < b.est_ns; });
  Choice c = cand.front();
  if (cand.size() > 1) {
    c.runner_up = cand[1].name;
    c.runner_up_ns = cand[1].est_ns;
  }
  c.by = "auto";
  return c;
}

}  // namespace hcomm::detail
