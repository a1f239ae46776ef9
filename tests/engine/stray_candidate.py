# kforge: dialect=kernelbench
# A tiny_relu candidate that leaves a process behind (gpu_worker/worker_turns_test.cc): on its
# first call it forks a child that moves to a process group of its own (out of reach of the
# evaluation's group kill), names itself kf-stray (/proc/PID/comm) and sleeps. The supervisor
# kills such strays one by one; the test gives it too little time to see this one gone
# (KFORGE_STRAYS_WAIT_S), standing for a process it cannot end: a chain of forks that always
# forks the next before it is killed, or one stuck in the driver. It answers wrongly, so that
# the evaluation ends in its correctness stage: an evaluation that reaches the end of its timing
# ends the candidate's processes itself first (engine.cc, ReferenceAlone), and then the
# supervisor finds none.
import os
import time

import torch
import torch.nn as nn


def leave_a_stray():
    started, said = os.pipe()
    if os.fork() != 0:
        os.read(started, 1)  # the stray has printed: the evaluation may end now
        return
    try:
        os.setpgid(0, 0)
        with open("/proc/self/comm", "w") as f:
            f.write("kf-stray")
        print("STRAY started", flush=True)
        os.write(said, b"s")
        time.sleep(120)
    finally:
        os._exit(0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.started = False

    def forward(self, x):
        if not self.started:
            self.started = True
            leave_a_stray()
        return torch.relu(x) + 1
