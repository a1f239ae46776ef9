#include "gpu_worker/eval/build_failures.h"

#include <pybind11/embed.h>

namespace py = pybind11;

namespace kforge::eval {

void RememberFailedExtensionBuilds() {
  py::exec(R"(
def _kforge_remember_failed_builds():
    import functools, hashlib, os
    import torch
    import torch.utils.cpp_extension as ext

    def wrap(real, kind):
        @functools.wraps(real)
        def call(*args, **kwargs):
            root = os.environ.get("TORCH_EXTENSIONS_DIR")
            if not root:
                return real(*args, **kwargs)
            key = hashlib.sha256(repr((kind, args, sorted(kwargs.items()),
                                       os.environ.get("TORCH_CUDA_ARCH_LIST"),
                                       torch.__version__)).encode()).hexdigest()
            marker = os.path.join(root, ".kforge_failed_builds", key)
            try:
                with open(marker) as f:
                    message = f.read()
            except OSError:
                message = None
            if message is not None:
                raise RuntimeError(message)
            try:
                return real(*args, **kwargs)
            except RuntimeError as e:
                # Only a compiler's diagnostic: not a compiler killed (memory, a full disk) or
                # a flag that depends on the machine it ran on (-arch=native).
                text = str(e)
                if (text.startswith("Error building extension") and "error:" in text and
                        "Killed" not in text and "No space left" not in text and
                        "native" not in repr((args, kwargs))):
                    try:
                        os.makedirs(os.path.dirname(marker), exist_ok=True)
                        tmp = marker + ".tmp." + str(os.getpid())
                        with open(tmp, "w") as f:
                            f.write(str(e))
                        os.replace(tmp, marker)
                    except OSError:
                        pass
                raise
        return call

    ext.load_inline = wrap(ext.load_inline, "load_inline")

_kforge_remember_failed_builds()
del _kforge_remember_failed_builds
)",
           py::module_::import("__main__").attr("__dict__"));
}

}  // namespace kforge::eval
