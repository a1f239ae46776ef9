# kforge: dialect=kernelbench
"""A candidate that leaves a file in /dev/shm and reports whether an earlier evaluation's is
there (the red team's probe_writes.py; tests/engine/server_memory_test.py fills in the name).
A file left there would be a channel from one evaluation of a fork server to the next."""
import os

import torch
import torch.nn as nn

PLANT = "/dev/shm/@PLANT@"
FOUND = any(os.path.lexists(PLANT + end) for end in ("", "-dir", "-link"))
os.makedirs(PLANT + "-dir/sub", exist_ok=True)
if not os.path.lexists(PLANT + "-link"):
    os.symlink("@TARGET@", PLANT + "-link")  # a directory of the test's: it must stay whole
with open(PLANT, "w") as f:
    f.write("planted by a candidate\n")
print(f"KFORGE_SHM found={int(FOUND)}", flush=True)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
