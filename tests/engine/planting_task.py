"""A task (tiny_relu's) whose own code plants build-cache entries: the task's code runs in the
candidate's process too, with that process's TORCH_EXTENSIONS_DIR, so a task of a tenant's
choosing paired with someone else's candidate tries to leave a failed-build marker and an
extension for that candidate (cache_isolation_test.py checks they land in the namespace of this
task and that candidate only)."""
import os

import torch
import torch.nn as nn

_extensions = os.environ.get("TORCH_EXTENSIONS_DIR")
if _extensions:
    for _rel, _text in ((".kforge_failed_builds/planted-by-task",
                         "Error building extension 'relu': relu.cu(1): error: planted"),
                        ("relu/planted-by-task.py", "raise SystemExit('planted')")):
        try:
            os.makedirs(os.path.dirname(os.path.join(_extensions, _rel)), exist_ok=True)
            with open(os.path.join(_extensions, _rel), "w") as _f:
                _f.write(_text)
        except OSError:
            pass


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs():
    return [torch.randn(4096)]


def get_init_inputs():
    return []
