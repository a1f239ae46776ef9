// Reads how busy the node's GPUs are, through NVML (libnvidia-ml.so.1, loaded with dlopen so
// that a node without the driver simply has no monitor). Devices are named by PCI bus id, so
// the monitor watches exactly the device a slot's children use whatever CUDA_VISIBLE_DEVICES
// and CUDA's device order are.
//
// Thread-safety: Read may be called from any thread (NVML is thread-safe). Ownership: the
// library stays loaded for the life of the process.
#ifndef KFORGE_GPU_WORKER_GPU_MONITOR_H_
#define KFORGE_GPU_WORKER_GPU_MONITOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kforge {

class GpuMonitor {
 public:
  struct Reading {
    double utilization = 0;      // fraction of the last sample period a kernel ran (0..1)
    uint64_t memory_used_bytes = 0;
  };

  // One watched device per entry of `pci_bus_ids`. Null when NVML is not available or a bus
  // id is unknown to it.
  static std::unique_ptr<GpuMonitor> Open(const std::vector<std::string>& pci_bus_ids);

  // The current reading of watched device `i`; false if NVML gave none.
  bool Read(size_t i, Reading* out) const;

  struct Api;  // defined in the .cc: only Open can make one
  GpuMonitor(const Api& api, std::vector<void*> devices)
      : api_(api), devices_(std::move(devices)) {}

 private:
  const Api& api_;
  std::vector<void*> devices_;  // nvmlDevice_t handles
};

}  // namespace kforge

#endif  // KFORGE_GPU_WORKER_GPU_MONITOR_H_
