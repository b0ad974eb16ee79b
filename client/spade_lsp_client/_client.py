"""The asyncio client of the workspace daemon, and the helpers built on it (start a daemon, run one job).

One :class:`DaemonClient` is one connection, bound to the event loop that made it. Requests may run
concurrently (answers are matched by id); notifications go to every subscriber, in order, on the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from spade_lsp import make_private_dir
from spade_lsp.errors import DaemonError, DaemonUnavailableError
from spade_lsp_client import protocol

log = logging.getLogger("spade_lsp_client")

Notification = Callable[[str, dict[str, Any]], None]

#: How often one ``connect(start=True)`` may spawn a daemon that then exits at once (it lost the lock to a
#: daemon that was shutting down); each spawn waits for the one before it to exit.
_MAX_SPAWNS: Final = 5


class DaemonClient:
    """A connection to the daemon of one workspace. Make one with :meth:`connect`; close it when done."""

    def __init__(
        self, root: Path, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, client_name: str
    ) -> None:
        self.root = root
        self.client_name = client_name
        #: The daemon's ``initialize`` answer: pid, version, root, protocol.
        self.info: dict[str, Any] = {}
        self._reader = reader
        self._writer = writer
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._subscribers: list[Notification] = []
        self._disconnect_callbacks: list[Callable[[], None]] = []
        self._write_lock = asyncio.Lock()
        self._connected = True
        self._closing = False
        self._read_task = asyncio.get_running_loop().create_task(self._read_loop(), name="spade-daemon-client-read")

    # -- connecting -------------------------------------------------------------------------------------

    @classmethod
    async def connect(
        cls, root: Path, *, client_name: str, start: bool = True, timeout_s: float = 10.0
    ) -> DaemonClient:
        """Connect to the daemon of the workspace at ``root`` and ``initialize``. With ``start`` a daemon is
        spawned when none answers (also when the last one died), and connecting is retried with backoff for up
        to ``timeout_s``. Raises :class:`DaemonUnavailableError` when no daemon can be reached."""
        root = Path(root).resolve()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        spawned: subprocess.Popen[bytes] | None = None
        spawns = 0
        delay = 0.01
        while True:
            try:
                return await cls._connect_once(root, client_name, timeout_s=max(deadline - loop.time(), 0.5))
            except DaemonUnavailableError as error:
                if not start:
                    raise
                last_error: DaemonUnavailableError = error
            # A daemon that exits with an error refused to start (bad settings, an unusable store): spawning
            # again would fail the same way. One killed by a signal was lost like any daemon; spawn the next.
            if spawned is not None and (spawned.poll() or 0) > 0:
                raise DaemonUnavailableError(
                    f"the spade daemon for {root} exited with status {spawned.returncode}: {_tail(root)}"
                )
            if spawned is None or (spawned.poll() is not None and spawns < _MAX_SPAWNS):
                spawned = spawn_daemon(root)
                spawns += 1
            if loop.time() >= deadline:
                raise DaemonUnavailableError(
                    f"no spade daemon answered for {root} within {timeout_s:g} s ({last_error}); "
                    f"see {protocol.state_dir(root) / protocol.LOG_NAME}"
                )
            await asyncio.sleep(min(delay, max(deadline - loop.time(), 0)))
            delay = min(delay * 2, 0.2)

    @classmethod
    async def _connect_once(cls, root: Path, client_name: str, *, timeout_s: float) -> DaemonClient:
        path = protocol.socket_path(root)
        try:
            with protocol.socket_address(path) as address:
                reader, writer = await asyncio.wait_for(
                    asyncio.open_unix_connection(address, limit=protocol.MAX_MESSAGE_BYTES), timeout_s
                )
        except (OSError, TimeoutError) as error:
            raise DaemonUnavailableError(f"cannot connect to {path}: {error}") from error
        client = cls(root, reader, writer, client_name=client_name)
        try:
            client.info = await client.request(
                "initialize", {"client": client_name, "pid": os.getpid()}, timeout_s=timeout_s
            )
        except BaseException:
            await client.close()
            raise
        if client.info.get("protocol") != protocol.PROTOCOL_VERSION:
            await client.close()
            raise DaemonError(
                f"the daemon for {root} speaks protocol {client.info.get('protocol')}, this client "
                f"{protocol.PROTOCOL_VERSION}; stop it (it restarts) or upgrade spade-lsp"
            )
        return client

    # -- requests ---------------------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        return self._connected

    async def request(
        self, method: str, params: Mapping[str, Any] | None = None, *, timeout_s: float | None = 30.0
    ) -> Any:
        """Send a request and wait for its result. Raises :class:`DaemonError` (with the JSON-RPC ``code``)
        when the daemon answers with an error, :class:`DaemonUnavailableError` when the connection is lost or
        no answer comes within ``timeout_s``."""
        if not self._connected:
            raise DaemonUnavailableError(f"not connected to the spade daemon of {self.root}")
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            await self._send(protocol.request(request_id, method, params if params is not None else {}))
            return await asyncio.wait_for(future, timeout_s)
        except TimeoutError as error:
            raise DaemonUnavailableError(f"the spade daemon did not answer {method} within {timeout_s:g} s") from error
        finally:
            self._pending.pop(request_id, None)

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification (no answer)."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": dict(params or {})}
        await self._send(message)

    async def _send(self, message: Mapping[str, Any]) -> None:
        data = protocol.encode(message)
        try:
            async with self._write_lock:
                self._writer.write(data)
                await self._writer.drain()
        except (ConnectionError, RuntimeError) as error:
            self._lost(f"cannot write to the daemon: {error}")
            raise DaemonUnavailableError(f"lost the connection to the spade daemon of {self.root}") from error

    def subscribe(self, callback: Notification) -> Callable[[], None]:
        """Call ``callback(method, params)`` for every notification; returns a function that unsubscribes."""
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._subscribers.remove(callback)

        return unsubscribe

    def on_disconnect(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback()`` once when the connection is lost (not after :meth:`close`); returns a function
        that removes it. The daemon may have died: :meth:`connect` with ``start=True`` starts a new one."""
        self._disconnect_callbacks.append(callback)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._disconnect_callbacks.remove(callback)

        return remove

    # -- jobs -------------------------------------------------------------------------------------------

    async def submit_job(self, kind: str, path: Path | str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Queue a job; returns it (status ``queued``)."""
        job: dict[str, Any] = await self.request(
            "job/submit", {"kind": kind, "path": str(path), "params": dict(params or {})}
        )
        return job

    async def wait_job(
        self,
        job_id: int,
        *,
        on_progress: Callable[[dict[str, Any]], None] | None = None,
        timeout_s: float | None = None,
    ) -> dict[str, Any]:
        """Wait for the job to finish and return it (status ``done``, ``failed`` or ``cancelled``).
        ``on_progress`` gets each ``job/progress`` notification's params. Raises :class:`TimeoutError` after
        ``timeout_s`` and :class:`DaemonUnavailableError` if the connection is lost (a restarted daemon
        resumes the job: connect again and wait again)."""
        loop = asyncio.get_running_loop()
        finished: asyncio.Future[dict[str, Any]] = loop.create_future()

        def on_notification(method: str, params: dict[str, Any]) -> None:
            if params.get("id") != job_id or finished.done():
                return
            if method == "job/finished":
                finished.set_result(params)
            elif method == "job/progress" and on_progress is not None:
                on_progress(params)

        def on_lost() -> None:
            if not finished.done():
                finished.set_exception(
                    DaemonUnavailableError(f"the spade daemon stopped while job {job_id} was waited for")
                )

        unsubscribe = self.subscribe(on_notification)  # before job/get: no finish can slip in between
        remove = self.on_disconnect(on_lost)
        try:
            job: dict[str, Any] = await self.request("job/get", {"id": job_id})
            if job.get("status") in protocol.FINISHED_STATUSES:
                return job
            return await asyncio.wait_for(finished, timeout_s)
        finally:
            unsubscribe()
            remove()
            if finished.done() and not finished.cancelled():
                finished.exception()  # mark a lost-connection error as retrieved

    # -- reading ----------------------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        reason = "the daemon closed the connection"
        try:
            while True:
                try:
                    line = await self._reader.readline()
                except ValueError:  # longer than MAX_MESSAGE_BYTES; the reader dropped it
                    log.error("dropped a message from the daemon larger than %d bytes", protocol.MAX_MESSAGE_BYTES)
                    continue
                if not line:
                    break
                self._dispatch(line)
        except (ConnectionError, OSError) as error:
            reason = f"connection error: {error}"
        except asyncio.CancelledError:
            reason = "closed"
        finally:
            self._lost(reason)

    def _dispatch(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            log.error("the daemon sent a line that is not JSON: %.200r", line)
            return
        if not isinstance(message, dict):
            log.error("the daemon sent a message that is not an object: %.200r", line)
            return
        if "method" in message and "id" not in message:
            params = message.get("params")
            for callback in list(self._subscribers):
                try:
                    callback(str(message["method"]), params if isinstance(params, dict) else {})
                except Exception:
                    log.exception("a subscriber to %s failed", message["method"])
            return
        request_id = message.get("id")
        future = self._pending.get(request_id) if isinstance(request_id, int) else None
        if future is None or future.done():
            if message.get("error"):
                log.error("the daemon reported an error not tied to a request: %s", message["error"])
            return
        error = message.get("error")
        if isinstance(error, dict):
            future.set_exception(
                DaemonError(
                    str(error.get("message", "daemon error")), code=int(error.get("code", 0)), data=error.get("data")
                )
            )
        else:
            future.set_result(message.get("result"))

    def _lost(self, reason: str) -> None:
        if not self._connected:
            return
        self._connected = False
        for future in self._pending.values():
            if not future.done():
                future.set_exception(DaemonUnavailableError(f"lost the spade daemon of {self.root}: {reason}"))
        self._pending.clear()
        self._writer.close()
        if self._closing:
            return
        log.info("lost the spade daemon of %s: %s", self.root, reason)
        for callback in list(self._disconnect_callbacks):
            try:
                callback()
            except Exception:
                log.exception("an on_disconnect callback failed")

    async def close(self) -> None:
        """Close the connection (the daemon goes on: it stops by itself once idle)."""
        self._closing = True
        self._lost("closed")
        if not self._read_task.done():
            self._read_task.cancel()
        with contextlib.suppress(asyncio.CancelledError, ConnectionError, OSError):
            await self._read_task
        with contextlib.suppress(ConnectionError, OSError):
            await self._writer.wait_closed()

    async def __aenter__(self) -> DaemonClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


# -- starting a daemon -------------------------------------------------------------------------------------


def spawn_daemon(root: Path) -> subprocess.Popen[bytes]:
    """Start ``python -m spade_lsp_server.daemon --root ROOT`` detached (own session, stdio to
    ``.spade/daemon.out``). It exits at once if another daemon holds the workspace's lock. A thread reaps
    it when it exits, so no zombie is left behind."""
    directory = make_private_dir(protocol.state_dir(root))
    command = [sys.executable, "-m", "spade_lsp_server.daemon", "--root", str(root)]
    log.info("starting the spade daemon: %s", " ".join(command))
    with (directory / protocol.OUT_NAME).open("ab") as out:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=root,
            start_new_session=True,
            close_fds=True,
        )
    threading.Thread(target=process.wait, name=f"spade-daemon-reaper-{process.pid}", daemon=True).start()
    return process


def _tail(root: Path) -> str:
    """The last line the spawned daemon printed, for an error message."""
    try:
        with (protocol.state_dir(root) / protocol.OUT_NAME).open("rb") as out:  # it only grows: read its end
            out.seek(max(0, out.seek(0, os.SEEK_END) - 64_000))
            lines = out.read().decode("utf-8", errors="replace")
    except OSError:
        return "no output"
    last = [line for line in lines.splitlines() if line.strip()]
    return last[-1] if last else "no output"


def daemon_running(root: Path) -> bool:
    """Whether a daemon listens on the workspace's socket right now (a quick synchronous check)."""
    path = protocol.socket_path(root)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        try:
            with protocol.socket_address(path) as address:
                probe.connect(address)
        except OSError:
            return False
    return True


async def ensure_daemon(root: Path, *, timeout_s: float = 10.0) -> None:
    """Make sure a daemon runs for ``root``, starting one if needed; raises :class:`DaemonUnavailableError`."""
    client = await DaemonClient.connect(root, client_name="ensure_daemon", start=True, timeout_s=timeout_s)
    await client.close()


class NotQueuedError(DaemonUnavailableError):
    """The daemon went away before it answered a job's submission: the job may never have been queued, so the
    caller runs it itself (a job the daemon did queue just before dying then also runs once more in the next
    daemon; the job kinds are idempotent, their results only written again)."""


def run_job(
    root: Path,
    kind: str,
    path: Path,
    params: Mapping[str, Any],
    *,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    start: bool = False,
    client_name: str = "cli",
    timeout_s: float | None = None,
    reconnect_timeout_s: float = 30.0,
) -> dict[str, Any]:
    """Submit a job to the workspace's daemon and wait for it (synchronous, for the CLI). Returns the finished
    job; its ``status`` says how it ended. ``start`` spawns a daemon when none runs (the CLI normally checks
    :func:`daemon_running` and works in-process otherwise). Interrupting (Ctrl-C) cancels the job.

    Once the job is queued it is durable: when the daemon stops while the job is waited for (killed, crashed,
    restarted), this reconnects (starting a daemon if none comes back within a moment, as the job needs one
    to finish) and waits for the same job id, for up to ``reconnect_timeout_s`` per loss. The next daemon
    resumes the job, or fails it with a reason after it was interrupted too often."""

    async def submit_and_wait() -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        deadline = None if timeout_s is None else loop.time() + timeout_s
        client = await DaemonClient.connect(root, client_name=client_name, start=start)
        job_id: int | None = None
        try:
            try:
                job = await client.submit_job(kind, path, params)
            except DaemonUnavailableError as lost:  # before the daemon said it took the job: not durable yet
                raise NotQueuedError(f"{lost}; the job was not queued") from lost
            job_id = int(job["id"])
            while True:
                left = None if deadline is None else max(deadline - loop.time(), 0.0)
                try:
                    return await client.wait_job(job_id, on_progress=on_progress, timeout_s=left)
                except DaemonUnavailableError as lost:
                    log.info("%s; reconnecting to wait for job %d", lost, job_id)
                await client.close()
                client = await _reconnect(root, client_name, job_id, reconnect_timeout_s)
        except (asyncio.CancelledError, TimeoutError):
            if job_id is not None and client.connected:
                with contextlib.suppress(DaemonError):
                    await client.request("job/cancel", {"id": job_id}, timeout_s=2.0)
            raise
        finally:
            await client.close()

    return asyncio.run(submit_and_wait())


#: How long a waiting client lets a stopped daemon come back (a supervisor, an editor's server, a client
#: like itself restarting it) before it starts one itself.
_COMEBACK_S: Final = 2.0


async def _reconnect(root: Path, client_name: str, job_id: int, timeout_s: float) -> DaemonClient:
    """A connection to the workspace's next daemon, for a client waiting on ``job_id``."""
    loop = asyncio.get_running_loop()
    comeback = loop.time() + _COMEBACK_S
    while loop.time() < comeback:
        try:
            return await DaemonClient.connect(root, client_name=client_name, start=False, timeout_s=_COMEBACK_S)
        except DaemonUnavailableError:
            await asyncio.sleep(0.05)
    try:
        return await DaemonClient.connect(root, client_name=client_name, start=True, timeout_s=timeout_s)
    except DaemonUnavailableError as error:
        raise DaemonUnavailableError(
            f"the spade daemon stopped while job {job_id} was waited for, and none came back: {error}"
        ) from error
