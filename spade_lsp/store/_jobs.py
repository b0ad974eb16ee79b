"""The durable job queue: the store's ``jobs`` table.

The workspace daemon is the one process that runs jobs. A job is claimed in one write transaction (status
``running``, a lease, ``attempts + 1``) and finished in another that stores its result with the final status,
so a daemon killed at any moment loses no acknowledged result. At start the daemon holds the workspace lock,
which proves that every job still ``running`` lost its runner: :meth:`JobQueue.recover` requeues it, or fails
it after :data:`MAX_ATTEMPTS` claims, and never leaves one behind silently.

The queue stores each job's kind, path and params as it is given them; what a kind means and which params it
takes is the job registry's (:mod:`spade_lsp.jobs`), which validates them before they are queued.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from sqlite_utils.db import NotFoundError

from spade_lsp.errors import SpadeError
from spade_lsp.store._database import Store
from spade_lsp.store._owners import INTERRUPTED, RESUME_HINTS, owner_alive

__all__ = [
    "ACTIVE_STATUSES",
    "FINISHED_STATUSES",
    "INTERRUPTED",
    "LEASE_S",
    "MAX_ATTEMPTS",
    "RENEW_EVERY_S",
    "Job",
    "JobNotFoundError",
    "JobQueue",
    "JobStateError",
    "Recovery",
]

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
        """Queue a job with ``params`` as given: the caller validated them (the job registry,
        :func:`spade_lsp.jobs.validate_params`), so a bad job is never stored; the queue never looks inside."""
        checked = dict(params)
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
            for table, hint in RESUME_HINTS.items():
                # A run is written 'running' when it starts and ended by the process running it; left so with
                # no owner recorded (an older spade) or an owner that is gone, its process died. A CLI running
                # one in-process right now is alive, and its run is left to it.
                rows_running = db.execute(f"SELECT id, owner FROM {table} WHERE status = 'running'").fetchall()
                ids = [int(run_id) for run_id, owner in rows_running if owner is None or not owner_alive(owner)]
                for run_id in ids:
                    db.execute(
                        f"UPDATE {table} SET status = 'failed', error = ?, finished_at = ? WHERE id = ?",
                        [INTERRUPTED + hint, now, run_id],
                    )
                if ids:
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
