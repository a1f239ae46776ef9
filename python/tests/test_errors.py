"""gRPC errors arrive as kforge exceptions with the server's message."""

from __future__ import annotations

import pytest

import kforge
from conftest import TINY_TASKS, candidate_path
from stack import Stack, free_port


def test_an_unknown_task_is_not_found(client):
    with pytest.raises(kforge.NotFoundError,
                       match=r"no task 0000 \(submit it first with SubmitTask\)"):
        list(client.evaluate_batch("0000", ["class ModelNew: pass"], ["any"]))


def test_an_empty_batch_is_an_invalid_argument(client, relu_task):
    with pytest.raises(kforge.InvalidArgumentError, match="candidates must not be empty"):
        list(client.evaluate_batch(relu_task, [], ["any"]))


def test_an_unknown_batch_is_not_found(client):
    with pytest.raises(kforge.NotFoundError):
        list(client.attach_batch("00000000-0000-0000-0000-000000000000"))


def test_an_unknown_verdict_filter_is_refused_locally(client):
    with pytest.raises(ValueError, match="unknown Verdict 'fast'"):
        client.query_results(verdict="fast")


def test_a_closed_port_is_unavailable():
    with kforge.Client(f"127.0.0.1:{free_port()}", timeout=5) as c:
        with pytest.raises(kforge.UnavailableError) as info:
            c.list_workers()
        assert info.value.code.name == "UNAVAILABLE"
        with pytest.raises(kforge.UnavailableError, match="cannot connect"):
            c.wait_ready(timeout=0.5)


def test_a_full_queue_is_resource_exhausted(postgres):
    """A coordinator whose queue holds at most 2 evaluations refuses a batch of 3."""
    small = Stack(postgres, "sdk_small_queue", worker_gpu_types=(),
                  coordinator_flags=["--max_queue_depth=2"])
    try:
        with kforge.Client(small.address, timeout=30, token=small.token,
                           tls_ca_file=small.ca_file) as c:
            task = c.submit_task(TINY_TASKS / "tiny_relu.py")
            source = candidate_path("tiny_relu", "correct").read_text()
            with pytest.raises(kforge.ResourceExhaustedError,
                               match="3 more would pass its limit of 2; retry later"):
                list(c.evaluate_batch(task, [source] * 3, ["any"]))
            assert c.query_results(task_id=task) == []
    finally:
        small.stop()


def test_credentials_are_checked_with_reasons(stack):
    """No token, a revoked one, or one without the role: the error says which."""
    with kforge.Client(stack.address, timeout=30, token="",
                       tls_ca_file=stack.ca_file) as anonymous:
        with pytest.raises(kforge.UnauthenticatedError, match="no credentials"):
            anonymous.list_workers()
    trainer = stack.create_token("sdk-trainer", "trainer")
    with kforge.Client(stack.address, timeout=30, token=trainer,
                       tls_ca_file=stack.ca_file) as c:
        with pytest.raises(kforge.PermissionDeniedError,
                           match=r"sdk-trainer \(roles: trainer\) may not list workers: it "
                                 r"needs the operator role"):
            c.list_workers()


def test_the_config_file_names_the_coordinator_token_and_ca(stack, tmp_path, monkeypatch):
    """Like the CLI: settings from $KFORGE_CONFIG when neither arguments nor the environment
    give them."""
    (tmp_path / "token").write_text(stack.token + "\n")
    config = tmp_path / "config"
    config.write_text(f"# kforge\ncoordinator = {stack.address}\n"
                      f"token_file = {tmp_path / 'token'}\ntls_ca_file = {stack.ca_file}\n")
    monkeypatch.setenv("KFORGE_CONFIG", str(config))
    with kforge.Client(timeout=30) as c:
        assert c.address == stack.address
        assert len(c.list_workers()) >= 1
    config.write_text("not a setting\n")
    with pytest.raises(ValueError, match="want `flag = value`"):
        kforge.Client(timeout=30)
