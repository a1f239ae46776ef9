"""A private kforge stack for the SDK's tests: a PostgreSQL 15 server made with initdb and
pg_ctl, and the real service binaries (kforge-coordinator, kforge-worker in CPU mode,
kforge-gateway) as child processes on loopback, each in its own process group.

Binaries come from $KFORGE_SDK_BUILD_DIR (set by the CTest entry; default: ../../build from
this file). Services bind port 0 where they may and report their ports in a ready file, as
tests/service_process.h does for the C++ tests. Everything lives under one temporary
directory that stop() removes.

Thread-safety: used by the test thread only.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import List, Optional

REPO = Path(os.environ.get("KFORGE_SDK_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BUILD = Path(os.environ.get("KFORGE_SDK_BUILD_DIR", REPO / "build"))
PG_BIN = Path(os.environ.get("KFORGE_PG_BIN_DIR", "/usr/lib/postgresql/15/bin"))
PG_SUPERUSER = "kforge"
READY_TIMEOUT_S = 60.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _service_env(extra: dict) -> dict:
    # The children read KFORGE_<FLAG> variables as flags: only the test's own are removed.
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFORGE_SDK_")}
    env.update(extra)
    return env


def make_pki(directory: Path) -> dict:
    """A test CA and a server certificate for 127.0.0.1 and localhost signed by it (openssl);
    the paths by role: ca, cert, key."""
    ca_key, ca = directory / "ca.key", directory / "ca.pem"
    key, csr, cert = directory / "server.key", directory / "server.csr", directory / "server.pem"
    ext = directory / "server.ext"
    ext.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
                   "extendedKeyUsage=serverAuth\n")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    for args in (["req", "-x509", *ec, "-keyout", ca_key, "-out", ca, "-days", "2",
                  "-subj", "/CN=kforge sdk test CA",
                  "-addext", "basicConstraints=critical,CA:TRUE",
                  "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
                 ["req", *ec, "-keyout", key, "-out", csr, "-subj", "/CN=localhost"],
                 ["x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
                  "-out", cert, "-days", "2", "-extfile", ext]):
        subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True,
                       timeout=60)
    return {"ca": str(ca), "cert": str(cert), "key": str(key)}


class Postgres:
    """A throw-away PostgreSQL server; as root it runs as the 'postgres' (or 'nobody') user,
    since initdb and postgres refuse root."""

    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="kforge-sdk-pg-", dir="/tmp"))
        self.port = 0
        self._user = None
        if os.geteuid() == 0:
            for name in ("postgres", "nobody"):
                try:
                    self._user = pwd.getpwnam(name)
                    break
                except KeyError:
                    continue
            os.chown(self.dir, self._user.pw_uid, self._user.pw_gid)
        # Password (SCRAM) authentication, as in a deployment; the password lives in the URLs.
        self.password = os.urandom(16).hex()
        pwfile = self.dir / "initdb.pw"
        pwfile.write_text(self.password + "\n")
        pwfile.chmod(0o600)
        if self._user is not None:
            os.chown(pwfile, self._user.pw_uid, self._user.pw_gid)
        try:
            self._run([PG_BIN / "initdb", "-D", self.dir / "data", "-U", PG_SUPERUSER,
                       "-A", "scram-sha-256", f"--pwfile={pwfile}", "-E", "UTF8", "--locale=C",
                       "--no-sync", "--no-instructions"])
        finally:
            pwfile.unlink()
        for attempt in range(5):  # a probed port can be taken before the server binds it
            self.port = free_port()
            try:
                self._run([PG_BIN / "pg_ctl", "start", "-D", self.dir / "data", "-l",
                           self.dir / "server.log", "-w", "-t", "60", "-s", "-o",
                           f"-k {self.dir} -h 127.0.0.1 -p {self.port} -c fsync=off "
                           "-c synchronous_commit=off -c full_page_writes=off"])
                return
            except RuntimeError:
                if attempt == 4:
                    raise

    def _run(self, argv: List) -> None:
        kwargs = {}
        if self._user is not None:
            kwargs = dict(user=self._user.pw_uid, group=self._user.pw_gid, extra_groups=[])
        env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "HOME": str(self.dir)}
        if getattr(self, "password", None):
            env["PGPASSWORD"] = self.password  # createdb's; never a service's environment
        r = subprocess.run([str(a) for a in argv], cwd=self.dir, capture_output=True, text=True,
                           timeout=120, env=env, **kwargs)
        if r.returncode != 0:
            log = self.dir / "server.log"
            raise RuntimeError(f"{argv[0]} failed ({r.returncode}): {r.stdout}{r.stderr}"
                               + (log.read_text()[-4000:] if log.exists() else ""))

    def create_database(self, name: str) -> str:
        self._run([PG_BIN / "createdb", "-h", "127.0.0.1", "-p", self.port, "-U", PG_SUPERUSER,
                   name])
        return f"postgresql://{PG_SUPERUSER}:{self.password}@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        try:
            self._run([PG_BIN / "pg_ctl", "stop", "-D", self.dir / "data", "-m", "immediate",
                       "-w", "-s"])
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


class Service:
    """One service binary as a child process, started and waited for with its ready file."""

    def __init__(self, binary: str, flags: List[str], workdir: Path, name: str,
                 grpc_address: str = "127.0.0.1:0", env: Optional[dict] = None):
        self.name = name
        self.env = env or {}
        self.binary = BUILD / binary
        self.flags = flags
        self.log_path = workdir / f"{name}.log"
        self.ready_path = workdir / f"{name}.ready.json"
        self.grpc_address = grpc_address
        self.process: Optional[subprocess.Popen] = None
        self.start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def start(self) -> None:
        self.ready_path.unlink(missing_ok=True)
        argv = [str(self.binary), *self.flags, f"--grpc_address={self.grpc_address}",
                "--metrics_address=127.0.0.1:0", f"--ready_file={self.ready_path}"]
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, env=_service_env(self.env),
                                            start_new_session=True)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.ready_path.exists():
                try:
                    self.grpc_port = json.loads(self.ready_path.read_text())["grpc_port"]
                    return
                except (ValueError, KeyError):
                    pass  # written but not complete yet
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.process.returncode}:\n"
                                   + self.log())
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"{self.name} not ready within {READY_TIMEOUT_S} s:\n" + self.log())

    def log(self) -> str:
        """The last lines of the service's log (about 8 kB)."""
        text = self.log_path.read_text(errors="replace")
        return text if len(text) <= 8000 else text[text.find("\n", len(text) - 8000) + 1:]

    def kill(self) -> None:
        """SIGKILL to the whole process group: no chance to clean up."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def send_sigterm(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)

    def wait_or_kill(self, limit_s: float = 30) -> None:
        """Waits for the exit; past `limit_s` kills the group."""
        if self.process is None:
            return
        try:
            self.process.wait(timeout=limit_s)
        except subprocess.TimeoutExpired:
            self.kill()


class Stack:
    """PostgreSQL database `database`, a coordinator, a gateway and one CPU-mode worker per
    entry of `worker_gpu_types` (each with `--gpu_type` set to it, so CPU workers stand in
    for pools of different GPU types)."""

    def __init__(self, pg: Postgres, database: str, worker_gpu_types=("cpu",),
                 coordinator_flags=(), fixed_port: bool = False):
        self.dir = Path(tempfile.mkdtemp(prefix=f"kforge-sdk-{database}-", dir="/tmp"))
        self.dir.chmod(0o755)  # the sandboxed evaluations run as 'nobody' and use cache/
        self.services: List[Service] = []
        try:
            self.database_url = pg.create_database(database)
            self.pki = make_pki(self.dir)
            self.ca_file = self.pki["ca"]
            gateway_token = self._secret("gateway.token", "kf_" + os.urandom(32).hex())
            self.gateway = self._add("llm_gateway/kforge-gateway",
                                     [f"--caller_token_file={gateway_token}"], "gateway")
            address = f"127.0.0.1:{free_port()}" if fixed_port else "127.0.0.1:0"
            self.admin_token_file = self._secret("admin.token", "kf_" + os.urandom(32).hex())
            self.coordinator = self._add(
                "coordinator/kforge-coordinator",
                [f"--database_url={self.database_url}", "--db_pool_size=6",
                 "--lease_timeout_s=5", "--heartbeat_interval_s=0.5",
                 f"--bootstrap_admin_token_file={self.admin_token_file}",
                 f"--gateway_token_file={gateway_token}",
                 # The pools the CPU workers stand in for, known before they register.
                 f"--gpu_pools={','.join(worker_gpu_types) or 'cpu'}", *coordinator_flags],
                "coordinator", grpc_address=address,
                env={"KFORGE_GATEWAY_ADDRESS": self.gateway.address})
            # What the tests' clients call with, and what the workers register with.
            self.token = self.create_token("sdk-tests", "researcher,trainer,operator")
            worker_token_file = self._secret("worker.token",
                                             self.create_token("sdk-worker", "worker"))
            for i, gpu_type in enumerate(worker_gpu_types):
                self._add("gpu_worker/kforge-worker",
                          [f"--coordinator={self.coordinator.address}", f"--gpu_type={gpu_type}",
                           "--device=cpu", "--slots=1", f"--cache_dir={self.dir}/cache",
                           f"--eval_binary={BUILD}/gpu_worker/eval/kforge-eval",
                           f"--token_file={worker_token_file}"],
                          f"worker{i}")
        except BaseException:
            self.stop()
            raise

    @property
    def address(self) -> str:
        return self.coordinator.address

    def _secret(self, name: str, value: str) -> str:
        path = self.dir / name
        path.write_text(value + "\n")
        path.chmod(0o600)
        return str(path)

    def create_token(self, principal: str, roles: str, tenant: str = "default") -> str:
        """A new API token, made with the CLI and the bootstrap admin token."""
        out = subprocess.run(
            [str(BUILD / "cli/kforge"), f"--coordinator={self.coordinator.address}",
             f"--token_file={self.admin_token_file}", f"--tls_ca_file={self.ca_file}",
             "token", "create",
             f"--principal={principal}", f"--tenant={tenant}", f"--roles={roles}"],
            capture_output=True, text=True, timeout=60, check=True)
        return out.stdout.strip()

    def _add(self, binary: str, flags: List[str], name: str, **kwargs) -> Service:
        tls = [f"--tls_cert_file={self.pki['cert']}", f"--tls_key_file={self.pki['key']}",
               f"--tls_ca_file={self.pki['ca']}"]
        service = Service(binary, tls + flags, self.dir, name, **kwargs)
        self.services.append(service)
        return service

    def logs(self) -> str:
        return "\n".join(f"--- {s.name} ---\n{s.log()}" for s in self.services)

    def stop(self) -> None:
        # The workers first (together), so that they drain while the coordinator still
        # answers; then the coordinator and the gateway.
        workers = [s for s in self.services if s.name.startswith("worker")]
        others = [s for s in self.services if s not in workers]
        for group in (workers, others):
            for service in group:
                service.send_sigterm()
            for service in group:
                service.wait_or_kill()
        shutil.rmtree(self.dir, ignore_errors=True)
