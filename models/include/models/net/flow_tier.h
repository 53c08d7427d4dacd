// The flow tier (docs/models/roce-nic.md): each QP's head message is a fluid flow along its ECMP
// path at a max-min fair rate.
#pragma once
#include <cstdint>
#include <vector>

#include "models/time.h"

namespace models {

struct Flow {
  std::uint32_t qp = 0;
  std::uint64_t tag = 0, bytes = 0;
  double left = 0, rate = 0;                         // wire bytes still to send at t_set, rate since (bytes/s)
  Tick t_set = 0;
  std::uint64_t stamp = 0;                            // identifies its current entry in the completion heap
  Tick t_end = 0;                                     // projected completion (valid when rate > 0)
  std::vector<std::uint32_t> gports;                  // egress ports along the path, as global port ids
  Tick latency = 0;                                   // one-way path latency
  bool active = false;
};

}  // namespace models
