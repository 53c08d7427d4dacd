// Every rank of an in-memory cluster (fake_driver.h) opened through libhcomm: a context, a
// communicator and a stream each, closed with hcomm_finalize. For the tests that run libhcomm end
// to end against the fake driver.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "fake_driver.h"
#include "hcomm/hcomm.h"

namespace hcomm_fake {

struct ClusterOptions {
  const char* algo = nullptr;  ///< the communicators' config algo (HCOMM_ALGO's syntax); nullptr: the selection's
  std::uint64_t buff_mb = 1;   ///< HCOMM_BUFFSIZE_MB: small, so chunking is reachable
  /// More environment variables, set before the communicators are made and unset at the end.
  std::vector<std::pair<const char*, const char*>> env;
};

/// `ranks` ranks, `per_server` to a server, on a `Driver` (FakeDriver or a subclass). The
/// environment: a 1 MiB p2p buffer and no symmetric slots, besides `o`.
template <class Driver = FakeDriver>
struct Cluster {
  Driver drv;
  std::uint32_t n, per;
  std::vector<hcomm_context_t> ctx;
  std::vector<hcomm_comm_t> comm;
  std::vector<hcomm_stream_t> stream;
  std::vector<const char*> unset;

  Cluster(std::uint32_t ranks, std::uint32_t per_server, const ClusterOptions& o = {})
      : drv(ranks, per_server), n(ranks), per(per_server) {
    setenv("HCOMM_BUFFSIZE_MB", std::to_string(o.buff_mb).c_str(), 1);
    setenv("HCOMM_BUFFER_SIZE_MB", "1", 1);
    setenv("HCOMM_SYM_SLOTS", "0", 1);
    for (const auto& [k, v] : o.env) {
      setenv(k, v, 1);
      unset.push_back(k);
    }
    hcomm::set_driver(&drv);
    ctx.resize(n);
    comm.resize(n);
    stream.resize(n);
    for (std::uint32_t r = 0; r < n; ++r) {
      drv.set_rank(r);
      EXPECT_EQ(hcomm_create_context(r % per, &ctx[r]), HCOMM_SUCCESS);
      hcomm_config_t cfg;
      hcomm_config_init(&cfg);
      cfg.algo = o.algo;
      EXPECT_EQ(hcomm_comm_init_config(ctx[r], n, r, &cfg, &comm[r]), HCOMM_SUCCESS);
      EXPECT_EQ(hcomm_create_stream(ctx[r], &stream[r]), HCOMM_SUCCESS);
    }
  }
  ~Cluster() {
    hcomm_finalize();
    hcomm::set_driver(nullptr);
    for (const char* k : unset) unsetenv(k);
  }
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;
};

}  // namespace hcomm_fake
