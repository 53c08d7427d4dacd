// The failover protocol's messages (recovery/failover_msg.h): little-endian fields after a magic.
#include "recovery/failover_msg.h"

#include <memory>

#include "core/comm.h"
#include "driver_port.h"

namespace hcomm::detail::failover {

namespace {
void put32(std::vector<std::uint8_t>& b, std::uint32_t v) { for (int i = 0; i < 4; ++i) b.push_back(static_cast<std::uint8_t>(v >> (8 * i))); }
void put64(std::vector<std::uint8_t>& b, std::uint64_t v) { for (int i = 0; i < 8; ++i) b.push_back(static_cast<std::uint8_t>(v >> (8 * i))); }
bool get32(const std::vector<std::uint8_t>& b, std::size_t& at, std::uint32_t* v) {
  if (at + 4 > b.size()) return false;
  *v = 0;
  for (int i = 0; i < 4; ++i) *v |= static_cast<std::uint32_t>(b[at + i]) << (8 * i);
  at += 4;
  return true;
}
bool get64(const std::vector<std::uint8_t>& b, std::size_t& at, std::uint64_t* v) {
  std::uint32_t lo = 0, hi = 0;
  if (!get32(b, at, &lo) || !get32(b, at, &hi)) return false;
  *v = lo | (static_cast<std::uint64_t>(hi) << 32);
  return true;
}
}  // namespace

CtrlMsg encode(const Msg& m) {
  auto b = std::make_shared<std::vector<std::uint8_t>>();
  put32(*b, kMagic);
  b->push_back(m.kind);
  put32(*b, m.comm);
  put32(*b, m.origin);
  put32(*b, static_cast<std::uint32_t>(m.code));
  put64(*b, m.seq);
  // Flag bit 7 says a value follows (a message without one keeps its old length and timing).
  b->push_back(static_cast<std::uint8_t>(m.value ? (m.flag | kHasValue) : (m.flag & ~kHasValue)));
  if (m.value) put64(*b, m.value);
  put32(*b, static_cast<std::uint32_t>(m.list.size()));
  for (std::uint32_t v : m.list) put32(*b, v);
  b->insert(b->end(), m.text.begin(), m.text.end());
  return b;
}

bool decode(const CtrlMsg& c, Msg* m) {
  if (!c) return false;
  const auto& b = *c;
  std::size_t at = 0;
  std::uint32_t magic = 0, code = 0, n = 0;
  if (!get32(b, at, &magic) || magic != kMagic || at >= b.size()) return false;
  m->kind = b[at++];
  if (!get32(b, at, &m->comm) || !get32(b, at, &m->origin) || !get32(b, at, &code) || !get64(b, at, &m->seq) || at >= b.size())
    return false;
  m->code = static_cast<std::int32_t>(code);
  m->flag = b[at++];
  m->value = 0;
  if (m->flag & kHasValue) {
    m->flag = static_cast<std::uint8_t>(m->flag & ~kHasValue);
    if (!get64(b, at, &m->value)) return false;
  }
  if (!get32(b, at, &n) || n > (b.size() - at) / 4) return false;
  m->list.resize(n);
  for (auto& v : m->list) get32(b, at, &v);
  m->text.assign(b.begin() + static_cast<std::ptrdiff_t>(at), b.end());
  return true;
}

std::uint32_t me_global(hcomm_comm_t c) { return global_rank(c, c->rank); }

bool send_ctrl(hcomm_comm_t c, std::uint32_t to, const Msg& m) {
  return port::ctrl_send(c->ctx, me_global(c), global_rank(c, to), encode(m)) == HCOMM_SUCCESS;
}
bool recv_ctrl(hcomm_comm_t c, std::uint32_t from, std::uint64_t round, std::uint64_t deadline_ns, Msg* m) {
  for (;;) {  // past the deadline still takes a message that has already arrived
    const std::uint64_t now = port::now_ns(c->ctx);
    CtrlMsg raw;
    if (port::ctrl_recv(c->ctx, me_global(c), global_rank(c, from), deadline_ns > now ? deadline_ns - now : 0, &raw) != HCOMM_SUCCESS)
      return false;
    if (decode(raw, m) && m->comm == c->id && m->seq == round) return true;
  }
}

}  // namespace hcomm::detail::failover
