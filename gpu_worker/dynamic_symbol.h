// Resolving C entry points of a library opened with dlopen (the CUDA driver, NVML), so the
// worker links neither and runs on nodes without them.
//
// Thread-safe (dlsym is).
#ifndef KFORGE_GPU_WORKER_DYNAMIC_SYMBOL_H_
#define KFORGE_GPU_WORKER_DYNAMIC_SYMBOL_H_

#include <dlfcn.h>

namespace kforge {

// Sets *fn to `symbol` of `library`; false (and *fn null) if it is missing.
template <typename Fn>
bool BindSymbol(void* library, const char* symbol, Fn** fn) {
  *fn = reinterpret_cast<Fn*>(dlsym(library, symbol));
  return *fn != nullptr;
}

}  // namespace kforge

#endif  // KFORGE_GPU_WORKER_DYNAMIC_SYMBOL_H_
