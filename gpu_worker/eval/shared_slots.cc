#include "gpu_worker/eval/shared_slots.h"

#include <cuda_runtime_api.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <limits>

namespace kforge::eval {
namespace {

// Sizes and strides for a slot view of `like`: its own when it is dense (so a candidate sees
// the layout get_inputs() made), else contiguous.
void LayoutOf(const at::Tensor& like, std::vector<int64_t>* sizes, std::vector<int64_t>* strides) {
  sizes->assign(like.sizes().begin(), like.sizes().end());
  if (like.is_non_overlapping_and_dense()) {
    strides->assign(like.strides().begin(), like.strides().end());
    return;
  }
  strides->assign(sizes->size(), 1);
  for (int64_t d = static_cast<int64_t>(sizes->size()) - 2; d >= 0; --d) {
    (*strides)[d] = (*strides)[d + 1] * std::max<int64_t>((*sizes)[d + 1], 1);
  }
}

int64_t Extent(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
               int64_t item) {
  if (sizes.size() != strides.size()) return -1;
  int64_t last = 0;  // the offset of the last element, in elements
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] < 0 || strides[d] < 0) return -1;
    if (sizes[d] == 0) return 0;
    const int64_t limit = std::numeric_limits<int64_t>::max() / 4;
    if (strides[d] != 0 && sizes[d] - 1 > (limit - last) / strides[d]) return -1;
    last += (sizes[d] - 1) * strides[d];
  }
  if (last + 1 > std::numeric_limits<int64_t>::max() / 16) return -1;
  return (last + 1) * item;
}

void NoDelete(void*) {}

}  // namespace

uint64_t LayoutBytes(const at::Tensor& like) {
  std::vector<int64_t> sizes, strides;
  LayoutOf(like, &sizes, &strides);
  int64_t e = Extent(sizes, strides, static_cast<int64_t>(like.element_size()));
  return e < 0 ? 0 : static_cast<uint64_t>(e);
}

int64_t ViewExtentBytes(const v1::judge::TensorView& view) {
  if (view.dtype() < 0 || view.dtype() >= static_cast<int>(at::ScalarType::NumOptions)) return -1;
  const auto type = static_cast<at::ScalarType>(view.dtype());
  if (!at::isFloatingType(type) && !at::isIntegralType(type, /*includeBool=*/true) &&
      !at::isComplexType(type)) {
    return -1;
  }
  const int64_t item = static_cast<int64_t>(c10::elementSize(type));
  if (item <= 0 || view.sizes_size() > 16) return -1;
  std::vector<int64_t> sizes(view.sizes().begin(), view.sizes().end());
  std::vector<int64_t> strides(view.strides().begin(), view.strides().end());
  return Extent(sizes, strides, item);
}

SlotArena::~SlotArena() {
  for (Block& b : blocks_) {
    if (cuda_) {
      cudaFree(b.ptr);
    } else {
      munmap(b.ptr, b.bytes);
      close(b.fd);
    }
  }
}

bool SlotArena::Allocate(uint64_t bytes, v1::judge::Slot* slot, int* fd, std::string* error) {
  Block b;
  b.bytes = std::max<uint64_t>(bytes, 16);
  if (cuda_) {
    cudaSetDevice(device_);
    if (cudaMalloc(&b.ptr, b.bytes) != cudaSuccess) {
      cudaGetLastError();
      *error = "cannot allocate " + std::to_string(b.bytes) + " bytes of device memory to share";
      return false;
    }
    cudaIpcMemHandle_t handle;
    if (cudaIpcGetMemHandle(&handle, b.ptr) != cudaSuccess) {
      *error = std::string("cannot share device memory with the candidate process (CUDA IPC: ") +
               cudaGetErrorString(cudaGetLastError()) + ")";
      cudaFree(b.ptr);
      return false;
    }
    slot->set_cuda_ipc_handle(reinterpret_cast<const char*>(&handle), sizeof handle);
    *fd = -1;
  } else {
    b.fd = memfd_create("kforge-slot", MFD_CLOEXEC);
    if (b.fd < 0 || ftruncate(b.fd, static_cast<off_t>(b.bytes)) != 0) {
      *error = std::string("cannot create shared memory: ") + std::strerror(errno);
      if (b.fd >= 0) close(b.fd);
      return false;
    }
    b.ptr = mmap(nullptr, b.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, b.fd, 0);
    if (b.ptr == MAP_FAILED) {
      *error = std::string("cannot map shared memory: ") + std::strerror(errno);
      close(b.fd);
      return false;
    }
    *fd = b.fd;
  }
  slot->set_id(static_cast<uint32_t>(blocks_.size()));
  slot->set_bytes(b.bytes);
  blocks_.push_back(b);
  return true;
}

uint64_t SlotArena::bytes(uint32_t slot) const {
  return slot < blocks_.size() ? blocks_[slot].bytes : 0;
}

at::Tensor SlotArena::View(uint32_t slot, const at::Tensor& like,
                           v1::judge::TensorView* view) const {
  std::vector<int64_t> sizes, strides;
  LayoutOf(like, &sizes, &strides);
  view->set_slot(slot);
  view->set_dtype(static_cast<int>(like.scalar_type()));
  view->mutable_sizes()->Assign(sizes.begin(), sizes.end());
  view->mutable_strides()->Assign(strides.begin(), strides.end());
  auto options = at::TensorOptions().dtype(like.scalar_type());
  options = cuda_ ? options.device(at::kCUDA, device_) : options.device(at::kCPU);
  return at::from_blob(blocks_.at(slot).ptr, sizes, strides, NoDelete, options);
}

SlotMap::~SlotMap() {
  for (auto& [id, m] : slots_) {
    if (cuda_) {
      cudaIpcCloseMemHandle(m.ptr);
    } else {
      munmap(m.ptr, m.bytes);
    }
  }
}

bool SlotMap::Map(const v1::judge::Slot& slot, int fd, std::string* error) {
  if (slots_.count(slot.id())) {
    if (fd >= 0) close(fd);
    *error = "slot " + std::to_string(slot.id()) + " declared twice";
    return false;
  }
  Mapping m;
  m.bytes = slot.bytes();
  if (cuda_) {
    cudaIpcMemHandle_t handle;
    if (slot.cuda_ipc_handle().size() != sizeof handle) {
      *error = "a slot without a CUDA IPC handle";
      return false;
    }
    std::memcpy(&handle, slot.cuda_ipc_handle().data(), sizeof handle);
    cudaSetDevice(device_);
    if (cudaIpcOpenMemHandle(&m.ptr, handle, cudaIpcMemLazyEnablePeerAccess) != cudaSuccess) {
      *error = std::string("cannot map the judge's device memory (CUDA IPC: ") +
               cudaGetErrorString(cudaGetLastError()) + ")";
      return false;
    }
  } else {
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < m.bytes) {
      if (fd >= 0) close(fd);
      *error = "a CPU slot without its shared memory";
      return false;
    }
    m.ptr = mmap(nullptr, m.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m.ptr == MAP_FAILED) {
      *error = std::string("cannot map shared memory: ") + std::strerror(errno);
      return false;
    }
  }
  slots_[slot.id()] = m;
  return true;
}

at::Tensor SlotMap::View(const v1::judge::TensorView& view, std::string* error) const {
  auto it = slots_.find(view.slot());
  if (it == slots_.end()) {
    *error = "a view of an unknown slot";
    return at::Tensor();
  }
  const int64_t extent = ViewExtentBytes(view);
  if (extent < 0 || static_cast<uint64_t>(extent) > it->second.bytes) {
    *error = "a view that does not fit its slot";
    return at::Tensor();
  }
  std::vector<int64_t> sizes(view.sizes().begin(), view.sizes().end());
  std::vector<int64_t> strides(view.strides().begin(), view.strides().end());
  auto options = at::TensorOptions().dtype(static_cast<at::ScalarType>(view.dtype()));
  options = cuda_ ? options.device(at::kCUDA, device_) : options.device(at::kCPU);
  return at::from_blob(it->second.ptr, sizes, strides, NoDelete, options);
}

}  // namespace kforge::eval
