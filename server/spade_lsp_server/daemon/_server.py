"""The workspace daemon: JSON-RPC over a Unix socket, the prompt watcher and the job runner, in one process.

The event loop only parses, dispatches and writes; every store access runs in a thread: one thread for the
job table's writes, a small pool for its reads, one recorder thread for prompt versions (records of one
prompt stay in order) and the job runner's threads. So a slow write or a long job never stalls the other
clients. Notifications are queued per connection; a client that stops reading is dropped rather than
allowed to grow the daemon's memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, TypeVar

from spade_lsp import __version__, atomic_write_text, examples_path, prompt_kind, sidecar_path, usable_cpus
from spade_lsp.config import DEFAULT_PROMPT_GLOBS, Settings, load_settings, resolve, resolve_file
from spade_lsp.errors import ConfigError, SpadeError
from spade_lsp.jobs import EDITOR_SETTINGS, JobParamsError, validate_params
from spade_lsp.jobs.relabel import wants_relabel_settings
from spade_lsp.store import (
    RENEW_EVERY_S,
    Job,
    JobNotFoundError,
    JobQueue,
    Store,
    recorded_prompt_keys,
    version_count,
)
from spade_lsp.workspace import sync_prompt
from spade_lsp_client import protocol
from spade_lsp_server.daemon._runner import JobRunner, RunnerHooks, WorkspaceCache
from spade_lsp_server.daemon._watcher import Debouncer, PromptWatcher, debounce_delays

log = logging.getLogger("spade_lsp_server.daemon")

T = TypeVar("T")

#: Bytes of notifications and answers a connection may have waiting before the daemon drops it.
_MAX_BACKLOG_BYTES: Final = 32 * 1024 * 1024
#: How long a stopping daemon waits for running jobs to reach a checkpoint.
_STOP_JOBS_S: Final = 3.0
_JOB_SLOTS: Final = min(2, usable_cpus())
#: Recorder threads: a record spends most of its time in git subprocesses, so two overlap well.
_RECORDERS: Final = 2


class ParamsError(SpadeError):
    """A request's params do not fit the method (JSON-RPC -32602)."""


class _Connection:
    """One client: its identity and a queue of outgoing lines written by its own task."""

    def __init__(self, number: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.number = number
        self.reader = reader
        self.writer = writer
        self.name = f"client-{number}"
        self.pid: int | None = None
        self.initialized = False
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._backlog = 0
        self.closed = False
        self.writer_task = asyncio.get_running_loop().create_task(self._write_loop(), name=f"spade-write-{number}")

    def send(self, data: bytes) -> None:
        if self.closed:
            return
        self._backlog += len(data)
        if self._backlog > _MAX_BACKLOG_BYTES:
            log.warning("%s does not read its messages; dropping the connection", self.name)
            self.abort()
            return
        self._queue.put_nowait(data)

    async def _write_loop(self) -> None:
        try:
            while True:
                data = await self._queue.get()
                if data is None:
                    break
                self.writer.write(data)
                await self.writer.drain()
                self._backlog -= len(data)
        except (ConnectionError, OSError) as error:
            log.info("%s: write failed: %s", self.name, error)
        finally:
            self.closed = True
            self.writer.close()

    async def flush_and_close(self, timeout_s: float) -> None:
        if not self.writer_task.done():
            self._queue.put_nowait(None)
            with contextlib.suppress(TimeoutError, ConnectionError, OSError):
                await asyncio.wait_for(asyncio.shield(self.writer_task), timeout_s)
        self.abort()

    def abort(self) -> None:
        self.closed = True
        if not self.writer_task.done():
            self.writer_task.cancel()
        self.writer.close()


class Daemon:
    """The daemon of one workspace. :meth:`run` serves until :meth:`request_stop` (a signal, the
    ``daemon/shutdown`` method or the idle timeout)."""

    def __init__(self, root: Path, *, idle_timeout_s: float | None = None) -> None:
        self.root = root
        self.state = protocol.state_dir(root)
        self.owner = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.started = time.monotonic()
        try:
            settings = load_settings(root)
            self.globs: tuple[str, ...] = settings.prompt_globs
            configured_idle = settings.daemon_idle_timeout_s
            self.save_quiet_s = settings.save_quiet_s
        except ConfigError as error:  # the daemon still starts; each record and job reports the error
            log.error("settings: %s (using the defaults until fixed)", error)
            self.globs, configured_idle = DEFAULT_PROMPT_GLOBS, 600.0
            self.save_quiet_s = Settings().save_quiet_s
        self.idle_timeout_s = idle_timeout_s if idle_timeout_s is not None else configured_idle
        self.clients: dict[int, _Connection] = {}
        self._numbers = iter(range(1, 1 << 62))
        self._cancel_requested: set[int] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._stop = asyncio.Event()
        self._writes = ThreadPoolExecutor(1, thread_name_prefix="spade-db-write")
        self._reads = ThreadPoolExecutor(2, thread_name_prefix="spade-db-read")
        self._recorder = ThreadPoolExecutor(_RECORDERS, thread_name_prefix="spade-record")
        self._local = threading.local()
        self._read_stores: list[Store] = []
        self._record_caches: list[WorkspaceCache] = []
        self._path_locks: dict[Path, tuple[asyncio.Lock, int]] = {}  # lock, requests using it
        # saves waiting for their prompt's quiet period: the newest text (None: the file) and editor settings, and
        # every request that waits for the one record of the burst
        self._saves: dict[Path, tuple[str | None, dict[str, Any] | None]] = {}
        self._save_waiters: dict[Path, list[asyncio.Future[dict[str, Any]]]] = {}
        self._store = Store.open(root)  # applies migrations before anything else touches the store
        self.queue = JobQueue(self._store)  # used from the write thread only
        self.runner = JobRunner(
            root,
            self.owner,
            RunnerHooks(self._job_progress, self._job_finished, self._cancel_requested.__contains__),
            slots=_JOB_SLOTS,
        )
        self.watcher = PromptWatcher(root, self.globs, on_prompt=self._prompt_event, on_settings=self._settings_event)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._debouncer: Debouncer | None = None
        self._server: asyncio.AbstractServer | None = None
        self._methods: dict[str, Callable[[_Connection, dict[str, Any]], Awaitable[Any]]] = {
            "initialize": self._initialize,
            "prompt/record": self._prompt_record,
            "job/submit": self._job_submit,
            "job/get": self._job_get,
            "job/list": self._job_list,
            "job/cancel": self._job_cancel,
            "daemon/status": self._status,
            "daemon/shutdown": self._shutdown,
        }

    # -- life cycle -------------------------------------------------------------------------------------

    def recover(self) -> None:
        """Jobs a dead daemon left running, and old finished jobs; before serving (we hold the lock)."""
        recovery = self.queue.recover()
        if recovery.requeued or recovery.failed or recovery.cancelled:
            log.warning(
                "recovered jobs left running by a daemon that stopped: requeued %s, failed %s, cancelled %s",
                recovery.requeued,
                recovery.failed,
                recovery.cancelled,
            )
        for table, ids in recovery.interrupted_runs.items():
            log.warning("marked %s %s interrupted (their process stopped before they finished)", table, ids)
        pruned = self.queue.prune()
        if pruned:
            log.info("pruned %d finished job(s) older than 30 days", pruned)

    async def run(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._debouncer = Debouncer(self._loop, self._record_later, **debounce_delays(self.save_quiet_s))
        # handled before the socket exists: a client may signal as soon as it can connect, and a signal taken
        # by its default action would skip the shutdown (the socket, the info file, the store left behind)
        for name in (signal.SIGTERM, signal.SIGINT):
            self._loop.add_signal_handler(name, self.request_stop)
        self.recover()
        listener = self._bind()
        self._server = await asyncio.start_unix_server(self._serve, sock=listener, limit=protocol.MAX_MESSAGE_BYTES)
        self.runner.start()
        self._write_info()
        log.info("spade daemon %s serving %s (pid %d)", __version__, self.root, os.getpid())
        await asyncio.to_thread(self.watcher.start)  # walking a big tree must not delay the first client
        self._spawn(self._catch_up())
        self._spawn(self._renew_leases())
        self._spawn(self._idle_watch())
        await self._stop.wait()
        await self._shutdown_sequence()

    def request_stop(self) -> None:
        if not self._stop.is_set():
            log.info("stopping")
            self._stop.set()

    def _bind(self) -> socket.socket:
        """Bind the socket; any socket file left there is stale (we hold the lock), so it is removed."""
        path = self.state / protocol.SOCKET_NAME
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with protocol.socket_address(path) as address:
                listener.bind(address)
            os.chmod(path, 0o600)
            listener.listen(128)
        except BaseException:
            listener.close()
            raise
        listener.setblocking(False)
        return listener

    def _write_info(self) -> None:
        info = {
            "pid": os.getpid(),
            "version": __version__,
            "started_at": datetime.now(UTC).isoformat(),
            "protocol": protocol.PROTOCOL_VERSION,
            "root": str(self.root),
        }
        atomic_write_text(self.state / protocol.INFO_NAME, json.dumps(info) + "\n")

    async def _shutdown_sequence(self) -> None:
        if self._server is not None:
            self._server.close()
        with contextlib.suppress(FileNotFoundError):
            (self.state / protocol.SOCKET_NAME).unlink()
        with contextlib.suppress(FileNotFoundError):
            (self.state / protocol.INFO_NAME).unlink()
        if self._debouncer is not None:
            self._debouncer.cancel_all()
        await asyncio.to_thread(self.watcher.stop)
        left = await asyncio.to_thread(self.runner.stop, _STOP_JOBS_S)
        if left:
            log.warning("jobs %s were still running; the next daemon resumes them", left)
        await asyncio.gather(*(conn.flush_and_close(1.0) for conn in list(self.clients.values())))
        for task in list(self._tasks):
            task.cancel()
        for executor in (self._recorder, self._writes, self._reads):
            executor.shutdown(wait=True, cancel_futures=True)
        for cache in self._record_caches:
            cache.close()
        for store in self._read_stores:
            store.close()
        self._store.close()
        log.info("stopped")

    def _spawn(self, coroutine: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _catch_up(self) -> None:
        """Re-read the prompts the store knows once at start, so what changed while no daemon ran (a git
        checkout, another editor) is recorded now rather than at the prompt's next save. Each is an event for the
        debouncer, as the watcher's are: a client may already be saving that prompt (the socket serves before
        this runs), and its burst stays one version instead of gaining one read from the file mid-burst."""
        try:
            keys = await self._read(lambda queue: recorded_prompt_keys(queue.store))
        except SpadeError as error:
            log.warning("cannot list the recorded prompts: %s", error)
            return
        for key in keys:
            path = self.root / key
            if Path(key).is_absolute() or not path.is_file() or not self.watcher.wants(path):
                continue
            if self._debouncer is not None:
                self._debouncer.touch(path)

    async def _renew_leases(self) -> None:
        while True:
            await asyncio.sleep(RENEW_EVERY_S)
            if self.runner.busy:
                try:
                    await self._write(lambda queue: queue.renew(self.owner))
                except SpadeError as error:
                    log.warning("could not renew job leases: %s", error)

    async def _idle_watch(self) -> None:
        """Stop after ``idle_timeout_s`` with no client and no queued or running job."""
        idle_since: float | None = None
        step = min(1.0, max(self.idle_timeout_s / 4, 0.05))
        while True:
            await asyncio.sleep(step)
            busy = bool(self.clients) or self.runner.busy > 0
            if not busy:
                try:
                    busy = await self._read(lambda queue: queue.count_active()) > 0
                except SpadeError as error:
                    log.warning("cannot count active jobs: %s", error)
                    busy = True
            now = time.monotonic()
            if busy:
                idle_since = None
            elif idle_since is None:
                idle_since = now
            elif now - idle_since >= self.idle_timeout_s:
                log.info("idle for %.1f s with no client and no job", now - idle_since)
                self.request_stop()
                return

    # -- store access off the loop ----------------------------------------------------------------------

    async def _write(self, operation: Callable[[JobQueue], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._writes, operation, self.queue)

    async def _read(self, operation: Callable[[JobQueue], T]) -> T:
        def run() -> T:
            queue: JobQueue | None = getattr(self._local, "queue", None)
            if queue is None:
                queue = self._local.queue = JobQueue(Store.open(self.root))
                self._read_stores.append(queue.store)
            return operation(queue)

        return await asyncio.get_running_loop().run_in_executor(self._reads, run)

    # -- connections ------------------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = _Connection(next(self._numbers), reader, writer)
        self.clients[conn.number] = conn
        try:
            while not conn.closed:
                try:
                    line = await reader.readline()
                except ValueError:  # the line was longer than the limit; the reader dropped it
                    conn.send(
                        protocol.encode(
                            protocol.error_response(
                                None,
                                protocol.INVALID_REQUEST,
                                f"message larger than {protocol.MAX_MESSAGE_BYTES} bytes",
                            )
                        )
                    )
                    continue
                except (ConnectionError, OSError):
                    break
                if not line:
                    break
                if line.strip():
                    self._spawn(self._handle(conn, line))
        finally:
            del self.clients[conn.number]
            if conn.initialized:  # not the connect-and-close probes of daemon_running()
                log.info("%s disconnected (%d left)", conn.name, len(self.clients))
            await conn.flush_and_close(1.0)

    async def _handle(self, conn: _Connection, line: bytes) -> None:
        try:
            message = json.loads(line)
        except (ValueError, UnicodeDecodeError) as error:
            conn.send(protocol.encode(protocol.error_response(None, protocol.PARSE_ERROR, f"parse error: {error}")))
            return
        request_id = message.get("id") if isinstance(message, dict) else None
        if (
            not isinstance(message, dict)
            or message.get("jsonrpc") != "2.0"
            or not isinstance(message.get("method"), str)
            or not (request_id is None or isinstance(request_id, (int, str)))
        ):
            text = "invalid request: expected a JSON-RPC 2.0 object with a string method"
            conn.send(protocol.encode(protocol.error_response(request_id, protocol.INVALID_REQUEST, text)))
            return
        is_request = "id" in message
        method = message["method"]
        handler = self._methods.get(method)
        if handler is None:
            if is_request:
                text = f"unknown method {method!r}"
                conn.send(protocol.encode(protocol.error_response(request_id, protocol.METHOD_NOT_FOUND, text)))
            return
        params = message.get("params", {})
        try:
            if params is None:
                params = {}
            if not isinstance(params, dict):
                raise ParamsError("params must be an object")
            result = await handler(conn, params)
        except (ParamsError, JobParamsError) as error:
            reply = protocol.error_response(request_id, protocol.INVALID_PARAMS, str(error))
        except JobNotFoundError as error:
            reply = protocol.error_response(request_id, protocol.JOB_NOT_FOUND, str(error))
        except SpadeError as error:
            text = str(error).splitlines()[0] if str(error) else type(error).__name__
            reply = protocol.error_response(request_id, protocol.SPADE_ERROR, text, {"type": type(error).__name__})
        except Exception as error:
            log.exception("%s: %s failed", conn.name, method)
            text = f"internal error: {type(error).__name__}: {error}"
            reply = protocol.error_response(request_id, protocol.INTERNAL_ERROR, text)
        else:
            reply = protocol.response(request_id, result)
        if is_request:
            conn.send(protocol.encode(reply))

    def broadcast(self, method: str, params: Mapping[str, Any]) -> None:
        """To every connected client (call on the loop)."""
        data = protocol.encode(protocol.notification(method, params))
        for conn in list(self.clients.values()):
            conn.send(data)

    def _broadcast_threadsafe(self, method: str, params: Mapping[str, Any]) -> None:
        if self._loop is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody is listening
                self._loop.call_soon_threadsafe(self.broadcast, method, params)

    # -- methods ----------------------------------------------------------------------------------------

    async def _initialize(self, conn: _Connection, params: dict[str, Any]) -> dict[str, Any]:
        name = _optional(params, "client", str)
        pid = _optional(params, "pid", int)
        if name:
            conn.name = f"{name}-{conn.number}"
        conn.pid = pid
        conn.initialized = True
        log.info("%s connected (pid %s; %d client(s))", conn.name, pid, len(self.clients))
        return {
            "pid": os.getpid(),
            "version": __version__,
            "root": str(self.root),
            "protocol": protocol.PROTOCOL_VERSION,
        }

    def _prompt_path(self, value: object) -> Path:
        if not isinstance(value, str) or not value:
            raise ParamsError("params.path: expected a file path (absolute or relative to the workspace root)")
        path = Path(value)
        path = (path if path.is_absolute() else self.root / path).resolve()
        if not path.is_relative_to(self.root):
            raise ParamsError(f"params.path: {value} is outside the workspace {self.root}")
        return path

    def _key(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    async def _prompt_record(self, conn: _Connection, params: dict[str, Any]) -> dict[str, Any]:
        path = self._prompt_path(params.get("path"))
        text = _optional(params, "text", str)
        editor_settings = _optional(params, "settings", dict)
        if editor_settings is not None:
            validate_params("relabel", {"settings": editor_settings})  # refused here, not in a queued job
        quiet = self.save_quiet_s
        if editor_settings is not None and isinstance(editor_settings.get("save_quiet_s"), int | float):
            quiet = float(editor_settings["save_quiet_s"])
        if text is None or quiet <= 0 or self._debouncer is None or self._loop is None:  # an open: at once
            return await self._record(path, text, origin="save", editor_settings=editor_settings)
        # a burst of saves (autosave) is one version: each save replaces the text waiting for the quiet period,
        # which the file watcher's events of the same writes extend too; every request gets the one result
        self._saves[path] = (text, editor_settings)
        waiter: asyncio.Future[dict[str, Any]] = self._loop.create_future()
        self._save_waiters.setdefault(path, []).append(waiter)
        self._debouncer.touch(path, quiet_s=quiet)
        return await waiter

    async def _record(
        self, path: Path, text: str | None, *, origin: str, editor_settings: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Records of one prompt run one at a time, in arrival order (asyncio locks are FIFO); records of
        different prompts run side by side."""
        lock, users = self._path_locks.get(path) or (asyncio.Lock(), 0)
        self._path_locks[path] = (lock, users + 1)
        try:
            async with lock:
                loop = asyncio.get_running_loop()
                version, recorded, warnings, settings = await loop.run_in_executor(
                    self._recorder, self._record_sync, path, text, editor_settings
                )
        finally:
            lock, users = self._path_locks[path]
            if users == 1:
                del self._path_locks[path]
            else:
                self._path_locks[path] = (lock, users - 1)
        key = self._key(path)
        if recorded:
            log.info("recorded %s version %s (%s)", key, version, origin)
            self.broadcast("prompt/changed", {"path": key, "version": version, "origin": origin})
            if settings is not None and wants_relabel_settings(settings):
                await self._relabel_later(key, editor_settings)
            if settings is not None and version is not None and version > 1:
                await self._compare_later(path, key, version, settings, editor_settings)
        return {"path": key, "version": version, "recorded": recorded, "warnings": warnings}

    async def _compare_later(
        self, path: Path, key: str, version: int, settings: Settings, editor_settings: dict[str, Any] | None
    ) -> None:
        """With ``auto_sample`` on and a model configured (the prompt's settings: files, front matter, then the
        saving editor's), queue a paired comparison of the new version with the one before it (the editor's
        lens shows it when it is done)."""
        if not (settings.auto_sample and settings.model):
            return
        if not (sidecar_path(path).exists() and examples_path(path).exists()):
            log.info("no automatic comparison of %s: it needs its sidecar module and examples", key)
            return
        params = validate_params("compare", {"settings": editor_settings} if editor_settings else {}).to_json()
        job = await self._write(lambda queue: queue.enqueue("compare", key, params, client="daemon"))
        log.info("queued job %d: compare %s v%d with v%d", job.id, key, version, version - 1)
        self.runner.wake()

    async def _relabel_later(self, key: str, editor_settings: dict[str, Any] | None) -> None:
        """Versions are recorded with offline labels; with an assistant model set, a background job relabels
        them (the editor refreshes when it finishes, as after any job)."""
        params = validate_params("relabel", {"settings": editor_settings} if editor_settings else {}).to_json()

        def enqueue(queue: JobQueue) -> Job | None:
            """One queued relabel per prompt and settings: a burst of saves is labelled by one job."""
            for job in queue.list(path=key, active=True):
                if job.kind == "relabel" and job.status == "queued" and job.params == params:
                    return None
            return queue.enqueue("relabel", key, params, client="daemon")

        job = await self._write(enqueue)
        if job is not None:
            log.info("queued job %d: relabel %s with the assistant model", job.id, key)
            self.runner.wake()

    def _record_sync(
        self, path: Path, text: str | None, editor_settings: dict[str, Any] | None = None
    ) -> tuple[int | None, bool, list[str], Settings | None]:
        """In the recorder thread: git history, then the text (given, or read from disk). The last value is the
        prompt's settings when a version was recorded (they decide the background relabelling and comparison),
        None otherwise or when they are invalid: resolved as a job resolves them (:func:`resolve_file`: the
        files, the prompt's front matter, then the saving editor's settings)."""
        cache: WorkspaceCache | None = getattr(self._local, "workspaces", None)
        if cache is None:
            cache = self._local.workspaces = WorkspaceCache(self.root)
            self._record_caches.append(cache)
        workspace = cache.get()
        before = workspace.history.versions(path)
        warnings = sync_prompt(workspace, path, text=text)
        after = workspace.history.versions(path)
        recorded = len(after) != len(before) or (bool(after) and after[-1].id != before[-1].id)
        settings = None
        if recorded:
            try:
                settings = (
                    resolve_file(self.root, path, editor_settings, overrides_source=EDITOR_SETTINGS)
                    if text is None
                    else resolve(
                        self.root,
                        text,
                        editor_settings,
                        kind=prompt_kind(path),
                        source=str(path),
                        files=workspace.settings,
                        overrides_source=EDITOR_SETTINGS,
                    )
                )
            except SpadeError as error:  # invalid front matter: the views say why; the offline labels stay
                log.info("no relabelling or comparison of %s: %s", path, error)
        return (after[-1].number if after else None), recorded, warnings, settings

    def _prompt_event(self, path: Path) -> None:
        if self._debouncer is not None:
            self._debouncer.touch_threadsafe(path)

    def _record_later(self, path: Path) -> None:
        text, editor_settings = self._saves.pop(path, (None, None))
        waiters = self._save_waiters.pop(path, [])
        origin = "save" if waiters else "watch"

        async def record() -> None:
            try:
                result = await self._record(path, text, origin=origin, editor_settings=editor_settings)
            except Exception as error:  # deleted, binary, too large... the next save tries again
                if not isinstance(error, SpadeError):
                    log.exception("recording %s failed", path)
                else:
                    log.info("not recorded: %s", error)
                for waiter in waiters:
                    if not waiter.done():
                        waiter.set_exception(error)
                return
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(result)

        self._spawn(record())

    def _settings_event(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._reload_settings)

    def _reload_settings(self) -> None:
        try:
            globs = load_settings(self.root).prompt_globs
        except ConfigError as error:
            log.error("settings: %s (keeping the prompt globs %s)", error, ", ".join(self.globs))
            return
        try:
            quiet = load_settings(self.root).save_quiet_s
        except ConfigError:
            quiet = self.save_quiet_s
        if quiet != self.save_quiet_s and self._debouncer is not None:
            self.save_quiet_s = quiet
            self._debouncer.set_delays(**debounce_delays(quiet))
        if globs != self.globs:
            log.info("prompt globs now %s", ", ".join(globs))
            self.globs = globs
            self.watcher.globs = globs

    async def _job_submit(self, conn: _Connection, params: dict[str, Any]) -> dict[str, Any]:
        kind = params.get("kind")
        if not isinstance(kind, str):
            raise ParamsError("params.kind: expected a job kind")
        path = self._prompt_path(params.get("path"))
        if not path.is_file():
            raise ParamsError(f"params.path: {path} is not a file")
        job_params = params.get("params") or {}
        if not isinstance(job_params, dict):
            raise ParamsError("params.params: expected an object")
        key = self._key(path)
        checked = validate_params(kind, job_params).to_json()  # a bad job is refused here, never stored
        job = await self._write(lambda queue: queue.enqueue(kind, key, checked, client=conn.name))
        log.info("%s queued job %d (%s %s)", conn.name, job.id, kind, key)
        self.runner.wake()
        return job.to_json()

    async def _job_get(self, conn: _Connection, params: dict[str, Any]) -> dict[str, Any]:
        job_id = _required(params, "id", int)
        job = await self._read(lambda queue: queue.get(job_id))
        return job.to_json()

    async def _job_list(self, conn: _Connection, params: dict[str, Any]) -> list[dict[str, Any]]:
        raw_path = _optional(params, "path", str)
        key = self._key(self._prompt_path(raw_path)) if raw_path is not None else None
        active = _optional(params, "active", bool)
        jobs = await self._read(lambda queue: queue.list(path=key, active=active))
        return [job.to_json() for job in jobs]

    async def _job_cancel(self, conn: _Connection, params: dict[str, Any]) -> dict[str, Any]:
        job_id = _required(params, "id", int)
        self._cancel_requested.add(job_id)  # the runner sees it at the job's next checkpoint
        job = await self._write(lambda queue: queue.cancel(job_id))
        if job.status != "running":
            self._cancel_requested.discard(job_id)
        if job.status == "cancelled" and job.started_at is None:
            self.broadcast("job/finished", job.to_json())  # a queued job: cancelled right here
        log.info("%s asked to cancel job %d (%s)", conn.name, job_id, job.status)
        return job.to_json()

    async def _status(self, conn: _Connection, params: dict[str, Any]) -> dict[str, Any]:
        active = await self._read(lambda queue: queue.count_active())
        return {
            "pid": os.getpid(),
            "version": __version__,
            "root": str(self.root),
            "clients": len(self.clients),
            "jobs_active": active,
            "jobs_running": self.runner.running_jobs(),
            "watching": list(self.globs) if self.watcher.running else [],
            "uptime_s": round(time.monotonic() - self.started, 3),
            "idle_timeout_s": self.idle_timeout_s,
        }

    async def _shutdown(self, conn: _Connection, params: dict[str, Any]) -> dict[str, Any]:
        log.info("%s asked the daemon to stop", conn.name)
        asyncio.get_running_loop().call_soon(self.request_stop)  # after the answer is queued
        return {}

    # -- runner hooks (runner threads) ------------------------------------------------------------------

    def _job_progress(self, job: Job, message: str, percentage: float | None) -> None:
        self._broadcast_threadsafe(
            "job/progress",
            {"id": job.id, "kind": job.kind, "path": job.path, "message": message, "percentage": percentage},
        )

    def _job_finished(self, job: Job) -> None:
        self._cancel_requested.discard(job.id)
        version = self._newest_version(job.path) if job.status == "done" else None
        self._broadcast_threadsafe("job/finished", job.to_json())
        if job.status == "done":  # its results (a sidecar, a run, a selection) are in: views may refresh
            self._broadcast_threadsafe("prompt/changed", {"path": job.path, "version": version, "origin": "job"})

    def _newest_version(self, key: str) -> int | None:
        """From the runner thread that just finished the job (its own connection)."""
        try:
            with Store.open(self.root) as store:
                count = version_count(store, key)
        except SpadeError as error:
            log.warning("cannot read the versions of %s: %s", key, error)
            return None
        return count or None


def _optional(params: Mapping[str, Any], key: str, kind: type[T]) -> T | None:
    value = params.get(key)
    if value is None:
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ParamsError(f"params.{key}: expected {kind.__name__}, got {type(value).__name__}")
    return value


def _required(params: Mapping[str, Any], key: str, kind: type[T]) -> T:
    value = _optional(params, key, kind)
    if value is None:
        raise ParamsError(f"params.{key}: required")
    return value
