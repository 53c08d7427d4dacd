// Sub-communicators (hcomm_comm_split, hcomm_group_split, hcomm_comm_create_group) end to end through
// libhcomm and the in-memory driver (fake_driver.h): every operation on children of 2x4, 3x2 and 16x2
// clusters against host references (bit-exact int32), a child interleaved with its parent on one stream,
// NOCOLOR, rank lists in any order, nested splits, the RAII layer and bad input.
//
// A split is collective and blocks the caller (it synchronizes its all-gather), so the ranks run here as
// threads taking turns under one lock (TurnDriver): a rank whose synchronize cannot finish yet waits until
// another rank submitted work, and when every rank waits with nothing new submitted the fake driver's
// "blocked" answer stands (a deadlock is a timeout, never a hang).
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fake_cluster.h"
#include "fake_driver.h"
#include "hcomm/hcomm.h"
#include "hcomm/hcomm.hpp"

using hcomm::DrvStatus;
using hcomm_fake::FakeDriver;

namespace {

class TurnDriver : public FakeDriver {
 public:
  using FakeDriver::FakeDriver;

  /// Run fn(r) for every rank r on its own thread, one thread at a time.
  void run_ranks(std::uint32_t n, const std::function<void(std::uint32_t)>& fn) {
    active_ = n;
    std::vector<std::thread> th;
    for (std::uint32_t r = 0; r < n; ++r)
      th.emplace_back([this, r, &fn] {
        std::unique_lock<std::mutex> lk(m_);
        lock_ = &lk;
        rank_ = r;
        set_rank(r);
        fn(r);
        --active_;
        cv_.notify_all();
      });
    for (auto& t : th) t.join();
  }

  /// Device bytes hcomm_malloc asked for, per device (the fake heap never reuses freed bytes).
  std::vector<std::uint64_t> allocated;
  DrvStatus mem_alloc(std::uint32_t device, std::uint64_t bytes, std::uint64_t* addr) override {
    const DrvStatus st = FakeDriver::mem_alloc(device, bytes, addr);
    if (st == DrvStatus::Ok) {
      if (allocated.size() <= device) allocated.resize(device + 1, 0);
      allocated[device] += bytes;
    }
    return st;
  }

  DrvStatus stream_synchronize(std::uint32_t s, std::uint64_t timeout, std::string* error) override {
    for (;;) {
      const DrvStatus st = FakeDriver::stream_synchronize(s, timeout, error);
      if (st != DrvStatus::Timeout || !lock_) return st;
      // Wait for a submission by another rank; give up when every live rank waits and none of them has seen
      // anything new since it last ran the queues.
      const std::size_t seen = tasks.size();
      waiting_[rank_] = seen;
      cv_.notify_all();
      cv_.wait(*lock_, [&] { return tasks.size() != seen || stuck(); });
      const bool dead = tasks.size() == seen;
      waiting_.erase(rank_);
      set_rank(rank_);
      if (dead) return st;
    }
  }

 private:
  bool stuck() const {
    std::uint32_t idle = 0;
    for (const auto& [r, seen] : waiting_) idle += seen == tasks.size();
    return idle == active_;
  }
  std::mutex m_;
  std::condition_variable cv_;
  std::uint32_t active_ = 0;
  std::map<std::uint32_t, std::size_t> waiting_;  ///< waiting rank -> tasks.size() when it last ran the queues
  static thread_local std::unique_lock<std::mutex>* lock_;
  static thread_local std::uint32_t rank_;
};
thread_local std::unique_lock<std::mutex>* TurnDriver::lock_ = nullptr;
thread_local std::uint32_t TurnDriver::rank_ = 0;

struct Env : hcomm_fake::Cluster<TurnDriver> {
  Env(std::uint32_t servers, std::uint32_t per_server) : Cluster(servers * per_server, per_server) {}
  bool logged(const std::string& what) const {
    for (const auto& l : drv.logs)
      if (l.find("[HCOMM_ERR]") != std::string::npos && l.find(what) != std::string::npos) return true;
    return false;
  }
};

// Element i of global rank g's input for operation `salt`: small integers, exact sums.
std::vector<std::int32_t> input(std::uint32_t g, std::size_t len, int salt) {
  std::vector<std::int32_t> v(len);
  for (std::size_t i = 0; i < len; ++i) v[i] = static_cast<std::int32_t>((g * 7 + i * 3 + salt * 5) % 11) - 5;
  return v;
}

// One rank's device scratch for checking: upload, download (each synchronized).
struct Dev {
  hcomm_context_t ctx;
  hcomm_stream_t s;
  void* alloc(std::size_t elems) {
    void* p = nullptr;
    EXPECT_EQ(hcomm_malloc(ctx, elems * 4 + 8, &p), HCOMM_SUCCESS);
    return p;
  }
  void put(void* d, const std::vector<std::int32_t>& h) {
    hcomm_memcpy_host_to_device(d, h.data(), h.size() * 4, s);
    EXPECT_EQ(hcomm_stream_synchronize(s), HCOMM_SUCCESS);
  }
  std::vector<std::int32_t> get(const void* d, std::size_t elems) {
    std::vector<std::int32_t> h(elems);
    EXPECT_EQ(hcomm_stream_synchronize(s), HCOMM_SUCCESS);
    hcomm_memcpy_device_to_host(h.data(), d, elems * 4, s);
    EXPECT_EQ(hcomm_stream_synchronize(s), HCOMM_SUCCESS);
    return h;
  }
};

// Every operation on child `c` (members: its global ranks in comm rank order) from global rank g, checked
// against host references. `label` names the case in failures.
void check_ops(Dev d, hcomm_comm_t c, const std::vector<std::uint32_t>& mem, std::uint32_t g, const std::string& label) {
  const std::uint32_t m = static_cast<std::uint32_t>(mem.size());
  std::uint32_t cr = 0, size = 0;
  ASSERT_EQ(hcomm_comm_rank(c, &cr), HCOMM_SUCCESS);
  ASSERT_EQ(hcomm_comm_size(c, &size), HCOMM_SUCCESS);
  ASSERT_EQ(size, m) << label;
  ASSERT_EQ(mem[cr], g) << label << ": comm rank " << cr;
  const std::size_t k = 37;
  const auto I = HCOMM_DATA_TYPE_INT32;
  void* in = d.alloc(m * k);
  void* out = d.alloc(m * k);
  // all-reduce
  d.put(in, input(g, k, 1));
  ASSERT_EQ(hcomm_allreduce(in, out, k, I, HCOMM_REDUCE_SUM, c, d.s), HCOMM_SUCCESS);
  std::vector<std::int32_t> ref(k, 0);
  for (std::uint32_t q : mem) {
    auto v = input(q, k, 1);
    for (std::size_t i = 0; i < k; ++i) ref[i] += v[i];
  }
  EXPECT_EQ(d.get(out, k), ref) << label << " allreduce, global rank " << g;
  // all-gather: block q from comm rank q
  d.put(in, input(g, k, 2));
  ASSERT_EQ(hcomm_allgather(in, out, k, I, c, d.s), HCOMM_SUCCESS);
  ref.clear();
  for (std::uint32_t q : mem) {
    auto v = input(q, k, 2);
    ref.insert(ref.end(), v.begin(), v.end());
  }
  EXPECT_EQ(d.get(out, m * k), ref) << label << " allgather, global rank " << g;
  // reduce-scatter: my block cr of everybody's input
  d.put(in, input(g, m * k, 3));
  ASSERT_EQ(hcomm_reduce_scatter(in, out, k, I, HCOMM_REDUCE_SUM, c, d.s), HCOMM_SUCCESS);
  ref.assign(k, 0);
  for (std::uint32_t q : mem) {
    auto v = input(q, m * k, 3);
    for (std::size_t i = 0; i < k; ++i) ref[i] += v[cr * k + i];
  }
  EXPECT_EQ(d.get(out, k), ref) << label << " reduce_scatter, global rank " << g;
  // broadcast from the last comm rank (not 0 when m > 1)
  const std::uint32_t root = m - 1;
  d.put(out, cr == root ? input(g, k, 4) : std::vector<std::int32_t>(k, 99));
  ASSERT_EQ(hcomm_broadcast(out, k, I, root, c, d.s), HCOMM_SUCCESS);
  EXPECT_EQ(d.get(out, k), input(mem[root], k, 4)) << label << " broadcast, global rank " << g;
  // all-to-all: block j of my input goes to comm rank j
  d.put(in, input(g, m * k, 5));
  ASSERT_EQ(hcomm_alltoall(in, out, k, I, c, d.s), HCOMM_SUCCESS);
  ref.clear();
  for (std::uint32_t q : mem) {
    auto v = input(q, m * k, 5);
    ref.insert(ref.end(), v.begin() + cr * k, v.begin() + (cr + 1) * k);
  }
  EXPECT_EQ(d.get(out, m * k), ref) << label << " alltoall, global rank " << g;
  // send/recv around the child's ring, and a barrier
  if (m > 1) {
    const std::uint32_t next = (cr + 1) % m, prev = (cr + m - 1) % m;
    d.put(in, input(g, k, 6));
    hcomm_request_t rq[2];
    hcomm_stream_t rs = nullptr;  // the receive on its own stream: a send's tasks wait for the peer's receive
    ASSERT_EQ(hcomm_create_stream(d.ctx, &rs), HCOMM_SUCCESS);
    ASSERT_EQ(hcomm_isend(in, k, I, next, 3, c, d.s, &rq[0]), HCOMM_SUCCESS);
    ASSERT_EQ(hcomm_irecv(out, k, I, prev, 3, c, rs, &rq[1]), HCOMM_SUCCESS);
    EXPECT_EQ(hcomm_waitall(2, rq), HCOMM_SUCCESS) << label;
    hcomm_destroy_stream(rs);
    EXPECT_EQ(d.get(out, k), input(mem[prev], k, 6)) << label << " send/recv, global rank " << g;
  }
  EXPECT_EQ(hcomm_barrier(c, nullptr), HCOMM_SUCCESS) << label;
  hcomm_free(d.ctx, in);
  hcomm_free(d.ctx, out);
}

// Split every layout by a color function (key = global rank, so the order is the parent's) and run everything
// on every child.
void split_and_check(std::uint32_t servers, std::uint32_t per,
                     const std::function<std::uint32_t(std::uint32_t, std::uint32_t)>& color, const char* how) {
  Env e(servers, per);
  const std::string label = std::to_string(servers) + "x" + std::to_string(per) + " by " + how;
  e.drv.run_ranks(e.n, [&](std::uint32_t r) {
    hcomm_comm_t child = nullptr;
    const std::uint32_t col = color(r, per);
    ASSERT_EQ(hcomm_comm_split(e.comm[r], col, r, &child), HCOMM_SUCCESS) << label;
    ASSERT_NE(child, nullptr);
    std::vector<std::uint32_t> mem;
    for (std::uint32_t q = 0; q < e.n; ++q)
      if (color(q, per) == col) mem.push_back(q);
    check_ops(Dev{e.ctx[r], e.stream[r]}, child, mem, r, label);
    EXPECT_EQ(hcomm_comm_destroy(child), HCOMM_SUCCESS);
  });
  for (const auto& l : e.drv.logs) EXPECT_EQ(l.find("[HCOMM_ERR]"), std::string::npos) << label << ": " << l;
}

std::uint32_t parity(std::uint32_t r, std::uint32_t) { return r % 2; }
std::uint32_t server(std::uint32_t r, std::uint32_t per) { return r / per; }

}  // namespace

TEST(Split, ByParity2x4) { split_and_check(2, 4, parity, "rank % 2"); }
TEST(Split, ByServer2x4) { split_and_check(2, 4, server, "server"); }
TEST(Split, ByParity3x2) { split_and_check(3, 2, parity, "rank % 2"); }
TEST(Split, ByServer3x2) { split_and_check(3, 2, server, "server"); }
TEST(Split, ByParity16x2) { split_and_check(16, 2, parity, "rank % 2"); }
TEST(Split, ByServer16x2) { split_and_check(16, 2, server, "server"); }
// Local index: the rails (one rank of every server), 2x4 -> 4 children of 2 servers x 1 rank.
TEST(Split, ByLocalIndex2x4) {
  split_and_check(
      2, 4, [](std::uint32_t r, std::uint32_t per) { return r % per; }, "local index");
}

// Keys reorder the members: key = n - rank reverses the parent's order.
TEST(Split, KeysOrderTheMembers) {
  Env e(2, 4);
  e.drv.run_ranks(e.n, [&](std::uint32_t r) {
    hcomm_comm_t child = nullptr;
    ASSERT_EQ(hcomm_comm_split(e.comm[r], r % 2, e.n - r, &child), HCOMM_SUCCESS);
    std::vector<std::uint32_t> mem;
    for (std::uint32_t q = e.n; q-- > 0;)
      if (q % 2 == r % 2) mem.push_back(q);
    check_ops(Dev{e.ctx[r], e.stream[r]}, child, mem, r, "reversed keys");
  });
}

// A child and its parent used interleaved on one stream, without synchronizing in between: their notify keys
// must not collide (this fails when the child takes its parent's id). They also share the collective buffer
// (the parent's mesh pulls are settled by the child's next operation, settle_mesh), which this fake driver's
// schedule does not expose when it is missing.
TEST(Split, ChildAndParentInterleaved) {
  Env e(2, 4);
  const std::size_t k = 300;
  const auto I = HCOMM_DATA_TYPE_INT32;
  e.drv.run_ranks(e.n, [&](std::uint32_t r) {
    hcomm_comm_t child = nullptr;
    ASSERT_EQ(hcomm_comm_split(e.comm[r], r / 4, r, &child),
              HCOMM_SUCCESS);  // by server: a one-server mesh
    Dev d{e.ctx[r], e.stream[r]};
    void* in = d.alloc(k);
    void* pout[3];
    void* cout[3];
    for (int i = 0; i < 3; ++i) {
      pout[i] = d.alloc(k);
      cout[i] = d.alloc(k);
    }
    d.put(in, input(r, k, 7));
    for (int i = 0; i < 3; ++i) {
      ASSERT_EQ(hcomm_allreduce(in, pout[i], k, I, HCOMM_REDUCE_SUM, e.comm[r], d.s), HCOMM_SUCCESS);
      ASSERT_EQ(hcomm_allreduce(in, cout[i], k, I, HCOMM_REDUCE_SUM, child, d.s), HCOMM_SUCCESS);
    }
    std::vector<std::int32_t> pref(k, 0), cref(k, 0);
    for (std::uint32_t q = 0; q < e.n; ++q) {
      auto v = input(q, k, 7);
      for (std::size_t i = 0; i < k; ++i) {
        pref[i] += v[i];
        if (q / 4 == r / 4) cref[i] += v[i];
      }
    }
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(d.get(pout[i], k), pref) << "parent all-reduce " << i << ", rank " << r;
      EXPECT_EQ(d.get(cout[i], k), cref) << "child all-reduce " << i << ", rank " << r;
    }
    // And the other way round: the parent after the child, p2p on both.
    check_ops(d, child, {r / 4 * 4, r / 4 * 4 + 1, r / 4 * 4 + 2, r / 4 * 4 + 3}, r, "child after parent");
    std::vector<std::uint32_t> all(e.n);
    for (std::uint32_t q = 0; q < e.n; ++q) all[q] = q;
    check_ops(d, e.comm[r], all, r, "parent after child");
  });
  // Every notify recorded was consumed (but the mesh's PULLED, owed to the next operation).
  std::size_t left = 0;
  for (const auto& [key, v] : e.drv.notifies) left += ((key.second >> 50) & 0x3f) != 4;
  EXPECT_EQ(left, 0u) << "notify records left unconsumed";
}

// NOCOLOR: those ranks get NULL and success; the rest form one communicator.
TEST(Split, NoColor) {
  Env e(3, 2);
  e.drv.run_ranks(e.n, [&](std::uint32_t r) {
    hcomm_comm_t child = reinterpret_cast<hcomm_comm_t>(&e);  // must be overwritten
    const bool out = r % 3 == 0;
    ASSERT_EQ(hcomm_comm_split(e.comm[r], out ? HCOMM_SPLIT_NOCOLOR : 5, 0, &child), HCOMM_SUCCESS);
    if (out) {
      EXPECT_EQ(child, nullptr);
      return;
    }
    ASSERT_NE(child, nullptr);
    check_ops(Dev{e.ctx[r], e.stream[r]}, child, {1, 2, 4, 5}, r, "nocolor");
  });
}

// hcomm_group_split is hcomm_comm_split; nested: split a child again.
TEST(Split, GroupSplitAliasAndNested) {
  Env e(2, 4);
  e.drv.run_ranks(e.n, [&](std::uint32_t r) {
    hcomm_comm_t a = nullptr, b = nullptr;
    ASSERT_EQ(hcomm_group_split(e.comm[r], r % 2, r, &a),
              HCOMM_SUCCESS);  // {0,2,4,6} / {1,3,5,7}
    std::uint32_t ar = 0;
    hcomm_comm_rank(a, &ar);
    ASSERT_EQ(hcomm_comm_split(a, ar / 2, 0, &b),
              HCOMM_SUCCESS);  // by server inside the child
    std::vector<std::uint32_t> mem;
    for (std::uint32_t q = 0; q < e.n; ++q)
      if (q % 2 == r % 2 && q / 4 == r / 4) mem.push_back(q);
    check_ops(Dev{e.ctx[r], e.stream[r]}, b, mem, r, "nested");
    EXPECT_EQ(hcomm_comm_destroy(a),
              HCOMM_SUCCESS);  // the grandchild outlives its parent
    check_ops(Dev{e.ctx[r], e.stream[r]}, b, mem, r, "nested, parent destroyed");
  });
}

// A rank list in arbitrary order: the new rank is the position; unlisted ranks get NULL. The members here are
// on both servers, not contiguous: flat algorithms.
TEST(Split, CreateGroupArbitraryOrder) {
  Env e(2, 4);
  const std::vector<std::uint32_t> list = {5, 1, 3, 0, 6};
  e.drv.run_ranks(e.n, [&](std::uint32_t r) {
    hcomm_comm_t g = reinterpret_cast<hcomm_comm_t>(&e);
    ASSERT_EQ(hcomm_comm_create_group(e.comm[r], static_cast<std::uint32_t>(list.size()), list.data(), &g), HCOMM_SUCCESS);
    bool listed = false;
    for (std::uint32_t q : list) listed = listed || q == r;
    if (!listed) {
      EXPECT_EQ(g, nullptr) << "rank " << r;
      return;
    }
    ASSERT_NE(g, nullptr);
    check_ops(Dev{e.ctx[r], e.stream[r]}, g, list, r, "create_group");
  });
  // Servers-contiguous list: {4,5,6,7,0,1,2,3} is two servers of 4 in swapped order.
  const std::vector<std::uint32_t> swapped = {4, 5, 6, 7, 0, 1, 2, 3};
  e.drv.run_ranks(e.n, [&](std::uint32_t r) {
    hcomm_comm_t g = nullptr;
    ASSERT_EQ(hcomm_comm_create_group(e.comm[r], 8, swapped.data(), &g), HCOMM_SUCCESS);
    check_ops(Dev{e.ctx[r], e.stream[r]}, g, swapped, r, "create_group swapped servers");
  });
}

// The RAII layer: Comm::split returns an owned communicator (empty for NOCOLOR).
TEST(Split, Raii) {
  Env e(2, 2);
  e.drv.run_ranks(e.n, [&](std::uint32_t r) {
    hcomm::Comm world(e.comm[r]);  // owns the world communicator from here on
    hcomm::Comm child = world.split(r == 3 ? HCOMM_SPLIT_NOCOLOR : 0, r);
    if (r == 3) {
      EXPECT_EQ(child.get(), nullptr);
    } else {
      EXPECT_EQ(child.size(), 3u);
      EXPECT_EQ(child.rank(), r);
      check_ops(Dev{e.ctx[r], e.stream[r]}, child.get(), {0, 1, 2}, r, "raii");
    }
    try {
      const std::uint32_t dup[2] = {1, 1};
      world.create_group(2, dup);
      ADD_FAILURE() << "no exception";
    } catch (const hcomm::Error& err) { EXPECT_EQ(err.code(), HCOMM_E_PARA); }
  });
}

// An adversarial split of a parent whose size is no power of two (7 servers x 3 = 21 ranks, so the
// exchange's gather tree is ragged): 5 colors given out of rank order, 4 ranks NOCOLOR, keys that
// reverse the parent's order with ties (broken by parent rank), a color of one member and one whose
// parent rank 0 is not a member; every child checked against a host-computed (key, parent rank)
// order, with every operation.
TEST(Split, AdversarialColorsKeysAndNoColor) {
  Env e(7, 3);
  const std::uint32_t n = e.n;
  auto color = [&](std::uint32_t r) -> std::uint32_t {
    if (r % 5 == 2) return HCOMM_SPLIT_NOCOLOR;  // 2, 7, 12, 17
    if (r == 20) return 1000;                    // a color of one member
    return 900 - (r * 7) % 4 * 300;              // 900, 600, 300, 0: large to small along the ranks
  };
  auto key = [&](std::uint32_t r) { return (n - r) / 3; };  // reversed, three ranks to a key
  // Host reference: per color, the members sorted by (key, parent rank).
  std::map<std::uint32_t, std::vector<std::uint32_t>> ref;
  for (std::uint32_t q = 0; q < n; ++q)
    if (color(q) != HCOMM_SPLIT_NOCOLOR) ref[color(q)].push_back(q);
  for (auto& [c, mem] : ref)
    std::sort(mem.begin(), mem.end(),
              [&](std::uint32_t a, std::uint32_t b) { return key(a) != key(b) ? key(a) < key(b) : a < b; });
  ASSERT_EQ(ref.size(), 5u);
  ASSERT_EQ(ref[1000].size(), 1u);
  e.drv.run_ranks(n, [&](std::uint32_t r) {
    hcomm_comm_t child = reinterpret_cast<hcomm_comm_t>(&e);  // must be overwritten
    ASSERT_EQ(hcomm_comm_split(e.comm[r], color(r), key(r), &child), HCOMM_SUCCESS) << "rank " << r;
    if (color(r) == HCOMM_SPLIT_NOCOLOR) {
      EXPECT_EQ(child, nullptr) << "rank " << r;
      return;
    }
    ASSERT_NE(child, nullptr);
    check_ops(Dev{e.ctx[r], e.stream[r]}, child, ref[color(r)], r, "adversarial color " + std::to_string(color(r)));
    EXPECT_EQ(hcomm_comm_destroy(child), HCOMM_SUCCESS);
  });
  for (const auto& l : e.drv.logs) EXPECT_EQ(l.find("[HCOMM_ERR]"), std::string::npos) << l;
}

// Device bytes allocated by one split on each rank (by server: children of `per` ranks).
std::vector<std::uint64_t> split_bytes(std::uint32_t servers, std::uint32_t per) {
  Env e(servers, per);
  std::vector<std::uint64_t> before = e.drv.allocated;
  before.resize(e.n, 0);
  e.drv.run_ranks(e.n, [&](std::uint32_t r) {
    hcomm_comm_t child = nullptr;
    ASSERT_EQ(hcomm_comm_split(e.comm[r], r / per, per - 1 - r % per, &child), HCOMM_SUCCESS);
    std::vector<std::uint32_t> mem;  // my server's ranks, reversed by the keys
    for (std::uint32_t i = per; i-- > 0;) mem.push_back(r / per * per + i);
    check_ops(Dev{e.ctx[r], e.stream[r]}, child, mem, r, "by server, reversed");
    EXPECT_EQ(hcomm_comm_destroy(child), HCOMM_SUCCESS);
  });
  std::vector<std::uint64_t> bytes(e.n);
  for (std::uint32_t r = 0; r < e.n; ++r) bytes[r] = e.drv.allocated.at(r) - before[r];
  return bytes;
}

// A split's device memory per rank does not grow with the parent: a rank holds its gather subtree's
// records and answers (odd parent ranks: their own only) and its child's member list; only parent
// rank 0 holds every rank's. At 64 and 256 ranks (children of 4), an odd rank allocates the same
// bytes as the odd rank at its place in its child in the other (comm rank 0 also relays the list),
// and every rank r > 0 at most 112 bytes per rank of its subtree [r, r + lowbit(r)) plus its share
// of the lists. (An all-gather of every record would take 64 bytes per parent rank on every rank.)
TEST(Split, DeviceMemoryPerRankDoesNotGrowWithTheParent) {
  const std::uint32_t per = 4;
  const auto small = split_bytes(16, per), big = split_bytes(64, per);
  // The check_ops buffers are the same at both sizes (children of 4): what differs is the split's.
  for (const auto* v : {&small, &big})
    for (std::uint32_t r = 1; r < v->size(); r += 2)  // the same place in its child as rank 4 + r % 4 of the small parent
      EXPECT_EQ((*v)[r], small[4 + r % per]) << "odd rank " << r << " of " << v->size();
  for (std::uint32_t r = 1; r < big.size(); ++r) {
    const std::uint64_t sub = std::min<std::uint64_t>(r & (~r + 1), big.size() - r);
    EXPECT_LE(big[r], small[1] + sub * (16 + 12) * 4 + 2 * sub * 4) << "rank " << r;
  }
  EXPECT_GE(big[0], 256u * 16 * 4) << "the root gathers every record";
}

// Bad input: HCOMM_E_PARA with a log line naming the problem, HCOMM_E_PTR, HCOMM_E_UNAVAIL; a mismatch
// between ranks fails everywhere, no hang.
TEST(Split, BadInput) {
  Env e(2, 2);
  e.drv.set_rank(0);
  hcomm_comm_t c = e.comm[0], out = nullptr;
  const std::uint32_t dup[3] = {0, 2, 0}, range[2] = {1, 4}, ok[2] = {0, 1};
  EXPECT_EQ(hcomm_comm_create_group(c, 3, dup, &out), HCOMM_E_PARA);
  EXPECT_TRUE(e.logged("parent rank 0 is listed twice (ranks[2])"));
  EXPECT_EQ(hcomm_comm_create_group(c, 2, range, &out), HCOMM_E_PARA);
  EXPECT_TRUE(e.logged("ranks[1] = 4 is not a rank of the parent (size 4)"));
  EXPECT_EQ(hcomm_comm_create_group(c, 0, ok, &out), HCOMM_E_PARA);
  EXPECT_EQ(hcomm_comm_create_group(c, 5, ok, &out), HCOMM_E_PARA);
  EXPECT_TRUE(e.logged("5 ranks listed, the parent has 4"));
  EXPECT_EQ(hcomm_comm_create_group(c, 2, nullptr, &out), HCOMM_E_PTR);
  EXPECT_EQ(hcomm_comm_create_group(c, 2, ok, nullptr), HCOMM_E_PTR);
  EXPECT_EQ(hcomm_comm_split(c, 0, 0, nullptr), HCOMM_E_PTR);
  EXPECT_EQ(hcomm_comm_split(nullptr, 0, 0, &out), HCOMM_E_UNAVAIL);
  EXPECT_EQ(hcomm_comm_create_group(nullptr, 2, ok, &out), HCOMM_E_UNAVAIL);
  EXPECT_TRUE(e.drv.tasks.empty()) << "rejected calls submit nothing";
  // Lists that differ between ranks: every rank fails after the exchange.
  std::vector<hcomm_result_t> rc(e.n, HCOMM_SUCCESS);
  e.drv.run_ranks(e.n, [&](std::uint32_t r) {
    const std::uint32_t a[2] = {0, 1}, b[2] = {1, 0};
    hcomm_comm_t g = nullptr;
    rc[r] = hcomm_comm_create_group(e.comm[r], 2, r == 2 ? b : a, &g);
    EXPECT_EQ(g, nullptr);
  });
  for (std::uint32_t r = 0; r < e.n; ++r) EXPECT_EQ(rc[r], HCOMM_E_PARA) << "rank " << r;
  EXPECT_TRUE(e.logged("parent rank 2 passed another rank list"));
  // One rank splits while the others create a group: every rank fails.
  e.drv.run_ranks(e.n, [&](std::uint32_t r) {
    hcomm_comm_t g = nullptr;
    rc[r] = r == 1 ? hcomm_comm_split(e.comm[r], 0, 0, &g) : hcomm_comm_create_group(e.comm[r], 2, ok, &g);
  });
  for (std::uint32_t r = 0; r < e.n; ++r) EXPECT_EQ(rc[r], HCOMM_E_PARA) << "rank " << r;
  EXPECT_TRUE(e.logged("parent rank 1 is in another call"));
  // A destroyed parent.
  std::vector<hcomm_comm_t> child(e.n, nullptr);
  e.drv.run_ranks(e.n, [&](std::uint32_t r) { ASSERT_EQ(hcomm_comm_split(e.comm[r], 0, 0, &child[r]), HCOMM_SUCCESS); });
  e.drv.set_rank(0);
  ASSERT_EQ(hcomm_comm_destroy(child[0]), HCOMM_SUCCESS);
  EXPECT_EQ(hcomm_comm_split(child[0], 0, 0, &out), HCOMM_E_UNAVAIL);
  EXPECT_EQ(hcomm_comm_create_group(child[0], 2, ok, &out), HCOMM_E_UNAVAIL);
  // Only some ranks call split: the callers time out (the fake driver's "blocked"), nobody hangs.
  e.drv.run_ranks(2, [&](std::uint32_t r) {
    hcomm_comm_t g = nullptr;
    rc[r] = hcomm_comm_split(e.comm[r], 0, 0, &g);
  });
  EXPECT_EQ(rc[0], HCOMM_E_TIMEOUT);
  EXPECT_EQ(rc[1], HCOMM_E_TIMEOUT);
}
