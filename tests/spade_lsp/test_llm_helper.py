"""The LLM helper processes: a pipeline client's plain batches sent from other processes, through the real litellm
client against a scripted server on loopback, with the same answers, totals, cache and limits as from here."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from spade_lsp import _llm_helper, usable_cpus
from spade_lsp._roles import assistant_endpoint, make_client, pipeline_endpoint
from spade_lsp.config import Settings
from spade_lsp.errors import LLMError
from spade_lsp.llm import Completion, LiteLLMClient, LLMRequest
from spade_lsp.store import Store
from tests.support.openai_stub import OpenAIStub, Reply, chat_reply, user_text

pytestmark = pytest.mark.skipif(usable_cpus() < 2, reason="helpers need a second CPU")


class InFlight:
    """An echo model that answers after ``delay_s`` and records the most requests it held at once."""

    def __init__(self, delay_s: float, on_request: Any = None) -> None:
        self.delay_s = delay_s
        self.now = self.most = 0
        self.lock = threading.Lock()
        self.on_request = on_request

    def __call__(self, request: dict[str, Any]) -> Reply:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        if self.on_request is not None:
            self.on_request(request)

        def done() -> bool:
            with self.lock:
                self.now -= 1
            return True

        reply = chat_reply(f"echo: {user_text(request)}", prompt_tokens=3, completion_tokens=2, delay_s=self.delay_s)
        reply.until = done
        return reply


def _requests(count: int) -> list[LLMRequest]:
    return [LLMRequest([{"role": "user", "content": f"item {i}"}], None, 1.0, 0) for i in range(count)]


def _client(stub: OpenAIStub, helpers: int, store: Store | None = None, **kwargs: Any) -> LiteLLMClient:
    client = LiteLLMClient("openai/stub", store=store, api_base=stub.api_base, api_key="sk-test", **kwargs)
    client.helpers = _llm_helper.Helpers(helpers) if helpers else None
    return client


def test_a_batch_sent_by_helpers_is_answered_counted_cached_and_limited_as_from_here(workspace_dir: Path) -> None:
    model = InFlight(0.05)
    with OpenAIStub(model) as stub, Store.open(workspace_dir) as store:
        client = _client(stub, 2, store, concurrency=30)
        answers = client.complete_many(_requests(90))  # more than can be in flight, 30 at once: two helpers
        assert [a.text for a in answers if isinstance(a, Completion)] == [f"echo: item {i}" for i in range(90)]
        assert (client.usage.calls, client.usage.prompt_tokens, client.usage.completion_tokens) == (90, 270, 180)
        assert model.most <= 30, f"{model.most} requests in flight with llm_concurrency 30"
        assert len([h for h in _llm_helper._helpers if h.alive]) >= 2
        again = _client(stub, 2, store, concurrency=30).complete_many(_requests(90))  # cached by this process
        assert all(isinstance(a, Completion) and a.cached for a in again) and len(stub.requests) == 90
        here = _client(stub, 0, None, concurrency=30)
        assert [a.text for a in here.complete_many(_requests(90)) if isinstance(a, Completion)] == [
            a.text for a in answers if isinstance(a, Completion)
        ]
        assert here.usage.to_json() == client.usage.to_json()


_SMALL_BATCH = """
import sys
from spade_lsp import _llm_helper
from spade_lsp.llm import LiteLLMClient, LLMRequest
_llm_helper.start_early()
client = LiteLLMClient("openai/stub", api_base=sys.argv[1], api_key="sk-test", concurrency=8)
client.helpers = _llm_helper.Helpers(2)
[answer] = client.complete_many([LLMRequest([{"role": "user", "content": "one"}], None, 1.0, 0)])
print(answer.text, "litellm" in sys.modules, sum(h.alive for h in _llm_helper._helpers))
"""


def test_a_small_batch_goes_to_the_early_helper_and_this_process_never_imports_litellm() -> None:
    with OpenAIStub(lambda request: chat_reply(f"echo: {user_text(request)}")) as stub:
        result = subprocess.run(
            [sys.executable, "-c", _SMALL_BATCH, stub.api_base], capture_output=True, text=True, timeout=120
        )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["echo:", "one", "False", "1"]  # one helper: the batch fits in flight


def test_requests_of_a_helper_killed_mid_batch_are_sent_from_here() -> None:
    killed = threading.Event()

    def kill_the_helper(request: dict[str, Any]) -> None:
        if user_text(request) == "item 5" and not killed.is_set():
            killed.set()
            for helper in _llm_helper._helpers:
                assert helper.pid is not None  # it is sending: it reported ready
                os.kill(helper.pid, signal.SIGKILL)

    with OpenAIStub(InFlight(0.2, kill_the_helper)) as stub:
        client = _client(stub, 1, concurrency=4)
        answers = client.complete_many(_requests(12))
    assert killed.is_set()
    assert [a.text for a in answers if isinstance(a, Completion)] == [f"echo: item {i}" for i in range(12)]
    assert client.usage.failed == 0 and client.usage.calls == 12
    sent = [user_text(r) for r in stub.requests]
    assert set(sent) == {f"item {i}" for i in range(12)}  # requests the helper had in flight were sent again


def test_a_helper_reads_provider_keys_from_the_environment_this_process_has_at_the_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _llm_helper.start_early()  # started before the key is set, as a command starts it before reading settings
    monkeypatch.setenv("OPENAI_API_KEY", "sk-set-later")
    with OpenAIStub(lambda request: chat_reply("ok")) as stub:
        client = LiteLLMClient("openai/stub", api_base=stub.api_base, api_key=None, concurrency=2)
        client.helpers = _llm_helper.Helpers(1)
        [answer] = client.complete_many(_requests(1))
    assert isinstance(answer, Completion) and answer.text == "ok"
    assert stub.headers[0].get("Authorization") == "Bearer sk-set-later"


def test_a_stopped_batch_sends_nothing_more_from_its_helpers() -> None:
    with OpenAIStub(InFlight(0.2)) as stub:
        client = _client(stub, 2, concurrency=4)
        answers = client.complete_many(_requests(60), should_stop=lambda: True)
    sent = len(stub.requests)
    assert sent <= 2 * 4, f"{sent} requests sent after the run was stopped at its first answer"
    stopped = [a for a in answers if isinstance(a, LLMError)]
    assert len(stopped) == 60 - sent and all("not sent" in str(a) for a in stopped)


def test_only_the_pipelines_plain_client_gets_helpers_and_llm_processes_0_keeps_its_calls_here() -> None:
    settings = Settings(model="openai/stub", api_base="http://127.0.0.1:9/v1", assistant_model="openai/judge")
    pipeline = make_client(pipeline_endpoint(settings), settings)
    assert pipeline.helpers is not None and pipeline.helpers.wanted == usable_cpus()
    assert make_client(assistant_endpoint(settings), settings).helpers is None
    many = settings.merged({"llm_processes": 16}, source="a test")  # a repository's spade.toml may say so
    assert (make_client(pipeline_endpoint(many), many).helpers or pytest.fail("no helpers")).wanted == (usable_cpus())
    _llm_helper._stop_all()  # none left from earlier tests: start_early starts one only when none runs
    _llm_helper.start_early()  # as `spade sample` does before it reads its settings
    [early] = [helper for helper in _llm_helper._helpers if not helper.used]
    alone = settings.merged({"llm_processes": 0}, source="a test")
    assert make_client(pipeline_endpoint(alone), alone).helpers is None
    assert early.gone.wait(timeout=10)  # stopped: it would only have imported litellm for nothing
    assert _llm_helper._zygote is None  # and the zygote with it
    assert all(helper.used for helper in _llm_helper._helpers)
    limited = settings.merged({"llm_rpm": 60}, source="a test")
    rated = make_client(pipeline_endpoint(limited), limited)
    assert rated._helpers_for(_requests(3)) == []  # a rate limit is kept in this process


def test_a_helper_retries_with_this_clients_backoff_and_its_retries_are_counted_here() -> None:
    from tests.support.openai_stub import Faults

    faults = Faults(lambda request: chat_reply("late but fine"), lambda key, attempt: "500" if attempt < 2 else None)
    with OpenAIStub(faults) as stub:
        client = _client(stub, 1, concurrency=2, backoff_s=0.01, backoff_max_s=0.02)
        [answer] = client.complete_many(_requests(1))
    assert isinstance(answer, Completion) and answer.text == "late but fine"
    assert faults.attempts("item 0") == ["500", "500", "ok"] and client.usage.retries == 2
    arrivals = [at for _, at in faults.sent["item 0"]]
    gaps = [later - earlier for earlier, later in itertools.pairwise(arrivals)]
    assert max(gaps) < 0.2, f"retried after {gaps} s: not this client's backoff (0.01-0.02 s; the default is 0.5 s)"


def test_an_idle_helper_exits_and_the_next_batch_starts_another(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_llm_helper, "_IDLE_EXIT_S", 1.0)
    _llm_helper._stop_all()
    with OpenAIStub(lambda request: chat_reply("ok")) as stub:
        client = _client(stub, 1, concurrency=2)
        assert isinstance(client.complete_many(_requests(1))[0], Completion)
        [first] = _llm_helper._helpers
        assert first.gone.wait(timeout=30) and first.alive is False  # it left after a second with nothing to do
        assert isinstance(client.complete_many(_requests(2))[1], Completion)
        [second] = _llm_helper._helpers
    assert second is not first and len(stub.requests) == 3


def test_where_no_helper_can_start_the_calls_are_sent_from_here(monkeypatch: pytest.MonkeyPatch) -> None:
    _llm_helper._stop_all()
    monkeypatch.setattr(_llm_helper.sys, "executable", "/nonexistent/python")  # Popen raises FileNotFoundError
    _llm_helper.start_early()
    with OpenAIStub(lambda request: chat_reply(f"echo: {user_text(request)}")) as stub:
        client = _client(stub, 2, concurrency=2)
        answers = client.complete_many(_requests(5))
    assert [a.text for a in answers if isinstance(a, Completion)] == [f"echo: item {i}" for i in range(5)]
    assert _llm_helper._helpers == []


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a process that has not exited (a zombie has exited)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _parent_and_cpu_s(pid: int) -> tuple[int, float]:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_helpers_are_forked_from_one_zygote_that_imported_litellm_once_and_none_outlives_the_stop() -> None:
    _llm_helper._stop_all()
    with OpenAIStub(InFlight(0.05)) as stub:
        client = _client(stub, 2, concurrency=30)
        answers = client.complete_many(_requests(90))  # more than can be in flight: two helpers
        assert all(isinstance(a, Completion) for a in answers)
        helpers = [helper for helper in _llm_helper._helpers if helper.alive]
        zygote = _llm_helper._zygote
        assert zygote is not None and len(helpers) == 2
        pids = [helper.pid for helper in helpers if helper.pid is not None]
        assert len(pids) == 2  # both reported ready
        for pid in pids:
            parent, cpu_s = _parent_and_cpu_s(pid)
            assert parent == zygote.process.pid
            # a fork starts with litellm imported: its CPU is the calls', not an import's (about 2 s here)
            assert cpu_s < 1.0, f"helper {pid} used {cpu_s} s of CPU for 90 short calls"
    _llm_helper._stop_all()
    assert zygote.process.returncode == 0  # it reaped its helpers and left when this process closed its end
    assert not any(_alive(pid) for pid in [*pids, zygote.process.pid])


_KILLED_MID_BATCH = """
import sys, threading
from spade_lsp import _llm_helper
from spade_lsp.llm import LiteLLMClient, LLMRequest
client = LiteLLMClient("openai/stub", api_base=sys.argv[1], api_key="sk-test", concurrency=40)
client.helpers = _llm_helper.Helpers(2)
def report():
    while len([h for h in _llm_helper._helpers if h.pid]) < 2 or _llm_helper._zygote is None:
        threading.Event().wait(0.05)
    print(_llm_helper._zygote.process.pid, *[h.pid for h in _llm_helper._helpers], flush=True)
threading.Thread(target=report, daemon=True).start()
client.complete_many([LLMRequest([{"role": "user", "content": f"item {i}"}], None, 1.0, 0) for i in range(400)])
"""


def test_a_killed_parent_leaves_no_zygote_or_helper_behind() -> None:
    with OpenAIStub(InFlight(1.0)) as stub:
        parent = subprocess.Popen([sys.executable, "-c", _KILLED_MID_BATCH, stub.api_base], stdout=subprocess.PIPE)
        assert parent.stdout is not None
        pids = [int(pid) for pid in parent.stdout.readline().split()]
        assert len(pids) == 3 and all(_alive(pid) for pid in pids)
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 20
        while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
    assert not any(_alive(pid) for pid in pids), "a zygote or helper outlived the process that started it"


@pytest.mark.parametrize(
    ("argv", "starts"),
    [
        (["sample", "p.prompt", "--inputs", "5"], True),
        (["compare", "p.prompt", "--versions", "1", "2"], True),
        (["check", "p.prompt"], True),
        (["check", "p.prompt", "--latest"], False),  # reads the latest run: nothing to send
        (["sample", "--help"], False),
        (["eval", "p.prompt"], False),
        (["synthesize", "p.prompt"], False),
        ([], False),
    ],
)
def test_a_sampling_command_starts_its_helpers_before_it_parses_its_arguments(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], starts: bool
) -> None:
    from spade_lsp import cli

    started: list[bool] = []
    monkeypatch.setattr(_llm_helper, "start_early", lambda: started.append(True))
    cli._start_helpers_early(argv)
    assert started == ([True] if starts else [])


def test_helpers_started_for_a_job_the_workspace_daemon_runs_are_stopped_before_it_runs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import spade_lsp_client
    from spade_lsp import cli

    _llm_helper._stop_all()
    _llm_helper.start_early()  # as `spade sample` does before it knows a daemon runs
    zygote = _llm_helper._zygote
    assert zygote is not None
    seen: list[bool] = []

    def run_job(*args: Any, **kwargs: Any) -> dict[str, Any]:
        seen.append(_llm_helper._zygote is None and zygote.process.poll() is not None)
        return {"id": 1, "status": "done", "result": {"from": "daemon"}}

    monkeypatch.setattr(spade_lsp_client, "run_job", run_job)
    args = cli.build_parser().parse_args(["sample", str(tmp_path / "p.prompt")])
    assert cli._daemon_job(args, tmp_path, "sample", {}) == {"from": "daemon"}
    assert seen == [True]  # killed before the daemon's job ran, not left importing litellm beside the daemon's
