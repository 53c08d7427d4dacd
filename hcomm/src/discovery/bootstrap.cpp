// The bootstrap (docs/discovery.md#bootstrap), root-info style over the host control channel:
// every rank sends its record to its server's root (the lowest rank of the server), each server
// root sends its server's records to the global root (rank 0), which assembles the table indexed
// by rank and sends it back the same way. One immutable table message is shared by every receiver;
// each delivery pays latency + bytes / bandwidth in the driver. A rank that never joins is named:
// the root that waited for it sends an abort naming it down the tree.
#include <algorithm>
#include <cstring>

#include "core/log.h"
#include "discovery/topo.h"
#include "driver_port.h"

namespace hcomm::detail {

namespace {

std::uint32_t get32(const std::uint8_t* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(p[i]) << (8 * i);
  return v;
}
void put32(std::uint8_t* p, std::uint32_t v) { for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i)); }

std::shared_ptr<std::vector<std::uint8_t>> message(std::uint32_t type, std::uint32_t count, std::uint32_t missing) {
  auto m = std::make_shared<std::vector<std::uint8_t>>(kMsgHeader + static_cast<std::size_t>(count) * kRecordBytes);
  put32(m->data(), type);
  put32(m->data() + 4, count);
  put32(m->data() + 8, missing);
  return m;
}
bool well_formed(const CtrlMsg& m) {
  return m && m->size() >= kMsgHeader && m->size() == kMsgHeader + static_cast<std::size_t>(get32(m->data() + 4)) * kRecordBytes;
}

struct Run {
  hcomm_context_t ctx;
  std::uint32_t rank, nranks;
  std::uint64_t T;

  hcomm_result_t fail(hcomm_result_t rc, const std::string& why) {
    ctx->discovery_error = why;
    logf(ctx, 0, "discovery: %s", why.c_str());
    return rc;
  }
  std::string ms(std::uint64_t ns) const { return std::to_string(ns / 1000000) + " ms"; }
  /// A table or an abort from `from`: fills `out` or fails naming the rank the abort names.
  hcomm_result_t take_table(const CtrlMsg& m, std::uint32_t from, Topo* out) {
    if (!well_formed(m)) return fail(HCOMM_E_INTERNAL, "malformed message from rank " + std::to_string(from));
    const std::uint32_t type = get32(m->data()), missing = get32(m->data() + 8);
    if (type == kMsgAbort || missing != kNoRank)
      return fail(HCOMM_E_TIMEOUT, "rank " + std::to_string(missing) + " did not join within " + ms(T) + " (reported by rank " +
                                       std::to_string(from) + ")");
    if (type != kMsgTable || get32(m->data() + 4) != nranks)
      return fail(HCOMM_E_INTERNAL, "unexpected message from rank " + std::to_string(from));
    out->table = m;
    return HCOMM_SUCCESS;
  }
};

}  // namespace

hcomm_result_t bootstrap(hcomm_context_t ctx, std::uint32_t rank, std::uint32_t nranks, const TopoRecord& mine,
                         std::uint64_t timeout_ns, Topo* out) {
  Run run{ctx, rank, nranks, timeout_ns};
  out->rank = rank;
  out->nranks = nranks;
  out->mine = mine;
  if (nranks <= 1) {
    auto t = message(kMsgTable, 1, kNoRank);
    encode_record(mine, t->data() + kMsgHeader);
    out->table = t;
    out->exchanged = true;
    return HCOMM_SUCCESS;
  }
  // The server's ranks, as the host sees its devices (device ids in order).
  std::vector<std::uint32_t> members;
  for (std::uint32_t id = 0; id < 32; ++id) {
    std::uint32_t dev = 0, r = 0;
    if (port::device_of(ctx, id, &dev) != HCOMM_SUCCESS) break;
    if (port::device_rank(ctx, dev, &r) == HCOMM_SUCCESS && r < nranks) members.push_back(r);
  }
  if (std::find(members.begin(), members.end(), rank) == members.end()) members.push_back(rank);
  std::sort(members.begin(), members.end());
  const std::uint32_t leader = members.front();
  CtrlMsg m;

  if (rank != leader) {  // a member: my record up, the table back
    auto rec = message(kMsgRecords, 1, kNoRank);
    encode_record(mine, rec->data() + kMsgHeader);
    hcomm_result_t rc = port::ctrl_send(ctx, rank, leader, rec);
    if (rc == HCOMM_E_NOT_SUPPORT) return HCOMM_E_NOT_SUPPORT;
    if (rc != HCOMM_SUCCESS) return run.fail(rc, "control channel send to rank " + std::to_string(leader) + " failed");
    rc = port::ctrl_recv(ctx, rank, leader, 4 * timeout_ns, &m);
    if (rc == HCOMM_E_TIMEOUT)
      return run.fail(rc, "no topology table from server root rank " + std::to_string(leader) + " within " + run.ms(4 * timeout_ns));
    if (rc != HCOMM_SUCCESS) return rc;
    if (hcomm_result_t t = run.take_table(m, leader, out); t != HCOMM_SUCCESS) return t;
    // The closing barrier: an ack up, then rank 0's go (everyone leaves init at about one time).
    port::ctrl_send(ctx, rank, leader, message(kMsgAck, 0, kNoRank));
    if (port::ctrl_recv(ctx, rank, 0, 4 * timeout_ns, &m) != HCOMM_SUCCESS || !well_formed(m) || get32(m->data()) != kMsgGo)
      return run.fail(HCOMM_E_TIMEOUT, "no go from rank 0 within " + run.ms(4 * timeout_ns));
    out->exchanged = true;
    return HCOMM_SUCCESS;
  }

  // A server root: gather the server's records (rank order), waiting up to T for each.
  std::uint32_t missing = kNoRank;
  std::vector<CtrlMsg> got;
  for (std::uint32_t r : members) {
    if (r == rank) continue;
    // After a rank failed to join, only what has already arrived is taken (no second wait).
    hcomm_result_t rc = port::ctrl_recv(ctx, rank, r, missing == kNoRank ? timeout_ns : 0, &m);
    if (rc == HCOMM_E_NOT_SUPPORT) return rc;
    if (rc == HCOMM_E_TIMEOUT) {
      if (missing == kNoRank) missing = r;
      continue;
    }
    if (rc != HCOMM_SUCCESS) return rc;
    if (!well_formed(m) || get32(m->data()) != kMsgRecords || get32(m->data() + 4) != 1)
      return run.fail(HCOMM_E_INTERNAL, "malformed record from rank " + std::to_string(r));
    got.push_back(m);
  }
  auto server = message(kMsgRecords, static_cast<std::uint32_t>(got.size() + 1), missing);
  {
    std::vector<std::pair<std::uint32_t, const std::uint8_t*>> recs;
    std::vector<std::uint8_t> own(kRecordBytes);
    encode_record(mine, own.data());
    recs.emplace_back(rank, own.data());
    for (const auto& g : got) recs.emplace_back(get32(g->data() + kMsgHeader), g->data() + kMsgHeader);
    std::sort(recs.begin(), recs.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    for (std::size_t i = 0; i < recs.size(); ++i) std::memcpy(server->data() + kMsgHeader + i * kRecordBytes, recs[i].second, kRecordBytes);
  }
  auto send_down = [&](const CtrlMsg& msg) {
    for (std::uint32_t r : members)
      if (r != rank) port::ctrl_send(ctx, rank, r, msg);
  };
  auto gather_acks = [&]() -> hcomm_result_t {  // the server's members have the table
    for (std::uint32_t r : members) {
      if (r == rank) continue;
      if (port::ctrl_recv(ctx, rank, r, timeout_ns, &m) != HCOMM_SUCCESS || !well_formed(m) || get32(m->data()) != kMsgAck)
        return run.fail(HCOMM_E_TIMEOUT, "no acknowledgement of the table from rank " + std::to_string(r) + " within " + run.ms(timeout_ns));
    }
    return HCOMM_SUCCESS;
  };

  if (rank != 0) {  // a server root under the global root
    hcomm_result_t rc = port::ctrl_send(ctx, rank, 0, server);
    if (rc == HCOMM_E_NOT_SUPPORT) return rc;
    if (rc != HCOMM_SUCCESS) return run.fail(rc, "control channel send to rank 0 failed");
    rc = port::ctrl_recv(ctx, rank, 0, 3 * timeout_ns, &m);
    if (rc == HCOMM_E_TIMEOUT) {
      auto abort = message(kMsgAbort, 0, 0);
      send_down(abort);
      return run.fail(rc, "no topology table from rank 0 within " + run.ms(3 * timeout_ns));
    }
    if (rc != HCOMM_SUCCESS) return rc;
    send_down(m);  // the table (or the abort) to the server's members, the same message
    if (hcomm_result_t t = run.take_table(m, 0, out); t != HCOMM_SUCCESS) return t;
    if (hcomm_result_t t = gather_acks(); t != HCOMM_SUCCESS) return t;
    port::ctrl_send(ctx, rank, 0, message(kMsgAck, 0, kNoRank));
    if (port::ctrl_recv(ctx, rank, 0, 3 * timeout_ns, &m) != HCOMM_SUCCESS || !well_formed(m) || get32(m->data()) != kMsgGo)
      return run.fail(HCOMM_E_TIMEOUT, "no go from rank 0 within " + run.ms(3 * timeout_ns));
    out->exchanged = true;
    return HCOMM_SUCCESS;
  }

  // The global root: the server records (any order) until every rank is covered.
  auto table = message(kMsgTable, nranks, kNoRank);
  std::vector<bool> covered(nranks, false);
  std::vector<std::uint32_t> leaders;
  std::uint32_t count = 0;
  auto place = [&](const CtrlMsg& msg) {
    const std::uint32_t n = get32(msg->data() + 4);
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint8_t* rec = msg->data() + kMsgHeader + static_cast<std::size_t>(i) * kRecordBytes;
      const std::uint32_t r = get32(rec);
      if (r >= nranks || covered[r]) continue;
      covered[r] = true;
      ++count;
      std::memcpy(table->data() + kMsgHeader + static_cast<std::size_t>(r) * kRecordBytes, rec, kRecordBytes);
    }
  };
  place(server);
  while (count < nranks && missing == kNoRank) {
    hcomm_result_t rc = port::ctrl_recv(ctx, 0, kCtrlAnyRank, 2 * timeout_ns, &m);
    if (rc == HCOMM_E_NOT_SUPPORT) return rc;
    if (rc == HCOMM_E_TIMEOUT) break;
    if (rc != HCOMM_SUCCESS) return rc;
    if (!well_formed(m) || get32(m->data()) != kMsgRecords || get32(m->data() + 4) == 0)
      return run.fail(HCOMM_E_INTERNAL, "malformed server record");
    leaders.push_back(get32(m->data() + kMsgHeader));
    if (get32(m->data() + 8) != kNoRank) missing = get32(m->data() + 8);
    place(m);
  }
  std::sort(leaders.begin(), leaders.end());
  if (count < nranks && missing == kNoRank)
    for (std::uint32_t r = 0; r < nranks; ++r)
      if (!covered[r]) { missing = r; break; }
  CtrlMsg down = table;
  if (missing != kNoRank) down = message(kMsgAbort, 0, missing);
  for (std::uint32_t l : leaders) port::ctrl_send(ctx, 0, l, down);
  send_down(down);
  if (missing != kNoRank)
    return run.fail(HCOMM_E_TIMEOUT, "rank " + std::to_string(missing) + " did not join within " + run.ms(timeout_ns) +
                                         " (" + std::to_string(count) + " of " + std::to_string(nranks) + " ranks joined)");
  out->table = table;
  // The closing barrier: every server root's ack (its members have the table) and the root's own
  // members', then one go to every rank directly, the root's own last (it leaves when that
  // arrives), so every rank leaves init within N tiny messages of each other.
  for (std::uint32_t l : leaders)
    if (port::ctrl_recv(ctx, 0, l, 3 * timeout_ns, &m) != HCOMM_SUCCESS || !well_formed(m) || get32(m->data()) != kMsgAck)
      return run.fail(HCOMM_E_TIMEOUT, "no acknowledgement of the table from server root rank " + std::to_string(l));
  if (hcomm_result_t t = gather_acks(); t != HCOMM_SUCCESS) return t;
  auto go = message(kMsgGo, 0, kNoRank);
  for (std::uint32_t r = 1; r < nranks; ++r) port::ctrl_send(ctx, 0, r, go);
  port::ctrl_send(ctx, 0, 0, go);
  if (port::ctrl_recv(ctx, 0, 0, timeout_ns, &m) != HCOMM_SUCCESS) return run.fail(HCOMM_E_INTERNAL, "the go to itself was lost");
  out->exchanged = true;
  return HCOMM_SUCCESS;
}

}  // namespace hcomm::detail
