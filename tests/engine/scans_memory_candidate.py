# kforge: dialect=kernelbench
"""A candidate that scans its own memory for an earlier request's marker (the red team's
scans_server_memory.py; tests/engine/server_memory_test.py fills in the placeholders).

The fork server must not hand any evaluation what it held of another request: this process
descends from the evaluation process, which the server's template made before any request came
(serve.h). The markers are split in two halves here, searched for as one, so that this source
never holds a whole one; its own marker (in the comment below) is the control that the scan
sees what its process holds.
SELF: @SELF_MARK@
"""
import torch
import torch.nn as nn

VICTIM = (b"@VICTIM_HEAD@", b"@VICTIM_TAIL@")
SELF = (b"@SELF_HEAD@", b"@SELF_TAIL@")


def count(buf, halves):
    head, tail = halves
    n, i = 0, buf.find(head)
    while i >= 0:
        n += buf.startswith(tail, i + len(head))
        i = buf.find(head, i + 1)
    return n


def scan():
    found = {"victim": 0, "self": 0}
    with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
        for line in maps:
            parts = line.split()
            if not parts[1].startswith("rw"):
                continue
            lo, hi = (int(v, 16) for v in parts[0].split("-"))
            if hi - lo > (1 << 30):
                continue
            try:
                mem.seek(lo)
                buf = mem.read(hi - lo)
            except (OSError, ValueError):
                continue
            found["victim"] += count(buf, VICTIM)
            found["self"] += count(buf, SELF)
    return found


FOUND = scan()
print(f"KFORGE_SCAN victim={FOUND['victim']} self={FOUND['self']}", flush=True)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
