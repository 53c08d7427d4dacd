// Configuration of one Ascend NPU (docs/models/npu.md): its HBM, SDMA engines, stream engine,
// notify registers, MSI and host PCIe link. The NPU's sole configuration input.
#pragma once
#include <cstdint>
#include <string>

#include "models/link/link_params.h"
#include "models/mem/hbm.h"
#include "models/time.h"

namespace models {

struct NpuParams {
  std::string model = "ascend910b";
  HbmParams hbm;
  std::uint32_t sdma_engines = 16;                          ///< concurrent SDMA channels (assumption)
  std::uint64_t sdma_bandwidth_Bps = 400ULL * 1000 * 1000 * 1000;  ///< per engine (assumption)
  Tick sdma_setup_ps = 200 * kPsPerNs;                      ///< descriptor fetch before the first byte
  Tick task_dispatch_ps = 100 * kPsPerNs;                   ///< stream scheduler: task start overhead
  Tick notify_local_ps = 50 * kPsPerNs;                     ///< local notify/event register write
  std::uint32_t notify_regs = 8192;                         ///< notify registers per NPU (assumption)
  std::uint32_t sq_depth = 1024;                            ///< submission queue entries per stream (assumption)
  Tick msi_latency_ps = 1 * kPsPerUs;                       ///< INT_STATUS bit set -> host interrupt handler runs (assumption)
  Tick mmio_latency_ps = 0;                                 ///< MMIO access latency; not modelled by the NPU (0), used
                                                            ///< as the annotated delay of its TLM face (sim/npu_tlm.h)
  /// AI-core peak per dtype, operations per second (docs/models/npu.md#compute; sources there);
  /// 0: no documented figure (a compute task of that dtype is refused).
  double peak_fp16_flops = 280e12, peak_bf16_flops = 280e12, peak_fp32_flops = 0, peak_int8_ops = 560e12;
  LinkParams host_link{63ULL * 1000 * 1000 * 1000, 1000 * kPsPerNs, 16, 256, 0, 256 * 1024};  ///< PCIe Gen5 x16 to the host
};

}  // namespace models
