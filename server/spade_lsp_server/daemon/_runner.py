"""The job runner: worker threads that claim jobs from the store's queue and run them against the engine.

Each thread has its own Workspace and store connection. Jobs of one prompt run one at a time, in order;
jobs of different prompts run in parallel (the claim query sees to it). Generated assertion code never runs
here: evaluation hands it to the sandbox's worker processes.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from spade_lsp.errors import JobCancelled, SpadeError, StoreLockedError
from spade_lsp.jobs import EDITOR_SETTINGS, run_job
from spade_lsp.store import Job, JobQueue, JobStateError, Store
from spade_lsp.workspace import Workspace

log = logging.getLogger("spade_lsp_server.daemon.runner")

#: Progress is stored at most this often per job (every call is still broadcast).
_STORE_PROGRESS_EVERY_S: Final = 1.0
#: An idle runner looks at the queue this often even without a wake-up (a safety net, not the mechanism).
_POLL_S: Final = 5.0


class _Interrupted(Exception):
    """The daemon is stopping: the job goes back to the queue."""


class WorkspaceCache:
    """One thread's Workspace, reopened when spade.toml or pyproject.toml changes (the workspace's settings are
    read once per open) or when a job brings other overrides than the job before it (they decide how a prompt
    is read, e.g. ``max_prompt_bytes``). A job's prompt settings are resolved when it runs
    (:func:`spade_lsp.jobs.run_job`)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._workspace: Workspace | None = None
        self._stamp: tuple[object, ...] = ()

    def _settings_stamp(self) -> tuple[int | None, ...]:
        stamps: list[int | None] = []
        for name in ("spade.toml", "pyproject.toml"):
            try:
                stamps.append((self.root / name).stat().st_mtime_ns)
            except OSError:
                stamps.append(None)
        return tuple(stamps)

    def get(self, overrides: Mapping[str, Any] | None = None) -> Workspace:
        """The workspace under ``overrides`` (a job's ``settings``: the editor's or the command line's)."""
        chosen = dict(overrides or {})
        stamp = (*self._settings_stamp(), json.dumps(chosen, sort_keys=True, default=str))
        if self._workspace is None or stamp != self._stamp:
            self.close()
            self._workspace = Workspace(self.root, overrides=chosen, overrides_source=EDITOR_SETTINGS)
            self._stamp = stamp
        return self._workspace

    def close(self) -> None:
        if self._workspace is not None:
            self._workspace.close()
            self._workspace = None


@dataclass
class RunnerHooks:
    """How the runner tells the daemon what happens; each is called from a runner thread."""

    on_progress: Callable[[Job, str, float | None], None]
    on_finished: Callable[[Job], None]
    cancel_requested: Callable[[int], bool]


class JobRunner:
    """``slots`` threads running jobs under the lease ``owner`` (this daemon)."""

    def __init__(self, root: Path, owner: str, hooks: RunnerHooks, *, slots: int = 2) -> None:
        self.root = root
        self.owner = owner
        self.hooks = hooks
        self.slots = slots
        self._wake = threading.Condition()
        self._pending_wakes = 0
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._running: dict[int, Job] = {}
        self._running_lock = threading.Lock()

    @property
    def busy(self) -> int:
        with self._running_lock:
            return len(self._running)

    def running_jobs(self) -> list[int]:
        with self._running_lock:
            return sorted(self._running)

    def start(self) -> None:
        for index in range(self.slots):
            thread = threading.Thread(target=self._loop, name=f"spade-job-{index}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def wake(self) -> None:
        """A job was queued (or a prompt freed up): idle threads look at the queue now."""
        with self._wake:
            self._pending_wakes = self.slots  # each thread looks once more, however many wake-ups came
            self._wake.notify_all()

    def stop(self, timeout_s: float) -> list[int]:
        """Ask every thread to stop; a running job stops at its next checkpoint and goes back to the queue.
        Returns the ids of jobs still running after ``timeout_s`` (left ``running``: the next daemon
        recovers them)."""
        self._stopping.set()
        self.wake()
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        return self.running_jobs()

    # -- one thread -------------------------------------------------------------------------------------

    def _loop(self) -> None:
        store: Store | None = None
        workspaces = WorkspaceCache(self.root)
        try:
            while not self._stopping.is_set():
                try:
                    if store is None:
                        store = Store.open(self.root)
                    job = JobQueue(store).claim(self.owner)
                except SpadeError as error:
                    log.error("cannot claim a job: %s", error)
                    self._stopping.wait(1.0)
                    continue
                if job is None:
                    self._idle()
                    continue
                self._run(JobQueue(store), workspaces, job)
        except Exception:
            log.exception("a job runner thread crashed")
        finally:
            workspaces.close()
            if store is not None:
                store.close()

    def _idle(self) -> None:
        with self._wake:
            if self._pending_wakes == 0 and not self._stopping.is_set():
                self._wake.wait(_POLL_S)
            self._pending_wakes = max(0, self._pending_wakes - 1)

    def _run(self, queue: JobQueue, workspaces: WorkspaceCache, job: Job) -> None:
        log.info("job %d (%s %s) started, attempt %d", job.id, job.kind, job.path, job.attempts)
        with self._running_lock:
            self._running[job.id] = job
        started = time.monotonic()
        last_stored = 0.0

        def progress(message: str, percentage: float | None) -> None:
            nonlocal last_stored
            if self._stopping.is_set():
                raise _Interrupted
            cancelled = self.hooks.cancel_requested(job.id)
            now = time.monotonic()
            if not cancelled and now - last_stored >= _STORE_PROGRESS_EVERY_S:
                last_stored = now
                cancelled = queue.set_progress(job.id, self.owner, message, percentage)
            if cancelled:
                raise JobCancelled(f"job {job.id} was cancelled")
            self.hooks.on_progress(job, message, percentage)

        try:
            outcome = self._outcome(queue, workspaces, job, progress)
        finally:
            with self._running_lock:
                self._running.pop(job.id, None)
        if outcome is not None:
            log.info("job %d %s after %.2f s", job.id, outcome.status, time.monotonic() - started)
            self.hooks.on_finished(outcome)
        self.wake()  # the prompt is free again: a job queued behind this one may run now

    def _outcome(
        self, queue: JobQueue, workspaces: WorkspaceCache, job: Job, progress: Callable[[str, float | None], None]
    ) -> Job | None:
        """Run the job and store how it ended; None when it was handed back to the queue."""
        try:
            result = run_job(
                workspaces.get(job.params.get("settings")), job, progress
            )  # validated when queued, and again here
        except JobCancelled:
            return self._store(lambda: queue.mark_cancelled(job.id, self.owner), job)
        except _Interrupted:
            self._store(lambda: queue.release(job.id, self.owner), job)
            log.info("job %d handed back to the queue (the daemon is stopping)", job.id)
            return None
        except SpadeError as error:
            message = str(error).splitlines()[0] if str(error) else type(error).__name__
            return self._store(lambda: queue.fail(job.id, self.owner, message), job)
        except Exception as error:
            log.exception("job %d (%s) failed unexpectedly", job.id, job.kind)
            message = f"internal error: {type(error).__name__}: {error}"
            return self._store(lambda: queue.fail(job.id, self.owner, message), job)
        try:
            return self._store(lambda: queue.finish(job.id, self.owner, result), job)
        except (TypeError, ValueError) as error:  # a result that is not JSON: a bug, reported on the job
            log.exception("job %d produced a result that cannot be stored", job.id)
            message = f"internal error: the result cannot be stored: {error}"
            return self._store(lambda: queue.fail(job.id, self.owner, message), job)

    def _store(self, write: Callable[[], Job], job: Job) -> Job | None:
        """The final write, retried while another writer holds the store; if it never succeeds the job stays
        ``running`` and the next daemon start recovers it (nothing is lost silently)."""
        for attempt in range(5):
            try:
                return write()
            except StoreLockedError as error:
                log.warning("job %d: the store is busy (%s); retrying", job.id, error)
                time.sleep(0.5 * (attempt + 1))
            except JobStateError as error:
                log.error("job %d: %s", job.id, error)
                return None
        log.error("job %d: could not store its outcome; it is recovered when the daemon restarts", job.id)
        return None
