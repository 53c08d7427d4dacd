// Local probe (docs/discovery.md#what-is-probed): the device's HCCS port status registers, its
// PCIe peer-to-peer reachability to the other devices of the server, its NIC; and the record
// encoding the bootstrap carries.
#include "discovery/topo.h"

#include "driver_port.h"

namespace hcomm::detail {

namespace {
void put32(std::uint8_t* p, std::uint32_t v) { for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i)); }
void put64(std::uint8_t* p, std::uint64_t v) { for (int i = 0; i < 8; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i)); }
std::uint32_t get32(const std::uint8_t* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(p[i]) << (8 * i);
  return v;
}
std::uint64_t get64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  return v;
}
}  // namespace

void encode_record(const TopoRecord& r, std::uint8_t* o) {
  put32(o + 0, r.rank);
  put32(o + 4, r.server);
  put32(o + 8, r.device_id);
  put32(o + 12, r.host_ip);
  put32(o + 16, r.device);
  put32(o + 20, r.pcie_peers);
  o[24] = static_cast<std::uint8_t>((r.nic_known ? 1 : 0) | (r.nic_present ? 2 : 0) | (r.nic_up ? 4 : 0));
  o[25] = static_cast<std::uint8_t>(r.nports);
  o[26] = o[27] = 0;
  put32(o + 28, r.nic_ip);
  put64(o + 32, r.nic_speed_bps);
  for (std::uint32_t i = 0; i < kTopoPorts; ++i) {
    std::uint8_t* p = o + 40 + i * 12;
    const TopoPort& t = r.ports[i];
    p[0] = t.port;
    p[1] = t.up;
    p[2] = t.lanes;
    p[3] = static_cast<std::uint8_t>(t.partner_device_id);
    put32(p + 4, t.partner_server);
    put32(p + 8, static_cast<std::uint32_t>(t.bandwidth_Bps / 1000000));  // MB/s
  }
}

TopoRecord decode_record(const std::uint8_t* o) {
  TopoRecord r;
  r.rank = get32(o);
  r.server = get32(o + 4);
  r.device_id = get32(o + 8);
  r.host_ip = get32(o + 12);
  r.device = get32(o + 16);
  r.pcie_peers = get32(o + 20);
  r.nic_known = o[24] & 1;
  r.nic_present = o[24] & 2;
  r.nic_up = o[24] & 4;
  r.nports = o[25] < kTopoPorts ? o[25] : kTopoPorts;
  r.nic_ip = get32(o + 28);
  r.nic_speed_bps = get64(o + 32);
  for (std::uint32_t i = 0; i < kTopoPorts; ++i) {
    const std::uint8_t* p = o + 40 + i * 12;
    TopoPort& t = r.ports[i];
    t.port = p[0];
    t.up = p[1];
    t.lanes = p[2];
    t.partner_device_id = p[3];
    t.partner_server = get32(p + 4);
    t.bandwidth_Bps = static_cast<std::uint64_t>(get32(p + 8)) * 1000000;
  }
  return r;
}

hcomm_result_t probe_hccs_ports(hcomm_context_t ctx, TopoRecord* rec) {
  TopoRecord& r = *rec;
  r.nports = 0;
  // HCCS: every port number's status registers; a cabled port's partner as link training learnt it.
  for (std::uint32_t p = 0; p < kHccsPortCount && r.nports < kTopoPorts; ++p) {
    HccsPortInfo hp;
    if (hcomm_result_t rc = port::hccs_port(ctx, p, &hp); rc != HCOMM_SUCCESS) return rc;
    if (!hp.cabled) continue;
    TopoPort& t = r.ports[r.nports++];
    t.port = static_cast<std::uint8_t>(p);
    t.up = hp.up ? 1 : 0;
    t.lanes = static_cast<std::uint8_t>(hp.lanes);
    t.partner_device_id = hp.up ? hp.partner_device_id : 0;
    t.partner_server = hp.up ? hp.partner_server : 0;
    t.bandwidth_Bps = hp.bandwidth_Bps;
  }
  return HCOMM_SUCCESS;
}

hcomm_result_t probe_local(hcomm_context_t ctx, const RankDesc& me, TopoRecord* out) {
  TopoRecord r;
  r.rank = me.rank;
  r.server = me.server;
  r.device_id = me.device_id;
  r.host_ip = me.host_ip;
  r.device = me.device;
  if (hcomm_result_t rc = probe_hccs_ports(ctx, &r); rc != HCOMM_SUCCESS) return rc;
  // PCIe peer-to-peer to the other devices of the server (device ids until device_of refuses).
  for (std::uint32_t id = 0; id < 32; ++id) {
    std::uint32_t dev = 0;
    if (port::device_of(ctx, id, &dev) != HCOMM_SUCCESS) break;
    if (dev == me.device) continue;
    bool ok = false;
    if (port::pcie_peer(ctx, dev, &ok) == HCOMM_SUCCESS && ok) r.pcie_peers |= 1u << id;
  }
  // NIC: its link state, speed and IP; the LLDP neighbour stays in the rank's own record.
  NicInfo nic;
  if (port::nic_info(ctx, &nic) == HCOMM_SUCCESS) {
    r.nic_known = true;
    r.nic_present = nic.present;
    r.nic_up = nic.present && nic.link_up;
    r.nic_ip = nic.ip;
    r.nic_speed_bps = nic.speed_bps;
    r.nic_neighbor = nic.neighbor;
    r.nic_neighbor_port = nic.neighbor_port;
  }
  *out = r;
  return HCOMM_SUCCESS;
}

}  // namespace hcomm::detail
