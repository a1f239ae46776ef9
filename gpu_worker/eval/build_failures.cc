#include "gpu_worker/eval/build_failures.h"

#include <pybind11/embed.h>

namespace py = pybind11;

namespace kforge::eval {
namespace {

ExtensionBuilds& Builds() {
  static ExtensionBuilds builds;
  return builds;
}

}  // namespace

const ExtensionBuilds& ExtensionBuildsSoFar() { return Builds(); }

namespace {

// The Python probe (set once; never destroyed: it must not outlive the interpreter's
// finalisation in a static destructor).
py::object*& ProbeFunction() {
  static py::object* probe = nullptr;
  return probe;
}

}  // namespace

bool ProbeFailedBuildsUsed(const std::function<void()>& fn, const std::vector<int>& cuda_devices) {
  if (!ProbeFunction()) return false;
  py::list devices;
  for (int d : cuda_devices) devices.append(d);
  return (*ProbeFunction())(py::cpp_function([&fn] { fn(); }), devices).cast<bool>();
}

void RememberFailedExtensionBuilds(bool kernel_libraries) {
  py::dict scope;
  scope["_kforge_note_build"] = py::cpp_function([](bool built, const std::string& what) {
    ExtensionBuilds& b = Builds();
    if (built) {
      ++b.built;
    } else if (b.failed++ == 0) {
      b.first_failure = what.substr(0, 1024);
    }
  });
  scope["_kforge_note_library"] = py::cpp_function([] { Builds().kernel_library = true; });
  scope["_kforge_libraries"] = kernel_libraries;
  scope["_kforge_set_probe"] = py::cpp_function([](py::object probe) {
    if (!ProbeFunction()) ProbeFunction() = new py::object(std::move(probe));
  });
  py::exec(R"PY(
def _kforge_extension_builds(note, note_library, set_probe, libraries):
    import fcntl, functools, hashlib, os, re
    import torch
    import torch.utils.cpp_extension as ext

    class FlockBaton:
        """torch's FileBaton with the lock held by flock(2), which the kernel releases when its
        process dies: torch's baton is the file's existence, so a build killed at its limit
        left it behind and every later build of that extension waited for it forever. Acquiring
        waits for a holder and then always succeeds, so each process runs the build itself
        (ninja finds it up to date when the holder finished it, and builds it when the holder
        died): torch's waiters would load whatever a dead holder left."""

        def __init__(self, lock_file_path, wait_seconds=0.1, warn_after_seconds=None):
            self.lock_file_path = lock_file_path
            self.fd = None

        def try_acquire(self):
            fd = os.open(self.lock_file_path, os.O_CREAT | os.O_RDONLY, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError:
                os.close(fd)
                raise
            self.fd = fd
            return True

        def wait(self):
            try:
                fd = os.open(self.lock_file_path, os.O_RDONLY)
            except FileNotFoundError:
                return
            try:
                fcntl.flock(fd, fcntl.LOCK_SH)
            finally:
                os.close(fd)

        def release(self):
            if self.fd is None:
                return
            try:
                os.remove(self.lock_file_path)
            except OSError:
                pass
            os.close(self.fd)
            self.fd = None

    ext.FileBaton = FlockBaton

    # A compiler's diagnostic on a source line (nvcc: "x.cu(12): error: ...", gcc:
    # "main.cpp:5:3: error: ..."), and none of the failures that say nothing about the sources:
    # a compiler killed or out of resources, a file it could not run or read.
    diagnostic = re.compile(r"\.(cu|cuh|cpp|cc|cxx|c|h|hpp)(\(\d+\)|:\d+(:\d+)?): (fatal )?error")
    transient = ("Killed", "signal", "No space left", "Resource temporarily unavailable",
                 "Permission denied", "cannot execute", "Cannot allocate memory")
    cuda_home = os.environ.get("CUDA_HOME")
    toolchain = (torch.__version__, torch.version.cuda, cuda_home,
                 cuda_home and os.path.realpath(cuda_home), os.environ.get("TORCH_CUDA_ARCH_LIST"))

    def remember(real, kind):
        @functools.wraps(real)
        def call(*args, **kwargs):
            root = os.environ.get("TORCH_EXTENSIONS_DIR")
            if not root:
                return real(*args, **kwargs)
            key = hashlib.sha256(repr((kind, args, sorted(kwargs.items()),
                                       toolchain)).encode()).hexdigest()
            marker = os.path.join(root, ".kforge_failed_builds", key)
            try:
                with open(marker) as f:
                    message = f.read(65536)
            except OSError:
                message = None
            if message is not None:
                raise RuntimeError(message)
            try:
                return real(*args, **kwargs)
            except RuntimeError as e:
                text = str(e)
                if (text.startswith("Error building extension") and diagnostic.search(text) and
                        not any(t in text for t in transient) and
                        "native" not in repr((args, kwargs))):
                    try:
                        os.makedirs(os.path.dirname(marker), exist_ok=True)
                        tmp = marker + ".tmp." + str(os.getpid())
                        with open(tmp, "w") as f:
                            f.write(text[:65536])
                        os.replace(tmp, marker)
                    except OSError:
                        pass
                raise
        return call

    def first_error(text):
        lines = [l.strip() for l in text.splitlines() if l.strip()]
        for l in lines:
            if diagnostic.search(l):  # the file's directory is the candidate's namespace
                return re.sub(r"[^\s:()]*/(?=[^/\s:()]+\.(?:cu|cuh|cpp|cc|cxx|c|h|hpp)\b)", "", l)
        for l in lines:
            if "error:" in l:  # a driver's error ("c++: error: unrecognized ...")
                return l
        return lines[0] if lines else ""

    probing = {"on": False, "touched": False}

    class StandIn:
        """What a failed build returns during the probe: touching it says the candidate would
        have used its kernel."""

        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            probing["touched"] = True
            def kernel(*args, **kwargs):
                raise RuntimeError("kforge probe: the failed build's stand-in was called")
            return kernel

        def __call__(self, *args, **kwargs):
            probing["touched"] = True
            raise RuntimeError("kforge probe: the failed build's stand-in was called")

    class LibraryStandIn:
        """What a kernel library's failed import returns during the probe: its names (a
        `from cupy import RawKernel`, `import pycuda.driver as cuda`) are stand-ins too, and
        calling one says the candidate would have used the library."""

        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return LibraryStandIn()

        def __call__(self, *args, **kwargs):
            probing["touched"] = True
            raise RuntimeError("kforge probe: the missing kernel library was called")

    def probe(fn, devices):
        import random
        py_state = random.getstate()
        probing["on"], probing["touched"] = True, False
        try:
            with torch.random.fork_rng(devices=devices):
                fn()
        except Exception:
            pass
        finally:
            probing["on"] = False
            random.setstate(py_state)
        return probing["touched"]

    set_probe(probe)

    def count(real, kind):
        @functools.wraps(real)
        def call(*args, **kwargs):
            name = kwargs.get("name", args[0] if args else "?")
            try:
                module = real(*args, **kwargs)
            except Exception as e:
                if probing["on"]:  # the counterfactual: the build as if it had worked
                    return StandIn()
                # A compiler killed or out of resources says nothing about the candidate: not
                # counted (its outputs still judge it).
                if not any(t in str(e) for t in transient):
                    note(False, "%s(%r): %s" % (kind, name,
                                                first_error(str(e)) or type(e).__name__))
                raise
            if not probing["on"]:
                note(True, "")
            return module
        return call

    ext.load_inline = count(remember(ext.load_inline, "load_inline"), "load_inline")
    ext.load = count(ext.load, "load")

    # A kernel library the candidate imports (cupy's RawKernel, pycuda's SourceModule) that
    # this machine does not have, or that fails to import, is a failed build too: four of
    # CUDA-L1's released candidates fall back to PyTorch on cupy's ImportError. Only absolute
    # imports of these top-level names, by the candidate's own module (torch and other
    # libraries may try them as optional); in the probe the import returns a stand-in. Not
    # numba: its njit is a CPU compiler, with a pure-Python fallback that is no hidden kernel.
    import builtins
    kernel_libraries = ("cupy", "pycuda")
    candidate_modules = ("kforge_candidate", "kforge_candidate_probe")
    real_import = builtins.__import__

    def candidates_kernel_library(name, globals, level):
        return (level == 0 and name.partition(".")[0] in kernel_libraries and
                (globals or {}).get("__name__") in candidate_modules)

    def kernel_import(name, globals=None, locals=None, fromlist=(), level=0):
        try:
            module = real_import(name, globals, locals, fromlist, level)
        except Exception as e:
            if not candidates_kernel_library(name, globals, level):
                raise
            if probing["on"]:
                return LibraryStandIn()
            note(False, "import %s: %s" % (name, e))
            raise
        # A kernel library that loaded: the own-kernels rule's trigger (its kernels compile
        # at run time, with no build to count). Not in the probe's second execution.
        if not probing["on"] and candidates_kernel_library(name, globals, level):
            note_library()
        return module

    if libraries:
        builtins.__import__ = kernel_import

_kforge_extension_builds(_kforge_note_build, _kforge_note_library, _kforge_set_probe,
                         _kforge_libraries)
)PY",
           scope);
}

}  // namespace kforge::eval
