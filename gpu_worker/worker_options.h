// What a worker is told at startup (gpu_worker/main.cc fills it from flags and the GPUs it
// finds): where the coordinator is and how to prove who it is, what it offers, and how its
// evaluation children run. A plain value, copied by the units that read it.
#ifndef KFORGE_GPU_WORKER_WORKER_OPTIONS_H_
#define KFORGE_GPU_WORKER_WORKER_OPTIONS_H_

#include <string>
#include <vector>

#include "common/tls.h"
#include "gpu_worker/sandbox_view.h"
#include "kforge/v1/worker.pb.h"

namespace kforge {

struct WorkerOptions {
  std::string coordinator;  // gRPC address
  std::string token;        // the worker's API token (role worker); empty: none
  TlsSettings tls;          // how the coordinator is verified (common/tls.h)
  v1::WorkerFacts facts;    // gpu_type, slots, ... (hostname filled in if empty)
  std::string eval_binary;  // path of kforge-eval
  std::string cache_dir;    // shared build cache for the children
  std::string scratch_root = "/tmp";
  bool cpu_mode = false;                // children get --device cpu, else cuda:<slot>
  double extra_wall_s = 60;             // on top of the stage limits for the child's wall clock
  std::string sandbox_user = "nobody";  // when the worker is root; "" keeps the worker's user
  bool require_namespaces = false;      // SandboxPolicy::require_namespaces
  SandboxView sandbox_view;             // SandboxPolicy::view (with root); eval_view.h fills it
  std::vector<std::string> sandbox_executables;  // SandboxPolicy::executables; empty: any
  // PCI bus id of each slot's GPU (index = slot), for the per-slot GPU metrics; empty in CPU
  // mode or when unknown (then only the busy series are exported).
  std::vector<std::string> gpu_pci_bus_ids;
  double metrics_sample_s = 1;  // how often the per-slot metrics are sampled
  // Leases held beyond the slots and built ahead on the CPUs (kforge-eval --build-only, one
  // builder thread each) while the slots time others; 0 turns building ahead off.
  int prefetch = 0;
  std::string arch;  // NVRTC target of the slots' GPUs ("sm_90"), for the builds ahead
  // GPU turns (docs/evaluation.md, "GPU turns"): slot s runs on device s / lanes_per_gpu, and
  // the lanes of one device take turns on it through the lock file GpuLockPath names in
  // gpu_lock_dir (MakeGpuLockDir; main makes it when lanes_per_gpu > 1). Empty: no turns.
  int lanes_per_gpu = 1;
  std::string gpu_lock_dir;
  double gpu_wait_s = 0;  // the fork servers' --gpu-wait-s; 0: kforge-eval's default
};

}  // namespace kforge

#endif  // KFORGE_GPU_WORKER_WORKER_OPTIONS_H_
