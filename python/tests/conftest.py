"""Fixtures: one PostgreSQL server and one kforge stack (coordinator, gateway, two CPU-mode
workers serving GPU types "cpu" and "cpu2") for the whole session, a Client on it, and the
tiny example tasks and candidates from examples/."""

from __future__ import annotations

from pathlib import Path

import pytest

import kforge
from stack import REPO, Postgres, Stack

TINY_TASKS = REPO / "examples" / "tasks" / "tiny"
CANDIDATES = REPO / "examples" / "candidates"


def candidate_path(task: str, name: str) -> Path:
    """examples/candidates/<task>/<name>.py"""
    return CANDIDATES / task / f"{name}.py"


@pytest.fixture(scope="session")
def postgres():
    pg = Postgres()
    yield pg
    pg.stop()


@pytest.fixture(scope="session")
def stack(postgres):
    s = Stack(postgres, "sdk", worker_gpu_types=("cpu", "cpu2"))
    yield s
    s.stop()


@pytest.fixture(scope="session")
def client(stack):
    with kforge.Client(stack.address, timeout=30, token=stack.token,
                       tls_ca_file=stack.ca_file) as c:
        c.wait_ready(timeout=30)
        yield c


@pytest.fixture(scope="session")
def relu_task(client) -> str:
    return client.submit_task(TINY_TASKS / "tiny_relu.py")


@pytest.fixture(autouse=True)
def stack_logs_on_failure(request):
    """Prints the services' logs under a failed test that used a stack."""
    yield
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        for name in ("stack", "restartable_stack"):
            if name in request.fixturenames:
                print(request.getfixturevalue(name).logs())


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, "rep_" + report.when, report)
