// Leaf-uplink contention of the level-1 families (algo/contention.h).
#include "algo/contention.h"

#include <algorithm>
#include <map>
#include <string>

#include "algo/double_tree.h"
#include "core/comm.h"
#include "driver_port.h"

namespace hcomm::detail {

namespace {

constexpr std::uint32_t kNone = ~0u;

// Max over leaves of max(1, x_L * rho_L), x_L = out[L] / all[L]: of L's transfers, the share
// whose other end is under another leaf.
double leaf_factor(const FabricView& v, const std::vector<std::uint32_t>& out, const std::vector<std::uint32_t>& all) {
  double f = 1;
  for (std::size_t l = 0; l < v.rho.size(); ++l)
    if (all[l] && v.rho[l] > 0) f = std::max(f, static_cast<double>(out[l]) / all[l] * v.rho[l]);
  return f;
}

// One step: every member m sends to partner[m] (kNone: sits out).
double step_factor(const FabricView& v, const std::vector<std::uint32_t>& partner) {
  std::vector<std::uint32_t> out(v.rho.size(), 0), all(v.rho.size(), 0);
  for (std::size_t m = 0; m < partner.size(); ++m) {
    if (partner[m] == kNone) continue;
    const std::uint32_t l = v.leaf[m];
    ++all[l];
    if (v.leaf[partner[m]] != l) ++out[l];
  }
  return leaf_factor(v, out, all);
}

struct Acc {
  double w = 0, wf = 0;
  void add(double weight, double factor) { w += weight; wf += weight * factor; }
  double mean() const { return w > 0 ? wf / w : 1; }
};

// Recursive halving-doubling (algo/halving_doubling.cpp): the survivors of the fold exchange with
// v ^ mask, mask p/2 .. 1, mask/p of the vector each (the fold's adjacent pairs are left out).
void hd(const FabricView& v, Acc* a) {
  const auto n = static_cast<std::uint32_t>(v.leaf.size());
  std::uint32_t p = 1;
  while (p * 2 <= n) p *= 2;
  const std::uint32_t r = n - p;
  std::vector<std::uint32_t> part(n);
  for (std::uint32_t mask = p / 2; mask >= 1; mask /= 2) {
    for (std::uint32_t m = 0; m < n; ++m) {
      const bool survivor = m >= 2 * r || m % 2 == 0;
      const std::uint32_t vr = m < 2 * r ? m / 2 : m - r, u = vr ^ mask;
      part[m] = survivor ? (u < r ? 2 * u : u + r) : kNone;
    }
    a->add(static_cast<double>(mask) / p, step_factor(v, part));
  }
}

// NHR (algo/nhr.cpp): [lo, lo+s) splits into A = [lo, lo+a), B = [lo+a, lo+s), a = ceil(s/2);
// A's i-th member pairs with B's i-th (A's odd last one deals with B: counted with B's first).
// A level moves half of what the level above moved.
void nhr(const FabricView& v, Acc* a) {
  const auto n = static_cast<std::uint32_t>(v.leaf.size());
  struct G { std::uint32_t lo, s; };
  std::vector<G> level{{0, n}}, next;
  std::vector<std::uint32_t> part(n);
  double w = 0.5;
  while (!level.empty()) {
    std::fill(part.begin(), part.end(), kNone);
    next.clear();
    for (const G& g : level) {
      if (g.s < 2) continue;
      const std::uint32_t ha = (g.s + 1) / 2, hb = g.s / 2;
      for (std::uint32_t i = 0; i < hb; ++i) {
        part[g.lo + i] = g.lo + ha + i;
        part[g.lo + ha + i] = g.lo + i;
      }
      if (ha > hb) part[g.lo + hb] = g.lo + ha;
      next.push_back({g.lo, ha});
      next.push_back({g.lo + ha, hb});
    }
    if (std::any_of(part.begin(), part.end(), [](std::uint32_t x) { return x != kNone; })) a->add(w, step_factor(v, part));
    level.swap(next);
    w /= 2;
  }
}

// NB (algo/nb.cpp): at step k member m sends min(d, n - d) of n blocks to m + d, d = 2^k.
void nb(const FabricView& v, Acc* a) {
  const auto n = static_cast<std::uint32_t>(v.leaf.size());
  std::vector<std::uint32_t> part(n);
  for (std::uint32_t d = 1; d < n; d *= 2) {
    for (std::uint32_t m = 0; m < n; ++m) part[m] = (m + d) % n;
    a->add(static_cast<double>(std::min(d, n - d)) / n, step_factor(v, part));
  }
}

// The ring: every step to the next member.
void ring(const FabricView& v, Acc* a) {
  const auto n = static_cast<std::uint32_t>(v.leaf.size());
  std::vector<std::uint32_t> part(n);
  for (std::uint32_t m = 0; m < n; ++m) part[m] = (m + 1) % n;
  a->add(1, step_factor(v, part));
}

// The double tree (algo/double_tree.cpp): every edge of both trees carries the pipelined data at
// once; x_L is the share of L's edge ends whose other end is under another leaf.
void tree(const FabricView& v, Acc* a) {
  const auto n = static_cast<std::uint32_t>(v.leaf.size());
  const std::size_t leaves = v.rho.size();
  std::vector<std::uint32_t> out(leaves, 0), all(leaves, 0);
  for (std::uint32_t t = 0; t < 2; ++t)
    for (std::uint32_t m = 0; m < n; ++m) {
      const std::int64_t up = double_tree_parent(n, m, t);
      if (up < 0) continue;
      const std::uint32_t a = v.leaf[m], b = v.leaf[static_cast<std::size_t>(up)];  // the edge's two ends
      ++all[a];
      ++all[b];
      if (a != b) {
        ++out[a];
        ++out[b];
      }
    }
  a->add(1, leaf_factor(v, out, all));
}

}  // namespace

void read_fabric(hcomm_comm_t comm, std::uint32_t servers, std::uint32_t local) {
  FabricView& v = comm->fabric;
  if (v.servers == servers && v.local == local) return;  // read for this shape (a shrunk communicator reads again)
  v = FabricView{};
  v.servers = servers;
  v.local = local;
  if (servers < 2 || local == 0) return;
  std::map<std::string, std::uint32_t> index;  // switch name -> leaf index, in order of first appearance
  v.leaf.assign(servers, 0);
  bool over = false;
  for (std::uint32_t s = 0; s < servers; ++s) {
    // The descriptor straight from the driver, not through peer_desc: that keeps every peer it
    // is asked for, and S of them per rank is a table over pairs at 8192 ranks (840 MB).
    RankDesc d;
    NicInfo ni;
    if (port::rank_desc(comm->ctx, global_rank(comm, s * local), &d) != HCOMM_SUCCESS ||
        port::peer_nic_info(comm->ctx, d.device, &ni) != HCOMM_SUCCESS || !ni.present || ni.neighbor.empty()) {
      v.leaf.clear();
      v.rho.clear();
      return;  // unknown: no contention term
    }
    auto it = index.find(ni.neighbor);
    if (it == index.end()) {
      it = index.emplace(ni.neighbor, static_cast<std::uint32_t>(v.rho.size())).first;
      const double rho = ni.neighbor_up_Bps ? static_cast<double>(ni.neighbor_down_Bps) / static_cast<double>(ni.neighbor_up_Bps) : 0;
      v.rho.push_back(rho);
      over = over || rho > 1;
    }
    v.leaf[s] = it->second;
  }
  v.known = over && v.rho.size() > 1;
}

double contention_factor(const Family* f, CollOp op, const FabricView& v) {
  if (!v.known) return 1;
  if (op != CollOp::AllReduce && op != CollOp::ReduceScatter && op != CollOp::AllGather) return 1;
  const std::pair<const void*, int> key{f, static_cast<int>(op)};
  for (const auto& e : v.factors)
    if (e.first == key) return e.second;
  Acc a;
  if (f == &kHd) hd(v, &a);
  else if (f == &kNhr) nhr(v, &a);
  else if (f == &kNb) nb(v, &a);
  else if (f == &kRing) ring(v, &a);
  else if (f == &kTree) tree(v, &a);
  const double x = a.w > 0 ? a.mean() : 1;
  v.factors.emplace_back(key, x);
  return x;
}

}  // namespace hcomm::detail
