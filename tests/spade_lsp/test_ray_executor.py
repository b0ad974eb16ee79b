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
from spade_lsp.errors import ConfigError
from spade_lsp.llm import Completion, LLMRequest
from spade_lsp.reliability._sampling import SampleOptions, sample_prompt
from spade_lsp.sandbox import ModuleSource, SandboxCase, SandboxLimits, run_assertions
from spade_lsp.workspace import Workspace
from tests.spade_lsp.sandbox import _attacks
from tests.support.blurb import CheapEveryFourth, sampling_workspace
from tests.support.openai_stub import OpenAIStub, Reply, chat_reply, user_text
from tests.support.ray_cluster import ray_cluster, require_ray

__all__ = ["ray_cluster"]  # the module's cluster fixture

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def model() -> Iterator[OpenAIStub]:
    with OpenAIStub(CheapEveryFourth()) as stub:
        yield stub


def _workspace(root: Path, stub: OpenAIStub, **overrides: Any) -> Workspace:
    settings = {"model": "openai/stub", "api_base": stub.api_base, "classifier": "offline", **overrides}
    return Workspace(root, overrides=settings)


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
    options = SampleOptions(samples=8, early_stopping=False, seed=7)
    documents, outputs = {}, {}
    for executor in ("local", "ray"):
        root = tmp_path / executor
        root.mkdir()
        (root / "spade.toml").write_text("", encoding="utf-8")
        prompt = sampling_workspace(root)
        with OpenAIStub(CheapEveryFourth()) as stub, _workspace(root, stub, executor=executor) as workspace:
            documents[executor] = sample_prompt(workspace, prompt, options)
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
        return chat_reply(json.dumps({"answer": "yes" if "warm" in user_text(request).split("Response:")[1] else "no"}))

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
