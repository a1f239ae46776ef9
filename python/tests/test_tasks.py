"""SubmitTask through the SDK: good files, malformed sources, bad options."""

from __future__ import annotations

import hashlib

import pytest

import kforge
from conftest import TINY_TASKS


def test_submit_task_returns_the_content_address_and_is_idempotent(client):
    path = TINY_TASKS / "tiny_add_scale.py"
    task_id = client.submit_task(path)
    assert task_id == hashlib.sha256(path.read_bytes()).hexdigest()
    again = client.submit_task_source(path.read_text(), name="renamed")
    assert again == kforge.SubmittedTask(task_id=task_id, created=False)


def test_a_new_source_is_created(client):
    source = (TINY_TASKS / "tiny_relu.py").read_text() + "\n# a variant for this test\n"
    first = client.submit_task_source(source, name="variant", precision="fp32", atol=1e-3)
    assert first.created
    assert first.task_id == hashlib.sha256(source.encode()).hexdigest()


def test_a_malformed_task_is_an_invalid_argument_with_the_servers_reason(client):
    with pytest.raises(kforge.InvalidArgumentError,
                       match="not a KernelBench task: missing top-level class Model") as info:
        client.submit_task_source("print('not a task')\n", name="broken")
    assert info.value.code.name == "INVALID_ARGUMENT"


def test_an_unknown_precision_is_an_invalid_argument(client):
    with pytest.raises(kforge.InvalidArgumentError, match="fp32, fp16 or bf16, not 'fp8'"):
        client.submit_task_source((TINY_TASKS / "tiny_relu.py").read_text(), precision="fp8")


def test_a_missing_file_raises_before_any_rpc(client, tmp_path):
    with pytest.raises(FileNotFoundError):
        client.submit_task(tmp_path / "absent.py")
