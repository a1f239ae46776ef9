#include "gpu_worker/eval/audit_hook.h"

#include <fcntl.h>
#include <gtest/gtest.h>

namespace kforge::eval {
namespace {

std::string Reason(const char* event) {
  AuditEvent e;
  e.name = event;
  return NativeCodeReason(e);
}

std::string Open(const char* path, const char* mode, std::optional<int64_t> flags = std::nullopt) {
  AuditEvent e;
  e.name = "open";
  e.path = path;
  e.mode = mode;
  e.flags = flags;
  return NativeCodeReason(e);
}

TEST(NativeCodeReason, NativeCodeAndRawMemoryTaint) {
  for (const char* event : {"ctypes.dlsym", "ctypes.call_function", "ctypes.cdata", "ctypes.addressof", "subprocess.Popen",
                            "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
                            "os.forkpty", "code.__new__"}) {
    EXPECT_FALSE(Reason(event).empty()) << event;
  }
}

TEST(NativeCodeReason, PurePythonEventsDoNot) {
  for (const char* event : {"import", "exec", "compile", "object.__getattr__", "sys._getframe",
                            "os.listdir", "socket.connect", "sys.addaudithook", "os.getenv",
                            "marshal.loads", "ctypes.dlopen"}) {
    EXPECT_EQ(Reason(event), "") << event;
  }
}

std::string Import(const char* module) {
  AuditEvent e;
  e.name = "import";
  e.module = module;
  return NativeCodeReason(e);
}

TEST(NativeCodeReason, RawCudaBindingsTaintOtherImportsDoNot) {
  for (const char* m :
       {"cuda", "cuda.bindings", "cuda.bindings.driver", "cuda.cudart", "cupy", "cupy.cuda.runtime",
        "cupy_backends.cuda.api.driver", "pycuda.driver", "numba.cuda"}) {
    EXPECT_NE(Import(m), "") << m;
  }
  for (const char* m : {"torch", "torch.cuda", "kforge.cuda", "cudaext", "numba", "triton",
                        "cupyx_lookalike", ""}) {
    EXPECT_EQ(Import(m), "") << m;
  }
}

TEST(NativeCodeReason, FilesOpenedForWritingTaintReadingDoesNot) {
  EXPECT_EQ(Open("/etc/hostname", "r"), "");
  EXPECT_EQ(Open("/etc/hostname", "rb"), "");
  EXPECT_EQ(Open("/etc/hostname", "", O_RDONLY), "");
  for (const char* mode : {"w", "wb", "a", "x", "r+", "rb+"}) {
    EXPECT_NE(Open("/tmp/mod.so", mode), "") << mode;
  }
  for (int flags : {O_WRONLY, O_RDWR, O_CREAT | O_WRONLY, O_APPEND | O_WRONLY}) {
    EXPECT_NE(Open("/proc/self/mem", "", flags), "") << flags;
  }
  EXPECT_NE(Open("/tmp/x.so", "wb").find("/tmp/x.so"), std::string::npos);
}

}  // namespace
}  // namespace kforge::eval
