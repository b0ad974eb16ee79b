"""The Ray executor (`--executor ray`): sampling's LLM calls and sandboxed validation as Ray tasks on a local
cluster (one per module), against the loopback OpenAI stub through the real litellm client."""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spade_lsp import cli
from spade_lsp.config import resolve_file
from spade_lsp.errors import ConfigError
from spade_lsp.llm import Completion, LLMRequest
from spade_lsp.reliability import SampleOptions, sample_prompt
from spade_lsp.sandbox import ModuleSource, SandboxCase, SandboxLimits, run_assertions
from spade_lsp.workspace import Workspace
from tests.spade_lsp.sandbox import _attacks
from tests.support.blurb import CheapEveryFourth, sampling_workspace
from tests.support.openai_stub import OpenAIStub, Reply, chat_reply, error_reply, judged_response, user_text
from tests.support.ray_cluster import ray_cluster, require_ray
from tests.support.sampling import with_knobs

__all__ = ["ray_cluster"]  # the module's cluster fixture

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def model() -> Iterator[OpenAIStub]:
    with OpenAIStub(CheapEveryFourth()) as stub:
        yield stub


def _overrides(stub: OpenAIStub, **overrides: Any) -> dict[str, Any]:
    return {"model": "openai/stub", "api_base": stub.api_base, "classifier": "offline", **overrides}


def _workspace(root: Path, stub: OpenAIStub, **overrides: Any) -> Workspace:
    return Workspace(root, overrides=_overrides(stub, **overrides))


def _outputs(workspace: Workspace, run_id: int) -> dict[int, list[str]]:
    """The stored outputs of a run, each input's sorted (which sample says "cheap" depends on arrival order)."""
    rows = workspace.store.db.execute(
        "SELECT input, output FROM sample_outputs WHERE run_id = ? ORDER BY input, sample", [run_id]
    ).fetchall()
    outputs: dict[int, list[str]] = {}
    for index, text in rows:
        outputs.setdefault(int(index), []).append(str(text))
    return {index: sorted(texts) for index, texts in outputs.items()}


def _verdicts(document: dict[str, Any]) -> list[tuple[str, int, int, str]]:
    return [(v["name"], v["successes"], v["trials"], v["verdict"]) for v in document["validators"]]


def test_sampling_under_ray_gives_the_local_verdicts_and_outputs(
    ray_cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from spade_lsp import _ray

    monkeypatch.setattr(_ray, "_MIN_CASES", 4)  # the round's cases in several validation tasks, not one
    options = SampleOptions(seed=7)
    documents, outputs = {}, {}
    for executor in ("local", "ray"):
        root = tmp_path / executor
        root.mkdir()
        (root / "spade.toml").write_text("", encoding="utf-8")
        prompt = sampling_workspace(root)
        with OpenAIStub(CheapEveryFourth()) as stub, _workspace(root, stub, executor=executor) as workspace:
            resolved = resolve_file(root, prompt, _overrides(stub, executor=executor))
            settings = with_knobs(resolved, samples=8, early_stopping=False)
            documents[executor] = sample_prompt(workspace, prompt, options, settings=settings)
            outputs[executor] = _outputs(workspace, documents[executor]["run_id"])
            assert len(stub.requests) == 32
    local, ray = documents["local"], documents["ray"]
    assert _verdicts(ray) == _verdicts(local)
    assert [(n, s, t) for n, s, t, _ in _verdicts(ray)] == [("assert_short", 32, 32), ("assert_no_cheap", 24, 32)]
    assert outputs["ray"] == outputs["local"]
    tokens = {"prompt": 320, "completion": 160}
    assert (ray["calls"], ray["tokens"]) == (local["calls"], local["tokens"]) == (32, tokens)


def test_cache_hits_are_answered_by_the_driver_and_only_the_rest_sent_to_ray(
    ray_cluster: Any, workspace_dir: Path, model: OpenAIStub
) -> None:
    with _workspace(workspace_dir, model, executor="ray") as workspace:
        client = workspace.llm_client()
        assert type(client).__name__ == "RayLLMClient"
        first = client.complete_many([LLMRequest([{"role": "user", "content": f"a for {i}."}]) for i in range(6)])
        assert all(isinstance(a, Completion) and not a.cached for a in first)
        assert len(model.requests) == 6
        stored = workspace.store.db.execute("SELECT count(*) FROM llm_cache").fetchone()[0]
        assert stored == 6  # the driver wrote what the tasks answered
        arrived: list[int] = []
        again = client.complete_many(
            [LLMRequest([{"role": "user", "content": f"a for {i}."}]) for i in range(8)],
            on_result=lambda index, answer: arrived.append(index),
        )
    assert len(model.requests) == 8  # only the two new ones went out
    assert [isinstance(a, Completion) and a.cached for a in again] == [True] * 6 + [False] * 2
    assert [a.text for a in again[:6]] == [a.text for a in first]  # type: ignore[union-attr]
    assert arrived[:6] == [0, 1, 2, 3, 4, 5] and sorted(arrived) == list(range(8))  # cached ones first
    assert client.usage.cached == 6 and client.usage.calls == 8


class _Timed:
    """A 0.3 s model that records when each request arrived."""

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s
        self.arrivals: list[float] = []
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Reply:
        with self.lock:
            self.arrivals.append(time.monotonic())
        return chat_reply(f"echo: {user_text(request)}", delay_s=self.latency_s)


def _most_within(times: list[float], window_s: float) -> int:
    times = sorted(times)
    return max(sum(1 for t in times[i:] if t < start + window_s) for i, start in enumerate(times))


def test_the_permits_actor_limits_concurrency_across_tasks(ray_cluster: Any, workspace_dir: Path) -> None:
    from spade_lsp import _ray

    timed = _Timed(0.3)
    with OpenAIStub(timed) as stub, _workspace(workspace_dir, stub, executor="ray", llm_concurrency=2) as workspace:
        client = workspace.llm_client()
        started = time.monotonic()
        answers = client.complete_many([LLMRequest([{"role": "user", "content": f"q {i}"}]) for i in range(16)])
        elapsed = time.monotonic() - started
        stats = _ray.stats(client.endpoint, client.model)  # type: ignore[attr-defined]
    assert all(isinstance(a, Completion) for a in answers)
    # 16 requests in 8 tasks of 2 (4 per CPU): 2 tasks at a time, each allowed 2 in flight on its own, so 4 at once
    # without the actor; with it, never more than 2 arrive within one answer's latency, and it takes 8 rounds
    assert _most_within(timed.arrivals, 0.25) <= 2
    assert stats["peak"] == 2 and stats["granted"] == 16
    assert elapsed >= 8 * 0.3


def test_the_permits_actor_limits_requests_per_window_across_tasks(ray_cluster: Any, workspace_dir: Path) -> None:
    from spade_lsp import _ray

    timed = _Timed(0.0)
    with OpenAIStub(timed) as stub, _workspace(workspace_dir, stub, executor="ray", llm_rpm=4) as workspace:
        client = workspace.llm_client()
        # the client's actor, made first with a 1 s window instead of a minute (the client joins it by name)
        _ray.permits_actor(client.endpoint, client.model, 8, 4, window_s=1.0)  # type: ignore[attr-defined]
        answers = client.complete_many([LLMRequest([{"role": "user", "content": f"r {i}"}]) for i in range(12)])
        stats = _ray.stats(client.endpoint, client.model)  # type: ignore[attr-defined]
    assert all(isinstance(a, Completion) for a in answers)
    assert len(timed.arrivals) == 12 and stats["granted"] == 12 and stats["window_s"] == 1.0
    # the actor grants at most 4 starts in any window, whichever task asked; a request reaches the server a task's
    # scheduling delay after its grant, so the server's view is checked over the whole run: 3 windows at least
    assert _most_within(stats["grant_times"], 0.999) <= 4
    assert max(stats["grant_times"]) - min(stats["grant_times"]) >= 2.0
    assert max(timed.arrivals) - min(timed.arrivals) >= 1.5


def test_a_permit_never_released_is_taken_back_when_its_lease_ends() -> None:
    import asyncio

    from spade_lsp._ray import _Permits

    async def scenario() -> tuple[float, dict[str, Any]]:
        permits = _Permits(1, None)
        await permits.acquire(0.3)  # its task died: never released
        started = time.monotonic()
        second = await permits.acquire(5.0)
        waited = time.monotonic() - started
        await permits.release(second)
        await permits.release(second)  # a release that arrives twice frees nothing more
        return waited, permits.stats()

    waited, stats = asyncio.run(scenario())
    assert 0.2 <= waited < 2.0
    assert len(stats.pop("grant_times")) == 2
    assert stats == {
        "in_flight": 0,
        "peak": 1,
        "granted": 2,
        "expired": 1,
        "rpm": None,
        "window_s": 60.0,
    }


HOSTILE = [
    a
    for a in _attacks.KERNEL
    if a.name in {"create_outside", "read_etc_passwd", "inet6_socket", "walk_subclasses_execv"}
]


def test_hostile_assertions_stay_confined_under_ray(ray_cluster: Any, tmp_path: Path) -> None:
    from spade_lsp._ray import run_assertions_ray

    assert len(HOSTILE) == 4
    host = {"dir": str(tmp_path)}
    module = ModuleSource(_attacks.sidecar(HOSTILE, host), "hostile_assertions.py")
    cases = [SandboxCase({"i": i}, "p", "r") for i in range(4)]
    limits = SandboxLimits()
    local = run_assertions(module, cases, limits=limits)
    remote = run_assertions_ray(module, cases, names=None, limits=limits, ask_llm=None, address=None, min_cases=1)
    assert remote.timing.worker_starts >= 2  # the cases ran in several tasks, each with its own sandbox worker
    assert remote.confinement.startswith("verified kernel confinement: Landlock ABI")
    assert remote.passed == local.passed == [[None] * 4] * 4  # every attempt refused, on every case
    by_name = {(e.case, e.name): e for e in remote.errors}
    for case in range(4):
        for attempt in HOSTILE:
            error = by_name[(case, f"assert_{attempt.name}")]
            local_error = local.error(case, f"assert_{attempt.name}")
            assert local_error is not None and error.kind == local_error.kind
            assert attempt.expect is not None and re.search(attempt.expect, error.message), error
    assert not list(tmp_path.glob("*.new"))  # nothing written outside the workers' directories


def test_ask_llm_under_ray_is_answered_by_the_tasks_through_the_assistant(ray_cluster: Any, tmp_path: Path) -> None:
    from spade_lsp._assertion_jobs import assistant_ask
    from spade_lsp._ray import run_assertions_ray
    from spade_lsp.sandbox import run_assertions

    module = ModuleSource(
        "from spade_lsp.assertions import ask_llm, assertion\n\n"
        "@assertion(asks_llm=True)\n"
        "def assert_warm(example, prompt, response):\n"
        "    return ask_llm('Is the tone warm?', response)\n"
    )
    cases = [SandboxCase({"i": i}, "p", "warm" if i % 2 else "cold") for i in range(6)]

    def judge(request: dict[str, Any]) -> Reply:
        return chat_reply(json.dumps({"answer": "yes" if "warm" in judged_response(request) else "no"}))

    root = tmp_path / "ws"
    root.mkdir()
    (root / "spade.toml").write_text("", encoding="utf-8")
    with OpenAIStub(judge) as stub:
        overrides = {"assistant_model": "openai/judge", "assistant_api_base": stub.api_base, "executor": "ray"}
        with Workspace(root, overrides=overrides) as workspace:
            ask = assistant_ask(workspace, workspace.settings)
            result = run_assertions_ray(
                module, cases, names=None, limits=SandboxLimits(), ask_llm=ask, address=None, min_cases=2
            )
            assert result.passed == [[False], [True], [False], [True], [False], [True]]
            assert result.timing.llm_calls == 6 and len(stub.requests) == 6
            # the tasks have no store: the driver cached their answers, so the same checks run locally ask nothing
            again = run_assertions(
                module, cases, limits=SandboxLimits(), ask_llm=assistant_ask(workspace, workspace.settings)
            )
            assert again.passed == result.passed and len(stub.requests) == 6
            # and a second Ray run reads them too: the tasks get a snapshot of the cached answers, and ask nothing
            second = run_assertions_ray(
                module,
                cases,
                names=None,
                limits=SandboxLimits(),
                ask_llm=assistant_ask(workspace, workspace.settings),
                address=None,
                min_cases=2,
            )
    assert second.passed == result.passed and second.timing.worker_starts >= 2
    assert len(stub.requests) == 6


def test_validation_under_ray_without_ask_llm_never_makes_the_assistant_client(ray_cluster: Any) -> None:
    """The assistant may be the local model: a module none of whose assertions asks an LLM must not start it."""
    from spade_lsp._ray import run_assertions_ray

    made: list[str] = []

    class Workspace_:
        def assistant_client(self, settings: Any, *, what: str) -> Any:
            made.append(what)
            raise AssertionError("the assistant's client was made")

    class Ask:
        workspace, settings = Workspace_(), object()

        def __call__(self, question: str, response: str, context: Any) -> bool:
            raise AssertionError("asked")

    module = ModuleSource("def assert_short(example, prompt, response):\n    return len(response) < 5\n")
    cases = [SandboxCase({"i": i}, "p", "x" * i) for i in range(8)]
    result = run_assertions_ray(
        module, cases, names=None, limits=SandboxLimits(), ask_llm=Ask(), address=None, min_cases=2
    )
    assert result.passed == [[i < 5] for i in range(8)] and result.timing.worker_starts >= 2
    assert made == []


_ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}


def _priced(request: dict[str, Any]) -> Reply:
    """gpt-4o-mini as litellm prices it: each answer 1000 prompt and 500 completion tokens; "refuse" is a 400 (a
    call that spent nothing), "invalid" an answer that misses the schema (a failed call that was paid for)."""
    text = user_text(request)
    if "refuse" in text:
        return error_reply(400, "refused")
    if "invalid" in text:
        return chat_reply(json.dumps({"other": 1}), prompt_tokens=1000, completion_tokens=500)
    if "response_format" in request:
        return chat_reply(json.dumps({"answer": "ok"}), prompt_tokens=1000, completion_tokens=500)
    return chat_reply(f"fine: {text}", prompt_tokens=1000, completion_tokens=500)


def test_failed_calls_cost_under_ray_what_they_cost_locally(ray_cluster: Any, tmp_path: Path) -> None:
    requests = [
        *(LLMRequest([{"role": "user", "content": f"plain {i}"}]) for i in range(3)),
        LLMRequest([{"role": "user", "content": "valid"}], _ANSWER_SCHEMA),
        LLMRequest([{"role": "user", "content": "invalid"}], _ANSWER_SCHEMA, reasks=0),
        LLMRequest([{"role": "user", "content": "refuse"}]),
    ]
    usages = {}
    for executor in ("local", "ray"):
        root = tmp_path / executor
        root.mkdir()
        (root / "spade.toml").write_text("", encoding="utf-8")
        with OpenAIStub(_priced) as stub, _workspace(root, stub, model="openai/gpt-4o-mini", executor=executor) as ws:
            client = ws.llm_client()
            answers = client.complete_many(requests)
            usages[executor] = client.usage.copy()  # type: ignore[attr-defined]
        assert [type(a).__name__ for a in answers] == ["Completion"] * 4 + ["InvalidAnswerError", "LLMError"]
    local, ray = usages["local"], usages["ray"]
    per_call = 1000 * 0.15e-6 + 500 * 0.6e-6  # litellm's gpt-4o-mini price, through the stub's token counts
    assert local.cost_known and local.cost == pytest.approx(5 * per_call)  # the invalid answer was paid for
    assert ray.cost_known and ray.cost == pytest.approx(local.cost)
    assert (
        (ray.calls, ray.failed, ray.prompt_tokens, ray.completion_tokens)
        == (
            local.calls,
            local.failed,
            local.prompt_tokens,
            local.completion_tokens,
        )
        == (5, 2, 5000, 2500)
    )


def _numbered(request: dict[str, Any]) -> int:
    return int(user_text(request).split()[-1])


def test_stopping_a_ray_run_keeps_what_was_answered_and_says_what_was_not_sent(
    ray_cluster: Any, workspace_dir: Path
) -> None:
    """The first chunk answers fast, the others slowly: the stop comes while other chunks have calls in flight.
    Those were paid for: they are answered and cached, and only what never reached the server says "not sent"."""

    def script(request: dict[str, Any]) -> Reply:
        number = _numbered(request)
        return chat_reply(f"answer {number}", delay_s=0.05 if number < 4 else 1.5)

    arrived: list[int] = []
    requests = [LLMRequest([{"role": "user", "content": f"s {i}"}]) for i in range(32)]
    with OpenAIStub(script) as stub, _workspace(workspace_dir, stub, executor="ray", llm_concurrency=8) as ws:
        client = ws.llm_client()
        answers = client.complete_many(
            requests, on_result=lambda index, answer: arrived.append(index), should_stop=lambda: bool(arrived)
        )
        cached = ws.store.db.execute("SELECT count(*) FROM llm_cache").fetchone()[0]
        usage = client.usage.copy()  # type: ignore[attr-defined]
    sent = {_numbered(request) for request in stub.requests}
    answered = {i for i, answer in enumerate(answers) if isinstance(answer, Completion)}
    assert {0, 1, 2, 3} <= answered and 4 < len(sent) < 32  # stopped with calls in flight
    assert answered == sent and cached == len(sent)
    for index in set(range(32)) - answered:
        assert str(answers[index]).endswith("not sent, the run was stopped"), answers[index]
    assert sorted(arrived) == list(range(32))
    assert (usage.calls, usage.failed) == (len(sent), 32 - len(sent))


def test_the_rate_wait_does_not_eat_the_lease_nor_leak_the_slot() -> None:
    """With ``llm_rpm`` a call may wait for the window after taking its slot: its lease starts when it is granted,
    so it cannot expire while waiting (which would let another call take the slot, beyond the concurrency limit);
    a call cancelled while waiting gives the slot back."""
    import asyncio

    from spade_lsp._ray import _Permits

    async def scenario() -> dict[str, Any]:
        permits = _Permits(2, 1, window_s=1.0)
        await permits.acquire(10.0)
        second = await permits.acquire(0.5)  # waits ~1 s for the window: longer than its lease
        with pytest.raises(TimeoutError):  # both slots are in use: the third waits
            await asyncio.wait_for(permits.acquire(10.0), 0.2)
        in_use = permits.stats()
        await permits.release(second)
        with pytest.raises(TimeoutError):  # takes the freed slot, then waits for the window and is cancelled
            await asyncio.wait_for(permits.acquire(10.0), 0.2)
        return {**in_use, "after": permits.stats()["in_flight"]}

    stats = asyncio.run(scenario())
    assert (stats["in_flight"], stats["expired"], stats["granted"], stats["peak"]) == (2, 0, 2, 2)
    assert stats["after"] == 1  # the cancelled call's slot was given back


def test_ray_address_in_the_environment_joins_that_cluster(ray_cluster: Any, tmp_path: Path) -> None:
    """``ray.init(num_cpus=...)`` refuses when RAY_ADDRESS names a cluster: the executor joins that cluster."""
    import os
    import subprocess

    address = ray_cluster.get_runtime_context().gcs_address
    code = (
        "from spade_lsp import _ray\n"
        "ray = _ray.start(None)\n"
        f"assert ray.get_runtime_context().gcs_address == {address!r}\n"
        "ray.shutdown()\n"
    )
    env = {**os.environ, "RAY_ADDRESS": address}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr[-2000:]


def test_spade_sample_executor_ray_end_to_end(
    ray_cluster: Any, workspace_dir: Path, model: OpenAIStub, capsys: pytest.CaptureFixture[str]
) -> None:
    prompt = sampling_workspace(workspace_dir)
    flags = ["--model", "openai/stub", "--api-base", model.api_base, "--classifier", "offline"]
    code = cli.main(["sample", str(prompt), "--samples", "4", "--json", "--executor", "ray", *flags])
    out = capsys.readouterr().out
    assert code == 0, out
    document = json.loads(out)
    rates = {v["name"]: (v["successes"], v["trials"]) for v in document["validators"]}
    assert rates == {"assert_short": (16, 16), "assert_no_cheap": (12, 16)}
    assert len(model.requests) == 16


def test_without_ray_the_executor_says_how_to_install_it(
    workspace_dir: Path, model: OpenAIStub, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    require_ray()  # (the module's other tests need it; this one hides it)
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with _workspace(workspace_dir, model, executor="ray") as workspace, pytest.raises(ConfigError) as raised:
        workspace.llm_client()
    assert "make ray" in str(raised.value) and "spade-lsp[ray]" in str(raised.value)
    prompt = sampling_workspace(workspace_dir)
    flags = ["--model", "openai/stub", "--api-base", model.api_base, "--classifier", "offline", "--executor", "ray"]
    code = cli.main(["sample", str(prompt), "--samples", "2", *flags])
    err = capsys.readouterr().err
    assert code != 0 and "make ray" in err and "Traceback" not in err
    assert not model.requests


def test_a_repositorys_content_cannot_choose_where_spade_runs(workspace_dir: Path) -> None:
    """A prompt's front matter and the editor's settings (a repository's .vscode/settings.json) cannot set
    ``executor`` or ``ray_address``: a hostile address would have the driver unpickle a stranger's cluster's results
    and ship it the API key. The settings files and the command line can."""
    from spade_lsp.config import front_matter_settings
    from spade_lsp_server._state import client_overrides

    hostile = {"executor": "ray", "ray_address": "ray://attacker.example:10001", "tau": 0.3}
    assert front_matter_settings(hostile) == {"tau": 0.3}
    assert client_overrides(hostile)[0] == {"tau": 0.3}
    prompt = workspace_dir / "p.prompt"
    prompt.write_text("---\nexecutor: ray\nray_address: ray://attacker.example:10001\n---\nKeep it short.\n")
    settings = resolve_file(workspace_dir, prompt)
    assert (settings.executor, settings.ray_address) == ("local", None)
    with Workspace(workspace_dir, overrides={"executor": "ray", "ray_address": "ray://head:10001"}) as workspace:
        assert (workspace.settings.executor, workspace.settings.ray_address) == ("ray", "ray://head:10001")
