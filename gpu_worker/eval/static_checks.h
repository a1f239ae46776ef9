// Static checks on a candidate's source, run before any of its code executes. Each rule has a
// stable identifier that becomes EvalResult.rule when it fires (verdict REJECTED).
//
// Rules (Python dialects):
//   forbidden_import   ctypes, gc, inspect, os, sys, subprocess, socket, threading,
//                      multiprocessing, signal, importlib, builtins, pickle, shutil, pathlib,
//                      io, resource, mmap, _thread, posix, cffi: reach into the process or out
//                      of the sandbox
//   forbidden_call     __import__, eval/exec/compile/open builtins, dunder escapes
//                      (__globals__, __subclasses__, __builtins__...), assignment to or setattr
//                      on torch/time/numpy attributes (patched timers and comparisons)
//   global_switch      torch.backends.* assignments, set_float32_matmul_precision and friends
//   side_stream        creating or entering CUDA streams
//   try_except         try/except blocks (a fallback that hides a failed kernel)
//   missing_model      no `class ModelNew`
// Rules (cpp dialect, cpp_checks.cc; on host code with comments and string literals, the
// kernels included, blanked):
//   forbidden_include  any header beyond kforge/candidate.h, ATen/ATen.h, torch/torch.h and
//                      the standard containers and math
//   forbidden_call     threads and processes (std::thread/async, pthread_*, fork, system,
//                      exec*, popen), dlopen/dlsym/syscall/mmap/signal/exit, inline assembly
//                      in host code, file/environment/network I/O (fopen, open, fstream,
//                      getenv, socket, std::cout...), and CUDA calls that launch, copy,
//                      allocate or switch context outside ctx.launch
//   side_stream        CUDA streams, stream guards, graphs and capture, at::cuda::*
//   global_switch      at::globalContext().set*, set_num_threads, TF32/precision setters
//   try_except         try/catch (a fallback that hides a failed kernel)
//   fallback           a file with KFORGE_KERNELS calling torch's own implementation of the
//                      task's only compute op (at::relu for a torch.relu task); tasks of
//                      several ops may keep some in torch (the runtime rule still requires
//                      one of its own launches per forward)
// The checks are deliberately conservative: a legitimate kernel has no use for any of these.
//
// Pure functions; thread-safe.
#ifndef KFORGE_GPU_WORKER_EVAL_STATIC_CHECKS_H_
#define KFORGE_GPU_WORKER_EVAL_STATIC_CHECKS_H_

#include <string>

#include "common/dialect.h"
#include "kforge/v1/eval.pb.h"

namespace kforge::eval {

struct RuleViolation {
  std::string rule;    // empty: no violation
  std::string reason;  // human-readable, with the line number
  bool fired() const { return !rule.empty(); }
};

// `task_source` (the task's Python) is needed by the cpp fallback rule only.
RuleViolation CheckCandidateSource(const std::string& source, v1::Dialect dialect,
                                   const std::string& task_source = "");
// The cpp dialect's rules (cpp_checks.cc).
RuleViolation CheckCppSource(const std::string& source, const std::string& task_source);

// Helpers of both rule sets: line n (1-based) of `source`, trimmed and bounded; a violation
// of `rule` whose reason quotes that line.
std::string SourceLine(const std::string& source, int n);
RuleViolation RuleAt(const std::string& rule, const std::string& what, const std::string& source,
                     int line);

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_STATIC_CHECKS_H_
