# kforge: dialect=kernelbench
"""For cache_isolation_test.py: a candidate that leaves host code in its own cache namespace (a
copy of /bin/true standing in for a shared library) in its first evaluation and finds it there
in later ones. The first process writes it (the audit hook reports the write); a later process
could load it without writing anything, so the judge finds it in the namespace before that
process runs (candidate_files.h, HostCodeIn) and the result says native_code."""
import os
import shutil

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        target = os.path.join(os.environ["TORCH_EXTENSIONS_DIR"], "planted", "libplanted.so")
        if not os.path.exists(target):
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile("/bin/true", target)

    def forward(self, x):
        return torch.relu(x)
