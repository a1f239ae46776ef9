"""What the engine's script tests share: the checkout's root, the tiny ReLU task, `check`,
which prints PASS/FAIL for a named condition and exits 1 on the first failure, and
`load_script`, which imports one of scripts/ as a module, and `cache_namespace`."""
import hashlib
import importlib.util
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TINY_RELU_TASK = os.path.join(ROOT, "examples", "tasks", "tiny", "tiny_relu.py")


def check(cond, what):
    print(f"{'PASS' if cond else 'FAIL'} {what}", flush=True)
    if not cond:
        sys.exit(1)


def load_script(name):
    """scripts/<name>.py, imported as the module `name`."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "scripts", name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def cache_namespace(cache, candidate, task=TINY_RELU_TASK):
    """A task and candidate's build-cache namespace (gpu_worker/eval/candidate_files.h):
    <cache>/c/<sha256 of "<sha256 of the task>/<sha256 of the candidate>">, from their files."""
    sha = lambda path: hashlib.sha256(open(path, "rb").read()).hexdigest()  # noqa: E731
    return os.path.join(cache, "c", hashlib.sha256(f"{sha(task)}/{sha(candidate)}".encode()).hexdigest())
