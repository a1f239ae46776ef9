#include "gpu_worker/gpu_monitor.h"

#include <dlfcn.h>

#include "gpu_worker/dynamic_symbol.h"


namespace kforge {

// NVML's C API as far as we use it; the structs mirror nvml.h (nvmlUtilization_t,
// nvmlMemory_t), whose layout NVML keeps stable.
struct GpuMonitor::Api {
  struct Utilization {
    unsigned gpu;     // percent of time a kernel was running over the last sample period
    unsigned memory;  // percent of time memory was read or written
  };
  struct Memory {
    unsigned long long total, free, used;
  };
  int (*init)() = nullptr;
  int (*by_bus_id)(const char*, void**) = nullptr;
  int (*utilization)(void*, Utilization*) = nullptr;
  int (*memory)(void*, Memory*) = nullptr;

  static const Api* Load() {
    static const Api* api = []() -> const Api* {
      void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
      if (!lib) return nullptr;
      static Api a;
      bool ok = BindSymbol(lib, "nvmlInit_v2", &a.init) &&
                BindSymbol(lib, "nvmlDeviceGetHandleByPciBusId_v2", &a.by_bus_id) &&
                BindSymbol(lib, "nvmlDeviceGetUtilizationRates", &a.utilization) &&
                BindSymbol(lib, "nvmlDeviceGetMemoryInfo", &a.memory);
      return ok && a.init() == 0 ? &a : nullptr;
    }();
    return api;
  }
};

std::unique_ptr<GpuMonitor> GpuMonitor::Open(const std::vector<std::string>& pci_bus_ids) {
  const Api* api = Api::Load();
  if (!api || pci_bus_ids.empty()) return nullptr;
  std::vector<void*> devices;
  for (const std::string& bus : pci_bus_ids) {
    void* handle = nullptr;
    if (bus.empty() || api->by_bus_id(bus.c_str(), &handle) != 0) return nullptr;
    devices.push_back(handle);
  }
  return std::make_unique<GpuMonitor>(*api, std::move(devices));
}

bool GpuMonitor::Read(size_t i, Reading* out) const {
  if (i >= devices_.size()) return false;
  Api::Utilization u{};
  Api::Memory m{};
  if (api_.utilization(devices_[i], &u) != 0) return false;
  out->utilization = u.gpu / 100.0;
  out->memory_used_bytes = api_.memory(devices_[i], &m) == 0 ? m.used : 0;
  return true;
}

}  // namespace kforge
