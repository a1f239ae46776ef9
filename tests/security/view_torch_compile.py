# kforge: dialect=kernelbench
# torch.compile inside the worker's sandbox: Inductor would run its compile workers as Python
# processes, which the sandbox's program list does not hold (a second process running Python
# could do the candidate's GPU work where the judge does not trace it), so the worker tells the
# children to compile in process. This candidate says how many compile threads Inductor will
# use; on a GPU its torch.compile then builds Triton kernels in process.
import os
import subprocess

import torch
import torch._inductor.config as inductor_config
import torch.nn as nn

# Both: the variable the worker sets, and what Inductor made of it (its default is the CPUs'
# count, which is 1 on a 1-CPU machine whatever the worker does).
print(f"INDUCTOR env {os.environ.get('TORCHINDUCTOR_COMPILE_THREADS')}", flush=True)
print(f"INDUCTOR compile_threads {inductor_config.compile_threads}", flush=True)

# The ptxas Triton runs to compile Inductor's kernels: torch's own, where torch ships one
# (Inductor sets TRITON_PTXAS_PATH to it before Triton compiles). On the H100 the program list
# refused it, and the corpus's torch.compile candidates failed with "Permission denied:
# .../torch/bin/ptxas" (session 30); here it is run as Triton runs it, by its path.
PTXAS = os.path.join(os.path.dirname(torch.__file__), "bin", "ptxas")
if not os.path.exists(PTXAS):
    print("PTXAS absent", flush=True)  # a torch without one: Triton runs its own
else:
    try:
        ran = subprocess.run([PTXAS, "--version"], capture_output=True, timeout=120)
        print(f"PTXAS {PTXAS} rc {ran.returncode}", flush=True)
    except OSError as e:
        print(f"PTXAS {PTXAS} failed: {e}", flush=True)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.f = torch.compile(torch.relu) if torch.cuda.is_available() else torch.relu

    def forward(self, x):
        return self.f(x)
