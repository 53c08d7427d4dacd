// Counters over simulated time (models/sampler.h).
#include "models/sampler.h"

#include <algorithm>

namespace models {

void SampleBin::merge(const SampleBin& o) {
  busy_ps += o.busy_ps;
  bytes += o.bytes;
  queue_max = std::max(queue_max, o.queue_max);
  ecn += o.ecn;
  cnp += o.cnp;
  pause += o.pause;
  crc += o.crc;
  retransmit += o.retransmit;
  drops += o.drops;
}

void Sampler::enable(Tick interval_ps, std::size_t objects) {
  interval_ = interval_ps;
  open_.assign(interval_ps ? objects : 0, Open{});
  done_.clear();
}

// The accumulator of (obj, bin): the object's open interval; a later interval closes it (kept as a
// record) and opens; an earlier one (the flow tier settles a flow's past) is a record of its own.
SampleBin& Sampler::at(std::uint32_t obj, std::uint64_t bin) {
  Open& o = open_[obj];
  const auto b = static_cast<std::uint32_t>(std::min<std::uint64_t>(bin, kNone - 1));  // 2^32 intervals at most
  if (b == o.bin) return o.v;
  if (o.bin == kNone || b > o.bin) {
    if (o.bin != kNone) done_.push_back(Sample{obj, o.bin, o.v});
    o.bin = b;
    o.v = SampleBin{};
    return o.v;
  }
  done_.push_back(Sample{obj, b, SampleBin{}});
  return done_.back().v;
}

void Sampler::busy(std::uint32_t obj, Tick t0, Tick t1, Tick busy, std::uint64_t bytes) {
  if (t1 <= t0) {
    SampleBin& b = at(obj, t0 / interval_);
    b.busy_ps += busy;
    b.bytes += bytes;
    return;
  }
  using U = unsigned __int128;
  const Tick span = t1 - t0;
  Tick busy_done = 0;
  std::uint64_t bytes_done = 0;
  for (std::uint64_t k = t0 / interval_; k * interval_ < t1; ++k) {
    const Tick e = std::min<Tick>(t1, (k + 1) * interval_);
    const Tick cum = e - t0;  // cumulative overlap up to the end of interval k
    const auto busy_cum = static_cast<Tick>(static_cast<U>(busy) * cum / span);
    const auto bytes_cum = static_cast<std::uint64_t>(static_cast<U>(bytes) * cum / span);
    if (busy_cum != busy_done || bytes_cum != bytes_done) {
      SampleBin& b = at(obj, k);
      b.busy_ps += busy_cum - busy_done;
      b.bytes += bytes_cum - bytes_done;
    }
    busy_done = busy_cum;
    bytes_done = bytes_cum;
  }
}

void Sampler::count(std::uint32_t obj, Tick t, SampleCount c, std::uint64_t n64) {
  SampleBin& b = at(obj, t / interval_);
  const auto n = static_cast<std::uint32_t>(std::min<std::uint64_t>(n64, ~0u));
  switch (c) {
    case SampleCount::Ecn: b.ecn += n; break;
    case SampleCount::Cnp: b.cnp += n; break;
    case SampleCount::Pause: b.pause += n; break;
    case SampleCount::Crc: b.crc += n; break;
    case SampleCount::Retransmit: b.retransmit += n; break;
    case SampleCount::Drops: b.drops += n; break;
  }
}

void Sampler::queue(std::uint32_t obj, Tick t, std::uint64_t bytes) {
  Open& o = open_[obj];
  if (o.q > 0 && t > o.q_t) {  // the old level held over [q_t, t)
    const std::uint64_t q = o.q;
    for (std::uint64_t k = o.q_t / interval_; k <= (t - 1) / interval_; ++k) {
      SampleBin& b = at(obj, k);
      b.queue_max = std::max(b.queue_max, q);
    }
  }
  if (bytes > 0) {
    SampleBin& b = at(obj, t / interval_);
    b.queue_max = std::max(b.queue_max, bytes);
  }
  o.q = bytes;
  o.q_t = t;
}

std::vector<Sampler::Sample> Sampler::finish(Tick end) {
  if (!on()) return {};
  for (std::uint32_t obj = 0; obj < open_.size(); ++obj) {
    if (open_[obj].q > 0 && end > open_[obj].q_t) queue(obj, end, 0);
    if (open_[obj].bin != kNone) done_.push_back(Sample{obj, open_[obj].bin, open_[obj].v});
  }
  open_.clear();
  open_.shrink_to_fit();
  std::stable_sort(done_.begin(), done_.end(),
                   [](const Sample& a, const Sample& b) { return a.obj != b.obj ? a.obj < b.obj : a.bin < b.bin; });
  std::size_t k = 0;  // merge records of the same (object, interval) in place
  for (std::size_t i = 0; i < done_.size(); ++i) {
    if (k > 0 && done_[k - 1].obj == done_[i].obj && done_[k - 1].bin == done_[i].bin) done_[k - 1].v.merge(done_[i].v);
    else done_[k++] = done_[i];
  }
  done_.resize(k);
  return std::move(done_);
}

}  // namespace models
