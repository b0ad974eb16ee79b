"""The durable job queue (claims, leases, recovery, cancellation) and each job kind against the engine."""

from __future__ import annotations

import importlib
import json
import sqlite3
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import spade_lsp.jobs
from spade_lsp._progress import Progress
from spade_lsp.errors import InputError, JobCancelled
from spade_lsp.jobs import JOB_KINDS, JobParams, JobParamsError, run_job, spec, validate_params
from spade_lsp.store import MAX_ATTEMPTS, Job, JobNotFoundError, JobQueue, JobStateError, Store
from spade_lsp.workspace import Workspace

PROMPT = 'Write a product blurb for {product}.\nKeep it not exceeding 12 words.\nNever use the word "cheap".\n'
EXAMPLES = [
    {"id": "g1", "inputs": {"product": "Kettle"}, "output": "A lovely kettle. Great for tea!", "label": "good"},
    {"id": "b1", "inputs": {"product": "Mug"}, "output": "A cheap mug.", "label": "bad"},
    {"id": "b2", "inputs": {"product": "Shoe"}, "output": " ".join(["word"] * 20), "label": "bad"},
]


@pytest.fixture
def queue(workspace_dir: Path) -> Iterator[JobQueue]:
    with Store.open(workspace_dir) as store:
        yield JobQueue(store)


@pytest.fixture
def workspace(workspace_dir: Path) -> Iterator[Workspace]:
    (workspace_dir / "blurb.prompt").write_text(PROMPT, encoding="utf-8")
    lines = "".join(json.dumps(row) + "\n" for row in EXAMPLES)
    (workspace_dir / "blurb.examples.jsonl").write_text(lines, encoding="utf-8")
    with Workspace(workspace_dir) as opened:
        yield opened


def job(kind: str, params: dict[str, Any] | None = None, path: str = "blurb.prompt") -> Job:
    """A job as the runner sees it after a claim (for calling :func:`run_job` directly)."""
    return Job(1, kind, path, params or {}, "running", 1, None, None, None, False, "now", "now", None)


def execute(workspace: Workspace, queued: Job, progress: Progress) -> dict[str, Any]:
    """What the daemon's runner does with a claimed job."""
    return run_job(workspace, queued, progress)


def submit(queue: JobQueue, kind: str, path: str, params: dict[str, Any], *, client: str | None = None) -> Job:
    """What the daemon does with ``job/submit``: the registry checks the params, then the queue stores them."""
    return queue.enqueue(kind, path, validate_params(kind, params).to_json(), client=client)


def no_progress(message: str, percentage: float | None) -> None:
    """A progress callback that records nothing and never cancels."""


# -- the table --------------------------------------------------------------------------------------------


def test_submitting_checks_params_and_stores_nothing_bad(queue: JobQueue) -> None:
    queued = submit(queue, "evaluate", "a.prompt", {"workers": 2}, client="cli-1")
    assert (queued.status, queued.attempts, queued.params, queued.client) == ("queued", 0, {"workers": 2}, "cli-1")
    assert queued.to_json()["cancel_requested"] is False and "lease_owner" not in queued.to_json()
    for kind, params in [("dance", {}), ("evaluate", {"workers": 0}), ("synthesize", {"sentences": []})]:
        with pytest.raises(JobParamsError):
            submit(queue, kind, "a.prompt", params)
    assert [j.id for j in queue.list()] == [queued.id]


def test_the_queue_stores_params_as_given_without_looking_inside(queue: JobQueue) -> None:
    """Validation is the registry's (the daemon validates before it enqueues); the queue is persistence."""
    stored = queue.enqueue("select", "a.prompt", {"folds": 3, "settings": {"model": "openai/m", "tau": 0.3}})
    assert queue.get(stored.id).params == {"folds": 3, "settings": {"model": "openai/m", "tau": 0.3}}
    checked = validate_params("select", queue.get(stored.id).params)  # the runner checks them again
    assert (checked.folds, checked.settings) == (3, {"model": "openai/m", "tau": 0.3})


@pytest.mark.parametrize(
    ("kind", "params", "message"),
    [
        ("synthesize", {"synthesizer": "gpt"}, "params.synthesizer"),
        ("synthesize", {"sentences": ["ok", 3]}, "params.sentences"),
        ("synthesize", {"sidecar_text": None}, "params.sidecar_text"),
        ("synthesize", {"write": "yes"}, "params.write"),
        ("evaluate", {"timeout_s": -1}, "params.timeout_s"),
        ("evaluate", {"memory_mb": 10}, "params.memory_mb"),
        ("evaluate", {"workers": True}, "params.workers"),
        ("select", {"method": "greedy"}, "params.method"),
        ("select", {"settings": {"alpha": 1.5}}, "params.settings: alpha"),
        ("select", {"folds": 2.5}, "params.folds"),
        ("select", {"solver": "cbc"}, "unknown key"),
        ("sample", {"settings": ["model"]}, "params.settings"),
        ("sample", {"settings": {"modle": "openai/x"}}, "params.settings: modle"),
        ("evaluate", {"settings": {"tau": 7}}, "params.settings: tau"),
    ],
)
def test_validate_params_names_the_bad_key(kind: str, params: dict[str, Any], message: str) -> None:
    with pytest.raises(JobParamsError, match=message.replace(".", r"\.")):
        validate_params(kind, params)


def test_validate_params_accepts_what_the_protocol_documents() -> None:
    assert validate_params("synthesize", {"synthesizer": "offline", "sentences": ["A."], "write": False}).to_json() == {
        "synthesizer": "offline",
        "sentences": ["A."],
        "write": False,
    }
    assert validate_params("evaluate", {"timeout_s": 2, "memory_mb": None, "workers": 1})
    assert validate_params(
        "select", {"method": "cov", "folds": 0, "filter_declared": True, "settings": {"tau": 0, "alpha": 1}}
    )
    with pytest.raises(JobParamsError, match="tau"):  # a threshold is a setting, resolved with the others
        validate_params("select", {"method": "cov", "tau": 0.3})
    assert validate_params(
        "sample", {"samples": 5, "inputs": 2, "interval": "clopper-pearson", "early_stopping": False}
    )
    assert validate_params("judge", {"pipeline": "/w/judges.toml", "noise": 5, "noise_source": "sampled"})
    editor = {"model": "openai/m", "api_base": "http://127.0.0.1:9/v1", "tau": 0.3}
    assert validate_params("compare", {"samples": 2, "settings": editor}).settings == editor  # any kind's
    for bad in ({"samples": 0}, {"interval": "normal"}, {"early_stopping": "yes"}, {"sample": 3}):
        with pytest.raises(JobParamsError):
            validate_params("sample", bad)


def test_claims_go_oldest_first_and_one_prompt_at_a_time(queue: JobQueue) -> None:
    first = queue.enqueue("synthesize", "a.prompt", {})
    second = queue.enqueue("evaluate", "a.prompt", {})
    other = queue.enqueue("synthesize", "b.prompt", {})
    claimed = queue.claim("daemon-1")
    assert claimed is not None and claimed.id == first.id
    assert (claimed.status, claimed.attempts, claimed.lease_owner) == ("running", 1, "daemon-1")
    assert claimed.lease_until is not None and claimed.started_at is not None
    assert claimed.lease_until > claimed.started_at
    skipped = queue.claim("daemon-1")
    assert skipped is not None and skipped.id == other.id  # a.prompt is busy; b.prompt is not
    assert queue.claim("daemon-1") is None
    queue.finish(first.id, "daemon-1", {"ok": True})
    after = queue.claim("daemon-1")
    assert after is not None and after.id == second.id
    assert queue.count_active() == 2


def test_concurrent_runners_never_claim_a_job_twice(workspace_dir: Path) -> None:
    with Store.open(workspace_dir) as store:
        ids = {JobQueue(store).enqueue("synthesize", f"p{n}.prompt", {}).id for n in range(30)}
    claimed: list[int] = []
    errors: list[BaseException] = []

    def runner(name: str) -> None:
        try:
            with Store.open(workspace_dir) as store:
                queue = JobQueue(store)
                while (job := queue.claim(name)) is not None:
                    claimed.append(job.id)
                    queue.finish(job.id, name, {})
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=runner, args=(f"runner-{n}",)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == [] and sorted(claimed) == sorted(ids)


def test_finish_stores_the_result_with_the_status_and_only_for_the_lease_holder(queue: JobQueue) -> None:
    queued = queue.enqueue("select", "a.prompt", {})
    queue.claim("daemon-1")
    with pytest.raises(JobStateError):
        queue.finish(queued.id, "daemon-2", {"stolen": True})
    done = queue.finish(queued.id, "daemon-1", {"selected": ["assert_x"]})
    assert (done.status, done.result, done.lease_owner, done.error) == ("done", {"selected": ["assert_x"]}, None, None)
    assert done.finished_at is not None and done.finished
    with pytest.raises(JobStateError):  # finished once, never twice
        queue.fail(queued.id, "daemon-1", "late")
    failed_job = queue.enqueue("evaluate", "a.prompt", {})
    queue.claim("daemon-1")
    failed = queue.fail(failed_job.id, "daemon-1", "no examples")
    assert (failed.status, failed.error, failed.result) == ("failed", "no examples", None)


def test_progress_renews_the_lease_and_reports_cancellation(queue: JobQueue) -> None:
    queued = queue.enqueue("evaluate", "a.prompt", {})
    claimed = queue.claim("daemon-1", lease_s=1)
    assert claimed is not None
    assert queue.set_progress(queued.id, "daemon-1", "half way", 50.0) is False
    current = queue.get(queued.id)
    assert current.progress == {"message": "half way", "percentage": 50.0}
    assert current.lease_until is not None and claimed.lease_until is not None
    assert current.lease_until > claimed.lease_until
    assert queue.renew("daemon-1") == 1 and queue.renew("daemon-2") == 0
    cancelling = queue.cancel(queued.id)
    assert cancelling.status == "running" and cancelling.cancel_requested
    assert queue.set_progress(queued.id, "daemon-1", "still going", 60.0) is True
    assert queue.mark_cancelled(queued.id, "daemon-1").status == "cancelled"


def test_cancel_queued_at_once_and_finished_unchanged(queue: JobQueue) -> None:
    queued = queue.enqueue("synthesize", "a.prompt", {})
    cancelled = queue.cancel(queued.id)
    assert cancelled.status == "cancelled" and cancelled.finished_at is not None
    assert queue.claim("daemon-1") is None
    assert queue.cancel(queued.id) == cancelled
    with pytest.raises(JobNotFoundError):
        queue.cancel(999)
    with pytest.raises(JobNotFoundError):
        queue.get(999)


def test_recover_requeues_fails_after_max_attempts_and_honours_cancellation(queue: JobQueue) -> None:
    retried = queue.enqueue("evaluate", "a.prompt", {})
    exhausted = queue.enqueue("evaluate", "b.prompt", {})
    cancelled = queue.enqueue("evaluate", "c.prompt", {})
    untouched = queue.enqueue("evaluate", "a.prompt", {})
    for _ in range(3):
        queue.claim("dead-daemon")
    queue.cancel(cancelled.id)
    queue.store.db.execute("UPDATE jobs SET attempts = ? WHERE id = ?", [MAX_ATTEMPTS, exhausted.id])
    recovery = queue.recover()
    assert (recovery.requeued, recovery.failed, recovery.cancelled) == ([retried.id], [exhausted.id], [cancelled.id])
    again = queue.get(retried.id)
    assert (again.status, again.attempts, again.lease_owner, again.progress) == ("queued", 1, None, None)
    gave_up = queue.get(exhausted.id)
    assert gave_up.status == "failed" and f"{MAX_ATTEMPTS} times" in (gave_up.error or "")
    assert queue.get(cancelled.id).status == "cancelled"
    assert queue.get(untouched.id).status == "queued"
    with pytest.raises(JobStateError):  # the dead daemon's late answer is refused
        queue.finish(retried.id, "dead-daemon", {})
    reclaimed = queue.claim("new-daemon")
    assert reclaimed is not None and reclaimed.id == retried.id and reclaimed.attempts == 2


def test_release_gives_a_job_back_without_counting_the_attempt(queue: JobQueue) -> None:
    queued = queue.enqueue("evaluate", "a.prompt", {})
    queue.claim("daemon-1")
    released = queue.release(queued.id, "daemon-1")
    assert (released.status, released.attempts) == ("queued", 0)
    with pytest.raises(JobStateError):
        queue.release(queued.id, "daemon-1")


def test_list_filters_newest_first_and_prune_drops_only_old_finished_jobs(queue: JobQueue) -> None:
    old = queue.enqueue("synthesize", "a.prompt", {})
    queue.cancel(old.id)
    recent = queue.enqueue("synthesize", "a.prompt", {})
    queue.cancel(recent.id)
    active = queue.enqueue("evaluate", "b.prompt", {})
    long_ago = (datetime.now(UTC) - timedelta(days=31)).isoformat()
    queue.store.db.execute("UPDATE jobs SET finished_at = ? WHERE id = ?", [long_ago, old.id])
    assert [j.id for j in queue.list()] == [active.id, recent.id, old.id]
    assert [j.id for j in queue.list(path="a.prompt")] == [recent.id, old.id]
    assert [j.id for j in queue.list(active=True)] == [active.id]
    assert [j.id for j in queue.list(active=False, limit=1)] == [recent.id]
    assert queue.prune() == 1
    assert [j.id for j in queue.list()] == [active.id, recent.id]


def test_a_killed_writer_leaves_no_half_finished_job(workspace_dir: Path) -> None:
    """The result and the status are one transaction: a rollback (what SIGKILL amounts to) keeps neither."""
    with Store.open(workspace_dir) as store:
        queue = JobQueue(store)
        queued = queue.enqueue("evaluate", "a.prompt", {})
        queue.claim("daemon-1")
        with pytest.raises(RuntimeError), store.write():
            queue.finish(queued.id, "daemon-1", {"run_id": 1})  # joins the outer transaction
            raise RuntimeError("killed")
    with sqlite3.connect(workspace_dir / ".spade" / "spade.db") as db:
        assert db.execute("SELECT status, result FROM jobs").fetchall() == [("running", None)]


# -- the registry ---------------------------------------------------------------------------------------------


def test_every_kind_is_one_module_with_its_params_model_and_run() -> None:
    """Adding a kind is one module here plus its name in ``JOB_KINDS``; nothing else lists the kinds."""
    package = Path(spade_lsp.jobs.__file__).parent
    modules = {path.stem for path in package.glob("*.py") if not path.stem.startswith("_")}
    assert modules == set(JOB_KINDS)
    for kind in JOB_KINDS:
        found = spec(kind)
        assert found is importlib.import_module(f"spade_lsp.jobs.{kind}").SPEC and found.kind == kind
        assert issubclass(found.params, JobParams) and found.params is not JobParams
        assert found.params.model_config.get("extra") == "forbid" and found.params.model_config.get("frozen")
        assert "settings" in found.params.model_fields and callable(found.run)
    with pytest.raises(JobParamsError, match="unknown job kind"):
        spec("dance")


# -- the job kinds -----------------------------------------------------------------------------------------


def test_synthesize_writes_the_sidecar_and_reports_what_changed(workspace: Workspace) -> None:
    messages: list[str] = []
    result = execute(workspace, job("synthesize"), lambda message, _: messages.append(message))
    sidecar = workspace.root / "blurb_assertions.py"
    assert result["written"] and sidecar.read_text(encoding="utf-8") == result["text"]
    assert result["sidecar"] == str(sidecar) and "assert_excludes_cheap" in result["added"]
    # recording, synthesizing, checking the candidates on the labelled examples, planning the module
    assert messages[0] == "recording the prompt" and len(messages) == 4
    assert messages[2].startswith("checking ") and "labelled example(s)" in messages[2]
    again = execute(workspace, job("synthesize"), no_progress)
    assert not again["written"] and again["added"] == [] and sorted(again["unchanged"]) == sorted(result["added"])


def test_synthesize_without_write_plans_from_the_editor_buffer(workspace: Workspace) -> None:
    mine = "from spade_lsp import checks\n\n\ndef assert_mine(example: dict, prompt: str, response: str) -> bool:\n"
    mine += "    return True\n"
    params = {"write": False, "sidecar_text": mine, "sentences": ['Never use the word "cheap".']}
    result = execute(workspace, job("synthesize", params), no_progress)
    assert not result["written"] and not (workspace.root / "blurb_assertions.py").exists()
    assert result["added"] == ["assert_excludes_cheap"] and result["removed"] == []
    assert "def assert_mine" in result["text"] and "def assert_excludes_cheap" in result["text"]
    assert "def assert_at_most_12_words" not in result["text"]  # only the sentence asked for


def test_synthesize_refuses_sentences_not_in_the_prompt(workspace: Workspace) -> None:
    with pytest.raises(InputError, match="none of the given sentences"):
        execute(workspace, job("synthesize", {"sentences": ["Be brief."]}), no_progress)


def test_cancelling_at_a_checkpoint_writes_nothing(workspace: Workspace) -> None:
    def cancel_late(message: str, percentage: float | None) -> None:
        if message.startswith("planning"):
            raise JobCancelled("cancelled")

    with pytest.raises(JobCancelled):
        execute(workspace, job("synthesize"), cancel_late)
    assert not (workspace.root / "blurb_assertions.py").exists()


def test_evaluate_then_select_store_their_results(workspace: Workspace) -> None:
    execute(workspace, job("synthesize"), no_progress)
    evaluated = execute(workspace, job("evaluate", {"timeout_s": 5, "workers": 1}), no_progress)
    assert evaluated["examples"] == 3 and evaluated["module_error"] is None
    assert "assert_excludes_cheap" in evaluated["assertions"]
    assert evaluated["errors_total"] == len(evaluated["errors"])
    stored = workspace.store.db.execute("SELECT id, parameters FROM eval_runs").fetchall()
    assert [row[0] for row in stored] == [evaluated["run_id"]] and json.loads(stored[0][1])["workers"] == 1
    params = {"method": "cov", "folds": 0, "settings": {"tau": 0.5, "alpha": 0.5}}
    selected = execute(workspace, job("select", params), no_progress)
    assert selected["status"] in ("optimal", "feasible") and selected["selected"]
    assert (selected["method"], selected["tau"], selected["alpha"]) == ("cov", 0.5, 0.5)
    row = workspace.store.db.execute(
        "SELECT method, eval_run_id FROM selections WHERE id = ?", [selected["selection_id"]]
    )
    assert row.fetchone() == ("cov", evaluated["run_id"])


def test_evaluate_without_a_sidecar_fails_with_the_engines_message(workspace: Workspace) -> None:
    with pytest.raises(InputError, match="no sidecar module"):
        execute(workspace, job("evaluate"), no_progress)


def test_a_judge_job_needs_a_pipeline_or_grading_notes(workspace: Workspace) -> None:
    with pytest.raises(InputError, match="exactly one of `pipeline`"):
        execute(workspace, job("judge"), no_progress)
    with pytest.raises(JobParamsError, match="unknown key"):
        validate_params("judge", {"pipeline": "/x.toml", "pipelines": 1})
    with pytest.raises(JobParamsError, match="resamples a pipeline"):
        validate_params("judge", {"grading_notes": True, "noise": 3})
    with pytest.raises(JobParamsError, match="from 2 to 100"):
        validate_params("judge", {"pipeline": "/x.toml", "noise": 1})
    assert validate_params("judge", {"grading_notes": True, "compare": False}).to_json() == {
        "grading_notes": True,
        "compare": False,
    }


def test_sampling_without_a_sidecar_fails_with_the_engines_message(workspace: Workspace) -> None:
    with pytest.raises(InputError, match="no sidecar module"):
        execute(workspace, job("sample"), no_progress)
