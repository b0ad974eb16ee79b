"""The parent side: start workers, hand out cases, answer ask_llm, watch the clock, assemble the result.

One thread drives every worker through a selector: it writes batches of cases (non-blocking, so a full pipe
never deadlocks), reads the per-cell results as they stream back, and answers ``ask_llm`` requests by calling
the caller's function (memoised within the run). A worker that dies, sends garbage, or stays silent past
``timeout_s + grace_s`` is killed with its whole process group; the cell in flight gets the error and the
rest of its work goes to a fresh worker. Results land at their (case, assertion) index, so the output does
not depend on scheduling.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import math
import os
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from spade_lsp._files import MAX_SIDECAR_BYTES, read_limited_text
from spade_lsp.assertions import AskLLMUnavailable
from spade_lsp.config import PYTHON_ONLY_WARNING
from spade_lsp.errors import InputError, ModelNotConfiguredError, SandboxError
from spade_lsp.sandbox import _kernel
from spade_lsp.sandbox._policy import DEFAULT_ALLOWED_IMPORTS, Analysis, analyse
from spade_lsp.sandbox._protocol import FrameBuffer, ProtocolError, encode
from spade_lsp.sandbox._types import (
    CELL_ERROR_KINDS,
    AssertionDescriptor,
    CellError,
    CellErrorKind,
    ModuleError,
    ModuleInfo,
    ModuleSource,
    SandboxCase,
    SandboxLimits,
    SandboxResult,
    SandboxTiming,
)

__all__ = [
    "PYTHON_ONLY_WARNING",
    "AskLLM",
    "SandboxUnavailableError",
    "clean_stale_dirs",
    "confinement_status",
    "load_module_info",
    "run_assertions",
]

AskLLM = Callable[[str, str, Mapping[str, Any]], bool]

_BOOT: Final = "import sys; sys.path.append(sys.argv[1]); from spade_lsp.sandbox._worker import main; main()"
_PACKAGE_ROOT: Final = str(Path(__file__).resolve().parents[2])
_MAX_RESTART_FAILURES: Final = 3
_MAX_BATCH: Final = 32
_LOG_NAME: Final = ".worker.log"
_LOG_TAIL: Final = 8192
#: A worker is untrusted once user code runs in it: its frames, texts and log are capped data.
_MAX_WORKER_FRAME: Final = 8 * 1024 * 1024
_MAX_WORKER_TEXT: Final = 2000
_DIR_PREFIX: Final = "spade-sandbox-"
_MAX_PRIVATE_ENTRIES: Final = 2000
_DISK_CHECK_EVERY_S: Final = 1.0
_CONFINE_FAILED: Final = 86  # _worker.CONFINE_FAILED (not imported: the worker module is for workers)


class SandboxUnavailableError(SandboxError):
    """Kernel confinement was asked for (the default) and this machine cannot provide it."""


def confinement_status(confinement: str = "kernel") -> str:
    """One line for ``spade doctor``, the CLI and the editor: what will confine generated assertions."""
    if confinement == "python-only":
        return PYTHON_ONLY_WARNING
    return _kernel.probe().describe()


def _require_confinement(limits: SandboxLimits) -> str:
    if limits.confinement == "python-only":
        return PYTHON_ONLY_WARNING
    support = _kernel.probe()
    if not support.confines:
        raise SandboxUnavailableError(
            f'generated assertions do not run here: {support.describe()}. Set sandbox = "python-only" to run '
            "them with Python-level checks only (hostile code can bypass those)"
        )
    return support.describe()


@functools.cache
def _clean_once() -> int:
    """The first run of a process (the CLI's, the daemon's) removes what dead parents left behind."""
    return clean_stale_dirs()


def clean_stale_dirs(tmp: str | None = None) -> int:
    """Remove the private directories of workers whose parent died (its pid is in the name); how many."""
    root = tmp or tempfile.gettempdir()
    removed = 0
    try:
        names = os.listdir(root)
    except OSError:
        return 0
    for name in names:
        if not name.startswith(_DIR_PREFIX):
            continue
        owner = name[len(_DIR_PREFIX) :].split("-", 1)[0]
        if not owner.isdigit() or int(owner) == os.getpid():
            continue
        try:
            os.kill(int(owner), 0)
            continue  # the parent lives (or its pid was reused: left for a later start)
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        path = os.path.join(root, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
            removed += not os.path.exists(path)
    return removed


def _worker_env(tmpdir: str) -> dict[str, str]:
    """Nothing from the caller's environment: no keys, tokens, proxies or PYTHON* settings reach a worker."""
    return {
        "PATH": os.defpath,
        "HOME": tmpdir,
        "TMPDIR": tmpdir,
        "TMP": tmpdir,
        "TEMP": tmpdir,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
    }


def _start_worker() -> tuple[str, subprocess.Popen[bytes]]:
    """A worker process in a private directory of its own, before it is told what to run: its interpreter starts
    and imports the worker's code, says hello, and waits for its init message (which confines it)."""
    tmpdir = tempfile.mkdtemp(prefix=f"{_DIR_PREFIX}{os.getpid()}-")
    with open(os.path.join(tmpdir, _LOG_NAME), "wb") as log:
        try:
            popen = subprocess.Popen(
                [sys.executable, "-I", "-B", "-X", "utf8", "-c", _BOOT, _PACKAGE_ROOT],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                cwd=tmpdir,
                env=_worker_env(tmpdir),
                start_new_session=True,
                close_fds=True,
                bufsize=0,
            )
        except OSError as error:
            shutil.rmtree(tmpdir, ignore_errors=True)
            raise SandboxError(f"could not start a sandbox worker: {error}") from error
    return tmpdir, popen


class _Spare:
    """A worker started before a run needs it, while a caller keeps one ready (:func:`worker_kept_ready`): a
    worker's interpreter takes most of a small run's time to start (about 0.1 s), which a sampling round's
    validation otherwise waits for after its last answer. Until a run takes it, it runs only spade's own code and
    waits for its init message, which confines it; it exits when this process does (its stdin closes)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keepers = 0
        self._ready: tuple[str, subprocess.Popen[bytes]] | None = None

    def keep(self) -> None:
        with self._lock:
            self._keepers += 1
        self.refill()

    def release(self) -> None:
        with self._lock:
            self._keepers -= 1
            if self._keepers > 0:
                return
        self.discard()

    def take(self) -> tuple[str, subprocess.Popen[bytes]] | None:
        """The spare worker, if one is ready and alive."""
        with self._lock:
            ready, self._ready = self._ready, None
        if ready is not None and ready[1].poll() is not None:
            _discard(*ready)
            return None
        return ready

    def refill(self) -> None:
        """Start a spare if a caller keeps one and there is none."""
        with self._lock:
            if self._keepers == 0 or self._ready is not None:
                return
        try:
            started: tuple[str, subprocess.Popen[bytes]] | None = _start_worker()
        except SandboxError:
            return  # the run that needs a worker starts its own, and reports why it could not
        with self._lock:
            if self._keepers > 0 and self._ready is None:
                self._ready, started = started, None
        if started is not None:
            _discard(*started)

    def discard(self) -> None:
        with self._lock:
            ready, self._ready = self._ready, None
        if ready is not None:
            _discard(*ready)


def _stop_worker(popen: subprocess.Popen[bytes], *, kill: bool = True) -> int | None:
    """The worker's whole process group killed (unless it was already), the worker reaped and its pipes closed;
    its exit status."""
    if kill:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(popen.pid, signal.SIGKILL)
    try:
        code = popen.wait(timeout=5)
    except subprocess.TimeoutExpired:
        code = None
    for stream in (popen.stdin, popen.stdout):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    return code


def _discard(tmpdir: str, popen: subprocess.Popen[bytes]) -> None:
    """A worker no run took: stopped, its directory removed."""
    _stop_worker(popen)
    shutil.rmtree(tmpdir, ignore_errors=True)


_spare = _Spare()
atexit.register(_spare.discard)


@contextlib.contextmanager
def worker_kept_ready() -> Iterator[None]:
    """Inside the block one sandbox worker is kept started ahead of the runs that take one: for a caller that
    runs small batches one after another (sampling validates each round's answers as they arrive)."""
    _spare.keep()
    try:
        yield
    finally:
        _spare.release()


class _Proc:
    """One live worker process and the parent's view of it."""

    def __init__(self, serial: int, init: list[Any]) -> None:
        self.serial = serial
        self.tmpdir, self.popen = _spare.take() or _start_worker()
        assert self.popen.stdin is not None and self.popen.stdout is not None
        self.in_fd = self.popen.stdin.fileno()
        self.out_fd = self.popen.stdout.fileno()
        os.set_blocking(self.in_fd, False)
        self.reader = FrameBuffer(self.out_fd, max_frame=_MAX_WORKER_FRAME)
        self.outbuf = bytearray(encode(init))
        self.state = "starting"  # -> confining -> loading -> ready -> dead
        self.deadline: float | None = None
        self.expected: deque[tuple[int, int]] = deque()
        self.started = time.monotonic()

    def kill(self) -> int | None:
        """Kill the whole process group (once), reap the worker, close its pipes; its exit status."""
        alive, self.state = self.state != "dead", "dead"
        return _stop_worker(self.popen, kill=alive)

    def log_tail(self, *, last: bool = False) -> str:
        """A fatal-error line from the worker's stderr, if it left one (or its ``last`` line).

        The worker could have replaced its log with a symlink, a fifo or a device: only a regular file is read,
        and only its last few kilobytes."""
        try:
            fd = os.open(os.path.join(self.tmpdir, _LOG_NAME), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return ""
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return ""
            tail = os.pread(fd, _LOG_TAIL, max(0, info.st_size - _LOG_TAIL)).decode("utf-8", "replace")
        except OSError:
            return ""
        finally:
            os.close(fd)
        if last:
            lines = [line.strip() for line in tail.splitlines() if line.strip()]
            return _cap(lines[-1]) if lines else "no output"
        prefixes = ("Fatal Python error", "MemoryError", "spade-sandbox:")
        fatal = [line.strip() for line in tail.splitlines() if line.startswith(prefixes)]
        return _cap(fatal[-1]) if fatal else ""

    def over_disk_quota(self, limit_bytes: int) -> bool:
        """Whether the worker's private directory holds more than ``limit_bytes`` or :data:`_MAX_PRIVATE_ENTRIES`
        entries (RLIMIT_FSIZE caps one file; this caps them all, checked about once a second)."""
        used, seen = 0, 0
        stack = [self.tmpdir]
        while stack:
            try:
                entries = list(os.scandir(stack.pop()))
            except OSError:
                continue
            for entry in entries:
                seen += 1
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                used += info.st_blocks * 512
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                if used > limit_bytes or seen > _MAX_PRIVATE_ENTRIES:
                    return True
        return False

    def remove_dir(self) -> None:
        shutil.rmtree(self.tmpdir, ignore_errors=True)


def _cap(text: object) -> str:
    """A worker's text as data: at most :data:`_MAX_WORKER_TEXT` characters, control characters shown escaped."""
    value = str(text)
    value = value if len(value) <= _MAX_WORKER_TEXT else value[:_MAX_WORKER_TEXT] + "..."
    return "".join(c if c.isprintable() or c in "\n\t" else repr(c)[1:-1] for c in value)


def _exit_message(code: int | None) -> str:
    if code is None:
        return "the worker did not exit"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = " (CPU time limit)" if -code == signal.SIGXCPU else ""
        return f"the worker was killed by {name}{hint}"
    return f"the worker exited with code {code}"


class _Run:
    """One call of :func:`run_assertions`."""

    def __init__(
        self,
        source: str,
        filename: str,
        analysis: Analysis,
        cases: list[list[Any]],
        names: Sequence[str] | None,
        limits: SandboxLimits,
        ask_llm: AskLLM | None,
    ) -> None:
        self.source = source
        self.filename = filename
        self.analysis = analysis
        self.cases = cases
        self.names = list(names) if names is not None else None
        self.limits = limits
        self.ask_llm = ask_llm
        self.selector = selectors.DefaultSelector()
        self.procs: dict[int, _Proc] = {}  # by stdout fd
        self.serial = 0
        self.columns: list[AssertionDescriptor] | None = None
        self.runnable: list[int] = []
        self.module_error: ModuleError | None = None
        self.passed: list[list[bool | None]] = []
        self.errors: dict[tuple[int, int], CellError] = {}
        self.filled = 0
        self.total = 0
        self.pending: deque[tuple[int, list[int] | None]] = deque()
        self.failures: Counter[int] = Counter()
        self.given_up: dict[int, tuple[CellErrorKind, str]] = {}
        self.seconds: list[float] = []
        self.cells_run = 0
        self.restart_failures = 0
        self.llm_cache: dict[str, list[Any]] = {}
        self.llm_calls = 0
        self.llm_hits = 0
        self.start = time.monotonic()
        self.startup_s = 0.0
        self.batch = 1
        self.writers: dict[int, _Proc] = {}
        self.workers = 1  # how many workers the run may have at once (:meth:`execute`)
        self.first_ready: float | None = None  # when the first worker had loaded the module
        self.confinement = ""
        self.disk_checked = time.monotonic()

    # -- workers ----------------------------------------------------------------------------------------------

    def _init_message(self) -> list[Any]:
        return [
            "init",
            {
                "source": self.source,
                "filename": self.filename,
                "timeout_s": self.limits.timeout_s,
                "allowed": sorted(DEFAULT_ALLOWED_IMPORTS | self.limits.allow_imports),
                "read_roots": list(self.limits.read_paths),
                "memory_mb": self.limits.memory_mb,
                "cpu_s": self.limits.cpu_s,
                "file_mb": self.limits.file_mb,
                "give_up_after": self.limits.give_up_after,
                "confinement": self.limits.confinement,
            },
        ]

    def spawn(self) -> None:
        self.serial += 1
        proc = _Proc(self.serial, self._init_message())
        proc.deadline = time.monotonic() + self.limits.startup_s
        self.procs[proc.out_fd] = proc
        self.selector.register(proc.out_fd, selectors.EVENT_READ, proc)
        self.flush(proc)
        _spare.refill()  # for the next run, while this one's worker starts

    def flush(self, proc: _Proc) -> None:
        """Write what the pipe takes now; the selector reports when it takes more."""
        if proc.state == "dead":
            return
        try:
            while proc.outbuf:
                written = os.write(proc.in_fd, proc.outbuf)
                del proc.outbuf[:written]
        except BlockingIOError:
            pass
        except OSError:
            proc.outbuf.clear()  # the worker is gone; its stdout's end of file reports that
        registered = self.writers.get(proc.in_fd)
        if proc.outbuf and registered is None:
            self.selector.register(proc.in_fd, selectors.EVENT_WRITE, proc)
            self.writers[proc.in_fd] = proc
        elif not proc.outbuf and registered is not None:
            self.selector.unregister(proc.in_fd)
            del self.writers[proc.in_fd]

    def send(self, proc: _Proc, message: list[Any]) -> None:
        proc.outbuf += encode(message)
        self.flush(proc)

    def retire(self, proc: _Proc) -> int | None:
        """Stop a worker for good; its exit status."""
        self.selector.unregister(proc.out_fd)
        if proc.in_fd in self.writers:
            self.selector.unregister(proc.in_fd)
            del self.writers[proc.in_fd]
        del self.procs[proc.out_fd]
        code = proc.kill()
        return code

    def live(self) -> list[_Proc]:
        return [p for p in self.procs.values() if p.state != "dead"]

    # -- cells ------------------------------------------------------------------------------------------------

    def fill(self, case: int, col: int, value: bool | None, error: CellError | None = None) -> None:
        if (case, col) in self.errors or self.passed[case][col] is not None:
            return
        if error is not None:
            self.errors[(case, col)] = error
        else:
            self.passed[case][col] = value
        self.filled += 1

    def fail(self, case: int, col: int, kind: CellErrorKind, message: str, line: int | None = None) -> None:
        assert self.columns is not None
        column = self.columns[col]
        self.fill(case, col, None, CellError(case, col, column.name, kind, message, line or column.line or None))

    def count_failure(self, col: int, kind: CellErrorKind) -> None:
        """Give up on an assertion after ``give_up_after`` timeouts or crashes; tell every worker."""
        if kind not in ("timeout", "crash") or col in self.given_up:
            return
        self.failures[col] += 1
        if self.failures[col] >= self.limits.give_up_after:
            assert self.columns is not None
            verb = "timed out" if kind == "timeout" else "crashed the worker"
            message = f"not run: `{self.columns[col].name}` already {verb} on {self.failures[col]} examples"
            self.given_up[col] = (kind, message)
            for proc in self.live():
                if proc.state == "ready":
                    self.send(proc, ["skip", [col]])

    def discovered(self, proc: _Proc, payload: Any) -> None:
        """The first worker to load the module decides the columns."""
        if not isinstance(payload, dict) or not isinstance(payload.get("assertions"), list):
            raise ProtocolError("malformed ready message")
        error = payload.get("module_error")
        if error is not None:
            if not isinstance(error, dict):
                raise ProtocolError("malformed module error")
            line = error.get("line")
            kind = error.get("kind")
            self.module_error = ModuleError(
                kind if kind in ("syntax", *CELL_ERROR_KINDS) else "exception",
                _cap(error.get("message", "")),
                line if isinstance(line, int) else None,
            )
            return
        found: dict[str, AssertionDescriptor] = {}
        for item in payload["assertions"]:
            if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"].isidentifier():
                raise ProtocolError("malformed assertion descriptor")
            if len(item["name"]) > 200 or len(json.dumps(item.get("info"), default=str)) > 64_000:
                raise ProtocolError("oversized assertion descriptor")
            name = item["name"]
            line = self.analysis.def_lines.get(name, item.get("line"))
            problem = item.get("problem")
            info = item.get("info")
            found[name] = AssertionDescriptor(
                name=name,
                line=line if isinstance(line, int) else 0,
                is_async=item.get("is_async") is True,
                info=info if isinstance(info, dict) else {},
                problem=_cap(problem) if isinstance(problem, str) else None,
            )
        if self.names is None:
            columns = sorted(found.values(), key=lambda a: (a.line, a.name))
        else:
            missing = [n for n in self.names if n not in found]
            if missing:
                known = ", ".join(sorted(found)) or "none"
                raise InputError(f"no assertion named {', '.join(missing)} in {self.filename} (found: {known})")
            columns = [found[n] for n in self.names]
        self.columns = columns
        self.startup_s = time.monotonic() - self.start
        self.seconds = [0.0] * len(columns)
        self.passed = [[None] * len(columns) for _ in self.cases]
        self.total = len(columns) * len(self.cases)
        for col, descriptor in enumerate(columns):
            reason = self.analysis.forbidden.get(descriptor.name)
            if reason is not None:
                for case in range(len(self.cases)):
                    self.fail(case, col, "forbidden", reason, self.analysis.def_lines.get(descriptor.name))
            elif descriptor.problem is not None:
                message = f"{descriptor.problem}; it takes other parameters"
                for case in range(len(self.cases)):
                    self.fail(case, col, "signature", message, descriptor.line)
            else:
                self.runnable.append(col)
        if self.runnable:
            self.pending.extend((case, None) for case in range(len(self.cases)))
        self.batch = max(1, min(_MAX_BATCH, math.ceil(len(self.cases) / (self.workers * 8))))
        self.first_ready = time.monotonic()

    def select_columns(self, proc: _Proc) -> None:
        assert self.columns is not None
        self.send(proc, ["select", [[col, self.columns[col].name] for col in self.runnable]])
        if self.given_up:
            self.send(proc, ["skip", sorted(self.given_up)])

    def dispatch(self, proc: _Proc) -> None:
        """Keep about two batches in flight per worker, so it never waits for the parent."""
        if proc.state != "ready" or not self.runnable:
            return
        threshold = self.batch * len(self.runnable)
        while self.pending and len(proc.expected) <= threshold:
            items: list[list[Any]] = []
            while self.pending and len(items) < self.batch:
                case, cols = self.pending.popleft()
                wanted = cols if cols is not None else self.runnable
                todo = []
                for col in wanted:
                    if col in self.given_up:
                        kind, message = self.given_up[col]
                        self.fail(case, col, kind, message)
                    else:
                        todo.append(col)
                if not todo:
                    continue
                proc.expected.extend((case, col) for col in todo)
                payload = self.cases[case]
                items.append([case, *payload, None if todo == self.runnable else todo])
            if items:
                self.send(proc, ["run", items])
        if proc.expected and proc.deadline is None:
            proc.deadline = time.monotonic() + self.limits.timeout_s + self.limits.grace_s

    def cell(self, proc: _Proc, message: list[Any]) -> None:
        if len(message) != 8 or not proc.expected:
            raise ProtocolError("unexpected cell message")
        _, case, col, value, kind, text, line, elapsed = message
        if (case, col) != proc.expected[0]:
            raise ProtocolError("cell out of order")
        if not (value is None or isinstance(value, bool)) or not isinstance(elapsed, int | float):
            raise ProtocolError("malformed cell message")
        if not math.isfinite(elapsed):
            raise ProtocolError("a cell's time is not a number")
        elapsed = min(max(0.0, float(elapsed)), self.limits.timeout_s + self.limits.grace_s)
        proc.expected.popleft()
        self.cells_run += 1
        self.seconds[col] += elapsed
        if kind is None and isinstance(value, bool):
            self.fill(case, col, value)
        elif kind == "skipped":
            given = self.given_up.get(col)
            assert self.columns is not None
            self.fail(case, col, *(given or ("timeout", f"not run: `{self.columns[col].name}` timed out too often")))
        elif kind in CELL_ERROR_KINDS:
            self.fail(case, col, kind, _cap(text), line if isinstance(line, int) else None)
            self.count_failure(col, kind)
        else:
            raise ProtocolError(f"unknown cell kind {kind!r}")
        proc.deadline = time.monotonic() + self.limits.timeout_s + self.limits.grace_s if proc.expected else None

    def answer(self, proc: _Proc, message: list[Any]) -> None:
        """Ask the caller's model on the worker's behalf (the keys stay in this process)."""
        if len(message) != 4 or not all(isinstance(x, str) for x in message[1:3]) or not isinstance(message[3], dict):
            raise ProtocolError("malformed ask message")
        _, question, response, context = message
        key = json.dumps([question, response, context], sort_keys=True, ensure_ascii=False)
        reply = self.llm_cache.get(key)
        if reply is not None:
            self.llm_hits += 1
        elif self.ask_llm is None:
            reply = [
                "answer",
                None,
                "needs_model",
                "needs a model: ask_llm has no assistant model (set `assistant_model`)",
            ]
        else:
            self.llm_calls += 1
            try:
                reply = ["answer", bool(self.ask_llm(question, response, context)), None, None]
            except (AskLLMUnavailable, ModelNotConfiguredError) as error:
                reply = ["answer", None, "needs_model", str(error) or "needs a model"]
            except Exception as error:
                reply = ["answer", None, "llm_error", f"{type(error).__name__}: {error}"]
            self.disk_checked = 0.0  # the other workers ran while the parent waited: check their directories now
            now = time.monotonic()
            for other in self.live():  # the parent was busy: nobody's clock ran against them meanwhile
                if other.deadline is not None:
                    other.deadline = max(other.deadline, now + self.limits.timeout_s + self.limits.grace_s)
        self.llm_cache[key] = reply
        self.send(proc, reply)
        proc.deadline = time.monotonic() + self.limits.timeout_s + self.limits.grace_s

    def handle(self, proc: _Proc, message: list[Any]) -> None:
        kind = message[0]
        if kind == "c" and proc.state == "ready":
            self.cell(proc, message)
            self.dispatch(proc)
        elif kind == "ask":
            self.answer(proc, message)
        elif kind == "confined" and proc.state == "confining" and len(message) == 2:
            self.confined(message[1])  # the first message after hello, before any user code: never again
            proc.state = "loading"
        elif kind == "hello" and proc.state == "starting":
            proc.state = "confining"
            proc.deadline = time.monotonic() + self.limits.timeout_s + self.limits.grace_s
        elif kind == "ready" and proc.state == "loading" and len(message) == 2:
            proc.state = "ready"
            proc.deadline = None
            if self.columns is None:
                self.discovered(proc, message[1])
                if self.module_error is not None:
                    return
            elif not isinstance(message[1], dict) or message[1].get("module_error") is not None:
                self.lost(proc, "crash", "the worker could not reload the module")
                return
            self.restart_failures = 0
            self.select_columns(proc)
            self.dispatch(proc)
        else:
            raise ProtocolError(f"unexpected {kind!r} message")

    def confined(self, facts: Any) -> None:
        """The worker's report of its confinement, sent before it reads the module (so it can be trusted)."""
        if self.limits.confinement != "kernel":
            return
        wanted = ("landlock", "seccomp", "no_new_privs", "no_capabilities")
        if not isinstance(facts, dict) or not all(facts.get(name) is True for name in wanted):
            absent = [name for name in wanted if not (isinstance(facts, dict) and facts.get(name) is True)]
            raise SandboxUnavailableError(f"a sandbox worker is not confined ({', '.join(absent)} not in force)")
        self.confinement = "verified " + _kernel.probe().describe()

    def lost(self, proc: _Proc, kind: CellErrorKind, message: str) -> None:
        """A worker died or was killed: charge the cell in flight, hand the rest to a new worker."""
        state = proc.state
        code = self.retire(proc)
        last_line = proc.log_tail(last=True)
        fatal = proc.log_tail()
        if kind == "crash":
            message = f"{message}: {_exit_message(code)}" + (f" ({fatal})" if fatal else "")
        proc.remove_dir()
        if code == _CONFINE_FAILED and state in ("starting", "confining"):  # no user code had run yet
            raise SandboxUnavailableError(fatal or "the sandbox worker could not confine itself")
        if self.columns is None:  # the module itself could not be loaded
            if state == "loading":
                detail = (
                    f"loading the module timed out after {self.limits.timeout_s:g} s"
                    if kind == "timeout"
                    else f"loading the module crashed the worker ({message})"
                )
                self.module_error = ModuleError(kind, detail)
            elif state in ("starting", "confining") and not self.live():
                raise SandboxError(f"the sandbox worker did not start ({message}; {last_line})")
            return
        if state != "ready":
            self.restart_failures += 1
        elif proc.expected:
            case, col = proc.expected.popleft()
            self.fail(case, col, kind, message)
            self.count_failure(col, kind)
            requeue: list[tuple[int, list[int] | None]] = []
            for case, col in proc.expected:
                if requeue and requeue[-1][0] == case:
                    cols = requeue[-1][1]
                    assert cols is not None
                    cols.append(col)
                else:
                    requeue.append((case, [col]))
            self.pending.extendleft(reversed(requeue))
        if self.restart_failures >= _MAX_RESTART_FAILURES:
            for case, cols in list(self.pending):
                for col in cols if cols is not None else self.runnable:
                    self.fail(case, col, "crash", f"not run: the worker could not be restarted ({message})")
            self.pending.clear()
            return
        if self.pending and len(self.live()) < self.workers:
            self.spawn()

    # -- the loop ---------------------------------------------------------------------------------------------

    def done(self) -> bool:
        if self.module_error is not None:
            return True
        return self.columns is not None and self.filled >= self.total

    def execute(self, workers: int) -> None:
        """Run every case with up to ``workers`` workers: one first, the others once it is clear the first alone
        would take longer than starting them (see :meth:`widen`)."""
        self.workers = workers
        try:
            self.spawn()
            while not self.done():
                if not self.live():
                    if self.columns is not None and self.pending:
                        self.spawn()
                    elif self.columns is None and self.module_error is None:
                        raise SandboxError("no sandbox worker could load the module")
                    else:
                        break
                self.step()
                self.widen()
        finally:
            for proc in list(self.procs.values()):
                self.retire(proc)
                proc.remove_dir()
            self.selector.close()

    def widen(self) -> None:
        """Start the other workers when the cells left, at the time the cells so far took (as the worker timed
        them), would keep the first busy for longer than a worker takes to start; or when it has finished no cell
        in that time. A start costs about 75 ms of CPU (an interpreter, confinement, the module) while cheap
        assertions over a sampling round's 256 answers take a few milliseconds: a second worker would only take
        the CPU from the calls still in flight. Both sides of the comparison slow down together on a busy
        machine. (A worker that misreports its times only changes how many workers its own run gets.)"""
        if self.first_ready is None or len(self.live()) >= self.workers or not self.pending:
            return
        if self.cells_run:
            alone = sum(self.seconds) / self.cells_run * (self.total - self.filled)
        else:
            alone = time.monotonic() - self.first_ready
        if alone <= self.startup_s:
            return
        self.first_ready = None
        while self.pending and len(self.live()) < self.workers:
            self.spawn()

    def step(self) -> None:
        now = time.monotonic()
        deadlines = [p.deadline for p in self.live() if p.deadline is not None]
        if self.first_ready is not None and not self.cells_run:
            deadlines.append(self.first_ready + self.startup_s)  # :meth:`widen` when the first cell is slow
        wait = max(0.0, min(deadlines) - now) if deadlines else 1.0
        for key, events in self.selector.select(timeout=min(wait, 1.0)):
            proc = key.data
            assert isinstance(proc, _Proc)
            if proc.state == "dead":
                continue
            if events & selectors.EVENT_WRITE and key.fd == proc.in_fd:
                self.flush(proc)
                continue
            alive = proc.reader.fill()
            try:
                while proc.state != "dead" and (message := proc.reader.pop()) is not None:
                    self.handle(proc, message)
                    if self.done():
                        return
            except ProtocolError as error:
                self.lost(proc, "crash", f"the worker sent an invalid message ({error})")
                continue
            if not alive and proc.state != "dead":
                self.lost(proc, "crash", "the worker crashed")
        now = time.monotonic()
        if now - self.disk_checked > _DISK_CHECK_EVERY_S:
            self.disk_checked = now
            quota = 2 * self.limits.file_mb * 1024 * 1024
            for proc in self.live():
                if proc.over_disk_quota(quota):
                    text = (
                        f"wrote more than {2 * self.limits.file_mb} MB or {_MAX_PRIVATE_ENTRIES} files to its directory"
                    )
                    self.lost(proc, "crash", f"the worker was stopped: it {text}")
        for proc in self.live():
            if proc.deadline is not None and now > proc.deadline:
                text = f"timed out after {self.limits.timeout_s:g} s; the worker did not respond and was replaced"
                self.lost(proc, "timeout", text)

    def result(self) -> SandboxResult:
        if self.columns is not None and self.module_error is None and self.filled < self.total:
            for case, row in enumerate(self.passed):  # defensive: never return a cell with neither verdict nor error
                for col, value in enumerate(row):
                    if value is None and (case, col) not in self.errors:
                        self.fail(case, col, "crash", "not run: the sandbox stopped before reaching this cell")
        errors = sorted(self.errors.values(), key=lambda e: (e.case, e.assertion))
        timing = SandboxTiming(
            wall_s=time.monotonic() - self.start,
            startup_s=self.startup_s,
            cells_run=self.cells_run,
            worker_starts=self.serial,
            llm_calls=self.llm_calls,
            llm_cache_hits=self.llm_hits,
        )
        columns = self.columns if self.module_error is None and self.columns is not None else []
        passed = self.passed if columns else [[] for _ in self.cases]
        return SandboxResult(
            assertions=list(columns),
            passed=passed,
            errors=errors if columns else [],
            module_error=self.module_error,
            problems=self.analysis.problems,
            seconds=self.seconds if columns else [],
            timing=timing,
            confinement=self.confinement,
        )


def _read_module(module: Path | ModuleSource) -> tuple[str, str]:
    if isinstance(module, ModuleSource):
        return module.text, module.filename
    if not isinstance(module, Path):
        raise TypeError("pass a pathlib.Path or a ModuleSource (a plain str is ambiguous)")
    if not os.path.lexists(module):
        raise InputError(f"{module}: no such assertions module")
    return read_limited_text(module, limit=MAX_SIDECAR_BYTES, what="an assertions module"), str(module.resolve())


def _case_payloads(cases: Sequence[SandboxCase]) -> list[list[Any]]:
    """Cases as JSON data (checked here, so a bad example is the caller's error, not a worker crash)."""
    out = []
    for index, case in enumerate(cases):
        prompt: Any = case.prompt
        if case.messages is not None:
            prompt = {"text": case.prompt, "messages": [dict(message) for message in case.messages]}
        payload = [dict(case.example), prompt, case.response]
        try:
            json.dumps(payload)
        except (TypeError, ValueError) as error:
            raise InputError(f"case {index}: the example is not JSON data ({error})") from None
        out.append(payload)
    return out


def run_assertions(
    module: Path | ModuleSource,
    cases: Sequence[SandboxCase],
    *,
    names: Sequence[str] | None = None,
    limits: SandboxLimits | None = None,
    ask_llm: AskLLM | None = None,
) -> SandboxResult:
    """Run the module's assertions (or ``names``, in that order) on every case, in sandbox workers.

    Never raises for anything the assertions do: each failure is a cell error or the ``module_error``.
    Raises :class:`InputError` for an unreadable module, unknown ``names`` or non-JSON examples,
    :class:`SandboxUnavailableError` when kernel confinement is asked for (the default) and this machine cannot
    provide it, and :class:`SandboxError` when no worker can be started.
    """
    limits = limits or SandboxLimits()
    confinement = _require_confinement(limits)
    _clean_once()
    source, filename = _read_module(module)
    payloads = _case_payloads(cases)
    analysis = analyse(source, limits.allow_imports, filename=filename)
    run = _Run(source, filename, analysis, payloads, names, limits, ask_llm)
    run.confinement = confinement  # "verified ..." once a worker reports its confinement
    if analysis.syntax_error is not None:
        problem = analysis.syntax_error
        run.module_error = ModuleError("syntax", problem.message, problem.line)
        return run.result()
    run.execute(workers=max(1, min(limits.workers, len(payloads))))
    return run.result()


def load_module_info(module: Path | ModuleSource, *, limits: SandboxLimits | None = None) -> ModuleInfo:
    """The module's assertions and their metadata, discovered in a worker (no user code runs here)."""
    result = run_assertions(module, [], limits=limits)
    return ModuleInfo(result.assertions, result.module_error, result.problems, result.confinement)
