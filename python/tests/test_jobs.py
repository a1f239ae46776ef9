"""Optimisation jobs through the SDK: submit, watch with a progress bar, get, list, cancel,
best candidates. The gateway's offline proposer generates the candidates (no LLM); in CPU
mode the generated NVRTC candidates cannot run, so the assertions are about the job's life
and the records, not about speedups."""

from __future__ import annotations

import hashlib
import io

import pytest

import kforge
from conftest import candidate_path

SEEDS = [candidate_path("tiny_relu", "nvrtc_relu"), candidate_path("tiny_relu", "correct")]


@pytest.fixture(scope="module")
def finished_job(client, relu_task):
    """A two-round job on GPU type "cpu", watched to its end: (job id, final Job, events,
    progress output)."""
    job_id = client.submit_job(relu_task, ["cpu"], strategy="contrastive",
                               budget=kforge.Budget(max_rounds=2, max_candidates=4),
                               llm={"provider": "offline"}, seed=7, seed_candidates=SEEDS)
    events = list(client.job_events(job_id))
    out = io.StringIO()
    job = client.watch_job(job_id, file=out)
    return job_id, job, events, out.getvalue()


def test_a_job_runs_to_success_within_its_budget(finished_job, relu_task):
    job_id, job, _, _ = finished_job
    assert job.job_id == job_id and job.task_id == relu_task
    assert job.state == "succeeded", job.error
    assert job.finished
    assert job.gpu_types == ["cpu"] and job.strategy == "contrastive"
    assert 1 <= job.rounds_done <= 2
    assert job.candidates_evaluated >= 1
    assert job.stop_reason in ("max_rounds", "max_candidates", "no_new_candidates")


def test_watching_streams_rounds_results_and_the_end(finished_job):
    job_id, job, events, _ = finished_job
    kinds = [e.kind for e in events]
    assert kinds[0] == "round_started"
    rounds = [e.round for e in events if e.kind == "round_started"]
    assert rounds == sorted(rounds) and rounds[-1] <= job.rounds_done
    assert "result" in kinds
    assert kinds[-1] == "finished" and events[-1].state == job.state
    assert {e.job_id for e in events} == {job_id}
    for e in events:
        if e.kind == "result":
            assert e.result.task_id == job.task_id and e.result.verdict


def test_the_progress_bar_ends_at_the_rounds_done(finished_job):
    job_id, job, _, progress = finished_job
    last = progress.splitlines()[-1]
    assert last.startswith(f"job {job_id[:8]} [")
    assert f"] {job.rounds_done}/" in last and "succeeded" in last


def test_get_and_list_jobs(client, finished_job, relu_task):
    job_id, job, _, _ = finished_job
    assert client.get_job(job_id) == job
    listed = client.list_jobs(task_id=relu_task)
    assert job_id in [j.job_id for j in listed]
    assert listed.to_pandas().set_index("job_id").loc[job_id, "state"] == "succeeded"


def test_best_candidates_carry_their_sources(client, finished_job, relu_task):
    job_id, job, _, _ = finished_job
    best = client.get_best_candidates(relu_task, job_id=job_id)
    assert [b.candidate_id for b in best] == [b.candidate_id for b in job.best]
    for b in best:
        assert b.gpu_type == "cpu" and b.speedup > 0
        assert hashlib.sha256(b.source.encode()).hexdigest() == b.candidate_id


def test_rollouts_pair_completions_with_clipped_rewards(client, finished_job):
    job_id, job, _, _ = finished_job
    rollouts = client.export_rollouts(job_id)
    assert rollouts, "the offline proposer's completions are exported"
    for r in rollouts:
        assert r.job_id == job_id and r.round >= 1 and r.gpu_type == "cpu"
        assert r.candidate_id or r.parse_error
        assert -1.5 <= r.reward <= 1.5
        assert r.raw_reward == (r.speedup if r.verdict == "ok" else 0.0)
    df = rollouts.to_pandas()
    assert {"prompt", "completion", "reward", "verdict"} <= set(df.columns)


def test_trajectory_is_in_finishing_order_and_never_falls(client, finished_job):
    job_id, job, _, _ = finished_job
    points = client.job_trajectory(job_id)
    assert len(points) == job.candidates_evaluated
    best = [p.best_so_far for p in points]
    assert best == sorted(best)
    assert points[0].round == 0
    df = points.to_pandas()
    assert {"finished_at", "best_so_far", "speedup"} <= set(df.columns)


def test_a_cancelled_job_ends_cancelled(client, relu_task):
    job_id = client.submit_job(relu_task, "cpu", budget={"max_rounds": 50},
                               seed_candidates=SEEDS)
    assert client.cancel_job(job_id) == "cancelled"
    job = client.watch_job(job_id, progress=False)
    assert job.state == "cancelled" and job.finished


def test_unknown_jobs_are_not_found(client):
    with pytest.raises(kforge.NotFoundError):
        client.get_job("00000000-0000-0000-0000-000000000000")
    with pytest.raises(kforge.NotFoundError):
        client.cancel_job("00000000-0000-0000-0000-000000000000")


def test_a_job_on_an_unknown_task_is_refused(client):
    with pytest.raises(kforge.NotFoundError):
        client.submit_job("0" * 64, ["cpu"])


def test_malformed_jobs_are_invalid_arguments(client, relu_task):
    with pytest.raises(kforge.InvalidArgumentError, match="gpu_types must name at least one"):
        client.submit_job(relu_task, [])
    with pytest.raises(kforge.InvalidArgumentError,
                       match="llm.provider must be offline, openai or anthropic, not 'oracle'"):
        client.submit_job(relu_task, "cpu", llm=kforge.LlmSettings(provider="oracle"))
    with pytest.raises(kforge.InvalidArgumentError, match="budget.max_rounds must be at most"):
        client.submit_job(relu_task, "cpu", budget={"max_rounds": 100000})
