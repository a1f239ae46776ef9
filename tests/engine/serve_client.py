"""A standard-library client of `kforge-eval --serve stdio --answer json` (the fork server).

Encodes EvalRequest by hand (proto/kforge/v1/eval.proto field numbers), sends length-prefixed
frames on the server's stdin and reads the JSON answers from its stdout. Used by run_cases.py
--serve, serve_test.py and the engine benchmark.
"""
import json
import os
import struct
import subprocess

DIALECTS = {"kernelbench": 1, "nvrtc": 2, "cpp": 3}


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _key(field, wire):
    return _varint(field << 3 | wire)


def _bytes(field, data):
    if isinstance(data, str):
        data = data.encode()
    return _key(field, 2) + _varint(len(data)) + data


def _double(field, x):
    return _key(field, 1) + struct.pack("<d", x)


def encode_request(task_source, candidate_source, device="cuda", dialect="", seed=0, arch="",
                   task_name="", trials=0, build_s=0, correctness_s=0, timing_s=0,
                   min_samples=0, max_rel_stderr=0.0, build_only=False, keep_samples=False,
                   preroll_ms=0.0, timing_clock="", policy="", shared_reference_call_ms=(),
                   numerics="", atol=0.0, rtol=0.0):
    """EvalRequest bytes (fields 1-18, 20 and 23 of eval.proto)."""
    msg = _bytes(1, task_source) + _bytes(2, candidate_source)
    if dialect:
        msg += _key(3, 0) + _varint(DIALECTS[dialect])
    msg += _bytes(4, device)
    if arch:
        msg += _bytes(5, arch)
    if seed:
        msg += _key(6, 0) + _varint(seed)
    if trials:
        msg += _key(7, 0) + _varint(trials)
    if atol:
        msg += _double(8, atol)
    if rtol:
        msg += _double(9, rtol)
    limits = b""
    for field, value in ((1, build_s), (2, correctness_s), (3, timing_s)):
        if value:
            limits += _double(field, value)
    if limits:
        msg += _bytes(10, limits)
    if min_samples:
        msg += _key(11, 0) + _varint(min_samples)
    if max_rel_stderr:
        msg += _double(12, max_rel_stderr)
    if task_name:
        msg += _bytes(13, task_name)
    if build_only:
        msg += _key(14, 0) + _varint(1)
    if keep_samples:
        msg += _key(15, 0) + _varint(1)
    if preroll_ms:
        msg += _double(16, preroll_ms)
    if timing_clock:
        msg += _bytes(17, timing_clock)
    if policy:
        msg += _bytes(18, policy)
    if shared_reference_call_ms:  # packed repeated double
        msg += _bytes(20, b"".join(struct.pack("<d", x) for x in shared_reference_call_ms))
    if numerics:
        msg += _bytes(23, numerics)
    return msg


class Server:
    """One `kforge-eval --serve stdio --answer json` process; evaluate() is one request."""

    def __init__(self, eval_binary, cache_dir="", env=None, stderr=None, gpu_lock="",
                 gpu_wait_s=0, user=None, prefix=(), args=()):
        """gpu_lock: the path of a GPU's lock file, for GPU turns (supervisor.h): the server
        gets a descriptor of its own open file description of it. prefix: a command the server
        runs under (unshare ...); args: more of the server's flags."""
        cmd = [*prefix, eval_binary, "--serve", "stdio", "--answer", "json", *args]
        if cache_dir:
            cmd += ["--cache-dir", cache_dir]
        lock_fd = -1
        if gpu_lock:
            lock_fd = os.open(gpu_lock, os.O_RDONLY | os.O_CREAT, 0o644)
            cmd += ["--gpu-lock-fd", str(lock_fd)]
            if gpu_wait_s:
                cmd += ["--gpu-wait-s", str(gpu_wait_s)]
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=stderr, env=env, user=user,
                                         pass_fds=(lock_fd,) if lock_fd >= 0 else ())
        finally:
            if lock_fd >= 0:
                os.close(lock_fd)

    def evaluate(self, **request):
        data = encode_request(**request)
        self.proc.stdin.write(struct.pack("<I", len(data)) + data)
        self.proc.stdin.flush()
        head = self.proc.stdout.read(4)
        if len(head) != 4:
            raise EOFError(f"the server ended (status {self.proc.poll()})")
        (n,) = struct.unpack("<I", head)
        return json.loads(self.proc.stdout.read(n))

    def close(self):
        """Ends the server by closing its input; returns its exit status."""
        self.proc.stdin.close()
        return self.proc.wait(timeout=60)
