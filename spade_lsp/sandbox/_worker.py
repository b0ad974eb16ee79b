"""The sandbox worker process: loads one sidecar module and runs its assertions on the cases it is sent.

Started by :mod:`spade_lsp.sandbox._runner` as ``python -I -B -X utf8 -c ...`` in a new session, with a scrubbed
environment and a private working directory. Everything here runs before any user code, in this order:
take the protocol pipes off fds 0/1 (user ``print`` goes to the log, ``input`` reads /dev/null), read the
``init`` message, set resource limits, start the orphan guard, install the audit hook, and only then load the
module with restricted builtins. Results stream back one cell at a time, so a crash loses only the cell in
flight.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import faulthandler
import inspect
import json
import os
import re
import reprlib
import resource
import select
import shutil
import signal
import sys
import threading
import time
import types
from collections import Counter, deque
from collections.abc import Callable, Mapping
from dataclasses import asdict
from typing import Any, Final, NoReturn

from spade_lsp import assertions as _assertions
from spade_lsp.errors import MeasurementError, NotApplicable
from spade_lsp.sandbox import _kernel
from spade_lsp.sandbox._policy import FORBIDDEN_BUILTINS, is_import_allowed
from spade_lsp.sandbox._protocol import FrameBuffer, encode

MODULE_NAME: Final = "spade_sidecar"
#: The exit code of a worker that was asked for kernel confinement and could not apply it (no user code ran).
CONFINE_FAILED: Final = 86
_MESSAGE_LIMIT: Final = 2000


class CellTimeout(BaseException):
    """Raised by SIGALRM inside user code; a BaseException so ``except Exception`` does not swallow it."""


class SandboxViolation(PermissionError):
    """The audit hook or a restricted builtin refused an operation."""


class ForbiddenImport(ImportError):
    """User code imported a module outside the allow-list (an ImportError, so fallbacks still work)."""


class LLMCallFailed(RuntimeError):
    """The parent's ask_llm callback failed; the cell is reported as ``llm_error``."""


class _State:
    """Mutable worker state shared by the signal handler, the audit hook and the cell runner."""

    armed = False
    loading = True
    violation: str | None = None
    timeout_s = 5.0
    tmpdir = ""
    read_roots: tuple[str, ...] = ()
    allowed: frozenset[str] = frozenset()
    filename = "<assertions>"
    memory_mb: int | None = None
    exiting = False


_S = _State()

#: The measurement library generated checks call (``checks.reading_ease(response)``), and how long its data may
#: take to load before the first cell: a bound of its own, outside every cell's timeout.
_CHECKS_MODULE: Final = "spade_lsp.checks"
_CHECK_CALL: Final = re.compile(r"\bchecks\.([a-z_]+)\s*\(")
_PRELOAD_S: Final = 20.0

_BLOCKED_EVENTS: Final = frozenset(
    {
        "builtins.input",
        "dbm.open",
        "os.exec",
        "os.fork",
        "os.forkpty",
        "os.kill",
        "os.killpg",
        "os.posix_spawn",
        "os.spawn",
        "os.system",
        "pty.spawn",
        "resource.prlimit",
        "resource.setrlimit",
        "signal.pthread_kill",
        "socket.bind",
        "socket.connect",
        "socket.getaddrinfo",
        "socket.gethostbyaddr",
        "socket.gethostbyname",
        "socket.getnameinfo",
        "socket.sendmsg",
        "socket.sendto",
        "sqlite3.connect",
        "subprocess.Popen",
        "webbrowser.open",
    }
)
# event -> (positions of path arguments, positions of dir_fd arguments); every path must be in the tmpdir.
_PATH_EVENTS: Final[dict[str, tuple[tuple[int, ...], tuple[int, ...]]]] = {
    "os.chmod": ((0,), (2,)),
    "os.chown": ((0,), (3,)),
    "os.link": ((0, 1), (2, 3)),
    "os.mkdir": ((0,), (2,)),
    "os.remove": ((0,), (1,)),
    "os.removexattr": ((0,), ()),
    "os.rename": ((0, 1), (2, 3)),
    "os.rmdir": ((0,), (1,)),
    "os.setxattr": ((0,), ()),
    "os.symlink": ((0, 1), (2,)),
    "os.truncate": ((0,), ()),
    "os.utime": ((0,), (3,)),
    "shutil.rmtree": ((0,), (1,)),
}
_WRITE_FLAGS: Final = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_DEVICES: Final = frozenset({"/dev/null", "/dev/zero", "/dev/urandom", "/dev/random"})


def _deny(message: str) -> NoReturn:
    message = f"forbidden: {message}"
    if _S.violation is None:
        _S.violation = message
    raise SandboxViolation(message)


def _resolve(path: Any) -> str:
    return os.path.realpath(os.path.join(os.getcwd(), os.fsdecode(os.fspath(path))))


def _under(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == root or path.startswith(root + os.sep) for root in roots)


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """Refuse processes, signals to others, networking, foreign calls and file access outside the sandbox."""
    if _S.exiting:
        return
    if event in _BLOCKED_EVENTS:
        _deny(f"`{event}` is not allowed in the sandbox")
    elif event.startswith("ctypes."):
        if not (event == "ctypes.dlopen" and args and args[0] is None):
            _deny(f"`{event}` is not allowed in the sandbox")
    elif event == "open":
        _check_open(args)
    elif event in _PATH_EVENTS:
        paths, dir_fds = _PATH_EVENTS[event]
        if any(i < len(args) and isinstance(args[i], int) and args[i] >= 0 for i in dir_fds):
            _deny(f"`{event}` relative to a directory descriptor is not allowed")
        for i in paths:
            if i < len(args) and isinstance(args[i], str | bytes | os.PathLike):
                target = _resolve(args[i])
                if not _under(target, (_S.tmpdir,)):
                    _deny(f"`{event}` on {target!r}, outside the sandbox's private directory")


def _check_open(args: tuple[Any, ...]) -> None:
    path, mode, flags = (*args, None, None, None)[:3]
    if isinstance(path, int):
        _deny("opening a file descriptor is not allowed")
    if path is None:
        return
    target = _resolve(path)
    if _under(target, (_S.tmpdir,)):
        return
    writing = (isinstance(flags, int) and bool(flags & _WRITE_FLAGS)) or (
        isinstance(mode, str) and any(c in mode for c in "wax+")
    )
    if writing:
        _deny(f"writing {target!r}, outside the sandbox's private directory")
    if target not in _DEVICES and not _under(target, _S.read_roots):
        _deny(f"reading {target!r}, outside the sandbox's readable directories")


class _Forbidden:
    """Stands in for a forbidden module imported at module level: loading succeeds, any use fails."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_name", name)

    def __getattr__(self, attribute: str) -> _Forbidden:
        return _Forbidden(f"{self._name}.{attribute}")

    def __repr__(self) -> str:
        return f"<forbidden {self._name}>"

    def _fail(self, *args: Any, **kwargs: Any) -> NoReturn:
        _deny(f"uses `{self._name}`; its module is not allowed in the sandbox")

    __call__ = __getitem__ = __iter__ = __len__ = __bool__ = __contains__ = __str__ = __setattr__ = _fail


def _guarded_import(
    name: str,
    globals: Mapping[str, Any] | None = None,
    locals: Mapping[str, Any] | None = None,
    fromlist: tuple[str, ...] | list[str] | None = (),
    level: int = 0,
) -> Any:
    """The sidecar's ``__import__``: only allow-listed modules (library modules import what they like)."""
    if level:
        _deny("relative imports are not allowed in a sidecar")
    if not is_import_allowed(name, fromlist or (), _S.allowed):
        if _S.loading:
            return _Forbidden(name)
        message = f"forbidden: imports `{name}`, which the sandbox does not allow"
        if _S.violation is None:
            _S.violation = message
        raise ForbiddenImport(message, name=name)
    return builtins.__import__(name, globals, locals, fromlist or (), level)


def _forbidden_builtin(name: str) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> NoReturn:
        _deny(f"`{name}` is not allowed in a sidecar")

    refuse.__name__ = name
    return refuse


def _restricted_builtins() -> dict[str, Any]:
    namespace = dict(builtins.__dict__)
    for name in FORBIDDEN_BUILTINS:
        namespace[name] = _forbidden_builtin(name)
    namespace["__import__"] = _guarded_import
    return namespace


def _on_alarm(signum: int, frame: Any) -> None:
    if _S.armed:
        _S.armed = False
        raise CellTimeout


def _arm(seconds: float) -> None:
    _S.armed = True
    signal.setitimer(signal.ITIMER_REAL, seconds)


def _disarm() -> None:
    _S.armed = False
    signal.setitimer(signal.ITIMER_REAL, 0)


def _text(value: object) -> str:
    try:
        text = str(value)
    except BaseException:  # a user __str__ may raise anything
        text = f"<{type(value).__name__} with an unprintable message>"
    return text if len(text) <= _MESSAGE_LIMIT else text[:_MESSAGE_LIMIT] + "..."


def _line_of(error: BaseException) -> int | None:
    line = None
    tb = error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == _S.filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


Outcome = tuple[bool | None, str | None, str | None, int | None]


class _Inputs(dict[str, Any]):
    """The ``example`` an assertion receives: ``example["language"]`` on an example without that input raises
    :class:`NotApplicable` (a ``KeyError``), so a check of an input the example lacks is "not applicable" there,
    neither a pass nor a failure, whoever wrote it."""

    def __missing__(self, key: Any) -> Any:
        raise NotApplicable(f"the example has no input {key!r}")


def _example_argument(example: Any) -> Any:
    return _Inputs(example) if isinstance(example, dict) else example


def _prompt_argument(prompt: Any) -> Any:
    """The ``prompt`` argument: a string, or for a chat prompt a string that also carries its messages."""
    if isinstance(prompt, dict):
        return _assertions.RenderedPrompt(str(prompt.get("text", "")), prompt.get("messages") or ())
    return _assertions.RenderedPrompt(str(prompt))


def _classify(error: BaseException) -> Outcome:
    """The cell error for an exception that escaped user code."""
    line = _line_of(error)
    if isinstance(error, CellTimeout):
        return None, "timeout", f"timed out after {_S.timeout_s:g} s", line
    if isinstance(error, MemoryError):
        limit = f" (limit {_S.memory_mb} MB)" if _S.memory_mb else ""
        return None, "memory", f"ran out of memory{limit}: MemoryError {_text(error)}".rstrip(), line
    if _S.violation is not None or isinstance(error, SandboxViolation | ForbiddenImport):
        return None, "forbidden", _S.violation or _text(error), line
    if isinstance(error, _assertions.AskLLMUnavailable):
        return None, "needs_model", _text(error), line
    if isinstance(error, LLMCallFailed):
        return None, "llm_error", _text(error), line
    if isinstance(error, MeasurementError):
        return None, "unmeasurable", f"MeasurementError: {_text(error)}", line
    if isinstance(error, NotApplicable):
        return None, "not_applicable", _text(error), line
    message = f"{type(error).__name__}: {_text(error)}".rstrip(": ")
    return None, "exception", message + (f" (line {line})" if line else ""), line


def _describe(value: object) -> str:
    try:
        shown = reprlib.repr(value)
    except BaseException:
        shown = "..."
    kind = type(value)
    name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    return f"{name} {shown}"


def _describe_assertion(name: str, function: Callable[..., Any]) -> dict[str, Any]:
    problem = None
    try:
        inspect.signature(function).bind(None, "", "")
    except TypeError:
        problem = f"`{name}` must take (example, prompt, response)"
    except Exception:  # no signature to inspect: let the call decide
        pass
    info = json.loads(json.dumps(asdict(_assertions.info_of(function)), default=repr))
    return {
        "name": name,
        "line": function.__code__.co_firstlineno,
        "is_async": inspect.iscoroutinefunction(function),
        "info": info,
        "problem": problem,
    }


class Worker:
    """One worker's protocol loop and cell runner."""

    def __init__(self, proto_in: int, proto_out: int) -> None:
        self.reader = FrameBuffer(proto_in)
        self.out = proto_out
        self.inbox: deque[list[Any]] = deque()
        self.skip: set[int] = set()
        self.selected: dict[int, Callable[..., Any] | None] = {}
        self.give_up_after = 3
        self.timeouts: Counter[int] = Counter()
        self.loop = asyncio.new_event_loop()
        self.namespace: dict[str, Any] = {}

    def send(self, message: list[Any]) -> None:
        data = memoryview(encode(message))
        while data:
            written = os.write(self.out, data)
            data = data[written:]

    def _take(self, message: list[Any]) -> None:
        if message[0] == "skip":
            self.skip.update(int(col) for col in message[1])
        elif message[0] == "exit":
            os._exit(0)
        else:
            self.inbox.append(message)

    def receive(self) -> list[Any]:
        """The next message that is not a skip notice; exits when the parent goes away."""
        while not self.inbox:
            message = self.reader.pop()
            if message is not None:
                self._take(message)
            elif not self.reader.fill():
                os._exit(0)
        return self.inbox.popleft()

    def poll(self) -> None:
        """Take notices already sent (between cases), without blocking."""
        while True:
            while (message := self.reader.pop()) is not None:
                self._take(message)
            if not select.select([self.reader.fd], [], [], 0)[0]:
                return
            if not self.reader.fill():
                os._exit(0)

    def ask(self, question: str, response: str, context: Mapping[str, Any]) -> bool:
        """The ask_llm proxy: pause this cell's clock, let the parent ask the model, resume."""
        if not isinstance(question, str) or not isinstance(response, str):
            raise TypeError("ask_llm takes a question and a response, both strings")
        safe_context = json.loads(json.dumps(dict(context), default=str, sort_keys=True))
        remaining = signal.setitimer(signal.ITIMER_REAL, 0)[0]
        armed, _S.armed = _S.armed, False
        try:
            self.send(["ask", question, response, safe_context])
            reply = self._answer()
        finally:
            if armed:
                _arm(max(remaining, 0.001))
        _, answer, kind, message = reply
        if kind == "needs_model":
            raise _assertions.AskLLMUnavailable(message or "needs a model")
        if kind is not None or not isinstance(answer, bool):
            raise LLMCallFailed(f"ask_llm failed: {message}")
        return answer

    def _answer(self) -> list[Any]:
        """Wait for the parent's answer, keeping any other message (a batch sent ahead) for later."""
        while True:
            while (message := self.reader.pop()) is not None:
                if message[0] == "answer" and len(message) == 4:
                    return message
                self._take(message)
            if not self.reader.fill():
                os._exit(0)

    def load(self, source: str) -> dict[str, Any] | None:
        """Execute the module with restricted builtins; the module error, if any."""
        module = types.ModuleType(MODULE_NAME)
        module.__file__ = _S.filename
        self.namespace = module.__dict__
        self.namespace["__builtins__"] = _restricted_builtins()
        sys.modules[MODULE_NAME] = module
        _S.loading = True
        _S.violation = None
        try:
            try:
                _arm(_S.timeout_s)
                code = compile(source, _S.filename, "exec", dont_inherit=True)
                exec(code, self.namespace)
                outcome: Outcome = (True, None, None, None)
            except SyntaxError as error:
                outcome = (None, "syntax", f"syntax error: {error.msg} (line {error.lineno})", error.lineno)
            except BaseException as error:
                outcome = _classify(error)
            finally:
                _disarm()
        except CellTimeout as error:
            outcome = _classify(error)
        _S.loading = False
        _, kind, message, line = outcome
        if kind is None:
            return None
        if kind == "timeout":
            message = f"loading the module timed out after {_S.timeout_s:g} s"
        return {"kind": kind, "message": message, "line": line}

    def discover(self) -> list[dict[str, Any]]:
        """The module's ``assert_*`` functions (defined in it), with metadata; user hooks run under the clock."""
        found = []
        for name, value in list(self.namespace.items()):
            if not (name.startswith(_assertions.ASSERTION_PREFIX) and inspect.isfunction(value)):
                continue
            if value.__module__ != MODULE_NAME:
                continue
            try:
                try:
                    _arm(_S.timeout_s)
                    found.append(_describe_assertion(name, value))
                finally:
                    _disarm()
            except BaseException as error:
                _, _, message, _ = _classify(error)
                found.append(
                    {
                        "name": name,
                        "line": value.__code__.co_firstlineno,
                        "is_async": False,
                        "info": {},
                        "problem": message,
                    }
                )
        return found

    def _call(self, function: Callable[..., Any], example: Any, prompt: Any, response: Any) -> Outcome:
        try:
            value = function(example, prompt, response)
            if inspect.isawaitable(value):
                value = self._await(value)
        except BaseException as error:
            if isinstance(error, CellTimeout):
                raise
            return _classify(error)
        if _S.violation is not None:
            return None, "forbidden", _S.violation, None
        if isinstance(value, bool):
            return value, None, None, None
        return None, "not_bool", f"returned {_describe(value)}, not True or False", None

    def _await(self, awaitable: Any) -> Any:
        async def bounded() -> Any:
            scope = asyncio.timeout(_S.timeout_s)
            try:
                async with scope:
                    return await awaitable
            except TimeoutError:
                if scope.expired():
                    raise CellTimeout from None
                raise

        try:
            return self.loop.run_until_complete(bounded())
        except BaseException as error:
            if not isinstance(error, Exception):  # interrupted mid-step: the loop may be in any state
                if isinstance(awaitable, types.CoroutineType):
                    awaitable.close()
                self._fresh_loop()
            raise

    def _fresh_loop(self) -> None:
        old, self.loop = self.loop, asyncio.new_event_loop()
        with contextlib.suppress(Exception):
            old.close()

    def run_cell(self, function: Callable[..., Any], case: list[Any]) -> Outcome:
        _S.violation = None
        try:
            try:
                _arm(_S.timeout_s)
                return self._call(function, _example_argument(case[1]), _prompt_argument(case[2]), case[3])
            finally:
                _disarm()
        except CellTimeout as error:
            return _classify(error)

    def run_batch(self, cases: list[list[Any]]) -> None:
        for case in cases:
            self.poll()
            index = int(case[0])
            columns = case[4] if case[4] is not None else sorted(self.selected)
            for col in columns:
                function = self.selected.get(col)
                if col in self.skip:
                    self.send(["c", index, col, None, "skipped", None, None, 0.0])
                    continue
                start = time.perf_counter()
                if function is None:
                    outcome: Outcome = (None, "exception", "the assertion is not defined in this worker", None)
                else:
                    outcome = self.run_cell(function, case)
                elapsed = time.perf_counter() - start
                value, kind, message, line = outcome
                if kind == "timeout":
                    self.timeouts[col] += 1
                    if self.timeouts[col] >= self.give_up_after:
                        self.skip.add(col)
                self.send(["c", index, col, value, kind, message, line, elapsed])

    def preload(self, source: str) -> None:
        """Have the checks library load the data files of the checks the module calls, before any cell's clock
        starts (within the worker's startup time, under a bound of its own). The library is the one the module
        imported, if it did: the sandbox imports nothing on the module's behalf."""
        library = sys.modules.get(_CHECKS_MODULE)
        preload = getattr(library, "preload", None)
        if not callable(preload):
            return
        try:
            try:
                _arm(max(_S.timeout_s, _PRELOAD_S))
                preload(set(_CHECK_CALL.findall(source)))
            finally:
                _disarm()
        except BaseException:  # the cells that need the data report its failure themselves
            pass

    def serve(self, source: str) -> None:
        module_error = self.load(source)
        assertions = [] if module_error else self.discover()
        if not module_error:
            self.preload(source)
        self.send(["ready", {"assertions": assertions, "module_error": module_error}])
        while True:
            message = self.receive()
            if message[0] == "select":
                self.selected = {int(col): self.namespace.get(name) for col, name in message[1]}
                self.selected = {c: f if inspect.isfunction(f) else None for c, f in self.selected.items()}
            elif message[0] == "run":
                self.run_batch(message[1])


def _limit(kind: int, value: int) -> None:
    try:
        resource.setrlimit(kind, (value, value))
    except (ValueError, OSError):
        _, hard = resource.getrlimit(kind)
        if hard == resource.RLIM_INFINITY or value <= hard:
            resource.setrlimit(kind, (value, hard))


def _orphan_guard(parent: int) -> None:
    """Exit when the parent dies (a worker stuck in user code still gets here: this thread has the GIL too)."""
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:  # nobody will remove our directory: do it ourselves
            _S.exiting = True
            shutil.rmtree(_S.tmpdir, ignore_errors=True)
            os._exit(70)


def _read_roots(extra: list[str]) -> tuple[str, ...]:
    """Python's own files (stdlib, site-packages, this package), the private directory, and ``extra``."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, _S.tmpdir, *extra}
    # the package's directory, found through a module of it: importing `spade_lsp` itself would tie this core
    # module to every layer its public names come from (import-linter's layers contract)
    roots.add(os.path.dirname(os.path.abspath(_assertions.__file__)))
    return tuple(sorted({os.path.realpath(root) for root in roots}))


def _confine(config: dict[str, Any], support: _kernel.KernelSupport) -> dict[str, bool]:
    """The kernel layer, when asked for, and what the kernel then says of this process (sent to the parent
    before any user code runs); on failure the worker exits before reading any user code."""
    if config.get("confinement") != "kernel":
        return {}
    try:
        if not support.confines:
            raise OSError(0, support.describe())
        _kernel.confine(read_roots=_S.read_roots + _kernel.library_dirs(), private_dir=_S.tmpdir, support=support)
    except OSError as error:
        sys.stderr.write(f"spade-sandbox: the worker could not confine itself: {error.strerror or error}\n")
        sys.stderr.flush()
        os._exit(CONFINE_FAILED)
    return _kernel.verify()


def main() -> None:
    _kernel.close_inherited_fds(keep=())
    proto_in, proto_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(2, 1)
    os.close(null)
    faulthandler.enable()
    worker = Worker(proto_in, proto_out)
    worker.send(["hello", os.getpid()])
    init = worker.receive()
    if init[0] != "init":
        os._exit(2)
    config: dict[str, Any] = init[1]
    _S.timeout_s = float(config["timeout_s"])
    _S.filename = str(config["filename"])
    _S.allowed = frozenset(config["allowed"])
    _S.tmpdir = os.path.realpath(os.getcwd())
    _S.read_roots = _read_roots(config["read_roots"])
    _S.memory_mb = config.get("memory_mb")
    worker.give_up_after = int(config["give_up_after"])
    support = _kernel.probe()  # loads libseccomp, which may start ldconfig: before RLIMIT_NPROC forbids that

    if _S.memory_mb:
        _limit(resource.RLIMIT_AS, int(_S.memory_mb) * 1024 * 1024)
    _limit(resource.RLIMIT_CPU, int(config["cpu_s"]))
    _limit(resource.RLIMIT_FSIZE, int(config["file_mb"]) * 1024 * 1024)
    _limit(resource.RLIMIT_CORE, 0)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    signal.signal(signal.SIGALRM, _on_alarm)
    _limit(resource.RLIMIT_NPROC, 0)  # no new processes (not enforced for root: seccomp is)
    _limit(resource.RLIMIT_NOFILE, 256)
    parent = os.getppid()
    worker.send(["confined", _confine(config, support)])  # while this is the only thread: Landlock and capabilities are
    threading.Thread(target=_orphan_guard, args=(parent,), daemon=True).start()  # per thread, inherited by new ones
    _assertions.set_ask_llm_handler(worker.ask)
    sys.addaudithook(_audit)
    worker.serve(str(config["source"]))
    os._exit(0)


if __name__ == "__main__":
    main()
