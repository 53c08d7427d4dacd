// An in-memory interpreter of collective schedules (hcomm/src/algo/schedule.h), independent of the
// executor and the driver: it checks that a family's schedules pair up (every send meets a receive
// with the same bytes, mode and slot, in order), finish without deadlock, and leave the right
// bytes. Each member has its own byte memory; W is at the same address on every member.
// Sends never block here (no credits); blocked receives wait for a later sweep.
#pragma once
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "algo/schedule.h"

namespace schedule_interp {

using hcomm::detail::Mode;
using hcomm::detail::Schedule;

/// Reduction on int64 elements (dst = dst op src), the only dtype the interpreter needs: schedules are
/// dtype-agnostic, the executor passes dtype and op through.
enum class Op { Sum, Max };

struct Interp {
  std::uint32_t n;
  std::vector<std::vector<std::uint8_t>> mem;  // per member
  Op op = Op::Sum;
  std::uint64_t w = 0;                         // W's address (same on every member)
  std::uint64_t transfers = 0, bytes_moved = 0, steps_max = 0;

  Interp(std::uint32_t members, std::uint64_t mem_bytes) : n(members), mem(members, std::vector<std::uint8_t>(mem_bytes, 0)) {}

  std::int64_t* at(std::uint32_t m, std::uint64_t addr) { return reinterpret_cast<std::int64_t*>(mem[m].data() + addr); }

  /// Run every member's schedule (schedules[m]) to the end. False with `err` on a mismatch, an address out of
  /// range, a deadlock or a send nobody received.
  bool run(const std::vector<Schedule>& schedules, std::string* err) {
    struct Msg { std::uint64_t bytes; Mode mode; std::vector<std::uint8_t> data; };
    std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, std::deque<Msg>> q;  // (from, to, slot)
    std::vector<std::size_t> pc(n, 0), ri(n, 0);
    std::vector<bool> sent(n, false);
    auto key_slot = [](Mode m, std::uint32_t s) { return m == Mode::Direct ? 0xffffffffu : s; };
    auto fail = [&](const std::string& e) { *err = e; return false; };
    for (std::uint32_t m = 0; m < n; ++m) steps_max = std::max<std::uint64_t>(steps_max, schedules[m].steps.size());
    for (;;) {
      bool progress = false, all_done = true;
      for (std::uint32_t m = 0; m < n; ++m) {
        while (pc[m] < schedules[m].steps.size()) {
          const auto& st = schedules[m].steps[pc[m]];
          if (!sent[m]) {
            for (const auto& s : st.sends) {
              if (s.to >= n || s.to == m) return fail("member " + std::to_string(m) + " sends to " + std::to_string(s.to));
              if (s.src + s.bytes > mem[m].size()) return fail("member " + std::to_string(m) + " reads out of range");
              ++transfers;
              bytes_moved += s.bytes;
              Msg msg{s.bytes, s.mode, {}};
              if (s.mode == Mode::Direct) {
                if (w + s.dst_off + s.bytes > mem[s.to].size()) return fail("direct write out of range");
                std::memcpy(mem[s.to].data() + w + s.dst_off, mem[m].data() + s.src, s.bytes);
              } else {
                msg.data.assign(mem[m].begin() + static_cast<std::ptrdiff_t>(s.src),
                                mem[m].begin() + static_cast<std::ptrdiff_t>(s.src + s.bytes));
              }
              q[{m, s.to, key_slot(s.mode, s.slot)}].push_back(std::move(msg));
            }
            sent[m] = true;
            progress = true;
          }
          bool blocked = false;
          while (ri[m] < st.recvs.size()) {
            const auto& r = st.recvs[ri[m]];
            auto it = q.find({r.from, m, key_slot(r.mode, r.slot)});
            if (it == q.end() || it->second.empty()) { blocked = true; break; }
            Msg msg = std::move(it->second.front());
            it->second.pop_front();
            if (msg.bytes != r.bytes || msg.mode != r.mode)
              return fail("member " + std::to_string(m) + " step " + std::to_string(pc[m]) + " expects " +
                          std::to_string(r.bytes) + " B from " + std::to_string(r.from) + ", got " + std::to_string(msg.bytes));
            if (r.mode != Mode::Direct && r.width) {  // 2-D: rows of width bytes at dst + i * dpitch
              if (r.mode != Mode::StagedCopy || r.bytes % r.width || r.width > r.dpitch) return fail("bad 2-D receive");
              const std::uint64_t rows = r.bytes / r.width;
              if (r.dst + (rows - 1) * r.dpitch + r.width > mem[m].size()) return fail("receive out of range");
              for (std::uint64_t i = 0; i < rows; ++i)
                std::memcpy(mem[m].data() + r.dst + i * r.dpitch, msg.data.data() + i * r.width, r.width);
            } else if (r.mode != Mode::Direct) {
              if (r.dst + r.bytes > mem[m].size()) return fail("receive out of range");
              if (r.mode == Mode::StagedCopy) std::memcpy(mem[m].data() + r.dst, msg.data.data(), r.bytes);
              else reduce(m, r.dst, reinterpret_cast<const std::int64_t*>(msg.data.data()), r.bytes);
            }
            ++ri[m];
            progress = true;
          }
          if (blocked) break;
          for (const auto& l : st.locals) {
            if (l.width) {  // 2-D copy: rows of width bytes from src + i * spitch to dst + i * dpitch
              const std::uint64_t rows = l.bytes / l.width;
              if (l.reduce || l.bytes % l.width || l.width > l.spitch || l.width > l.dpitch) return fail("bad 2-D local");
              if (l.dst + (rows - 1) * l.dpitch + l.width > mem[m].size() || l.src + (rows - 1) * l.spitch + l.width > mem[m].size())
                return fail("local out of range");
              for (std::uint64_t i = 0; i < rows; ++i)
                std::memmove(mem[m].data() + l.dst + i * l.dpitch, mem[m].data() + l.src + i * l.spitch, l.width);
              continue;
            }
            if (l.dst + l.bytes > mem[m].size() || l.src + l.bytes > mem[m].size()) return fail("local out of range");
            std::vector<std::int64_t> tmp(l.bytes / 8);
            std::memcpy(tmp.data(), mem[m].data() + l.src, l.bytes);
            if (l.reduce) reduce(m, l.dst, tmp.data(), l.bytes);
            else std::memcpy(mem[m].data() + l.dst, tmp.data(), l.bytes);
          }
          ++pc[m];
          ri[m] = 0;
          sent[m] = false;
          progress = true;
        }
        if (pc[m] < schedules[m].steps.size()) all_done = false;
      }
      if (all_done) break;
      if (!progress) {
        std::string s = "deadlock:";
        for (std::uint32_t m = 0; m < n; ++m)
          if (pc[m] < schedules[m].steps.size()) s += " member " + std::to_string(m) + " at step " + std::to_string(pc[m]) + ";";
        return fail(s);
      }
    }
    for (auto& [k, d] : q)
      if (!d.empty())
        return fail("member " + std::to_string(std::get<0>(k)) + " sent to " + std::to_string(std::get<1>(k)) +
                    " a message never received");
    return true;
  }

  void reduce(std::uint32_t m, std::uint64_t dst, const std::int64_t* src, std::uint64_t bytes) {
    std::int64_t* d = at(m, dst);
    for (std::uint64_t i = 0; i < bytes / 8; ++i) d[i] = op == Op::Sum ? d[i] + src[i] : std::max(d[i], src[i]);
  }
};

}  // namespace schedule_interp
