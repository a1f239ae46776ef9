"""What the engine's script tests share: the checkout's root, the tiny ReLU task, and `check`,
which prints PASS/FAIL for a named condition and exits 1 on the first failure."""
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TINY_RELU_TASK = os.path.join(ROOT, "examples", "tasks", "tiny", "tiny_relu.py")


def check(cond, what):
    print(f"{'PASS' if cond else 'FAIL'} {what}", flush=True)
    if not cond:
        sys.exit(1)
