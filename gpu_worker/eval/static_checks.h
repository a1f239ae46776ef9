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

RuleViolation CheckCandidateSource(const std::string& source, v1::Dialect dialect);

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_STATIC_CHECKS_H_
