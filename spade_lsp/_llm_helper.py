"""The LLM helper processes (``llm_processes``): the pipeline's plain calls sent from processes on every core.

litellm's own work per call (a few milliseconds of CPU here) bounds what one process can send, so while sampling
the pipeline's client hands its plain requests to helper processes, one per usable CPU by default, and keeps its
own process free for what only it does: the cache (read before and written after, as without helpers), the
usage totals, validation in the sandbox and the store. Helpers are forked from one process of their own, the
zygote, which imports litellm once (seconds of CPU) before its first fork: every helper after the first starts
in milliseconds, its pages shared with the zygote's until written. The zygote and the first helper are started
as soon as a command knows it will sample (:func:`start_early`), so the import runs on another core while the
command reads its settings, history and examples; the others start when a batch is larger than can be in flight
at once.

The limits stay here: a call a helper sends holds one of this client's concurrency permits for as long as it
runs, so ``llm_concurrency`` bounds every process together. Helpers take only plain requests from clients without
an ``llm_rpm`` (a structured request negotiates a format whose state is this process's; a rate limit is kept here).

A helper is spade's own code, not a sandbox: it gets the client's key over its channel, as a Ray task does, and the
environment this process has when it hands over a batch (litellm reads provider keys from it). It ignores Ctrl+C
(the command stops its runs) and exits when its channel closes, which happens when this process exits or is
killed, or after five minutes with nothing to send (a daemon keeps no idle litellm of a few hundred MB); the
zygote exits when this process closes its end or after five minutes without a helper, and reaps its helpers
first, so their CPU time counts as this process's children's. A request whose helper died is sent from this
process instead (it may have reached the server once). Each helper's channel is a Unix socket pair whose other
end this process hands the zygote with the fork request (``SCM_RIGHTS``); messages on it are length-prefixed
pickles, between this process and processes it started.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import gc
import itertools
import logging
import math
import os
import pickle
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from typing import IO, TYPE_CHECKING, Any, Final, NoReturn

from spade_lsp._cpus import usable_cpus

if TYPE_CHECKING:
    from spade_lsp.config import Settings
    from spade_lsp.llm import ClientSpec, Completion, LLMRequest

__all__ = ["Helper", "HelperGone", "Helpers", "helpers_for", "release_unused", "start_early"]

log = logging.getLogger(__name__)
_HEADER: Final = struct.Struct(">I")
#: requests in flight one helper is given before another is started (at 100 ms a call, one helper sent about 250
#: calls a second here before its CPU ran out: 25 in flight)
_IN_FLIGHT_PER_HELPER: Final = 24
#: a helper with nothing to send for this long exits (each holds a litellm, a few hundred MB, and a daemon may
#: sample once an hour); the next batch starts another
_IDLE_EXIT_S = 300.0
#: a helper's GIL switch interval (CPython's default is 5 ms): a thread litellm wakes waits at most this long
_SWITCH_INTERVAL_S: Final = 0.0005
#: a helper's collection thresholds (CPython's are 700, 10, 10): litellm allocates a few thousand objects per call,
#: so the default collected its youngest generation several times a call; at 64 in flight against a loopback
#: server, 1,000 calls made 230 collections (5% of the helper's CPU) by default and 9 (2%) with these
_GC_THRESHOLDS: Final = (10_000, 10, 10)
#: the helpers of this process, shared by every client (at most one per usable CPU by default)
_helpers: list[Helper] = []
#: the process they are forked from, while it runs
_zygote: _Zygote | None = None
_guard = threading.Lock()


class HelperGone(Exception):
    """The helper process exited before it answered (the request may have been sent)."""


def _frame(message: object) -> bytes:
    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(payload)) + payload


def _write(stream: IO[bytes], message: object) -> None:
    stream.write(_frame(message))
    stream.flush()


def _read(stream: IO[bytes]) -> Any:
    """The next message, or None at the end of the stream."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    payload = stream.read(size)
    if len(payload) < size:
        return None
    return pickle.loads(payload)


class _Zygote:
    """The process helpers are forked from (see the module's docstring), seen from this process."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)  # one fork request per message
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "spade_lsp._llm_helper", str(_IDLE_EXIT_S)],
                stdin=theirs.fileno(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                close_fds=True,
            )
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        self.control = ours

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def fork(self) -> Helper:
        """A new helper, forked once the zygote has imported litellm. Raises :class:`OSError` when the zygote has
        exited (a request it leaves unread closes the helper's channel: the helper is then gone, not hung)."""
        ours, theirs = socket.socketpair()
        try:
            socket.send_fds(self.control, [b"f"], [theirs.fileno()])
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        return Helper(ours)

    def stop(self, *, reap: bool) -> None:
        """Close its end; with ``reap`` the zygote reaps its helpers (which leave when their channels close)
        before it exits, so their CPU time is counted; without, it is killed now (one still importing litellm
        would keep the caller waiting for seconds, for helpers that never ran)."""
        with contextlib.suppress(OSError):
            self.control.close()
        if not reap:
            self.process.kill()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Helper:
    """One helper process, seen from this process through its channel. :meth:`call` runs on the LLM layer's event
    loop; answers come back on a reader thread and are handed to that loop."""

    def __init__(self, channel: socket.socket) -> None:
        self.channel = channel
        self._writer = channel.makefile("wb")
        self._reader = channel.makefile("rb")
        #: the helper's process id, once it has reported ready
        self.pid: int | None = None
        #: set when its channel has closed: it exited, or this process stopped it
        self.gone = threading.Event()
        self._ids = itertools.count(1)
        self._clients: dict[bytes, int] = {}
        self._environment: dict[str, str] | None = None
        self._waiting: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Future[Any]]] = {}
        self._lock = threading.Lock()  # writes come from the loop and from a stopping caller's thread
        #: true once the helper runs with litellm imported, false if it exited first
        self.ready: concurrent.futures.Future[bool] = concurrent.futures.Future()
        self.alive = True
        threading.Thread(target=self._read_answers, name="spade-llm-helper", daemon=True).start()

    def _read_answers(self) -> None:
        with contextlib.suppress(OSError, ValueError):  # the channel closed under the read: the end of it
            self._read_until_closed()
        with self._lock:
            self.alive = False
            gone, self._waiting = self._waiting, {}
        if not self.ready.done():
            self.ready.set_result(False)
        for loop, future in gone.values():
            loop.call_soon_threadsafe(_settle, future, HelperGone(f"the LLM helper {self.pid or ''} exited"))
        self.gone.set()

    def _read_until_closed(self) -> None:
        while (message := _read(self._reader)) is not None:
            if message[0] == "ready":
                self.pid = message[1]
                self.ready.set_result(True)
                continue
            _, call, payload = message
            with self._lock:
                waiting = self._waiting.pop(call, None)
            if waiting is not None:
                loop, future = waiting
                loop.call_soon_threadsafe(_settle, future, payload)

    def _send(self, message: object) -> None:
        with self._lock:
            if not self.alive:
                raise HelperGone("the LLM helper has exited")
            try:
                _write(self._writer, message)
            except (OSError, ValueError) as error:
                self.alive = False
                raise HelperGone(f"the LLM helper has exited: {error}") from None

    @property
    def used(self) -> bool:
        """Whether a client has been made in it."""
        return bool(self._clients)

    def client(self, spec: ClientSpec) -> int:
        """The number the helper knows a client made from ``spec`` by (made there the first time), with this
        process's environment as it is now."""
        environment = dict(os.environ)
        if environment != self._environment:
            self._send(("environ", environment))
            self._environment = environment
        key = pickle.dumps(spec)
        number = self._clients.get(key)
        if number is None:
            number = self._clients[key] = next(self._ids)
            self._send(("client", number, spec))
        return number

    async def call(self, client: int, request: LLMRequest, batch: int) -> Completion | tuple[Any, ...]:
        """``request`` sent by the helper with its ``client``: its :class:`Completion`, a failure as ("failure",
        error parts, what it spent), or ("fault", why) when the helper itself failed. Raises :class:`HelperGone`
        if the helper exits first."""
        call = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        with self._lock:
            self._waiting[call] = (asyncio.get_running_loop(), future)
        try:
            self._send(("call", call, client, batch, request))
            return await future  # type: ignore[no-any-return]
        finally:
            with self._lock:
                self._waiting.pop(call, None)

    def stop(self, batch: int) -> None:
        """The helper sends nothing more for ``batch`` (calls in flight finish; retries are not made)."""
        with contextlib.suppress(HelperGone):
            self._send(("stop", batch))

    def close(self) -> None:
        """End its channel: the helper exits (calls in flight are sent from here by their callers)."""
        with contextlib.suppress(OSError):
            self.channel.shutdown(socket.SHUT_RDWR)
        self.gone.wait(timeout=5)
        for stream in (self._writer, self._reader, self.channel):
            with contextlib.suppress(OSError):
                stream.close()


def _stop(helpers: list[Helper]) -> None:
    """``helpers`` stopped (a call one of them had in flight is sent from this process instead)."""
    for helper in helpers:
        helper.close()


def _stop_all() -> None:
    """At exit: every helper (their answers would have no one to go to), then the zygote, which reaps them first:
    none is left behind, and their CPU time counts as this process's children's."""
    global _zygote
    with _guard:
        helpers, _helpers[:] = _helpers[:], []
        zygote, _zygote = _zygote, None
    _stop(helpers)
    if zygote is not None:
        zygote.stop(reap=any(helper.pid is not None for helper in helpers))


atexit.register(_stop_all)


def release_unused() -> None:
    """Stop the helpers no client has used yet: a command whose settings send the pipeline's calls elsewhere
    (``llm_processes = 0``, the Ray executor, a provider batch) had one started early, which would otherwise spend
    seconds of CPU importing litellm for nothing."""
    global _zygote
    with _guard:
        unused = [helper for helper in _helpers if not helper.used]
        _helpers[:] = [helper for helper in _helpers if helper.used]
        zygote = None if _helpers else _zygote
        if zygote is not None:
            _zygote = None
    _stop(unused)
    if zygote is not None:
        zygote.stop(reap=False)


class Helpers:
    """The helpers a pipeline client hands its batches to (``llm_processes`` of them at most)."""

    def __init__(self, wanted: int) -> None:
        self.wanted = wanted

    def for_batch(self, size: int, concurrency: int) -> list[Helper]:
        """The live helpers for a batch of ``size`` requests, started where missing: one for a batch that can be
        in flight at once; for a larger one, one per ``_IN_FLIGHT_PER_HELPER`` requests in flight (one helper
        keeps up with fewer, and another would only spend seconds of CPU importing litellm)."""
        needed = 1 if size <= concurrency else math.ceil(concurrency / _IN_FLIGHT_PER_HELPER)
        with _guard:
            _helpers[:] = [helper for helper in _helpers if helper.alive]
            while len(_helpers) < min(needed, self.wanted) and (helper := _started()) is not None:
                _helpers.append(helper)
            return _helpers[: self.wanted]


def _started() -> Helper | None:
    """A new helper forked from the zygote (started first where none runs; called under ``_guard``), or None (with
    a warning in the log) when no process can be started: the calls are then sent from this process."""
    global _zygote
    for _ in range(2):  # a zygote that left while idle is replaced once
        try:
            if _zygote is None or not _zygote.running:
                _zygote = _Zygote()
            return _zygote.fork()
        except OSError as error:
            failure = error
            _zygote = None
    log.warning("no LLM helper process could be started (%s): the calls are sent from this process", failure)
    return None


def _settle(future: asyncio.Future[Any], payload: Any) -> None:
    if future.done():
        return
    if isinstance(payload, BaseException):
        future.set_exception(payload)
    else:
        future.set_result(payload)


def wanted(settings: Settings) -> int:
    """How many helpers ``llm_processes`` asks for here: never more than the usable CPUs (a helper beyond them only
    takes turns, and holds a few hundred MB; a repository's own spade.toml may set this), none on one CPU unless
    set."""
    cpus = usable_cpus()
    if settings.llm_processes is not None:
        return min(settings.llm_processes, cpus)
    return cpus if cpus > 1 else 0


def start_early() -> None:
    """Start this process's first helper now, before the command knows its settings: its import of litellm then
    overlaps the command's own start. Does nothing with one usable CPU or when one runs already; a helper the
    settings then do not ask for exits with this process."""
    if usable_cpus() < 2:
        return
    with _guard:
        if not any(helper.alive for helper in _helpers) and (helper := _started()) is not None:
            _helpers[:] = [helper]


def helpers_for(settings: Settings) -> Helpers | None:
    """The helpers of a pipeline client under ``settings``, or None when its calls are sent from this process
    (any helper started early and never used is then stopped)."""
    count = wanted(settings)
    if count == 0:
        release_unused()
        return None
    return Helpers(count)


# -- the helper process -------------------------------------------------------------------------------------------


def _zygote_main(idle_exit_s: float) -> NoReturn:
    """The zygote: litellm imported first (the parent is still starting), then a helper forked for each channel
    the parent sends over stdin (a Unix socket), until stdin closes or it has had no helper for
    ``idle_exit_s``; its helpers are reaped before it exits. It has one thread, so a fork copies nothing half
    done."""
    from spade_lsp.llm import _import_litellm

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C reaches the whole group: the parent stops its runs
    _import_litellm()
    control = socket.socket(fileno=sys.stdin.fileno())
    children: set[int] = set()
    idle_since = time.monotonic()
    while True:
        control.settimeout(min(idle_exit_s, 30.0))
        try:
            message, fds, _, _ = socket.recv_fds(control, 16, 1)
        except TimeoutError:
            message, fds = None, []
        except OSError:
            break
        _reap(children, block=False)
        if message == b"":
            break  # the parent closed its end, or is gone
        for fd in fds:
            pid = os.fork()
            if pid == 0:
                try:
                    control.close()
                    _serve(socket.socket(fileno=fd), idle_exit_s)
                finally:
                    os._exit(1)  # a helper never returns into the zygote's loop
            os.close(fd)
            children.add(pid)
        if children or fds:
            idle_since = time.monotonic()
        elif time.monotonic() - idle_since >= idle_exit_s:
            break  # a daemon keeps no idle litellm of a few hundred MB; the next batch starts another zygote
    control.close()
    _reap(children, block=True)
    os._exit(0)  # the parent waits for this exit: an interpreter teardown of litellm's modules would add 0.1 s


def _reap(children: set[int], *, block: bool) -> None:
    """Wait for the helpers that have exited (all of them with ``block``)."""
    for pid in list(children):
        with contextlib.suppress(ChildProcessError):
            done, _ = os.waitpid(pid, 0 if block else os.WNOHANG)
            if done == 0:
                continue
        children.discard(pid)


def _serve(channel: socket.socket, idle_exit_s: float) -> None:
    """A helper, forked from the zygote with litellm imported: calls as they come on ``channel``, until it closes
    or the helper has had nothing to do for ``idle_exit_s``. Never returns.

    Everything runs on one event loop, the channel read there too: a reader thread handing each message over
    would wait for the loop's thread to let go of the GIL, up to the switch interval per hop, and at 16 calls
    in flight those waits were a few milliseconds of every call's latency. The interval is shortened for the
    threads litellm still starts (its logging callbacks) for the same reason."""
    from spade_lsp.llm import _DispatchExecutor

    sys.stdout = sys.stderr  # nothing printed by a library may land among the answers
    sys.setswitchinterval(_SWITCH_INTERVAL_S)
    gc.set_threshold(*_GC_THRESHOLDS)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    loop.set_default_executor(_DispatchExecutor(thread_name_prefix="spade-llm-step"))
    loop.run_until_complete(_answer_calls(channel, idle_exit_s))
    os._exit(0)  # the parent is gone or this helper was idle: calls still in flight have no one to answer


async def _answer_calls(channel: socket.socket, idle_exit_s: float) -> None:
    """The helper's loop: read a message, act on it; calls run as tasks that write their answers back."""
    from spade_lsp.llm import LiteLLMClient, _Failure, error_parts

    reader, writer = await asyncio.open_unix_connection(sock=channel)
    writer.write(_frame(("ready", os.getpid())))
    clients: dict[int, LiteLLMClient] = {}
    stops: dict[int, threading.Event] = {}
    running: set[asyncio.Task[None]] = set()
    active = time.monotonic()  # when a message or an answer last came

    async def answer(call: int, client: LiteLLMClient, request: LLMRequest, stop: threading.Event) -> None:
        nonlocal active
        payload: Any
        try:
            payload = await client._acall(request, stop)
        except _Failure as failure:
            payload = ("failure", error_parts(failure.error), failure.spent.completion(""))
        except Exception as error:  # a fault of this process, not of the call: the parent sends it itself
            payload = ("fault", f"{type(error).__name__}: {error}")
        writer.write(_frame(("done", call, payload)))
        active = time.monotonic()

    while True:
        try:
            header = await asyncio.wait_for(reader.readexactly(_HEADER.size), timeout=min(idle_exit_s, 30.0))
            message = pickle.loads(await reader.readexactly(_HEADER.unpack(header)[0]))
        except TimeoutError:
            if not running and time.monotonic() - active >= idle_exit_s:
                return  # the parent sees the end of its stream and sends from elsewhere
            continue
        except (asyncio.IncompleteReadError, OSError):
            return  # the parent closed the channel, or is gone
        active = time.monotonic()
        if message[0] == "environ":
            os.environ.clear()
            os.environ.update(message[1])
        elif message[0] == "client":
            _, number, spec = message
            clients[number] = spec.make(LiteLLMClient, rpm=None)  # the parent keeps the limits
        elif message[0] == "call":
            _, call, number, batch, request = message
            stop = stops.setdefault(batch, threading.Event())
            task = asyncio.create_task(answer(call, clients[number], request, stop))
            running.add(task)  # the loop keeps only a weak reference to a task
            task.add_done_callback(running.discard)
        elif message[0] == "stop":
            stops.setdefault(message[1], threading.Event()).set()


if __name__ == "__main__":
    _zygote_main(float(sys.argv[1]))
