// Shared fixtures of the network tests (tests/models/nic_test.cpp, net_test.cpp): a write
// recorder and an N:1 incast through one switch.
#pragma once
#include <cmath>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "models/event_queue.h"
#include "models/network.h"

namespace models_test {
using namespace models;

struct Done : NetworkListener {
  std::map<std::uint64_t, std::pair<Tick, bool>> done;
  Scheduler* s = nullptr;
  std::map<std::uint64_t, Tick> landed;  // the last on_data of each write
  bool silent = false;                   // data_is_silent's answer for every write
  void on_write_done(std::uint32_t, std::uint64_t tag, bool ok) override { done[tag] = {s->now(), ok}; }
  void on_data(std::uint32_t, std::uint64_t tag, std::uint64_t, std::uint64_t) override { landed[tag] = s->now(); }
  bool data_is_silent(std::uint64_t, std::uint64_t) const override { return silent; }
};

constexpr std::uint64_t G100 = 12500000000ULL;  // 100 Gb/s in bytes/s

// N senders -> one switch -> one receiver, all links 100 Gb/s, 1 us.
struct Incast {
  StandaloneScheduler sch;
  Network net;
  Done done;
  std::vector<std::uint32_t> senders, qps;
  std::uint32_t sw = 0, rx = 0;
  Incast(std::uint32_t n, NetParams p, std::uint64_t buffer = 32ULL << 20) : net(sch, p) {
    done.s = &sch;
    net.set_listener(&done);
    sw = net.add_switch("sw", n + 1, buffer, 600 * kPsPerNs);
    rx = net.add_host("rx");
    net.connect(rx, 0, sw, n, G100, kPsPerUs);
    for (std::uint32_t i = 0; i < n; ++i) {
      senders.push_back(net.add_host("tx" + std::to_string(i)));
      net.connect(senders[i], 0, sw, i, G100, kPsPerUs);
    }
    net.build_forwarding();
    for (std::uint32_t i = 0; i < n; ++i) qps.push_back(net.create_qp(senders[i], rx, static_cast<std::uint16_t>(49152 + i)));
  }
};

inline double jain(const std::vector<double>& x) {
  double s = std::accumulate(x.begin(), x.end(), 0.0), q = 0;
  for (double v : x) q += v * v;
  return s * s / (static_cast<double>(x.size()) * q);
}

}  // namespace models_test
