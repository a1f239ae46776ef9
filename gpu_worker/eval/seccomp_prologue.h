// The start every seccomp filter of the engine shares: calls of a foreign ABI (i386 through
// int 0x80, x32), which reach the same kernel operations by other numbers, get `foreign`; the
// native call's number is then loaded for the checks that follow.
//
// Header only (the filters live in two libraries); pure, thread-safe.
#ifndef KFORGE_GPU_WORKER_EVAL_SECCOMP_PROLOGUE_H_
#define KFORGE_GPU_WORKER_EVAL_SECCOMP_PROLOGUE_H_

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kforge::eval {

#if defined(__x86_64__)
inline constexpr uint32_t kNativeSeccompArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
inline constexpr uint32_t kNativeSeccompArch = AUDIT_ARCH_AARCH64;
#else
#error "the engine's seccomp filters know x86_64 and aarch64"
#endif

inline void AppendNativeArchCheck(std::vector<sock_filter>* f, uint32_t foreign) {
  f->push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
  f->push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kNativeSeccompArch, 1, 0));
  f->push_back(BPF_STMT(BPF_RET | BPF_K, foreign));
  f->push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
#if defined(__x86_64__)
  f->push_back(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000U, 0, 1));  // x32
  f->push_back(BPF_STMT(BPF_RET | BPF_K, foreign));
#endif
}

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_SECCOMP_PROLOGUE_H_
