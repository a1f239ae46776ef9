#include "gpu_worker/eval/system_info.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <unistd.h>

#include <string>

namespace kforge::eval {
namespace {

// The few NVML entry points we use, resolved at run time.
struct Nvml {
  using Handle = void*;
  int (*init)() = nullptr;
  int (*by_pci)(const char*, Handle*) = nullptr;
  int (*clock)(Handle, int, unsigned*) = nullptr;
  int (*max_clock)(Handle, int, unsigned*) = nullptr;
  int (*temperature)(Handle, int, unsigned*) = nullptr;
  int (*driver)(char*, unsigned) = nullptr;
  bool ok = false;
};

const Nvml& GetNvml() {
  static const Nvml* n = [] {
    auto* nv = new Nvml;
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return nv;
    nv->init = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlInit_v2"));
    nv->by_pci = reinterpret_cast<int (*)(const char*, Nvml::Handle*)>(
        dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    nv->clock = reinterpret_cast<int (*)(Nvml::Handle, int, unsigned*)>(
        dlsym(lib, "nvmlDeviceGetClockInfo"));
    nv->max_clock = reinterpret_cast<int (*)(Nvml::Handle, int, unsigned*)>(
        dlsym(lib, "nvmlDeviceGetMaxClockInfo"));
    nv->temperature = reinterpret_cast<int (*)(Nvml::Handle, int, unsigned*)>(
        dlsym(lib, "nvmlDeviceGetTemperature"));
    nv->driver = reinterpret_cast<int (*)(char*, unsigned)>(
        dlsym(lib, "nvmlSystemGetDriverVersion"));
    nv->ok = nv->init && nv->by_pci && nv->clock && nv->temperature && nv->driver &&
             nv->init() == 0;
    return nv;
  }();
  return *n;
}

constexpr int kNvmlClockSm = 1;
constexpr int kNvmlTemperatureGpu = 0;

bool NvmlHandle(int device, void** handle) {
  const Nvml& nv = GetNvml();
  if (!nv.ok) return false;
  char bus[64];
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, device) != cudaSuccess) return false;
  return nv.by_pci(bus, handle) == 0;
}

}  // namespace

v1::SystemInfo CollectSystemInfo(int device) {
  v1::SystemInfo info;
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  info.set_hostname(host);
  info.set_engine_version("kforge-eval 0.1");
  info.set_temperature_c(-1);
  int rt = 0;
  cudaRuntimeGetVersion(&rt);
  info.set_cuda_version(std::to_string(rt / 1000) + "." + std::to_string((rt % 1000) / 10));
  if (device < 0) {
    info.set_gpu_name("cpu");
    return info;
  }
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, device) == cudaSuccess) {
    info.set_gpu_name(prop.name);
    info.set_compute_capability(std::to_string(prop.major) + "." + std::to_string(prop.minor));
    info.set_l2_cache_bytes(static_cast<uint64_t>(prop.l2CacheSize));
  }
  int mps = 0;
  if (cudaDeviceGetAttribute(&mps, cudaDevAttrMpsEnabled, device) == cudaSuccess) {
    info.set_mps(mps != 0);
  } else {
    cudaGetLastError();  // not sticky: leave no error for the next CUDA call to report
  }
  int drv = 0;
  cudaDriverGetVersion(&drv);
  info.set_driver_version("cuda " + std::to_string(drv / 1000) + "." +
                          std::to_string((drv % 1000) / 10));
  const Nvml& nv = GetNvml();
  void* h = nullptr;
  if (NvmlHandle(device, &h)) {
    char ver[96] = {0};
    if (nv.driver(ver, sizeof ver) == 0) info.set_driver_version(ver);
    unsigned mhz = 0;
    if (nv.max_clock && nv.max_clock(h, kNvmlClockSm, &mhz) == 0) info.set_max_sm_clock_mhz(mhz);
  }
  SampleClocks(device, &info);
  return info;
}

void SampleClocks(int device, v1::SystemInfo* info) {
  if (device < 0) return;
  void* h = nullptr;
  if (!NvmlHandle(device, &h)) return;
  const Nvml& nv = GetNvml();
  unsigned v = 0;
  if (nv.clock(h, kNvmlClockSm, &v) == 0) info->set_sm_clock_mhz(v);
  if (nv.temperature(h, kNvmlTemperatureGpu, &v) == 0) info->set_temperature_c(static_cast<int>(v));
}

}  // namespace kforge::eval
