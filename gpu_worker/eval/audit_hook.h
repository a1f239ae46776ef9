// The candidate process's audit hook (PEP 578): how the judge learns, from outside, that the
// candidate process reached native code, after which nothing that process reports about itself
// (its device-clock spans above all) can be taken as measured (docs/security.md, "The audit
// hook").
//
// The hook is a C function installed with PySys_AddAuditHook after torch's own CUDA start-up in
// the candidate process and before any task or candidate code runs; Python code can neither
// remove nor replace it. On the first event that reaches native
// code or the process's own memory (NativeCodeReason) it writes that event's name and reason to
// the taint pipe, whose read end only the judge holds, before the event's action happens. What
// the native code does afterwards cannot take the bytes back. A candidate that closes or
// replaces the pipe's descriptor first (os.close and os.dup2 raise no audit event) makes the
// judge's end read EOF, or, when it kept a copy of the descriptor, makes the hook's check of
// the descriptor's identity fail: the hook then ends the process before the event's action.
//
// What the hook does not see (written down, not defended here): Python objects that expose raw
// addresses to native libraries already loaded (numpy's __array_interface__, torch's
// __cuda_array_interface__ and torch APIs that take raw pointers), bytecode crafted and
// unmarshalled (the import system unmarshals every cached module, so marshal.loads cannot
// count), and bugs in the interpreter.
// So the device clock is a measurement, never the judge's boundary: the call clock is.
//
// Thread-safety: the hook may run on any thread holding the GIL; its state is set once before
// candidate code runs.
#ifndef KFORGE_GPU_WORKER_EVAL_AUDIT_HOOK_H_
#define KFORGE_GPU_WORKER_EVAL_AUDIT_HOOK_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kforge::eval {

// One audit event, as far as the classification needs it ("open": its path, mode and flags;
// "import": the module's name).
struct AuditEvent {
  std::string_view name;
  std::string_view module;         // "import" only
  std::string_view path;           // "open" only
  std::string_view mode;           // "open" by the builtin open: "rb", "w", ...
  std::optional<int64_t> flags;    // "open" by os.open: O_* flags
};

// Why `e` reaches native code or lets the process change its own memory or files (ctypes but
// loading a library already on disk, an import of a package that calls the CUDA driver or
// runtime with raw pointers and host functions (cuda-python's `cuda`, cupy, pycuda, numba's
// cuda: stream waits on host-written values, host functions in stream order, copies to any
// address), a
// program started or exec'd, a fork, crafted bytecode, marshalled code, a file opened for
// writing), or "" when it does not. Not marshal.loads: the import system raises it for every
// cached module it loads (crafted bytecode unmarshalled is among the gaps named above).
std::string NativeCodeReason(const AuditEvent& e);

// Installs the hook in the running interpreter; `taint_fd` is the write end of the taint pipe.
// Also stops the interpreter from writing bytecode caches (they would read as file writes).
bool InstallAuditHook(int taint_fd, std::string* error);

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_AUDIT_HOOK_H_
