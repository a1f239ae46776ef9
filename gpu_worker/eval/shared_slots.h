// Memory the judge shares with the candidate process, and nothing else: each slot is an
// allocation of its own (cudaMalloc on a GPU, a memfd in CPU mode), so that what the candidate
// process can map through a slot's CUDA IPC handle or descriptor is exactly that slot. The
// judge's caching allocator never hands slot memory to anything else, and the reference's
// inputs and outputs never live in a slot: the candidate gets copies of its inputs in slots
// and writes its outputs into slots, which the judge copies out of before it checks them.
//
// Slots live until their SlotArena (judge) or SlotMap (candidate process) goes, which is the
// end of the evaluation: memory the candidate process mapped is never reused for anything it
// must not see.
//
// Thread-safety: one thread. Ownership: each side owns its mappings.
#ifndef KFORGE_GPU_WORKER_EVAL_SHARED_SLOTS_H_
#define KFORGE_GPU_WORKER_EVAL_SHARED_SLOTS_H_

#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kforge/v1/judge.pb.h"

namespace kforge::eval {

// The judge's side.
class SlotArena {
 public:
  SlotArena(bool cuda, int device) : cuda_(cuda), device_(device) {}
  ~SlotArena();
  SlotArena(const SlotArena&) = delete;
  SlotArena& operator=(const SlotArena&) = delete;

  // A new slot of `bytes`; its description (and, in CPU mode, its descriptor, owned by the
  // arena) for the candidate process. False with `error` when it cannot be allocated.
  bool Allocate(uint64_t bytes, v1::judge::Slot* slot, int* fd, std::string* error);

  // A view over slot `slot` shaped like `like` (its sizes and, when dense, its strides), and
  // its description. The slot must be large enough (LayoutBytes).
  at::Tensor View(uint32_t slot, const at::Tensor& like, v1::judge::TensorView* view) const;

  uint64_t bytes(uint32_t slot) const;

 private:
  struct Block {
    void* ptr = nullptr;
    uint64_t bytes = 0;
    int fd = -1;  // CPU mode
  };
  bool cuda_;
  int device_;
  std::vector<Block> blocks_;
};

// The candidate process's side.
class SlotMap {
 public:
  SlotMap(bool cuda, int device) : cuda_(cuda), device_(device) {}
  ~SlotMap();
  SlotMap(const SlotMap&) = delete;
  SlotMap& operator=(const SlotMap&) = delete;

  // Maps a slot the judge declared (`fd`: its descriptor in CPU mode, taken over).
  bool Map(const v1::judge::Slot& slot, int fd, std::string* error);
  // A tensor over a mapped slot; empty with `error` when the view does not fit its slot.
  at::Tensor View(const v1::judge::TensorView& view, std::string* error) const;

 private:
  struct Mapping {
    void* ptr = nullptr;
    uint64_t bytes = 0;
  };
  bool cuda_;
  int device_;
  std::map<uint32_t, Mapping> slots_;
};

// The bytes a tensor laid out as `like` needs in a slot (its dense extent, or its contiguous
// size when its strides overlap or leave gaps).
uint64_t LayoutBytes(const at::Tensor& like);

// The extent in bytes of `view` (sizes, non-negative strides, dtype); -1 when the view is
// malformed (unknown dtype, negative size or stride, overflow).
int64_t ViewExtentBytes(const v1::judge::TensorView& view);

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_SHARED_SLOTS_H_
