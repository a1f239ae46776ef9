// Which libraries a `cpp` candidate's shared object may call into. The object is linked
// without LibTorch (cpp_dialect.h), so its undefined symbols bind at dlopen to whatever the
// engine's process has loaded: libpython, libtorch_python and the CUDA runtime too. Before the
// object is loaded (and its static constructors run), every undefined symbol in its .dynsym is
// looked up in the process's global scope, and the library it would bind to must be LibTorch's
// libc10 or libtorch_cpu, or the C/C++ runtime: the set the link with -z defs against those
// libraries allowed before.
//
// Thread-safety: a pure function of the file and the process's loaded libraries.
#ifndef KFORGE_GPU_WORKER_EVAL_CPP_IMPORTS_H_
#define KFORGE_GPU_WORKER_EVAL_CPP_IMPORTS_H_

#include <string>

namespace kforge::eval {

// Empty when every import of the shared object at `path` binds to an allowed library (or,
// for a weak reference, to nothing). Otherwise the reason, naming the first symbol (demangled)
// and the library it would bind to. A symbol found nowhere is left for dlopen to report.
std::string CheckCandidateImports(const std::string& path);

// A demangled C++ symbol name; the name itself when it is not a mangled C++ name.
std::string Demangle(const std::string& symbol);

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_CPP_IMPORTS_H_
