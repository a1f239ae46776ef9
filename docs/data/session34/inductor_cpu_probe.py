"""Where a torch.compile candidate's first call could spend its CPU time, measured without a GPU.

A hand-run probe (session 34, no device lent), kept as the record of decisions.md's "Session 34".
Two parts, on 2_75's candidate from ../shared/corpora (a GEMM, GroupNorm, amin, bias add):

  dynamo   the candidate itself on CPU tensors, torch.compile forced to backend "eager" then
           "aot_eager": Dynamo's trace of its forward, then AOTAutograd's on top.
  inductor the same graph, written out here, lowered by Inductor for an sm_90 target with the
           CUDA calls Inductor makes patched to answer as an H100 would, so that Triton compiles
           every kernel to a cubin (10 compiles, timed one by one). Nothing is launched: the
           launchers are not made and nothing is autotuned or benchmarked, which on a GPU
           follows.

usage: inductor_cpu_probe.py dynamo CANDIDATE.py | inductor
(with TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR pointing at empty directories for a cold run)
"""
import importlib.util
import sys
import time
import types

import torch


def dynamo(path):
    import torch._dynamo  # noqa: F401  (the fork server's warm imports)
    import torch._inductor.compile_fx  # noqa: F401
    original = torch.compile
    for backend in ("eager", "aot_eager"):
        def forced(model=None, **kwargs):
            kwargs["backend"] = backend
            kwargs.pop("mode", None)
            if model is None:
                return lambda f: original(f, **kwargs)
            return original(model, **kwargs)
        torch.compile = forced
        spec = importlib.util.spec_from_file_location("candidate", path)
        candidate = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(candidate)
        model = candidate.ModelNew(*candidate.get_init_inputs())
        inputs = candidate.get_inputs()
        t0 = time.time()
        model(*inputs)
        t1 = time.time()
        model(*inputs)
        t2 = time.time()
        print(f"{backend}: first call {t1 - t0:.2f} s, second {t2 - t1:.3f} s")
    torch.compile = original


def pretend_h100():  # before Dynamo's device interface copies torch.cuda's functions
    from triton.backends.compiler import GPUTarget
    from triton.runtime import driver

    props = types.SimpleNamespace(
        name="NVIDIA H100 80GB HBM3", major=9, minor=0, multi_processor_count=132,
        total_memory=80 << 30, max_threads_per_multi_processor=2048, warp_size=32,
        regs_per_multiprocessor=65536, shared_memory_per_block_optin=232448,
        L2_cache_size=50 << 20, gcnArchName="", shared_memory_per_multiprocessor=233472,
        max_threads_per_block=1024, shared_memory_per_block=49152, clock_rate=1980000, uuid="x")

    class Device:
        def __init__(self, *args, **kwargs):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *args):
            return False

    class Driver:
        def get_current_target(self):
            return GPUTarget("cuda", 90, 32)

        def get_current_device(self):
            return 0

        def get_current_stream(self, *args):
            return 0

        def get_device_capability(self, *args):
            return (9, 0)

        def get_active_torch_device(self):
            return torch.device("cuda", 0)

    cuda = torch.cuda
    cuda.is_available = lambda: True
    cuda.device_count = lambda: 1
    cuda.get_device_properties = lambda *a, **k: props
    cuda.get_device_capability = lambda *a, **k: (9, 0)
    cuda.current_device = lambda: 0
    cuda.get_device_name = lambda *a, **k: props.name
    cuda.set_device = lambda *a, **k: None
    cuda.get_rng_state = lambda *a, **k: torch.zeros(16, dtype=torch.uint8)
    cuda.set_rng_state = lambda *a, **k: None
    cuda.device = Device
    cuda._lazy_init = lambda: None
    cuda.synchronize = lambda *a, **k: None
    import torch._inductor.runtime.triton_helpers as triton_helpers
    import torch._subclasses.fake_tensor as fake_tensor
    triton_helpers.set_driver_to_gpu = lambda: None
    driver.set_active(Driver())
    driver._default = driver._active
    fake_tensor.init_gpu_context = lambda device: None


def inductor():
    pretend_h100()
    import torch._inductor.config as config
    import torch._inductor.runtime.triton_heuristics as heuristics
    import triton
    from torch._inductor.compile_fx import compile_fx_inner
    from torch._inductor.decomposition import select_decomp_table
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    config.triton.autotune_pointwise = False
    config.compile_threads = 1  # as the worker's children compile (sandbox_evaluator.cc)
    compiles = []
    compile_for_real = triton.compile

    def timed_compile(*args, **kwargs):
        t = time.time()
        out = compile_for_real(*args, **kwargs)
        compiles.append(time.time() - t)
        return out
    triton.compile = heuristics.triton.compile = timed_compile
    heuristics.CachingAutotuner._make_launchers = lambda self: None  # no driver to load them

    def forward(x, w, b, gn_w, gn_b, bias):  # 2_75's candidate, its view for GroupNorm included
        x = torch.nn.functional.linear(x, w, b).view(128, 256, 1, 1)
        x = torch.nn.functional.group_norm(x, 8, gn_w, gn_b).view(128, 256)
        return (torch.amin(x, dim=1, keepdim=True) + bias,)

    mode = FakeTensorMode(allow_non_fake_inputs=True)
    with mode:
        shapes = [(128, 512), (256, 512), (256,), (256,), (256,), (1, 256, 1, 1)]
        args = [torch.empty(*s, device="cuda") for s in shapes]
    t0 = time.time()
    graph = make_fx(forward, decomposition_table=select_decomp_table(), tracing_mode="fake")(*args)
    t1 = time.time()
    with mode:
        compile_fx_inner(graph, args)
    t2 = time.time()
    print(f"trace {t1 - t0:.2f} s, Inductor {t2 - t1:.2f} s, of which {len(compiles)} Triton "
          f"compiles {sum(compiles):.2f} s ({', '.join(f'{c:.2f}' for c in compiles)})")


if __name__ == "__main__":
    if sys.argv[1:2] == ["dynamo"] and len(sys.argv) == 3:
        dynamo(sys.argv[2])
    elif sys.argv[1:] == ["inductor"]:
        inductor()
    else:
        sys.exit(__doc__)
