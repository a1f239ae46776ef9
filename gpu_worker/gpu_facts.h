// What GPUs this node has: the CUDA driver library (libcuda.so.1, loaded with dlopen so the
// worker links no CUDA library and runs on CPU-only nodes) gives the devices the children will
// see (CUDA_VISIBLE_DEVICES applies), their name, compute capability, memory, L2 size and PCI
// bus id, and the newest CUDA version the driver supports; nvidia-smi gives the driver version.
// Without libcuda, nvidia-smi alone gives what it can (no L2 size, no CUDA version).
//
// Thread-safe (no shared state besides the library's own).
#ifndef KFORGE_GPU_WORKER_GPU_FACTS_H_
#define KFORGE_GPU_WORKER_GPU_FACTS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace kforge {

// Facts of the node's first GPU (the worker serves one GPU type; slots are its devices), plus
// the bus id of every device in CUDA order, so slot i (`--device cuda:i`) can be watched.
struct GpuFacts {
  int count = 0;                   // 0: no GPU (no driver, or none visible)
  std::string name;                // "NVIDIA H200"
  std::string type;                // scheduling key derived from the name: "H200"
  std::string compute_capability;  // "9.0"
  uint64_t memory_bytes = 0;
  uint64_t l2_cache_bytes = 0;     // 0 if unknown
  std::string driver_version;      // "570.124.06"
  std::string cuda_version;        // newest CUDA the driver supports, "13.0"; "" if unknown
  std::vector<std::string> pci_bus_ids;  // index = CUDA device index; may be empty
};

GpuFacts ProbeGpus();

// "NVIDIA H200" -> "H200", "NVIDIA GeForce RTX 3090" -> "RTX3090",
// "NVIDIA A100-SXM4-80GB" -> "A100".
std::string GpuTypeFromName(const std::string& name);

// cuDriverGetVersion's encoding (1000 * major + 10 * minor) as text: 13000 -> "13.0".
std::string CudaVersionText(int encoded);

}  // namespace kforge

#endif  // KFORGE_GPU_WORKER_GPU_FACTS_H_
