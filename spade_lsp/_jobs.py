"""The durable job queue (the store's ``jobs`` table) and what each kind of job does against the engine.

The workspace daemon is the one process that runs jobs. A job is claimed in one write transaction (status
``running``, a lease, ``attempts + 1``) and finished in another that stores its result with the final status,
so a daemon killed at any moment loses no acknowledged result. At start the daemon holds the workspace lock,
which proves that every job still ``running`` lost its runner: :meth:`JobQueue.recover` requeues it, or fails
it after :data:`MAX_ATTEMPTS` claims, and never leaves one behind silently.

Cancellation is cooperative: a job calls its progress callback between phases, and the callback raises
:class:`JobCancelled` once cancellation was requested. Nothing here knows about sockets or LSP.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

from sqlite_utils.db import NotFoundError

from spade_lsp._progress import Progress
from spade_lsp.errors import InputError, JobCancelled, SpadeError
from spade_lsp.store import Store
from spade_lsp.workspace import Workspace

if TYPE_CHECKING:
    from spade_lsp.selection._names import Method

__all__ = [
    "ACTIVE_STATUSES",
    "FINISHED_STATUSES",
    "INTERRUPTED",
    "JOB_KINDS",
    "LEASE_S",
    "MAX_ATTEMPTS",
    "RENEW_EVERY_S",
    "Job",
    "JobCancelled",
    "JobNotFoundError",
    "JobParamsError",
    "JobQueue",
    "JobStateError",
    "Progress",
    "Recovery",
    "execute",
    "validate_params",
]

JOB_KINDS: Final = ("synthesize", "evaluate", "select", "sample", "judge", "compare", "relabel", "review", "test")
ACTIVE_STATUSES: Final = ("queued", "running")
FINISHED_STATUSES: Final = ("done", "failed", "cancelled")
#: Claims a job gets before a daemon that keeps dying while running it gives up on it.
MAX_ATTEMPTS: Final = 3
LEASE_S: Final = 30.0
RENEW_EVERY_S: Final = 10.0
PRUNE_AFTER_DAYS: Final = 30
LIST_LIMIT: Final = 100


class JobNotFoundError(SpadeError):
    """No job has this id (it never existed, or it was pruned)."""


class JobParamsError(InputError):
    """A job's kind, path or params cannot be used; nothing was queued."""


class JobStateError(SpadeError):
    """A runner tried to finish a job it no longer holds (recovered or cancelled meanwhile)."""


def _now() -> datetime:
    return datetime.now(UTC)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


@dataclass(frozen=True, slots=True)
class Job:
    """One row of the ``jobs`` table."""

    id: int
    kind: str
    path: str
    params: dict[str, Any]
    status: str
    attempts: int
    progress: dict[str, Any] | None
    result: Any
    error: str | None
    cancel_requested: bool
    created_at: str
    started_at: str | None
    finished_at: str | None
    lease_owner: str | None = None
    lease_until: str | None = None
    client: str | None = None

    @property
    def finished(self) -> bool:
        return self.status in FINISHED_STATUSES

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Job:
        return cls(
            id=int(row["id"]),
            kind=str(row["kind"]),
            path=str(row["path"]),
            params=dict(_loads(row["params"]) or {}),
            status=str(row["status"]),
            attempts=int(row["attempts"]),
            progress=_loads(row["progress"]),
            result=_loads(row["result"]),
            error=row["error"],
            cancel_requested=bool(row["cancel_requested"]),
            created_at=str(row["created_at"]),
            started_at=row["started_at"],
            finished_at=row["finished_at"],
            lease_owner=row["lease_owner"],
            lease_until=row["lease_until"],
            client=row["client"],
        )

    def to_json(self) -> dict[str, Any]:
        """The job as the daemon protocol sends it (lease details stay inside the daemon)."""
        return {
            "id": self.id,
            "kind": self.kind,
            "path": self.path,
            "params": self.params,
            "status": self.status,
            "attempts": self.attempts,
            "progress": self.progress,
            "result": self.result,
            "error": self.error,
            "created_at": self.created_at,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "cancel_requested": self.cancel_requested,
            "client": self.client,
        }


@dataclass(frozen=True, slots=True)
class Recovery:
    """What :meth:`JobQueue.recover` did with the jobs a dead daemon left ``running``."""

    requeued: list[int]
    failed: list[int]
    cancelled: list[int]
    #: Sampling and judge runs the dead daemon left ``running``, now ended as interrupted (see
    #: :data:`INTERRUPTED`): ``{"sample_runs": [ids], "judge_runs": [ids]}``.
    interrupted_runs: dict[str, list[int]] = dataclasses.field(default_factory=dict)


#: How a run a killed process left ``running`` ends: ``failed`` with this error. Its answered LLM calls are in
#: the LLM cache (and a sampling run's finished rounds in its rows), so running it again (the requeued job, or
#: the same command) resumes from them rather than paying for them twice.
INTERRUPTED: Final = "interrupted: the process running it stopped (killed or crashed) before it finished"
_RESUME_HINTS: Final = {
    "sample_runs": "; sampling again resumes from the LLM cache",
    "judge_runs": "; judging again reuses the cached answers",
}


_CLAIMABLE: Final = (
    "SELECT id FROM jobs WHERE status = 'queued' "
    "AND path NOT IN (SELECT path FROM jobs WHERE status = 'running') ORDER BY id LIMIT 1"
)


class JobQueue:
    """The job table of one store. Each method is one short transaction; use one queue per thread (a
    :class:`Store` is one SQLite connection)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    # -- reading ----------------------------------------------------------------------------------------

    def get(self, job_id: int) -> Job:
        try:
            return Job.from_row(self.store.db.table("jobs").get(job_id))
        except NotFoundError as error:
            raise JobNotFoundError(f"no job {job_id}") from error

    def list(self, *, path: str | None = None, active: bool | None = None, limit: int = LIST_LIMIT) -> list[Job]:
        """Newest first."""
        where: list[str] = []
        args: list[Any] = []
        if path is not None:
            where.append("path = ?")
            args.append(path)
        if active is not None:
            where.append(f"status {'IN' if active else 'NOT IN'} ('queued', 'running')")
        rows = self.store.db.table("jobs").rows_where(
            " AND ".join(where) or None, args, order_by="id DESC", limit=max(0, min(limit, LIST_LIMIT))
        )
        return [Job.from_row(row) for row in rows]

    def count_active(self) -> int:
        row = self.store.db.execute("SELECT COUNT(*) FROM jobs WHERE status IN ('queued', 'running')").fetchone()
        return int(row[0])

    # -- the submitter's side ---------------------------------------------------------------------------

    def enqueue(self, kind: str, path: str, params: Mapping[str, Any], *, client: str | None = None) -> Job:
        """Queue a job; ``params`` are checked first (:func:`validate_params`), so a bad job is never stored."""
        checked = validate_params(kind, params)
        with self.store.write() as db:
            table = db.table("jobs").insert(
                {
                    "kind": kind,
                    "path": path,
                    "params": json.dumps(checked, sort_keys=True),
                    "status": "queued",
                    "attempts": 0,
                    "cancel_requested": 0,
                    "client": client,
                    "created_at": _iso(_now()),
                }
            )
            if table.last_pk is None:
                raise JobStateError("the job was not stored")  # sqlite-utils always sets it after an insert
            return self.get(int(table.last_pk))

    def cancel(self, job_id: int) -> Job:
        """A queued job is cancelled at once; a running one gets ``cancel_requested`` and stops at its next
        checkpoint; a finished one is returned unchanged."""
        with self.store.write() as db:
            job = self.get(job_id)
            if job.status == "queued":
                db.table("jobs").update(
                    job_id, {"status": "cancelled", "cancel_requested": 1, "finished_at": _iso(_now())}
                )
            elif job.status == "running":
                db.table("jobs").update(job_id, {"cancel_requested": 1})
            return self.get(job_id)

    # -- the runner's side ------------------------------------------------------------------------------

    def claim(self, owner: str, *, lease_s: float = LEASE_S) -> Job | None:
        """The oldest queued job whose prompt has no job running (jobs of one prompt run in order, different
        prompts in parallel), now ``running`` under ``owner``'s lease; None when there is none. It looks
        before taking the write lock, so an idle runner does not contend with writers."""
        if self.store.db.execute(_CLAIMABLE).fetchone() is None:
            return None
        with self.store.write() as db:
            row = db.execute(_CLAIMABLE).fetchone()  # again under the lock: another runner may have won
            if row is None:
                return None
            now = _now()
            db.execute(
                "UPDATE jobs SET status = 'running', attempts = attempts + 1, lease_owner = ?, lease_until = ?, "
                "started_at = ?, progress = NULL WHERE id = ?",
                [owner, _iso(now + timedelta(seconds=lease_s)), _iso(now), row[0]],
            )
            return self.get(int(row[0]))

    def renew(self, owner: str, *, lease_s: float = LEASE_S) -> int:
        """Extend the lease of every job ``owner`` runs; returns how many."""
        with self.store.write() as db:
            cursor = db.execute(
                "UPDATE jobs SET lease_until = ? WHERE status = 'running' AND lease_owner = ?",
                [_iso(_now() + timedelta(seconds=lease_s)), owner],
            )
            return int(cursor.rowcount)

    def set_progress(self, job_id: int, owner: str, message: str, percentage: float | None) -> bool:
        """Store a running job's progress (and renew its lease); returns whether cancellation was requested."""
        progress = json.dumps({"message": message, "percentage": percentage})
        with self.store.write() as db:
            db.execute(
                "UPDATE jobs SET progress = ?, lease_until = ? WHERE id = ? AND status = 'running' AND lease_owner = ?",
                [progress, _iso(_now() + timedelta(seconds=LEASE_S)), job_id, owner],
            )
            row = db.execute("SELECT cancel_requested FROM jobs WHERE id = ?", [job_id]).fetchone()
            return bool(row and row[0])

    def finish(self, job_id: int, owner: str, result: Any) -> Job:
        """``done`` with its result, in one transaction."""
        return self._end(job_id, owner, status="done", result=json.dumps(result), error=None)

    def fail(self, job_id: int, owner: str, error: str) -> Job:
        return self._end(job_id, owner, status="failed", result=None, error=error)

    def mark_cancelled(self, job_id: int, owner: str) -> Job:
        """The runner stopped the job at a checkpoint after cancellation was requested."""
        return self._end(job_id, owner, status="cancelled", result=None, error=None)

    def release(self, job_id: int, owner: str) -> Job:
        """Give a running job back to the queue without counting the attempt (the daemon is shutting down)."""
        with self.store.write() as db:
            cursor = db.execute(
                "UPDATE jobs SET status = 'queued', attempts = MAX(attempts - 1, 0), lease_owner = NULL, "
                "lease_until = NULL WHERE id = ? AND status = 'running' AND lease_owner = ?",
                [job_id, owner],
            )
            if cursor.rowcount != 1:
                raise JobStateError(f"job {job_id} is not running under {owner}")
            return self.get(job_id)

    def _end(self, job_id: int, owner: str, *, status: str, result: str | None, error: str | None) -> Job:
        with self.store.write() as db:
            cursor = db.execute(
                "UPDATE jobs SET status = ?, result = ?, error = ?, finished_at = ?, lease_owner = NULL, "
                "lease_until = NULL WHERE id = ? AND status = 'running' AND lease_owner = ?",
                [status, result, error, _iso(_now()), job_id, owner],
            )
            if cursor.rowcount != 1:
                raise JobStateError(f"job {job_id} is no longer running under {owner}; its outcome was dropped")
            return self.get(job_id)

    # -- start-up ---------------------------------------------------------------------------------------

    def recover(self, *, max_attempts: int = MAX_ATTEMPTS) -> Recovery:
        """Call only while holding the workspace's daemon lock: every ``running`` job then belongs to a dead
        daemon. Requeue it, or fail it once it used ``max_attempts`` claims; a job whose cancellation was
        requested ends ``cancelled``."""
        recovery = Recovery([], [], [])
        with self.store.write() as db:
            rows = db.execute("SELECT id, attempts, cancel_requested FROM jobs WHERE status = 'running'").fetchall()
            now = _iso(_now())
            for table, hint in _RESUME_HINTS.items():
                # A run is written 'running' when it starts and ended by the process running it; left so, its
                # process died. (A CLI that runs in-process while a daemon starts ends its run itself after
                # this, overwriting the mark.)
                ids = [int(r[0]) for r in db.execute(f"SELECT id FROM {table} WHERE status = 'running'")]
                if ids:
                    db.execute(
                        f"UPDATE {table} SET status = 'failed', error = ?, finished_at = ? WHERE status = 'running'",
                        [INTERRUPTED + hint, now],
                    )
                    recovery.interrupted_runs[table] = ids
            for job_id, attempts, cancel_requested in rows:
                cleared = {"lease_owner": None, "lease_until": None}
                if cancel_requested:
                    db.table("jobs").update(job_id, {**cleared, "status": "cancelled", "finished_at": now})
                    recovery.cancelled.append(int(job_id))
                elif attempts >= max_attempts:
                    message = f"the daemon stopped while running this job {attempts} times; giving up"
                    db.table("jobs").update(
                        job_id, {**cleared, "status": "failed", "error": message, "finished_at": now}
                    )
                    recovery.failed.append(int(job_id))
                else:
                    db.table("jobs").update(job_id, {**cleared, "status": "queued", "progress": None})
                    recovery.requeued.append(int(job_id))
        return recovery

    def prune(self, *, older_than_days: float = PRUNE_AFTER_DAYS) -> int:
        """Delete finished jobs older than ``older_than_days``; returns how many (the caller logs it)."""
        cutoff = _iso(_now() - timedelta(days=older_than_days))
        with self.store.write() as db:
            cursor = db.execute(
                "DELETE FROM jobs WHERE status IN ('done', 'failed', 'cancelled') AND finished_at < ?", [cutoff]
            )
            return int(cursor.rowcount)


# -- parameters ---------------------------------------------------------------------------------------------


def _number(params: Mapping[str, Any], key: str, *, low: float, high: float = math.inf, integer: bool = False) -> None:
    if key not in params:
        return
    value = params[key]
    kind = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or not low <= value <= high:
        expected = "an integer" if integer else "a number"
        raise JobParamsError(f"params.{key}: expected {expected} in [{low:g}, {high:g}], got {value!r}")


def _choice(params: Mapping[str, Any], key: str, choices: tuple[str, ...]) -> None:
    if key in params and params[key] not in choices:
        raise JobParamsError(f"params.{key}: expected one of {', '.join(choices)}, got {params[key]!r}")


def _flag(params: Mapping[str, Any], key: str) -> None:
    if key in params and not isinstance(params[key], bool):
        raise JobParamsError(f"params.{key}: expected true or false, got {params[key]!r}")


def _settings(params: Mapping[str, Any]) -> None:
    """``settings``, any job's: the spade settings of the editor that asked (they beat the workspace's files)."""
    value = params.get("settings")
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise JobParamsError(f"params.settings: expected an object of spade settings, got {value!r}")
    from spade_lsp.config import Settings
    from spade_lsp.errors import ConfigError

    try:
        Settings().merged(dict(value), source="params.settings")
    except ConfigError as error:
        raise JobParamsError(str(error)) from error


#: Each kind's own params; ``settings`` is every kind's (see :func:`_settings`).
_KNOWN_PARAMS: Final[dict[str, frozenset[str]]] = {
    "synthesize": frozenset({"synthesizer", "sentences", "sidecar_text", "write"}),
    "evaluate": frozenset({"timeout_s", "memory_mb", "workers"}),
    "select": frozenset({"method", "tau", "alpha", "folds", "time_limit", "filter_declared"}),
    "sample": frozenset(
        {"inputs", "samples", "seed", "temperature", "interval", "confidence", "early_stopping", "verify"}
    ),
    "judge": frozenset({"pipeline", "grading_notes", "compare", "noise", "noise_source"}),
    "compare": frozenset(
        {"versions", "baseline", "models", "temperatures", "inputs", "samples", "seed", "temperature", "confidence"}
        | {"effect", "power", "verify"}
    ),
    "relabel": frozenset(),
    "review": frozenset({"accept", "by"}),
    "test": frozenset({"file", "limit", "judge_model"}),
}


def validate_params(kind: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` checked for ``kind`` (unknown keys are refused so typos surface); raises
    :class:`JobParamsError`. Defaults are not filled in: the job stores what was asked for."""
    if kind not in JOB_KINDS:
        raise JobParamsError(f"unknown job kind {kind!r}; expected one of {', '.join(JOB_KINDS)}")
    if not isinstance(params, Mapping):
        raise JobParamsError(f"params: expected an object, got {type(params).__name__}")
    known = _KNOWN_PARAMS.get(kind)
    if known is not None:
        unknown = sorted(set(params) - known - {"settings"})
        if unknown:
            raise JobParamsError(f"params: unknown key(s) for {kind}: {', '.join(map(str, unknown))}")
    _settings(params)
    if kind == "synthesize":
        _choice(params, "synthesizer", ("auto", "offline", "llm"))
        sentences = params.get("sentences")
        if sentences is not None and (
            not isinstance(sentences, list) or not sentences or not all(isinstance(s, str) for s in sentences)
        ):
            raise JobParamsError("params.sentences: expected a non-empty list of strings")
        if "sidecar_text" in params and not isinstance(params["sidecar_text"], str):
            raise JobParamsError("params.sidecar_text: expected a string")
        _flag(params, "write")
    elif kind == "evaluate":
        _number(params, "timeout_s", low=0.001)
        if params.get("memory_mb") is not None:
            _number(params, "memory_mb", low=64, integer=True)
        _number(params, "workers", low=1, high=64, integer=True)
    elif kind == "select":
        from spade_lsp.selection._names import METHODS

        _choice(params, "method", tuple(METHODS))
        _number(params, "tau", low=0, high=1)
        _number(params, "alpha", low=0, high=1)
        _number(params, "folds", low=0, high=100, integer=True)
        _number(params, "time_limit", low=0.001)
        _flag(params, "filter_declared")
    elif kind == "sample":
        from spade_lsp.reliability._names import METHODS as INTERVALS

        _number(params, "inputs", low=1, integer=True)
        _number(params, "samples", low=1, high=10_000, integer=True)
        _number(params, "seed", low=0, integer=True)
        _number(params, "temperature", low=0, high=2)
        _number(params, "confidence", low=0.5, high=0.9999)
        _choice(params, "interval", INTERVALS)
        _flag(params, "early_stopping")
        _flag(params, "verify")
    elif kind == "compare":
        from spade_lsp.reliability._compare import compare_job_options

        try:
            compare_job_options(params)
        except (InputError, TypeError, ValueError) as error:
            raise JobParamsError(f"params: {error}") from None
    elif kind == "review":
        from spade_lsp._review import REVIEWERS, check_review_params

        try:
            check_review_params(params)
        except InputError as error:
            raise JobParamsError(str(error)) from None
        _choice(params, "by", REVIEWERS)
    elif kind == "judge":
        from spade_lsp.judges._cli import check_judge_params

        try:
            check_judge_params(params)
        except InputError as error:
            raise JobParamsError(str(error)) from None
    elif kind == "test":  # a prompt-response test file (spade test FILE); the job's path is the file
        from spade_lsp.judges._cli import check_test_params

        try:
            check_test_params(params)
        except InputError as error:
            raise JobParamsError(str(error)) from None
    return dict(params)


# -- execution ----------------------------------------------------------------------------------------------


def execute(workspace: Workspace, job: Job, progress: Progress) -> dict[str, Any]:
    """Run ``job`` against the engine and return its JSON result. Generated assertion code only ever runs in
    the sandbox's worker processes. Raises :class:`JobCancelled` from ``progress``, or the engine's errors."""
    prompt = workspace.root / job.path  # an absolute key stays absolute
    if job.kind == "synthesize":
        return _synthesize(workspace, prompt, job.params, progress)
    if job.kind == "evaluate":
        return _evaluate(workspace, prompt, job.params, progress)
    if job.kind == "select":
        return _select(workspace, prompt, job.params, progress)
    if job.kind == "sample":
        return _sample(workspace, prompt, job.params, progress)
    if job.kind == "judge":
        from spade_lsp.judges._cli import judge_job

        return judge_job(workspace, prompt, job.params, progress)
    if job.kind == "test":
        from spade_lsp.judges._cli import test_job

        return test_job(workspace, prompt, job.params, progress)
    if job.kind == "compare":
        from spade_lsp.reliability._compare import compare_job_options, compare_prompt

        return compare_prompt(workspace, prompt, compare_job_options(job.params), progress=progress)
    if job.kind == "relabel":
        from spade_lsp._relabel import relabel_prompt

        return relabel_prompt(workspace, prompt, progress=progress).to_json()
    if job.kind == "review":  # the user's acceptance of LLM-written functions (spade_lsp._review)
        from spade_lsp._review import review_job

        return review_job(workspace, prompt, job.params)
    raise JobParamsError(f"unknown job kind {job.kind!r}")


def _synthesize(workspace: Workspace, prompt: Path, params: Mapping[str, Any], progress: Progress) -> dict[str, Any]:
    """Candidates for the newest version's instructions (or only ``sentences``), planned into the sidecar's
    text; written to disk only with ``write`` (default true). The editor passes ``write: false`` and its
    buffer as ``sidecar_text``, and applies ``text`` itself."""
    from spade_lsp._assertion_jobs import make_synthesizer, plan_synthesis, write_synthesis

    synthesizer = make_synthesizer(workspace, str(params.get("synthesizer", "auto")), prompt=prompt)
    result = plan_synthesis(
        workspace,
        prompt,
        synthesizer,
        sentences=params.get("sentences"),
        sidecar_text=params.get("sidecar_text"),
        progress=progress,  # its last checkpoint comes before planning: nothing is written before it
    )
    if params.get("write", True):
        write_synthesis(result)
    update = result.update
    return {
        "sidecar": str(update.path),
        "text": result.text,
        "written": update.written,
        "candidates": [dataclasses.asdict(candidate) for candidate in result.candidates],
        "added": update.added,
        "updated": update.updated,
        "unchanged": update.unchanged,
        "removed": update.removed,
        "kept_edited": update.kept_edited,
        "warnings": result.warnings,
        "fallbacks": result.fallbacks.to_json(),
    }


#: Error cells a job result carries; the full list is in the stored evaluation run.
_MAX_ERROR_CELLS: Final = 100


def _evaluate(workspace: Workspace, prompt: Path, params: Mapping[str, Any], progress: Progress) -> dict[str, Any]:
    from spade_lsp._assertion_jobs import evaluate
    from spade_lsp.sandbox import SandboxLimits

    limits = SandboxLimits()
    chosen = {key: params[key] for key in ("timeout_s", "memory_mb", "workers") if key in params}
    if chosen:
        limits = dataclasses.replace(limits, **chosen)
    progress("running the assertions in the sandbox", 5.0)  # the run is stored as it ends: no checkpoint after
    run = evaluate(workspace, prompt, limits=limits)
    return {
        "run_id": run.run_id,
        "assertions": [a["name"] for a in run.assertions],
        "examples": len(run.examples),
        "errors": run.errors[:_MAX_ERROR_CELLS],
        "errors_total": len(run.errors),
        "needs_model": run.needs_model,
        "needs_model_cells": sum(1 for e in run.errors if e.get("kind") == "needs_model"),  # not errors: no model
        "module_error": run.module_error,
        "warnings": run.warnings,
        "seconds": round(run.seconds, 3),
    }


def _sample(workspace: Workspace, prompt: Path, params: Mapping[str, Any], progress: Progress) -> dict[str, Any]:
    """A sampling run: its rounds are stored as they finish, so a cancelled or killed run keeps its outputs
    (and the LLM cache makes the rerun that resumes it cost nothing for them)."""
    from spade_lsp.reliability._cli import options_from
    from spade_lsp.reliability._sampling import sample_prompt

    progress("planning the sampling run", 1.0)
    return sample_prompt(workspace, prompt, options_from(params), progress=progress)


def _select(workspace: Workspace, prompt: Path, params: Mapping[str, Any], progress: Progress) -> dict[str, Any]:
    from spade_lsp.selection._cli import SelectOptions, select_prompt

    options = SelectOptions(
        method=cast("Method", params.get("method", "sub")),  # checked by validate_params
        tau=params.get("tau"),
        alpha=params.get("alpha"),
        folds=int(params.get("folds", 5)),
        time_limit=float(params.get("time_limit", 10.0)),
        filter_declared=bool(params.get("filter_declared", False)),
    )
    progress(f"selecting ({options.method})", 5.0)
    selection, selection_id = select_prompt(workspace, prompt, options)
    document = selection.to_json()
    document["selection_id"] = selection_id
    return document
