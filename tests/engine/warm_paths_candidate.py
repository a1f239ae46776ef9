"""The candidate of warm_imports_test.py, run twice through one fork server. It checks, in its
own process, that the server's warm imports are there (torch.compile's modules already
loaded), that its cwd (where it writes) is not on the import path it shares with the judge,
that every path the warm imports keep from TMPDIR, HOME or the cwd lies in this request's own
directory, and that nothing an earlier request left there is visible; then it leaves a file
and directories (a tree deeper than PATH_MAX, one created unreadable), for the next request
not to see (it may not chmod them). Any failed check
raises: the evaluation is then not `ok`, and the message says which."""
import os
import sys
import tempfile

import torch
import torch.nn as nn


def check_paths():
    here = os.getcwd()
    server_tmp = os.path.dirname(here)  # the request directory lies in the server's TMPDIR
    assert "torch._inductor.compile_fx" in sys.modules, "no warm imports in this process"
    # The judge shares this interpreter's import path: a module written here must not be one.
    for entry in sys.path:
        resolved = os.path.abspath(entry)
        assert entry and resolved != here and not resolved.startswith(here + os.sep), \
            f"the cwd or a place in it is on sys.path ({entry!r})"
    for left in ("left_by_earlier", "left"):
        assert not os.path.exists(os.path.join(here, left)), f"an earlier request's {left}"
    import torch._dynamo.config as dynamo_config
    import torch._inductor.codecache as codecache
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir
    named = {"tempfile": tempfile.gettempdir(), "precompiled headers": codecache._HEADER_DIR,
             "dynamo debug": dynamo_config.debug_dir_root, "inductor": default_cache_dir()}
    try:
        from triton import knobs
        named["triton home"] = knobs.cache.home_dir
    except ImportError:
        pass
    for what, path in named.items():
        assert path.startswith(here + os.sep) or path == here, f"{what} at {path}, not in {here}"
    # Any module global of torch's or Triton's that names a place in the server's TMPDIR.
    for name, module in list(sys.modules.items()):
        if not name.startswith(("torch", "triton")) or module is None:
            continue
        for key, value in list(vars(module).items()):
            if isinstance(value, str) and server_tmp in value and not value.startswith(here):
                raise AssertionError(f"{name}.{key} = {value}, not in {here}")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        check_paths()
        os.makedirs(os.path.join(os.getcwd(), "left", "inside"))
        open(os.path.join(os.getcwd(), "left_by_earlier"), "w").close()
        # What the removal between requests once left behind (session 26's review): a tree
        # deeper than PATH_MAX, made relative to a descriptor, and a directory created without
        # read permission, a file inside it. Left, the server would stop after its answer.
        fd = os.open(os.path.join(os.getcwd(), "left"), os.O_RDONLY)
        for _ in range(2500):  # 2500 x "dd/": 7500 bytes
            os.mkdir("dd", dir_fd=fd)
            child = os.open("dd", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = child
        os.close(fd)
        os.mkdir(os.path.join(os.getcwd(), "left", "unlistable"), 0o300)
        open(os.path.join(os.getcwd(), "left", "unlistable", "f"), "w").close()

    def forward(self, x):
        return torch.relu(x)
