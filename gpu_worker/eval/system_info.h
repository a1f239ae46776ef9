// Facts about the device an evaluation runs on, recorded with every result: name, compute
// capability, L2 size, driver and CUDA versions, and from NVML (loaded with dlopen, so its
// absence is not an error) the SM clock and temperature at the moment of the call.
//
// Thread-safety: call from one thread.
#ifndef KFORGE_GPU_WORKER_EVAL_SYSTEM_INFO_H_
#define KFORGE_GPU_WORKER_EVAL_SYSTEM_INFO_H_

#include "kforge/v1/eval.pb.h"

namespace kforge::eval {

// Fills static facts for `device` (-1: CPU mode).
v1::SystemInfo CollectSystemInfo(int device);
// Refreshes the SM clock and temperature in `info` (no-op without NVML).
void SampleClocks(int device, v1::SystemInfo* info);

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_SYSTEM_INFO_H_
