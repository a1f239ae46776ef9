#include "gpu_worker/eval/audit_hook.h"

#include <Python.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

namespace kforge::eval {
namespace {

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

struct HookState {
  int fd = -1;
  dev_t dev = 0;
  ino_t ino = 0;
  bool reported = false;
};
HookState g_hook;

[[noreturn]] void Die(const char* why) {
  // The judge sees the process end before any native code of the candidate's ran.
  static constexpr char kPrefix[] = "kforge: the candidate process's audit channel ";
  ssize_t ignored = write(2, kPrefix, sizeof kPrefix - 1);
  ignored = write(2, why, std::strlen(why));
  ignored = write(2, "\n", 1);
  (void)ignored;
  _exit(87);
}

// The taint pipe still is the one the judge reads.
bool SamePipe() {
  struct stat st;
  return fstat(g_hook.fd, &st) == 0 && st.st_dev == g_hook.dev && st.st_ino == g_hook.ino;
}

std::string_view Utf8(PyObject* o) {
  if (o == nullptr) return {};
  if (PyUnicode_Check(o)) {
    Py_ssize_t n = 0;
    const char* s = PyUnicode_AsUTF8AndSize(o, &n);
    if (s == nullptr) {
      PyErr_Clear();
      return {};
    }
    return {s, static_cast<size_t>(n)};
  }
  if (PyBytes_Check(o)) return {PyBytes_AS_STRING(o), static_cast<size_t>(PyBytes_GET_SIZE(o))};
  return {};
}

int Hook(const char* event, PyObject* args, void*) {
  if (g_hook.reported) return 0;
  AuditEvent e;
  e.name = event;
  if (e.name == "open" && args != nullptr && PyTuple_Check(args) && PyTuple_GET_SIZE(args) >= 3) {
    e.path = Utf8(PyTuple_GET_ITEM(args, 0));
    e.mode = Utf8(PyTuple_GET_ITEM(args, 1));
    PyObject* flags = PyTuple_GET_ITEM(args, 2);
    if (flags != nullptr && PyLong_Check(flags)) {
      long long f = PyLong_AsLongLong(flags);
      if (f == -1 && PyErr_Occurred()) {
        PyErr_Clear();
      } else {
        e.flags = f;
      }
    }
  }
  if (e.name == "import" && args != nullptr && PyTuple_Check(args) && PyTuple_GET_SIZE(args) >= 1) {
    e.module = Utf8(PyTuple_GET_ITEM(args, 0));
  }
  std::string reason = NativeCodeReason(e);
  if (reason.empty()) return 0;
  if (!SamePipe()) Die("was closed or replaced");
  std::string line = std::string(event) + ": " + reason;
  if (args != nullptr && PyTuple_Check(args) && PyTuple_GET_SIZE(args) >= 1 && e.name != "open") {
    std::string_view first = Utf8(PyTuple_GET_ITEM(args, 0));
    if (!first.empty()) line += " (" + std::string(first.substr(0, 120)) + ")";
  }
  if (line.size() > 400) line.resize(400);  // below PIPE_BUF: one atomic write
  if (write(g_hook.fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    Die(std::strerror(errno));
  }
  g_hook.reported = true;  // the judge has it; what follows cannot take it back
  return 0;
}

}  // namespace

std::string NativeCodeReason(const AuditEvent& e) {
  const std::string_view n = e.name;
  // Loading a library that is already on disk is not enough (its code is not the
  // candidate's: a library it wrote was a file opened for writing); calling into one, reading
  // a symbol, or any raw pointer is.
  if (StartsWith(n, "ctypes.") && n != "ctypes.dlopen") {
    return "ctypes reaches native code and raw memory";
  }
  if (n == "subprocess.Popen" || n == "os.system" || StartsWith(n, "os.exec") ||
      StartsWith(n, "os.spawn") || n == "os.posix_spawn" || n == "os.startfile") {
    return "a program started (a compiler, a shell: native code)";
  }
  if (n == "os.fork" || n == "os.forkpty") return "a forked process";
  if (n == "import") {
    const std::string_view m = e.module;
    for (std::string_view raw : {"cuda", "cupy", "cupy_backends", "pycuda", "numba.cuda"}) {
      if (m == raw || (StartsWith(m, raw) && m.size() > raw.size() && m[raw.size()] == '.')) {
        return "a package that calls the CUDA driver with raw pointers and host functions (" +
               std::string(m.substr(0, 120)) + ")";
      }
    }
  }
  if (n == "code.__new__") return "a code object built from raw bytecode";
  if (n == "open") {
    bool writes = e.mode.find_first_of("wax+") != std::string_view::npos;
    if (e.flags) {
      writes = writes || (*e.flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND)) != 0;
    }
    if (writes) {
      return "a file opened for writing (" + std::string(e.path.substr(0, 200)) +
             "): a module or library written can be loaded";
    }
  }
  return "";
}

bool InstallAuditHook(int taint_fd, std::string* error) {
  struct stat st;
  if (fstat(taint_fd, &st) != 0) {
    *error = std::string("the taint pipe: ") + std::strerror(errno);
    return false;
  }
  g_hook.fd = taint_fd;
  g_hook.dev = st.st_dev;
  g_hook.ino = st.st_ino;
  PyGILState_STATE gil = PyGILState_Ensure();
  PySys_SetObject("dont_write_bytecode", Py_True);
  int rc = PySys_AddAuditHook(Hook, nullptr);
  if (rc != 0) {
    PyErr_Clear();
    *error = "PySys_AddAuditHook refused the hook";
  }
  PyGILState_Release(gil);
  return rc == 0;
}

}  // namespace kforge::eval
