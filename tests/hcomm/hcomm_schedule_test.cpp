// libhcomm's task schedules against an in-memory Driver (tests/hcomm/fake_driver.h), no SystemC:
// the tasks each algorithm submits (docs/algorithms/mesh.md) and the bytes they produce.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "fake_cluster.h"
#include "fake_driver.h"
#include "hcomm/hcomm.h"

using hcomm::DrvTaskKind;
using hcomm_fake::FakeDriver;
using hcomm_fake::Submitted;

namespace {

// Notify purposes, as hcomm/src/transport/notify_keys.h numbers them (bits 50..55 of a key).
constexpr std::uint64_t kArPulled = 4, kScheduleData = 13, kScheduleCredit = 14;
std::uint64_t purpose(std::uint64_t key) { return (key >> 50) & 0x3f; }

struct Cluster : hcomm_fake::Cluster<> {
  using hcomm_fake::Cluster<>::Cluster;

  /// fp32 sum all-reduce of `count` elements on every rank; returns every rank's output. Input
  /// element i of rank r is (r + 1) * (i % 17 - 8): small integers, so every sum is exact.
  std::vector<std::vector<float>> allreduce(std::uint64_t count, std::size_t* first_task = nullptr,
                                            std::size_t* end_task = nullptr) {
    std::vector<void*> in(n), out(n);
    std::vector<std::vector<float>> host(n, std::vector<float>(count));
    for (std::uint32_t r = 0; r < n; ++r) {
      drv.set_rank(r);
      for (std::uint64_t i = 0; i < count; ++i) host[r][i] = static_cast<float>(static_cast<int>(r + 1) * (static_cast<int>(i % 17) - 8));
      EXPECT_EQ(hcomm_malloc(ctx[r], count * 4, &in[r]), HCOMM_SUCCESS);
      EXPECT_EQ(hcomm_malloc(ctx[r], count * 4, &out[r]), HCOMM_SUCCESS);
      EXPECT_EQ(hcomm_memcpy_host_to_device(in[r], host[r].data(), count * 4, stream[r]), HCOMM_SUCCESS);
      EXPECT_EQ(hcomm_stream_synchronize(stream[r]), HCOMM_SUCCESS);
    }
    if (first_task) *first_task = drv.tasks.size();
    for (std::uint32_t r = 0; r < n; ++r) {
      drv.set_rank(r);
      EXPECT_EQ(hcomm_allreduce(in[r], out[r], count, HCOMM_DATA_TYPE_FP32, HCOMM_REDUCE_SUM, comm[r], stream[r]), HCOMM_SUCCESS);
    }
    if (end_task) *end_task = drv.tasks.size();
    for (std::uint32_t r = 0; r < n; ++r) {
      drv.set_rank(r);
      EXPECT_EQ(hcomm_stream_synchronize(stream[r]), HCOMM_SUCCESS);
      EXPECT_EQ(hcomm_memcpy_device_to_host(host[r].data(), out[r], count * 4, stream[r]), HCOMM_SUCCESS);
      EXPECT_EQ(hcomm_stream_synchronize(stream[r]), HCOMM_SUCCESS);
      hcomm_free(ctx[r], in[r]);
      hcomm_free(ctx[r], out[r]);
    }
    return host;
  }

  void expect_sum(const std::vector<std::vector<float>>& out, std::uint64_t count) const {
    const float ranks_sum = static_cast<float>(n * (n + 1) / 2);
    for (std::uint32_t r = 0; r < n; ++r)
      for (std::uint64_t i = 0; i < count; ++i)
        ASSERT_EQ(out[r][i], ranks_sum * static_cast<float>(static_cast<int>(i % 17) - 8)) << "rank " << r << " element " << i;
  }
};

/// The tasks of [first, end) grouped by device, then stream (in stream id order).
std::map<std::uint32_t, std::map<std::uint32_t, std::vector<hcomm::DrvTask>>> by_stream(const FakeDriver& d, std::size_t first,
                                                                                     std::size_t end) {
  std::map<std::uint32_t, std::map<std::uint32_t, std::vector<hcomm::DrvTask>>> out;
  for (std::size_t i = first; i < end; ++i) out[d.tasks[i].device][d.tasks[i].stream].push_back(d.tasks[i].task);
  return out;
}

std::vector<DrvTaskKind> kinds(const std::vector<hcomm::DrvTask>& ts) {
  std::vector<DrvTaskKind> k;
  for (const auto& t : ts) k.push_back(t.kind);
  return k;
}

/// Records that no wait of [first, end) consumed, as (device, key) counts; fails on a wait that
/// no record satisfies (the fake would have left it blocked).
std::map<std::pair<std::uint32_t, std::uint64_t>, long> unmatched(const FakeDriver& d, std::size_t first, std::size_t end) {
  std::map<std::pair<std::uint32_t, std::uint64_t>, long> c;
  for (std::size_t i = first; i < end; ++i) {
    const auto& t = d.tasks[i].task;
    if (t.kind == DrvTaskKind::NotifyRecord || (t.kind == DrvTaskKind::RdmaWrite && t.value)) ++c[{t.target, t.key}];
    if (t.kind == DrvTaskKind::NotifyWait) --c[{d.tasks[i].device, t.key}];
  }
  for (auto it = c.begin(); it != c.end();) it = it->second == 0 ? c.erase(it) : std::next(it);
  return c;
}

TEST(HcommSchedule, MeshAllReduceEightRanksSubmitsTheDocumentedTasks) {
  Cluster c(8, 8);
  const std::uint64_t count = 1003;  // uneven slices: 125 or 126 elements
  std::size_t first = 0, end = 0;
  c.expect_sum(c.allreduce(count, &first, &end), count);
  ASSERT_EQ(c.drv.ops.size(), 8u);
  for (const auto& op : c.drv.ops) EXPECT_EQ(op.algorithm, "mesh");

  // docs/algorithms/mesh.md, mesh all-reduce, one chunk, p = 8: main = begin marker · local copy ·
  // 7 READY · 7 fork · 7 wait DONE · 7 REDUCED · local copy · 7 wait join · end marker; each of
  // the 7 slaves = wait fork · wait READY · reduce-copy · DONE · wait REDUCED · copy · PULLED · join.
  using K = DrvTaskKind;
  std::vector<K> main{K::Marker, K::Copy};
  for (K k : {K::NotifyRecord, K::NotifyRecord, K::NotifyWait, K::NotifyRecord})
    main.insert(main.end(), 7, k);
  main.push_back(K::Copy);
  main.insert(main.end(), 7, K::NotifyWait);
  main.push_back(K::Marker);
  const std::vector<K> slave{K::NotifyWait, K::NotifyWait, K::ReduceCopy, K::NotifyRecord,
                             K::NotifyWait, K::Copy,       K::NotifyRecord, K::NotifyRecord};
  const auto streams = by_stream(c.drv, first, end);
  ASSERT_EQ(streams.size(), 8u);
  for (const auto& [dev, per] : streams) {
    ASSERT_EQ(per.size(), 8u) << "rank " << dev << ": main + 7 slaves";
    int mains = 0, slaves = 0;
    for (const auto& [s, ts] : per) {
      if (ts.front().kind == K::Marker) { ++mains; EXPECT_EQ(kinds(ts), main) << "rank " << dev; }
      else { ++slaves; EXPECT_EQ(kinds(ts), slave) << "rank " << dev << " stream " << s; }
    }
    EXPECT_EQ(mains, 1);
    EXPECT_EQ(slaves, 7);
  }
  EXPECT_EQ(end - first, 8u * (main.size() + 7 * slave.size()));

  // Every wait is paired with a record on its device; what is left is exactly the PULLED
  // notifies each peer owes the next all-reduce (7 per rank).
  auto left = unmatched(c.drv, first, end);
  long pulled = 0;
  for (const auto& [k, v] : left) {
    EXPECT_EQ(purpose(k.second), kArPulled) << "device " << k.first << " key 0x" << std::hex << k.second;
    EXPECT_GT(v, 0);
    pulled += v;
  }
  EXPECT_EQ(pulled, 8 * 7);
  EXPECT_EQ(c.drv.notifies.size(), left.size());

  // The next all-reduce starts by consuming them: its main stream waits PULLED from every peer.
  std::size_t first2 = 0, end2 = 0;
  c.expect_sum(c.allreduce(count, &first2, &end2), count);
  for (const auto& [dev, per] : by_stream(c.drv, first2, end2))
    for (const auto& [s, ts] : per)
      if (ts.front().kind == K::Marker) {
        ASSERT_EQ(ts.size(), main.size() + 7);
        for (int k = 1; k <= 7; ++k) EXPECT_EQ(purpose(ts[k].key), kArPulled);
      }
}

TEST(HcommSchedule, MeshAllReduceChunksLargeData) {
  Cluster c(4, 4);
  const std::uint64_t count = (5u << 20) / 8;  // 2.5 MiB through a 1 MiB collective buffer: 3 chunks
  std::size_t first = 0, end = 0;
  c.expect_sum(c.allreduce(count, &first, &end), count);
  for (const auto& [dev, per] : by_stream(c.drv, first, end))
    for (const auto& [s, ts] : per) {
      std::size_t reduces = 0;
      for (const auto& t : ts) reduces += t.kind == DrvTaskKind::ReduceCopy;
      if (ts.front().kind != DrvTaskKind::Marker) { EXPECT_EQ(reduces, 3u) << "one reduce-copy per chunk"; }
    }
}

TEST(HcommSchedule, RingAllReduceTakesTwoSMinusOneSteps) {
  const std::uint32_t S = 4;
  setenv("HCOMM_ALGO", "level0:NA;level1:ring", 1);  // forced: the automatic choice here is H-D_R
  Cluster c(S, 1);  // one rank per server: a plain ring over RoCE
  unsetenv("HCOMM_ALGO");
  const std::uint64_t count = 4096;
  std::size_t first = 0, end = 0;
  c.expect_sum(c.allreduce(count, &first, &end), count);
  for (const auto& op : c.drv.ops) EXPECT_EQ(op.algorithm, "ring");
  for (const auto& [dev, per] : by_stream(c.drv, first, end)) {
    ASSERT_EQ(per.size(), 2u) << "no slave streams without local peers: main and the schedule's grant stream";
    std::size_t data = 0, credits = 0, reduces = 0, copies = 0;
    std::vector<hcomm::DrvTask> all;  // main and the grant stream
    for (const auto& [sid, ts] : per) all.insert(all.end(), ts.begin(), ts.end());
    for (const auto& t : all) {
      if (t.kind == DrvTaskKind::RdmaWrite) {
        (t.bytes ? data : credits) += 1;
        // num_qp 8, but a 4 KiB step is below the 512 KiB multi-QP threshold: one QP (docs/config.md)
        EXPECT_EQ(t.qp_count, 1u);
        EXPECT_EQ(t.retry_count, 3u);
        EXPECT_EQ(t.rate_cap_Bps, 0u);
        EXPECT_EQ(purpose(t.key), t.bytes ? kScheduleData : kScheduleCredit);
      }
      reduces += t.kind == DrvTaskKind::ReduceCopy;
      copies += t.kind == DrvTaskKind::Copy;
    }
    EXPECT_EQ(data, 2u * (S - 1)) << "rank " << dev << ": one block per step";
    // Schedule flow control (algo/exec.h): one grant per receive — every write waits for one.
    EXPECT_EQ(credits, 2u * (S - 1u));
    EXPECT_EQ(reduces, S - 1u) << "reduce-scatter steps";
    EXPECT_EQ(copies, 2u) << "copy in + copy out; the all-gather lands in place";
  }
  EXPECT_TRUE(unmatched(c.drv, first, end).empty()) << "every credit is used: nothing carries into the next operation";
}

// S servers of one rank whose communicators force `algo` with `num_qp` QPs per peer and a
// multi-QP threshold of `thr` KiB (null: the default); the variables are unset again.
std::unique_ptr<Cluster> qp_cluster(std::uint32_t S, const char* algo, const char* num_qp, const char* thr) {
  setenv("HCOMM_ALGO", algo, 1);
  setenv("HCOMM_NUM_QP", num_qp, 1);
  if (thr) setenv("HCOMM_MULTI_QP_THRESHOLD", thr, 1);
  auto c = std::make_unique<Cluster>(S, 1);
  unsetenv("HCOMM_ALGO");
  unsetenv("HCOMM_NUM_QP");
  unsetenv("HCOMM_MULTI_QP_THRESHOLD");
  return c;
}

// HCCL_MULTI_QP_THRESHOLD's rule, with its documentation's example scaled by 1/8: its 1 MB write
// between two ranks over 4 QPs per connection with a 512 KB threshold uses 2 QPs (each carrying
// at least the threshold), so a 128 KiB write with a 64 KiB threshold uses 2; a threshold the
// write does not reach (the default 512 KiB, 256 KiB) gives one QP; a small one all num_qp.
TEST(HcommSchedule, MultiQpThresholdLimitsTheStripesOfAWrite) {
  const std::uint32_t S = 4;
  const std::uint64_t block = 128u << 10, count = S * block / 4;  // the ring moves 128 KiB blocks
  for (const auto& [thr, want] :
       {std::pair<const char*, std::uint32_t>{"64", 2}, {"256", 1}, {"16", 4}, {"32", 4}, {"33", 3}, {nullptr, 1}}) {
    const auto cp = qp_cluster(S, "level0:NA;level1:ring", "4", thr);  // thr null: the default, 512 KiB
    Cluster& c = *cp;
    std::size_t first = 0, end = 0;
    c.expect_sum(c.allreduce(count, &first, &end), count);
    std::size_t blocks = 0;
    for (std::size_t i = first; i < end; ++i) {
      const hcomm::DrvTask& t = c.drv.tasks[i].task;
      if (t.kind != DrvTaskKind::RdmaWrite || t.bytes != block) continue;
      ++blocks;
      EXPECT_EQ(t.qp_count, want) << "threshold " << (thr ? thr : "default") << " KiB";
    }
    EXPECT_EQ(blocks, S * 2u * (S - 1)) << "every rank's every step moves one 128 KiB block";
  }
}

// A step's writes to one receiver share the QPs the threshold rule gives their total, each on its
// own consecutive ones, in proportion to their bytes (algo/exec.cpp share_qps): NB on six members
// sends a wrapping block run as two writes. With each on the first k QPs, the two overlapped on
// QPs 0..5 and two of the peer's eight (and the uplinks routed for them) carried nothing: on 128
// servers a short run's one QP held 0.875 MiB against 0.55 MiB on each of the long run's and set
// the step's end.
TEST(HcommSchedule, WritesToOneReceiverInAStepShareItsQps) {
  const std::uint32_t S = 6, nqp = 8;
  const std::uint64_t thr = 16u << 10, block = 96u << 10, count = S * block / 4;
  const auto cp = qp_cluster(S, "level0:NA;level1:NB", "8", "16");
  Cluster& c = *cp;
  std::size_t first = 0, end = 0;
  c.expect_sum(c.allreduce(count, &first, &end), count);
  for (const auto& op : c.drv.ops) EXPECT_EQ(op.algorithm, "NB");
  // A rank's data writes in submission order; consecutive ones to one target are one step's runs
  // (NB's targets change every step on six members).
  std::size_t groups = 0;
  for (std::uint32_t dev = 0; dev < S; ++dev) {
    std::vector<hcomm::DrvTask> w;
    for (std::size_t i = first; i < end; ++i)
      if (c.drv.tasks[i].device == dev && c.drv.tasks[i].task.kind == DrvTaskKind::RdmaWrite && c.drv.tasks[i].task.bytes)
        w.push_back(c.drv.tasks[i].task);
    for (std::size_t a = 0; a < w.size();) {
      std::size_t b = a + 1;
      while (b < w.size() && w[b].target == w[a].target) ++b;
      if (b - a >= 2) {
        std::uint64_t total = 0;
        for (std::size_t i = a; i < b; ++i) total += w[i].bytes;
        const std::uint64_t k = std::min<std::uint64_t>(nqp, std::max<std::uint64_t>(1, total / thr));
        if (b - a > k) {  // more runs than QPs: one each, in turn
          for (std::size_t i = a; i < b; ++i) EXPECT_EQ(w[i].qp_count, 1u) << "rank " << dev;
        } else {
          ++groups;
          std::uint32_t qps = 0;
          std::vector<bool> used(nqp, false);
          for (std::size_t i = a; i < b; ++i) {
            qps += w[i].qp_count;
            ASSERT_GE(w[i].qp_count, 1u);
            ASSERT_LE(w[i].qp_base + w[i].qp_count, nqp);
            for (std::uint32_t q = w[i].qp_base; q < w[i].qp_base + w[i].qp_count; ++q) {
              EXPECT_FALSE(used[q]) << "rank " << dev << ": QP " << q << " taken by two writes of one step";
              used[q] = true;
            }
          }
          EXPECT_EQ(qps, k) << "rank " << dev << ": the rule on the step's total";
          for (std::size_t i = a; i < b; ++i)  // in proportion: within one QP's share of the others
            for (std::size_t j = a; j < b; ++j)
              EXPECT_LE(w[i].bytes / w[i].qp_count, 2 * (w[j].bytes / w[j].qp_count)) << "rank " << dev;
        }
      }
      a = b;
    }
  }
  EXPECT_GT(groups, 0u) << "some step wrote one receiver twice, with QPs for each";
}

// A grant due at the start, to a rank the schedule's first step writes to, goes out from the stream
// that writes there, before that write: from another stream it could be posted a few ns after the
// write and wait behind the write's bytes on the QP (RC keeps a QP's writes in order), holding
// the peer's own first write back by a whole transfer (the pipeline all-gather's 32 MiB
// iterations in the README's hcomm_test sample took 345.6 instead of 260.5 us). Two servers, one
// rank each, ring: each rank's first data write goes to the other, which its start grants go to.
TEST(HcommSchedule, StartGrantPrecedesTheFirstWriteToThatRankOnItsStream) {
  setenv("HCOMM_ALGO", "level0:NA;level1:ring", 1);
  Cluster c(2, 1);
  unsetenv("HCOMM_ALGO");
  const std::uint64_t count = 1 << 14;
  std::size_t first = 0, end = 0;
  c.expect_sum(c.allreduce(count, &first, &end), count);
  std::size_t checked = 0;
  for (const auto& [dev, per] : by_stream(c.drv, first, end))
    for (const auto& [s, ts] : per) {
      auto data = std::find_if(ts.begin(), ts.end(), [](const hcomm::DrvTask& t) { return t.kind == DrvTaskKind::RdmaWrite && t.bytes; });
      if (data == ts.end()) continue;
      const bool granted = std::any_of(ts.begin(), data, [&](const hcomm::DrvTask& t) {
        return t.kind == DrvTaskKind::RdmaWrite && t.bytes == 0 && t.target == data->target;
      });
      EXPECT_TRUE(granted) << "device " << dev << " stream " << s << ": first write to device " << data->target
                           << " has no grant to it before it on its stream";
      ++checked;
    }
  EXPECT_EQ(checked, 2u);
}

TEST(HcommSchedule, HierarchicalComposesMeshAndRing) {
  Cluster c(8, 4);  // 2 servers x 4 ranks
  const std::uint64_t count = 1000;
  std::size_t first = 0, end = 0;
  c.expect_sum(c.allreduce(count, &first, &end), count);
  for (const auto& op : c.drv.ops) EXPECT_EQ(op.algorithm, "mesh+ring");
  for (const auto& [dev, per] : by_stream(c.drv, first, end)) {
    // main + 3 slaves: the start grants to the 3 server peers go from the slaves that write to
    // them (before their writes), and one grant left for the start needs no grant stream.
    EXPECT_EQ(per.size(), 4u) << "main + 3 slaves";
    for (const auto& [s, ts] : per) {
      std::size_t data = 0;
      for (const auto& t : ts) data += t.kind == DrvTaskKind::RdmaWrite && t.bytes;
      EXPECT_EQ(data, ts.front().kind == DrvTaskKind::Marker ? 2u : 0u) << "2(S-1) ring steps on main only";
    }
  }
}

TEST(HcommSchedule, SendRecvAcrossServersInWindowChunks) {
  Cluster c(2, 1);
  const std::uint64_t count = (3u << 20) / 4;  // 3 MiB through a 1 MiB window: 3 chunks
  std::vector<std::int32_t> src(count), dst(count, 0);
  for (std::uint64_t i = 0; i < count; ++i) src[i] = static_cast<std::int32_t>(i * 7 + 1);
  void *a = nullptr, *b = nullptr;
  c.drv.set_rank(0);
  ASSERT_EQ(hcomm_malloc(c.ctx[0], count * 4, &a), HCOMM_SUCCESS);
  ASSERT_EQ(hcomm_memcpy_host_to_device(a, src.data(), count * 4, c.stream[0]), HCOMM_SUCCESS);
  c.drv.set_rank(1);
  ASSERT_EQ(hcomm_malloc(c.ctx[1], count * 4, &b), HCOMM_SUCCESS);
  const std::size_t first = c.drv.tasks.size();
  hcomm_request_t rq[2];
  c.drv.set_rank(0);
  ASSERT_EQ(hcomm_isend(a, count, HCOMM_DATA_TYPE_INT32, 1, 5, c.comm[0], c.stream[0], &rq[0]), HCOMM_SUCCESS);
  c.drv.set_rank(1);
  ASSERT_EQ(hcomm_irecv(b, count, HCOMM_DATA_TYPE_INT32, 0, 5, c.comm[1], c.stream[1], &rq[1]), HCOMM_SUCCESS);
  ASSERT_EQ(hcomm_waitall(2, rq), HCOMM_SUCCESS);
  std::size_t writes = 0;
  for (std::size_t i = first; i < c.drv.tasks.size(); ++i)
    writes += c.drv.tasks[i].task.kind == DrvTaskKind::RdmaWrite && c.drv.tasks[i].task.bytes;
  EXPECT_EQ(writes, 3u);
  ASSERT_EQ(hcomm_memcpy_device_to_host(dst.data(), b, count * 4, c.stream[1]), HCOMM_SUCCESS);
  ASSERT_EQ(hcomm_stream_synchronize(c.stream[1]), HCOMM_SUCCESS);
  EXPECT_EQ(dst, src);
  ASSERT_EQ(c.drv.ops.size(), 2u);
  EXPECT_EQ(c.drv.ops[0].algorithm, "p2p-roce");
}

// The transport comes from discovery (docs/discovery.md), never from the driver's pair_link: an
// HCCS port that is down makes a same-server pair fall back to RoCE; hcomm_get_topology says so.
TEST(HcommSchedule, TransportFromDiscoveredFactsNotPairLink) {
  setenv("HCOMM_BUFFSIZE_MB", "1", 1);
  setenv("HCOMM_BUFFER_SIZE_MB", "1", 1);
  setenv("HCOMM_SYM_SLOTS", "0", 1);
  FakeDriver drv(8, 4);
  drv.hccs_down.emplace_back(0, 2);
  hcomm::set_driver(&drv);
  std::vector<hcomm_context_t> ctx(8);
  std::vector<hcomm_comm_t> comm(8);
  std::vector<hcomm_stream_t> st(8);
  for (std::uint32_t r = 0; r < 8; ++r) {
    drv.set_rank(r);
    ASSERT_EQ(hcomm_create_context(r % 4, &ctx[r]), HCOMM_SUCCESS);
    ASSERT_EQ(hcomm_comm_init(ctx[r], 8, r, &comm[r]), HCOMM_SUCCESS);
    ASSERT_EQ(hcomm_create_stream(ctx[r], &st[r]), HCOMM_SUCCESS);
  }
  auto send = [&](std::uint32_t a, std::uint32_t b) {
    void *x = nullptr, *y = nullptr;
    drv.set_rank(a);
    EXPECT_EQ(hcomm_malloc(ctx[a], 64, &x), HCOMM_SUCCESS);
    drv.set_rank(b);
    EXPECT_EQ(hcomm_malloc(ctx[b], 64, &y), HCOMM_SUCCESS);
    hcomm_request_t rq[2];
    drv.set_rank(a);
    EXPECT_EQ(hcomm_isend(x, 16, HCOMM_DATA_TYPE_INT32, b, 1, comm[a], st[a], &rq[0]), HCOMM_SUCCESS);
    drv.set_rank(b);
    EXPECT_EQ(hcomm_irecv(y, 16, HCOMM_DATA_TYPE_INT32, a, 1, comm[b], st[b], &rq[1]), HCOMM_SUCCESS);
    EXPECT_EQ(hcomm_waitall(2, rq), HCOMM_SUCCESS);
    return drv.ops[drv.ops.size() - 2].algorithm;
  };
  EXPECT_EQ(send(0, 1), "p2p-hccs");
  EXPECT_EQ(send(0, 2), "p2p-roce");  // its HCCS link is down: degraded
  EXPECT_EQ(send(0, 5), "p2p-roce");  // another server
  EXPECT_EQ(drv.pair_link_calls, 0u);
  hcomm_topo_link_t l{};
  drv.set_rank(0);
  ASSERT_EQ(hcomm_get_topology(comm[0], 0, 3, &l), HCOMM_SUCCESS);
  EXPECT_EQ(l.link_type, static_cast<std::uint32_t>(HCOMM_LINK_HCCS));
  EXPECT_EQ(l.link_types, static_cast<std::uint32_t>(HCOMM_LINK_HCCS | HCOMM_LINK_ROCE));
  EXPECT_EQ(l.bandwidth_Bps, 28000000000ULL);
  ASSERT_EQ(hcomm_get_topology(comm[0], 0, 2, &l), HCOMM_SUCCESS);
  EXPECT_EQ(l.link_type, static_cast<std::uint32_t>(HCOMM_LINK_ROCE));
  hcomm_topo_rank_t rec{};
  ASSERT_EQ(hcomm_get_topology_rank(comm[0], 0, &rec), HCOMM_SUCCESS);
  EXPECT_EQ(rec.nports, 3u);
  EXPECT_EQ(rec.ports[1].port, 2u);
  EXPECT_EQ(rec.ports[1].up, 0u);
  hcomm_finalize();
  hcomm::set_driver(nullptr);
}

TEST(HcommSchedule, BarrierTakesCeilLog2Rounds) {
  Cluster c(6, 6);
  const std::size_t first = c.drv.tasks.size();
  for (std::uint32_t r = 0; r < 6; ++r) {
    c.drv.set_rank(r);
    ASSERT_EQ(hcomm_barrier(c.comm[r], c.stream[r]), HCOMM_SUCCESS);
  }
  for (const auto& [dev, per] : by_stream(c.drv, first, c.drv.tasks.size())) {
    std::size_t waits = 0;
    for (const auto& t : per.begin()->second) waits += t.kind == DrvTaskKind::NotifyWait;
    EXPECT_EQ(waits, 3u) << "ceil(log2 6) rounds";
  }
  for (std::uint32_t r = 0; r < 6; ++r) EXPECT_EQ(hcomm_stream_synchronize(c.stream[r]), HCOMM_SUCCESS);
  EXPECT_TRUE(c.drv.notifies.empty());
}

// All-gather and reduce-scatter (docs/algorithms/mesh.md): one op of `kind` on every rank, fp32 sum;
// element i of rank r's input is (r + 1) * (i % 13 - 6), exact in fp32. Returns each rank's output.
std::vector<std::vector<float>> gather_or_scatter(Cluster& c, bool gather, std::uint64_t count) {
  const std::uint32_t n = c.n;
  const std::uint64_t in_n = gather ? count : n * count, out_n = gather ? n * count : count;
  std::vector<void*> in(n), out(n);
  std::vector<std::vector<float>> host(n);
  for (std::uint32_t r = 0; r < n; ++r) {
    c.drv.set_rank(r);
    std::vector<float> x(in_n);
    for (std::uint64_t i = 0; i < in_n; ++i) x[i] = static_cast<float>(static_cast<int>(r + 1) * (static_cast<int>(i % 13) - 6));
    EXPECT_EQ(hcomm_malloc(c.ctx[r], in_n * 4, &in[r]), HCOMM_SUCCESS);
    EXPECT_EQ(hcomm_malloc(c.ctx[r], out_n * 4, &out[r]), HCOMM_SUCCESS);
    EXPECT_EQ(hcomm_memcpy_host_to_device(in[r], x.data(), in_n * 4, c.stream[r]), HCOMM_SUCCESS);
    EXPECT_EQ(hcomm_stream_synchronize(c.stream[r]), HCOMM_SUCCESS);
  }
  for (std::uint32_t r = 0; r < n; ++r) {
    c.drv.set_rank(r);
    EXPECT_EQ(gather ? hcomm_allgather(in[r], out[r], count, HCOMM_DATA_TYPE_FP32, c.comm[r], c.stream[r])
                     : hcomm_reduce_scatter(in[r], out[r], count, HCOMM_DATA_TYPE_FP32, HCOMM_REDUCE_SUM, c.comm[r], c.stream[r]),
              HCOMM_SUCCESS);
  }
  for (std::uint32_t r = 0; r < n; ++r) {
    c.drv.set_rank(r);
    host[r].resize(out_n);
    EXPECT_EQ(hcomm_stream_synchronize(c.stream[r]), HCOMM_SUCCESS);
    EXPECT_EQ(hcomm_memcpy_device_to_host(host[r].data(), out[r], out_n * 4, c.stream[r]), HCOMM_SUCCESS);
    EXPECT_EQ(hcomm_stream_synchronize(c.stream[r]), HCOMM_SUCCESS);
    hcomm_free(c.ctx[r], in[r]);
    hcomm_free(c.ctx[r], out[r]);
  }
  return host;
}

void expect_gathered(const std::vector<std::vector<float>>& out, std::uint32_t n, std::uint64_t count) {
  for (std::uint32_t r = 0; r < n; ++r)
    for (std::uint32_t q = 0; q < n; ++q)
      for (std::uint64_t i = 0; i < count; ++i)
        ASSERT_EQ(out[r][q * count + i], static_cast<float>(static_cast<int>(q + 1) * (static_cast<int>(i % 13) - 6)))
            << "rank " << r << " block " << q << " element " << i;
}

void expect_scattered(const std::vector<std::vector<float>>& out, std::uint32_t n, std::uint64_t count) {
  const float ranks_sum = static_cast<float>(n * (n + 1) / 2);
  for (std::uint32_t r = 0; r < n; ++r)
    for (std::uint64_t i = 0; i < count; ++i)
      ASSERT_EQ(out[r][i], ranks_sum * static_cast<float>(static_cast<int>((r * count + i) % 13) - 6)) << "rank " << r << " element " << i;
}

TEST(HcommSchedule, MeshAllGatherAndReduceScatterInterleaveWithAllReduce) {
  Cluster c(4, 4);
  const std::size_t first = c.drv.tasks.size();
  const std::uint64_t small = 1001, big = (3u << 20) / 8 + 5;  // big: 1.5 MiB blocks through a 1 MiB buffer, 2 chunks
  expect_gathered(gather_or_scatter(c, true, small), 4, small);
  expect_scattered(gather_or_scatter(c, false, small), 4, small);
  c.expect_sum(c.allreduce(small), small);
  expect_scattered(gather_or_scatter(c, false, big), 4, big);
  expect_gathered(gather_or_scatter(c, true, big), 4, big);
  expect_scattered(gather_or_scatter(c, false, small), 4, small);
  ASSERT_EQ(c.drv.ops.size(), 6u * 4);
  std::map<std::string, int> kinds;
  for (const auto& op : c.drv.ops) { ++kinds[op.kind]; EXPECT_EQ(op.algorithm, "mesh"); }
  EXPECT_EQ(kinds["allgather"], 8);
  EXPECT_EQ(kinds["reduce_scatter"], 12);
  EXPECT_EQ(kinds["allreduce"], 4);
  // The last operation is a reduce-scatter: it consumed the PULLED notifies the all-gather left,
  // and it leaves none, so every wait was paired with a record.
  EXPECT_TRUE(unmatched(c.drv, first, c.drv.tasks.size()).empty());
  EXPECT_TRUE(c.drv.notifies.empty());
}


// The passes an operation makes through the collective buffer, counted from its tasks (with
// HCOMM_OP_RETRY each pass but the last ends with a slice marker, an EventRecord on the main
// stream), against the chunks the HCOMM_DEBUG=3 decision line reports — the count the selection's
// estimates multiply by (select.cpp pass_bytes). Sizes are chosen so that the hierarchical
// all-reduce (a chunk takes L/(L + 1) of the buffer, not half) and the one-server mesh all-gather
// (a pass is a buffer per rank, not a buffer for all) differ from the old formulas.
struct Passes {
  std::uint64_t tasks = 0, logged = 0;
};

Passes passes_of(Cluster& c, const char* kind, std::size_t first, std::size_t logs_first) {
  Passes p;
  p.tasks = 1;
  for (std::size_t i = first; i < c.drv.tasks.size(); ++i)
    if (c.drv.tasks[i].device == 0 && c.drv.tasks[i].task.kind == DrvTaskKind::EventRecord && c.drv.tasks[i].task.value > 0) ++p.tasks;
  for (std::size_t i = logs_first; i < c.drv.logs.size(); ++i) {
    const std::string& l = c.drv.logs[i];
    if (l.find("HCOMM(rank 0) ") == std::string::npos || l.find(std::string(" ") + kind + " seq=") == std::string::npos) continue;
    const auto at = l.find("chunks=");
    if (at != std::string::npos) p.logged = std::strtoull(l.c_str() + at + 7, nullptr, 10);
  }
  return p;
}

TEST(HcommSchedule, DecisionLineCountsThePassesTheRunnerMakes) {
  hcomm_fake::ClusterOptions o;
  o.env = {{"HCOMM_OP_RETRY", "1"}, {"HCOMM_DEBUG", "3"}};
  struct Case {
    std::uint32_t ranks, per;
    const char* algo;  // nullptr: the selection's
    const char* op;    // allreduce, allgather, reduce_scatter
    std::uint64_t count;
    std::uint64_t passes;  // ceil(data / what one pass carries), worked out by hand below
  };
  // 1 MiB buffer, fp32. Hierarchical all-reduce, L = 4, 2 slots: 1 MiB / 10 * 8 rounded to 16 B =
  // 838848 B a pass; 3 MiB -> 4 passes (half the buffer, 512 KiB, would be 6). Hierarchical
  // all-gather: 512 KiB / (8 x 4 B) = 16384 elements per rank a pass; 40000 -> 3. Hierarchical
  // reduce-scatter: 512 KiB / ((8 + 2) x 4 B) = 13107 per rank; 30000 -> 3. Mesh all-gather on one
  // server: 262144 elements per rank a pass; 300000 -> 2 (the buffer for all four ranks would be 5).
  // The flat ring over 4 servers: 512 KiB of the vector a pass; 3 MiB -> 6.
  const Case cases[] = {
      {8, 4, "level0:mesh;level1:ring", "allreduce", (3u << 20) / 4, 4},
      {8, 4, "level0:mesh;level1:H-D_R", "allgather", 40000, 3},
      {8, 4, "level0:mesh;level1:ring", "reduce_scatter", 30000, 3},
      {4, 4, nullptr, "allgather", 300000, 2},
      {4, 1, "level0:NA;level1:ring", "allreduce", (3u << 20) / 4, 6},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(std::string(k.op) + " on " + std::to_string(k.ranks) + " ranks, " + (k.algo ? k.algo : "auto"));
    o.algo = k.algo;
    Cluster c(k.ranks, k.per, o);
    const std::size_t first = c.drv.tasks.size(), logs = c.drv.logs.size();
    if (std::string(k.op) == "allreduce") c.expect_sum(c.allreduce(k.count), k.count);
    else if (std::string(k.op) == "allgather") expect_gathered(gather_or_scatter(c, true, k.count), k.ranks, k.count);
    else expect_scattered(gather_or_scatter(c, false, k.count), k.ranks, k.count);
    const Passes p = passes_of(c, k.op, first, logs);
    EXPECT_EQ(p.tasks, k.passes) << "passes counted from the slice markers";
    EXPECT_EQ(p.logged, k.passes) << "chunks= of the decision line";
  }
}

}  // namespace
