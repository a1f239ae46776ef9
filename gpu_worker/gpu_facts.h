// What GPUs this node has, read from nvidia-smi (so the worker needs no CUDA library).
//
// Thread-safe (no shared state).
#ifndef KFORGE_GPU_WORKER_GPU_FACTS_H_
#define KFORGE_GPU_WORKER_GPU_FACTS_H_

#include <cstdint>
#include <string>

namespace kforge {

struct GpuFacts {
  int count = 0;                   // 0: no GPU (or no nvidia-smi)
  std::string name;                // "NVIDIA H200"
  std::string type;                // scheduling key derived from the name: "H200"
  std::string compute_capability;  // "9.0"
  uint64_t memory_bytes = 0;
  std::string driver_version;
};

GpuFacts ProbeGpus();

// "NVIDIA H200" -> "H200", "NVIDIA GeForce RTX 3090" -> "RTX3090",
// "NVIDIA A100-SXM4-80GB" -> "A100".
std::string GpuTypeFromName(const std::string& name);

}  // namespace kforge

#endif  // KFORGE_GPU_WORKER_GPU_FACTS_H_
