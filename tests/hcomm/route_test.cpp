// Routing against the in-memory driver's miniature Clos (fake_driver.h: server s's NICs on leaf
// s/2, 4 uplinks per leaf hashed from (src, dst, sport)): link-type priority, the slot rule for
// RoCE source ports (stripe i of the NIC on leaf port p leaves by uplink (p*k + i) mod 4), the
// QPs connected with exactly the reported ports, the hash policy connecting nothing, and an
// all-reduce still producing the right bytes. The expected uplinks are computed here from the
// fake's own hash, not from what the library reported.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>
#include <vector>

#include "algo/groups.h"
#include "algo/mesh.h"
#include "core/comm.h"
#include "fake_cluster.h"
#include "fake_driver.h"
#include "hcomm/hcomm.h"
#include "route/route.h"

using hcomm_fake::FakeDriver;

namespace {

// HCOMM_ROUTE_SPORT `policy`, HCOMM_NUM_QP `qps`.
struct World : hcomm_fake::Cluster<> {
  World(std::uint32_t servers, std::uint32_t per, const char* policy, const char* qps, const char* algo = nullptr)
      : Cluster(servers * per, per, {algo, 1, {{"HCOMM_ROUTE_SPORT", policy}, {"HCOMM_NUM_QP", qps}}}) {}
  // A barrier on every rank; true when every rank's stream finished it.
  bool barrier() {
    for (std::uint32_t r = 0; r < n; ++r) {
      drv.set_rank(r);
      if (hcomm_barrier(comm[r], stream[r]) != HCOMM_SUCCESS) return false;
    }
    for (std::uint32_t r = 0; r < n; ++r) {
      drv.set_rank(r);
      if (hcomm_stream_synchronize(stream[r]) != HCOMM_SUCCESS) return false;
    }
    return true;
  }
  // An int32 all-reduce (sum) of 64 Ki elements per rank; true when every rank got the sum.
  bool allreduce() {
    const std::uint64_t count = 1 << 16;
    std::vector<std::vector<std::int32_t>> in(n, std::vector<std::int32_t>(count));
    std::vector<std::int32_t> ref(count, 0);
    for (std::uint32_t r = 0; r < n; ++r)
      for (std::uint64_t i = 0; i < count; ++i) { in[r][i] = static_cast<std::int32_t>((r * 7 + i) % 11) - 5; ref[i] += in[r][i]; }
    std::vector<void*> a(n), b(n);
    for (std::uint32_t r = 0; r < n; ++r) {
      drv.set_rank(r);
      if (hcomm_malloc(ctx[r], count * 4, &a[r]) != HCOMM_SUCCESS || hcomm_malloc(ctx[r], count * 4, &b[r]) != HCOMM_SUCCESS) return false;
      hcomm_memcpy_host_to_device(a[r], in[r].data(), count * 4, stream[r]);
    }
    for (std::uint32_t r = 0; r < n; ++r) {
      drv.set_rank(r);
      if (hcomm_allreduce(a[r], b[r], count, HCOMM_DATA_TYPE_INT32, HCOMM_REDUCE_SUM, comm[r], stream[r]) != HCOMM_SUCCESS) return false;
    }
    for (std::uint32_t r = 0; r < n; ++r) {
      drv.set_rank(r);
      if (hcomm_stream_synchronize(stream[r]) != HCOMM_SUCCESS) return false;
      std::vector<std::int32_t> got(count);
      hcomm_memcpy_device_to_host(got.data(), b[r], count * 4, stream[r]);
      hcomm_stream_synchronize(stream[r]);
      if (got != ref) return false;
    }
    return true;
  }
};

TEST(Route, ProbePolicySpreadsStripesByTheSlotRule) {
  World w(8, 2, "probe", "2");  // 16 ranks, 4 leaves of 4 NICs, 2 stripes per peer
  ASSERT_TRUE(w.allreduce());
  std::size_t cross = 0, hccs = 0;
  for (const auto& r : w.drv.routes) {
    const std::uint32_t src_dev = r.src_rank, dst_dev = r.dst_device;  // fake: device == rank
    if (src_dev / 2 == dst_dev / 2) {  // same server: HCCS first
      EXPECT_EQ(r.transport, "hccs");
      ++hccs;
      continue;
    }
    EXPECT_EQ(r.transport, "roce");
    if (src_dev / 4 == dst_dev / 4) {  // same leaf: nothing to choose, nothing connected
      EXPECT_NE(r.reason.find("single path"), std::string::npos) << r.reason;
      EXPECT_EQ(w.drv.qp_sports.count({src_dev, dst_dev, r.qp}), 0u);
      continue;
    }
    ++cross;
    const std::uint32_t port = (src_dev / 2 % 2) * 2 + src_dev % 2;  // the fake's LLDP port
    // stripe i of leaf port p: slot (p + i * max(1, U / k)) mod U, U = 4 uplinks, k = 2 stripes
    const std::uint32_t want = (port + r.qp * 2) % FakeDriver::kUplinks;
    auto it = w.drv.qp_sports.find({src_dev, dst_dev, r.qp});
    ASSERT_NE(it, w.drv.qp_sports.end()) << "stripe not connected";
    EXPECT_EQ(it->second, r.udp_sport);
    EXPECT_EQ(w.drv.fake_uplink(src_dev, dst_dev, it->second), want) << "rank " << r.src_rank << " -> " << r.dst_rank << " qp " << r.qp;
  }
  EXPECT_GT(hccs, 0u);
  EXPECT_GT(cross, 0u);
  EXPECT_GT(w.drv.probes, 0u);
}

TEST(Route, HashPolicyConnectsNothing) {
  World w(8, 2, "hash", "2");
  ASSERT_TRUE(w.allreduce());
  EXPECT_TRUE(w.drv.qp_sports.empty());
  EXPECT_EQ(w.drv.probes, 0u);
  bool roce = false;
  for (const auto& r : w.drv.routes)
    if (r.transport == "roce") { roce = true; EXPECT_NE(r.reason.find("NIC hash"), std::string::npos); }
  EXPECT_TRUE(roce);
}

TEST(Route, EachPeerDecidedOnce) {
  World w(4, 2, "probe", "1");
  ASSERT_TRUE(w.allreduce());
  const std::size_t first = w.drv.routes.size();
  ASSERT_TRUE(w.allreduce());
  EXPECT_EQ(w.drv.routes.size(), first);  // no congestion, no re-route: the second op decides nothing
  std::set<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>> seen;
  for (const auto& r : w.drv.routes) EXPECT_TRUE(seen.insert({r.src_rank, r.dst_rank, r.qp}).second);
}

// A barrier sends notifies only (one packet each, on stripe 0): its cross-leaf peers get 4 probes
// each, stripe 0 connected on the first port whose probe came back, the other stripes left on the
// NIC's hash; data to such a peer later (the all-reduce's schedule) probes it in full and connects
// every stripe, recorded with trigger "first data", and the bytes still come out right.
TEST(Route, NotifyOnlyPeersAreProbedAtFirstData) {
  World w(8, 2, "probe", "2");  // 16 ranks, leaf = rank / 4
  ASSERT_TRUE(w.barrier());
  std::set<std::pair<std::uint32_t, std::uint32_t>> control;  // (src rank, dst rank) decided for notifies
  for (const auto& r : w.drv.routes) {
    const bool cross = r.transport == "roce" && r.src_rank / 4 != r.dst_rank / 4;
    EXPECT_EQ(r.reason.find("notifies only") != std::string::npos, cross) << r.src_rank << "->" << r.dst_rank << ": " << r.reason;
    if (!cross) continue;
    control.insert({r.src_rank, r.dst_rank});
    const auto it = w.drv.qp_sports.find({r.src_rank, r.dst_device, r.qp});
    if (r.qp == 0) {  // the notifies' stripe: a probed port that came back (nothing is down here)
      EXPECT_NE(r.reason.find("probed path"), std::string::npos) << r.reason;
      ASSERT_TRUE(it != w.drv.qp_sports.end()) << r.reason;
      EXPECT_EQ(it->second, r.udp_sport);
    } else {
      EXPECT_NE(r.reason.find("NIC hash"), std::string::npos) << r.reason;
      EXPECT_TRUE(it == w.drv.qp_sports.end()) << r.reason;
    }
  }
  ASSERT_FALSE(control.empty());  // distances 4 and 8 cross leaves
  EXPECT_EQ(w.drv.qp_sports.size(), control.size());  // stripe 0 of each, nothing else
  EXPECT_LE(w.drv.probes, 4 * control.size());         // not the hundreds per peer of a full routing
  EXPECT_GT(w.drv.probes, 0u);
  const std::uint64_t barrier_probes = w.drv.probes;
  const std::size_t before = w.drv.routes.size();
  ASSERT_TRUE(w.allreduce());
  EXPECT_GT(w.drv.probes, barrier_probes);
  std::size_t upgraded = 0;
  for (std::size_t i = before; i < w.drv.routes.size(); ++i) {
    const auto& r = w.drv.routes[i];
    if (!control.count({r.src_rank, r.dst_rank})) {
      EXPECT_EQ(r.trigger, "first use") << r.src_rank << "->" << r.dst_rank;
      continue;
    }
    ++upgraded;
    EXPECT_EQ(r.trigger, "first data");
    EXPECT_EQ(r.reason.find("notifies only"), std::string::npos) << r.reason;
    ASSERT_TRUE(w.drv.qp_sports.count({r.src_rank, r.dst_device, r.qp})) << r.reason;  // connected on its port
    EXPECT_EQ(w.drv.qp_sports.at({r.src_rank, r.dst_device, r.qp}), r.udp_sport);
  }
  EXPECT_GT(upgraded, 0u);
  // A second barrier decides nothing new.
  const std::size_t after = w.drv.routes.size();
  ASSERT_TRUE(w.barrier());
  EXPECT_EQ(w.drv.routes.size(), after);
}

TEST(Route, BadPolicyRefusesTheContext) {
  FakeDriver drv(2, 2);
  hcomm::set_driver(&drv);
  setenv("HCOMM_ROUTE_SPORT", "spray", 1);
  drv.set_rank(0);
  hcomm_context_t c = nullptr;
  EXPECT_EQ(hcomm_create_context(0, &c), HCOMM_E_PARA);
  char err[128];
  EXPECT_EQ(hcomm_config_check("HCOMM_ROUTE_SPORT", "spray", err, sizeof err), HCOMM_E_PARA);
  EXPECT_EQ(hcomm_config_check("HCOMM_ROUTE_SPORT", "hash", err, sizeof err), HCOMM_SUCCESS);
  unsetenv("HCOMM_ROUTE_SPORT");
  hcomm_finalize();
  hcomm::set_driver(nullptr);
}

}  // namespace

// A rank talking to more cross-leaf peers than the probe budget (route.cpp kProbePeers = 32):
// the first 32 are probed and connected by the slot rule, the rest keep the NIC's hashed ports
// (nothing connected, reason "probe budget"), and the all-to-all still delivers every block.
TEST(Route, ProbeBudgetBoundsProbesPerRank) {
  constexpr std::uint32_t kServers = 72, kBudget = 32;  // 1 rank per server: 70 cross-leaf peers each
  World w(kServers, 1, "probe", "1", "alltoall=level0:NA;level1:pairwise");  // every peer in one schedule
  const std::uint32_t n = w.n;
  const std::uint64_t count = 4;  // int32 elements per block
  std::vector<void*> a(n), b(n);
  std::vector<std::vector<std::int32_t>> in(n, std::vector<std::int32_t>(n * count));  // alive until the copies ran
  for (std::uint32_t r = 0; r < n; ++r) {
    w.drv.set_rank(r);
    for (std::uint32_t j = 0; j < n; ++j)
      for (std::uint64_t e = 0; e < count; ++e) in[r][j * count + e] = static_cast<std::int32_t>(r * 100000 + j * 10 + e);
    ASSERT_EQ(hcomm_malloc(w.ctx[r], n * count * 4, &a[r]), HCOMM_SUCCESS);
    ASSERT_EQ(hcomm_malloc(w.ctx[r], n * count * 4, &b[r]), HCOMM_SUCCESS);
    hcomm_memcpy_host_to_device(a[r], in[r].data(), n * count * 4, w.stream[r]);
  }
  for (std::uint32_t r = 0; r < n; ++r) {
    w.drv.set_rank(r);
    ASSERT_EQ(hcomm_alltoall(a[r], b[r], count, HCOMM_DATA_TYPE_INT32, w.comm[r], w.stream[r]), HCOMM_SUCCESS);
  }
  for (std::uint32_t r = 0; r < n; ++r) {
    w.drv.set_rank(r);
    ASSERT_EQ(hcomm_stream_synchronize(w.stream[r]), HCOMM_SUCCESS);
    std::vector<std::int32_t> got(n * count);
    hcomm_memcpy_device_to_host(got.data(), b[r], n * count * 4, w.stream[r]);
    hcomm_stream_synchronize(w.stream[r]);
    for (std::uint32_t j = 0; j < n; ++j)
      for (std::uint64_t e = 0; e < count; ++e)
        ASSERT_EQ(got[j * count + e], static_cast<std::int32_t>(j * 100000 + r * 10 + e)) << "rank " << r << " block " << j;
  }
  std::map<std::uint32_t, std::uint32_t> probed, hashed;  // per source rank
  for (const auto& r : w.drv.routes) {
    if (r.transport != "roce" || r.src_rank / 2 == r.dst_device / 2) continue;  // same leaf: single path
    if (r.reason.find("probe budget") != std::string::npos) {
      ++hashed[r.src_rank];
      EXPECT_EQ(w.drv.qp_sports.count({r.src_rank, r.dst_device, r.qp}), 0u);
    } else {
      ++probed[r.src_rank];
      EXPECT_EQ(w.drv.qp_sports.count({r.src_rank, r.dst_device, r.qp}), 1u) << r.reason;
    }
  }
  ASSERT_EQ(probed.size(), n);
  for (std::uint32_t r = 0; r < n; ++r) {
    EXPECT_EQ(probed[r], kBudget) << "rank " << r;
    EXPECT_EQ(hashed[r], n - 2 - kBudget) << "rank " << r;  // all but me and my leaf's other NIC
  }
  // Probes: at most the first round's 128 per probed peer plus 512 to learn the uplinks, and
  // two more rounds of 64; nothing for the others.
  EXPECT_LE(w.drv.probes, static_cast<std::uint64_t>(n) * (kBudget * (128 + 2 * 64) + 512));
}

// The collective's prologue decides the routes to the server's peers (route_server_peers); the
// shape question (server_is_mesh) only reads decided routes: asked before the prologue it finds
// none and reports nothing to the driver; after it, the answer follows the HCCS mesh of the fake
// server and asking again decides nothing more.
TEST(Route, ShapeQueryDecidesNothing) {
  World w(2, 4, "probe", "1");
  const std::uint32_t me = 5;  // server 1, local index 1
  w.drv.set_rank(me);
  hcomm::detail::ServerGroups g;
  ASSERT_EQ(hcomm::detail::find_server_groups(w.comm[me], &g), HCOMM_SUCCESS);
  ASSERT_EQ(g.size, 4u);
  ASSERT_EQ(g.first, 4u);
  const std::size_t before = w.drv.routes.size();
  g.local.assign(g.size, nullptr);  // the server's descriptors, as the prologue fills them
  for (std::uint32_t q = 0; q < g.size; ++q) g.local[q] = hcomm::detail::peer_desc(w.comm[me], g.first + q);
  EXPECT_FALSE(hcomm::detail::server_is_mesh(w.comm[me], g));  // nothing decided yet
  EXPECT_EQ(w.drv.routes.size(), before);
  EXPECT_EQ(hcomm::detail::route::known(w.comm[me], 4), nullptr);
  hcomm::detail::route_server_peers(w.comm[me], &g);
  EXPECT_EQ(w.drv.routes.size(), before + 3);  // one HCCS route per server peer
  for (std::uint32_t q : {4u, 6u, 7u}) {
    const hcomm::detail::PeerRoute* r = hcomm::detail::route::known(w.comm[me], q);
    ASSERT_NE(r, nullptr) << q;
    EXPECT_EQ(r->link, hcomm::PairLink::Hccs) << q;
  }
  EXPECT_TRUE(hcomm::detail::server_is_mesh(w.comm[me], g));
  EXPECT_TRUE(hcomm::detail::server_is_mesh(w.comm[me], g));
  EXPECT_EQ(w.drv.routes.size(), before + 3);
  EXPECT_EQ(hcomm::detail::route::known(w.comm[me], 0), nullptr);  // another server's rank: not routed
}
