#include "gpu_worker/eval/kernel_args.h"

#include <cstring>

namespace kforge::eval {

std::string PackInteger(int64_t v, bool is_unsigned, size_t size, unsigned char* out) {
  if (size != 1 && size != 2 && size != 4 && size != 8) {
    return "an integer for a " + std::to_string(size) + "-byte parameter";
  }
  int bits = static_cast<int>(size) * 8;
  bool fits = bits == 64 || (is_unsigned ? static_cast<uint64_t>(v) < (uint64_t{1} << bits)
                                         : v >= -(int64_t{1} << (bits - 1)) &&
                                               v < (int64_t{1} << bits));
  if (!fits) {
    return "integer " + std::to_string(v) + " does not fit a " + std::to_string(size) +
           "-byte parameter";
  }
  std::memcpy(out, &v, size);  // little-endian: the low bytes
  return "";
}

std::string PackFloat(double v, size_t size, unsigned char* out) {
  if (size == 8) {
    std::memcpy(out, &v, 8);
  } else if (size == 4) {
    float f = static_cast<float>(v);
    std::memcpy(out, &f, 4);
  } else {
    return "a floating-point value for a " + std::to_string(size) + "-byte parameter";
  }
  return "";
}

}  // namespace kforge::eval
