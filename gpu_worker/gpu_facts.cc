#include "gpu_worker/gpu_facts.h"

#include <dlfcn.h>

#include <cstddef>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "common/base/subprocess.h"
#include "gpu_worker/dynamic_symbol.h"

namespace kforge {
namespace {

// The CUDA driver API entry points we need, with the values of cuda.h we use (stable ABI).
struct CudaDriver {
  int (*init)(unsigned) = nullptr;
  int (*driver_version)(int*) = nullptr;
  int (*count)(int*) = nullptr;
  int (*get)(int*, int) = nullptr;
  int (*name)(char*, int, int) = nullptr;
  int (*total_mem)(size_t*, int) = nullptr;
  int (*attribute)(int*, int, int) = nullptr;
  int (*pci_bus_id)(char*, int, int) = nullptr;

  static constexpr int kL2CacheSize = 38;  // CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE
  static constexpr int kCcMajor = 75;      // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
  static constexpr int kCcMinor = 76;      // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR

  // Null when the library or one of its symbols is missing, or cuInit fails (no device).
  static const CudaDriver* Load() {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return nullptr;
    static CudaDriver d;
    bool ok = BindSymbol(lib, "cuInit", &d.init) &&
              BindSymbol(lib, "cuDriverGetVersion", &d.driver_version) &&
              BindSymbol(lib, "cuDeviceGetCount", &d.count) &&
              BindSymbol(lib, "cuDeviceGet", &d.get) &&
              BindSymbol(lib, "cuDeviceGetName", &d.name) &&
              BindSymbol(lib, "cuDeviceTotalMem_v2", &d.total_mem) &&
              BindSymbol(lib, "cuDeviceGetAttribute", &d.attribute) &&
              BindSymbol(lib, "cuDeviceGetPCIBusId", &d.pci_bus_id);
    if (!ok || d.init(0) != 0) return nullptr;
    return &d;
  }
};

void ProbeCuda(GpuFacts& f) {
  static const CudaDriver* cu = CudaDriver::Load();
  if (!cu) return;
  int version = 0;
  if (cu->driver_version(&version) == 0) f.cuda_version = CudaVersionText(version);
  int count = 0;
  if (cu->count(&count) != 0) return;
  for (int i = 0; i < count; ++i) {
    int dev = 0;
    if (cu->get(&dev, i) != 0) return;
    char bus[32] = {0};
    f.pci_bus_ids.push_back(cu->pci_bus_id(bus, sizeof bus, dev) == 0 ? bus : "");
    if (i > 0) continue;
    char name[256] = {0};
    if (cu->name(name, sizeof name, dev) == 0) f.name = name;
    size_t bytes = 0;
    if (cu->total_mem(&bytes, dev) == 0) f.memory_bytes = bytes;
    int major = 0, minor = 0, l2 = 0;
    if (cu->attribute(&major, CudaDriver::kCcMajor, dev) == 0 &&
        cu->attribute(&minor, CudaDriver::kCcMinor, dev) == 0) {
      f.compute_capability = std::to_string(major) + "." + std::to_string(minor);
    }
    if (cu->attribute(&l2, CudaDriver::kL2CacheSize, dev) == 0 && l2 > 0) f.l2_cache_bytes = l2;
  }
  f.count = count;
}

// nvidia-smi's CSV rows, one vector of trimmed columns per GPU.
std::vector<std::vector<std::string>> NvidiaSmi(const std::string& query) {
  SpawnOptions o;
  o.argv = {"nvidia-smi", "--query-gpu=" + query, "--format=csv,noheader,nounits"};
  o.wall_limit_s = 20;
  SubprocessResult r = RunSubprocess(o);
  std::vector<std::vector<std::string>> rows;
  if (!r.Succeeded()) return rows;
  std::istringstream lines(r.stdout_data);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    std::vector<std::string> cols;
    std::stringstream ss(line);
    std::string col;
    while (std::getline(ss, col, ',')) {
      while (!col.empty() && col.front() == ' ') col.erase(0, 1);
      cols.push_back(col);
    }
    rows.push_back(std::move(cols));
  }
  return rows;
}

}  // namespace

std::string GpuTypeFromName(const std::string& full) {
  std::string name = full;
  for (const char* prefix : {"NVIDIA ", "GeForce ", "Tesla "}) {
    if (name.rfind(prefix, 0) == 0) name = name.substr(std::string(prefix).size());
  }
  std::string out;
  for (char c : name) {
    if (c == '-' || (c == ' ' && out.rfind("RTX", 0) != 0)) break;
    if (c != ' ') out.push_back(c);
  }
  return out.empty() ? "gpu" : out;
}

std::string CudaVersionText(int encoded) {
  return std::to_string(encoded / 1000) + "." + std::to_string((encoded % 1000) / 10);
}

GpuFacts ProbeGpus() {
  GpuFacts f;
  ProbeCuda(f);
  auto rows = NvidiaSmi("name,compute_cap,memory.total,driver_version");
  if (!rows.empty() && rows[0].size() >= 4) {
    f.driver_version = rows[0][3];
    if (f.count == 0 && f.pci_bus_ids.empty()) {  // no libcuda: nvidia-smi's view
      f.name = rows[0][0];
      f.compute_capability = rows[0][1];
      f.memory_bytes = std::strtoull(rows[0][2].c_str(), nullptr, 10) * 1024 * 1024;
      f.count = static_cast<int>(rows.size());
    }
  }
  if (f.count > 0) f.type = GpuTypeFromName(f.name);
  return f;
}

}  // namespace kforge
