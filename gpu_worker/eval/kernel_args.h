// Packing of scalar kernel arguments into parameter slots of the size the kernel declares
// (cuFuncGetParamInfo), shared by kforge.cuda (Python scalars) and the cpp dialect.
//
// Pure functions; thread-safe.
#ifndef KFORGE_GPU_WORKER_EVAL_KERNEL_ARGS_H_
#define KFORGE_GPU_WORKER_EVAL_KERNEL_ARGS_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace kforge::eval {

// An integer into a 1, 2, 4 or 8-byte parameter (little-endian low bytes). Values in
// [-2^(bits-1), 2^bits) fit, so both signed and unsigned parameters take them. Returns "" or
// why the value does not fit.
std::string PackInteger(int64_t value, bool is_unsigned, size_t size, unsigned char* out);
// A floating-point value into a 4-byte (float) or 8-byte (double) parameter.
std::string PackFloat(double value, size_t size, unsigned char* out);

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_KERNEL_ARGS_H_
