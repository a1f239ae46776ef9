#!/usr/bin/env python3
"""Can the worker's sandbox take an IPC namespace of its own on a GPU? (docs/security.md)

The sandbox unshares the network, mount and PID namespaces but not the IPC namespace, so a
candidate's System V segments and message queues outlive its evaluation. Containers are told
to share the host's IPC namespace for CUDA IPC and MPS; kforge's judge and candidate share
their inputs through CUDA IPC (shared_slots.cc) and may run under MPS. This probe asks the
GPU, as root, per configuration (MPS off or on; host IPC namespace or a new one entered before
CUDA starts, as the sandbox would): does a CUDA tensor still cross from one process to a
spawned one, with the right contents, do a cuDNN convolution, a cuBLAS matmul and a CUPTI
activity trace run, and does the client reach the MPS server? A third
configuration keeps the host's namespace but refuses every System V IPC and POSIX message-queue
call with EPERM, as a seccomp filter in the candidate process would (inherited by the spawned
reader). It also lists the System V objects each configuration's processes leave, in their
namespace and the host's (does CUDA or MPS use any?). One JSON line per configuration, then a
verdict.

  ipc_namespace_probe.py [--mps-control nvidia-cuda-mps-control]
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time


def sysv_objects():
    """System V objects of the reading process's IPC namespace: {kind: count}."""
    found = {}
    for kind in ("shm", "sem", "msg"):
        try:
            with open(f"/proc/sysvipc/{kind}") as f:
                found[kind] = max(0, len(f.read().splitlines()) - 1)
        except OSError as e:
            found[kind] = f"unreadable: {e.strerror}"
    return found


def reader(queue, answer):
    t = queue.get()  # unpickling maps the tensor through its CUDA IPC handle
    answer.put(float(t.double().sum()))


# x86-64: shmget shmat shmctl semget semop semctl msgget msgsnd msgrcv msgctl semtimedop
# mq_open mq_unlink mq_timedsend mq_timedreceive mq_notify mq_getsetattr.
SYSV_AND_MQ = (29, 30, 31, 64, 65, 66, 68, 69, 70, 71, 220, 240, 241, 242, 243, 244, 245)


def deny_sysv_ipc():
    """A seccomp filter: the calls above fail with EPERM. Returns an error string or None."""
    import ctypes
    import struct
    ld_nr, jeq, ret = 0x20, 0x15, 0x06  # BPF_LD|BPF_W|BPF_ABS, BPF_JMP|BPF_JEQ|BPF_K, BPF_RET
    prog = [struct.pack("HBBI", ld_nr, 0, 0, 0)]  # seccomp_data.nr
    for nr in SYSV_AND_MQ:
        prog.append(struct.pack("HBBI", jeq, 0, 1, nr))
        prog.append(struct.pack("HBBI", ret, 0, 0, 0x00050000 | 1))  # SECCOMP_RET_ERRNO|EPERM
    prog.append(struct.pack("HBBI", ret, 0, 0, 0x7FFF0000))  # SECCOMP_RET_ALLOW
    code = ctypes.create_string_buffer(b"".join(prog))

    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    libc = ctypes.CDLL(None, use_errno=True)
    fprog = Fprog(len(prog), ctypes.cast(code, ctypes.c_void_p))
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        return f"no_new_privs: {os.strerror(ctypes.get_errno())}"
    if libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:  # PR_SET_SECCOMP, FILTER
        return f"seccomp: {os.strerror(ctypes.get_errno())}"
    # The filter's proof: shmget must now fail with EPERM (and leaves nothing if it did not).
    made = libc.shmget(0, 4096, 0o1000 | 0o600)  # IPC_PRIVATE, IPC_CREAT
    if made >= 0:
        libc.shmctl(made, 0, None)  # IPC_RMID
        return "the filter did not refuse shmget"
    if ctypes.get_errno() != 1:
        return f"shmget failed with {os.strerror(ctypes.get_errno())}, not EPERM"
    return None


def library_paths():
    """What the candidate process runs besides CUDA IPC, each under the configuration: a cuDNN
    convolution, a cuBLAS matmul and a CUPTI activity trace (torch.profiler, as the device
    clock traces in the candidate process). {name: "ok" or the error}."""
    import torch
    import torch.nn.functional as F
    found = {}

    def attempt(name, fn):
        try:
            found[name] = fn()
        except Exception as e:  # any failure is the finding
            found[name] = f"{type(e).__name__}: {e}"[:300]

    x = torch.randn(8, 16, 32, 32, device="cuda")
    w = torch.randn(32, 16, 3, 3, device="cuda")
    a = torch.randn(512, 512, device="cuda")
    attempt("cudnn_conv", lambda: f"ok {float(F.conv2d(x, w).abs().sum()) > 0}")
    attempt("cublas_matmul", lambda: f"ok {float((a @ a).abs().sum()) > 0}")

    def traced():
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            (a @ a).sum().item()
        kernels = [e for e in prof.events() if e.device_type.name == "CUDA"]
        return f"ok {len(kernels)} device events"
    attempt("cupti_trace", traced)
    return found


def child(mode):
    """One configuration: a new IPC namespace or the filter, then CUDA IPC to a reader."""
    new_ns = mode == "new"
    result = {"new_ipc_namespace": new_ns, "sysv_denied": mode == "deny-sysv"}
    if mode == "deny-sysv":
        failed = deny_sysv_ipc()
        if failed:
            result["error"] = failed
            print(json.dumps(result), flush=True)
            return
    if new_ns:
        import ctypes
        if ctypes.CDLL(None, use_errno=True).unshare(0x08000000) != 0:  # CLONE_NEWIPC
            result["error"] = f"unshare: {os.strerror(ctypes.get_errno())}"
            print(json.dumps(result), flush=True)
            return
    result["ipc_ns"] = os.readlink("/proc/self/ns/ipc")
    try:
        import torch
        import torch.multiprocessing as mp
        x = torch.arange(1 << 20, device="cuda", dtype=torch.float32)
        torch.cuda.synchronize()
        ctx = mp.get_context("spawn")
        queue, answer = ctx.Queue(), ctx.Queue()
        p = ctx.Process(target=reader, args=(queue, answer))
        p.start()
        queue.put(x)
        got = answer.get(timeout=90)
        p.join(timeout=30)
        result["ipc_sum_ok"] = got == float(x.double().sum())
        result["reader_exit"] = p.exitcode
        result["libraries"] = library_paths()
    except Exception as e:  # any failure is the finding
        result["error"] = f"{type(e).__name__}: {e}"[:400]
    result["sysv_in_own_namespace"] = sysv_objects()
    print(json.dumps(result), flush=True)


def mps_servers(control, env):
    r = subprocess.run([control], input="get_server_list\n", capture_output=True, text=True,
                       env=env, timeout=20)
    return r.stdout.split()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", choices=["host", "new", "deny-sysv"])
    ap.add_argument("--mps-control", default="nvidia-cuda-mps-control")
    args = ap.parse_args()
    if platform.machine() != "x86_64":
        sys.exit("ipc_namespace_probe.py: the filter's system call numbers are x86-64's")
    if args.child:
        return child(args.child)
    rows = []
    for mps in (False, True):
        for ns in ("host", "new", "deny-sysv"):  # the IPC namespace, or the filter
            # A daemon per configuration: a server listed after the run was started for it.
            env = dict(os.environ)
            if mps:
                pipe = "/tmp/kforge-ipcns-mps"
                os.makedirs(pipe, exist_ok=True)
                env.update(CUDA_MPS_PIPE_DIRECTORY=pipe, CUDA_MPS_LOG_DIRECTORY=pipe)
                if subprocess.run([args.mps_control, "-d"], env=env).returncode != 0:
                    print(json.dumps({"mps": True, "error": "the MPS daemon did not start"}))
                    continue
                time.sleep(1)
            before = sysv_objects()
            t0 = time.time()
            r = subprocess.run([sys.executable, __file__, "--child", ns], env=env,
                               capture_output=True, text=True, timeout=180)
            lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
            row = json.loads(lines[-1]) if lines else {"error": r.stderr[-400:]}
            row.update(configuration=ns, mps=mps, rc=r.returncode,
                       wall_s=round(time.time() - t0, 1), sysv_host_before=before,
                       sysv_host_after=sysv_objects())
            if mps:
                row["mps_servers_after"] = mps_servers(args.mps_control, env)
                subprocess.run([args.mps_control], input="quit\n", text=True, env=env,
                               timeout=30)
                time.sleep(2)
            rows.append(row)
            print(json.dumps(row), flush=True)
    verdict = {"configurations": len(rows)}
    for mode in ("new", "deny-sysv"):
        these = [r for r in rows if r["configuration"] == mode]
        verdict[f"{mode}: keeps CUDA IPC"] = (len(these) == 2 and
                                              all(r.get("ipc_sum_ok") for r in these))
        verdict[f"{mode}: cuDNN, cuBLAS and CUPTI work"] = (len(these) == 2 and all(
            str(v).startswith("ok") for r in these for v in r.get("libraries", {"-": ""}).values()))
        verdict[f"{mode}: its client started an MPS server"] = (
            len(these) == 2 and all(r.get("mps_servers_after") for r in these if r["mps"]))
    print(json.dumps(verdict), flush=True)


if __name__ == "__main__":
    main()
