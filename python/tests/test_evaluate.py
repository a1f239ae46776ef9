"""evaluate_batch, rewards and results on the CPU-mode stack, with the example candidates of
tiny_relu (examples/README.md says what each must get in CPU mode)."""

from __future__ import annotations

import hashlib
import io
import re

import pytest

import kforge
from conftest import TINY_TASKS, candidate_path
from stack import Stack

EXPECTED = {"correct": "ok", "wrong": "incorrect", "syntax_error": "compile_error",
            "raises": "runtime_error"}
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture(scope="module")
def verdict_batch(client, relu_task):
    """One batch of the four example candidates on GPU type "cpu": (batch id, results by
    candidate name, the progress output)."""
    names = list(EXPECTED)
    out = io.StringIO()
    stream = client.evaluate_batch(relu_task, [candidate_path("tiny_relu", n) for n in names],
                                   "cpu", progress=True, file=out)
    batch_id = stream.batch_id
    results = list(stream)
    return batch_id, {names[int(r.client_ref)]: r for r in results}, out.getvalue()


def test_each_candidate_gets_its_verdict(verdict_batch):
    _, results, _ = verdict_batch
    assert sorted(results) == sorted(EXPECTED)
    for name, verdict in EXPECTED.items():
        assert results[name].verdict == verdict, f"{name}: {results[name].reason}"


def test_a_correct_candidate_is_timed_on_the_cpu(verdict_batch, relu_task):
    batch_id, results, _ = verdict_batch
    ok = results["correct"]
    assert ok.speedup > 0
    assert ok.reference.median_ms > 0 and ok.candidate.median_ms > 0
    assert ok.speedup == pytest.approx(ok.reference.median_ms / ok.candidate.median_ms)
    assert ok.correctness.trials_passed == ok.correctness.trials > 0
    assert (ok.gpu_type, ok.device, ok.task_id, ok.batch_id) == ("cpu", "cpu", relu_task,
                                                                 batch_id)
    source = candidate_path("tiny_relu", "correct").read_text()
    assert ok.candidate_id == sha256(source)


def test_failures_say_why(verdict_batch):
    _, results, _ = verdict_batch
    assert results["wrong"].correctness.trials_passed < results["wrong"].correctness.trials
    assert results["syntax_error"].stage == "build"
    assert "SyntaxError" in results["syntax_error"].reason
    assert "RuntimeError" in results["raises"].reason
    for name in ("wrong", "syntax_error", "raises"):
        assert results[name].speedup is None


def test_the_batch_is_named_and_progress_is_printed(verdict_batch):
    batch_id, _, progress = verdict_batch
    assert UUID.fullmatch(batch_id)
    assert progress.splitlines()[-1] == (
        "batch [########################] 4/4 compile_error 1, incorrect 1, ok 1, "
        "runtime_error 1")


def test_attaching_to_a_finished_batch_yields_every_result_again(client, verdict_batch):
    batch_id, results, _ = verdict_batch
    again = list(client.attach_batch(batch_id))
    assert sorted(r.evaluation_id for r in again) == sorted(
        r.evaluation_id for r in results.values())
    assert {r.verdict for r in again} == set(EXPECTED.values())


def test_results_load_into_pandas(client, verdict_batch, relu_task):
    batch_id, results, _ = verdict_batch
    df = client.query_results(task_id=relu_task, limit=1000).to_pandas()
    mine = df[df["batch_id"] == batch_id].set_index("client_ref")
    assert len(mine) == 4
    assert sorted(mine["verdict"]) == sorted(EXPECTED.values())
    correct = mine.loc["0"]
    assert correct["speedup"] == pytest.approx(results["correct"].speedup)
    assert correct["reference_median_ms"] > 0
    assert mine["speedup"].isna().sum() == 3


def test_query_results_filters_by_verdict_and_candidate(client, verdict_batch, relu_task):
    _, results, _ = verdict_batch
    wrong = results["wrong"]
    found = client.query_results(task_id=relu_task, candidate_id=wrong.candidate_id,
                                 verdict="incorrect")
    assert wrong.evaluation_id in {r.evaluation_id for r in found}
    assert {r.verdict for r in found} == {"incorrect"}
    assert client.query_results(candidate_id=wrong.candidate_id, verdict="ok") == []


def test_rewards_come_back_in_input_order_averaged_over_gpu_types(client, relu_task):
    candidates = [candidate_path("tiny_relu", n) for n in ("wrong", "correct", "syntax_error")]
    rewards = client.rewards(relu_task, candidates, ["cpu", "cpu2"])
    assert rewards[0] == 0.0 and rewards[2] == 0.0
    assert rewards[1] > 0


def test_a_custom_reward_function_sees_each_evaluation(client, relu_task):
    seen = []

    def reward(evaluation: kforge.Evaluation) -> float:
        seen.append(evaluation.gpu_type)
        return 1.0 if evaluation.ok else -1.0

    sources = [candidate_path("tiny_relu", n).read_text() for n in ("correct", "raises")]
    assert client.rewards(relu_task, sources, "cpu2", reward=reward) == [1.0, -1.0]
    assert seen == ["cpu2", "cpu2"]


def test_a_stream_closed_early_can_be_attached_again(client, relu_task):
    correct = candidate_path("tiny_relu", "correct").read_text()
    candidates = [kforge.Candidate(correct + "\n# 1\n", "", "inferred"),
                  kforge.Candidate(correct + "\n# 2\n", "kernelbench", "given")]
    stream = client.evaluate_batch(relu_task, candidates, ["any"])
    first = next(stream)
    stream.close()
    everything = list(client.attach_batch(stream.batch_id))
    assert first.evaluation_id in {r.evaluation_id for r in everything}
    assert sorted(r.client_ref for r in everything) == ["given", "inferred"]
    assert {r.verdict for r in everything} == {"ok"}
    assert {r.dialect for r in everything} == {"kernelbench"}


@pytest.fixture
def restartable_stack(postgres):
    s = Stack(postgres, "sdk_restart", worker_gpu_types=("cpu",), fixed_port=True)
    yield s
    s.stop()


def test_the_stream_reattaches_after_the_coordinator_restarts(restartable_stack):
    """The coordinator is killed after the first result and started again on its address:
    the iterator re-attaches by batch id and yields every result exactly once."""
    stack = restartable_stack
    with kforge.Client(stack.address, timeout=30, token=stack.token,
                       tls_ca_file=stack.ca_file) as c:
        task = c.submit_task(TINY_TASKS / "tiny_relu.py")
        sources = [candidate_path("tiny_relu", "correct").read_text() + f"\n# {i}\n"
                   for i in range(3)]
        stream = c.evaluate_batch(task, sources, ["cpu"], reattach_timeout_s=60)
        results = [next(stream)]
        stack.coordinator.kill()
        stack.coordinator.start()
        results += list(stream)
    assert sorted(r.client_ref for r in results) == ["0", "1", "2"]
    assert len({r.evaluation_id for r in results}) == 3
    assert {r.verdict for r in results} == {"ok"}
