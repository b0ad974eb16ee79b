"""Benchmarks of the Ray executor (issue 21, part 2) on a Ray cluster started on this machine:

1. 20,000 LLM calls against the fixed-latency loopback server (its own process), through the in-process client and
   through the Ray executor (the driver's cache, Ray tasks holding cluster-wide permits from the limits actor), in
   one run: both wall times and their ratio (the Ray executor's overhead on one node). From the Ray executor's
   throughput on this node, the projected wall time on N nodes: calls / min(N x per-node throughput, the driver's
   ceiling, the cluster limit), the limit being ``llm_concurrency`` / latency (and ``llm_rpm`` / 60 when set).
   ``SPADE_RAY_BENCH_CALLS`` sets another number of calls.
0. The driver's own ceiling: the answers per second one driver takes in (``ray.wait``, the results' transfer, the
   store's cache writes, an ``on_result`` callback per answer) when its tasks answer at once (a zero-latency model
   inside the task: no HTTP), whatever the number of nodes. More nodes cannot make a run faster than this.
2. 50 pure-Python assertions on many outputs in sandbox workers: in-process (``run_assertions``, two workers) and
   as Ray tasks (``run_assertions_ray``: chunks of cases, a sandbox worker each), outputs per second each. The
   issue's size is 100,000 outputs; ``SPADE_RAY_BENCH_OUTPUTS`` sets another.

Run with ``make bench`` or ``pytest -q -s tests/benchmarks/test_ray_bench.py`` (after ``make ray``).
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spade_lsp.llm import Completion, LiteLLMClient, LLMRequest
from spade_lsp.sandbox import ModuleSource, SandboxCase, SandboxLimits, run_assertions
from spade_lsp.store import Store
from tests.benchmarks.test_sandbox_bench import _module, _response
from tests.support.floors import at_least, at_most, figure
from tests.support.openai_stub import stub_process
from tests.support.ray_cluster import ray_cluster

__all__ = ["ray_cluster"]

CALLS = int(os.environ.get("SPADE_RAY_BENCH_CALLS", "20000"))
LATENCY_S = 0.1
CONCURRENCY = 64
NODES = (4, 16)
#: the Ray executor on one node may cost this much over the in-process client (a 2-core machine running the driver,
#: the loopback server, Ray's own processes and the tasks)
FLOOR_OVERHEAD = 1.5

OUTPUTS = int(os.environ.get("SPADE_RAY_BENCH_OUTPUTS", "100000"))
ASSERTIONS = 50
#: outputs per second, each executor: 50 assertions on 100,000 outputs in under 10 minutes
FLOOR_OUTPUTS_PER_S = 100_000 / 600

pytestmark = [pytest.mark.benchmark, pytest.mark.timeout(3600)]


def _zero_latency_chunk(spec: Any, actor: Any, requests: list[LLMRequest], run: str) -> dict[str, Any]:
    """In place of ``_ray._complete_chunk``: a model that answers at once, in the task (what the driver gets back is
    shaped as the real task's)."""
    answers = [
        Completion(f"echo: {r.messages[-1]['content']}", prompt_tokens=10, completion_tokens=5) for r in requests
    ]
    return {"results": answers, "failed_spend": Completion("", calls=0, cost=0.0), "learnt": None}


@pytest.fixture(scope="module")
def driver_ceiling(ray_cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> float:
    """Answers per second the driver takes in, its tasks answering at once (measured once per module)."""
    from spade_lsp import _ray

    calls = max(CALLS, 20_000)
    with Store.open(tmp_path_factory.mktemp("ceiling")) as store, pytest.MonkeyPatch.context() as patch:
        patch.setattr(_ray, "_complete_chunk", _zero_latency_chunk)
        local = LiteLLMClient("openai/zero-latency", store=store, api_base="http://127.0.0.1:9/v1", api_key="k")
        client = _ray.RayLLMClient.wrapping(local, None)
        client.complete_many([LLMRequest([{"role": "user", "content": f"warm up {i}"}]) for i in range(64)])
        arrived: list[int] = []
        requests = [LLMRequest([{"role": "user", "content": f"ceiling input {i}"}]) for i in range(calls)]
        started = time.perf_counter()
        answers = client.complete_many(requests, on_result=lambda index, answer: arrived.append(index))
        elapsed = time.perf_counter() - started
        cached = store.db.execute("SELECT count(*) FROM llm_cache").fetchone()[0]
    assert all(isinstance(a, Completion) and not a.cached for a in answers) and len(arrived) == calls
    assert cached == calls + 64  # every answer was written to the store by the driver
    ceiling = calls / elapsed
    print(f"\ndriver ceiling: {calls} answers in {elapsed:.2f} s, {ceiling:.0f} answers/s (zero-latency tasks)")
    return ceiling


@pytest.fixture(scope="module")
def latency_server() -> Iterator[str]:
    with stub_process(LATENCY_S) as api_base:
        yield api_base


def _requests(run: str) -> list[LLMRequest]:
    return [LLMRequest([{"role": "user", "content": f"{run} input {i % 100}"}], None, 1.0, i) for i in range(CALLS)]


def test_20000_calls_in_process_and_on_ray(
    ray_cluster: Any, latency_server: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    from spade_lsp import _ray

    seconds: dict[str, float] = {}
    with Store.open(tmp_path) as store:
        local = LiteLLMClient(
            "openai/latency-stub", store=store, api_base=latency_server, api_key="k", concurrency=CONCURRENCY
        )
        local.complete([{"role": "user", "content": "warm up"}])  # litellm's import is not part of a run
        remote = _ray.RayLLMClient.wrapping(local, None)
        # the tasks' processes import litellm once each: warm them too (as a long-running cluster would be)
        remote.complete_many([LLMRequest([{"role": "user", "content": f"warm up {i}"}]) for i in range(64)])
        for name, client in (("in_process", local), ("ray", remote)):
            started = time.perf_counter()
            answers = client.complete_many(_requests(name))
            seconds[name] = time.perf_counter() - started
            assert all(isinstance(a, Completion) and not a.cached for a in answers)
            print(f"\n{name}: {CALLS} calls in {seconds[name]:.2f} s ({CALLS / seconds[name]:.0f} calls/s)")
        cached = store.db.execute("SELECT count(*) FROM llm_cache").fetchone()[0]
        stats = _ray.stats(remote.endpoint, remote.model)
    assert cached == 2 * CALLS + 65  # every answer reached the store, through the driver
    assert stats["peak"] <= CONCURRENCY
    driver_ceiling: float = request.getfixturevalue("driver_ceiling")  # measured after the runs, not to disturb them
    ideal = CALLS * LATENCY_S / CONCURRENCY
    ratio = seconds["ray"] / seconds["in_process"]
    per_node = CALLS / seconds["ray"]
    limit = CONCURRENCY / LATENCY_S
    print(
        f"ideal {ideal:.1f} s at concurrency {CONCURRENCY}; Ray/in-process {ratio:.3f}x; Ray throughput on one node "
        f"{per_node:.0f} calls/s; cluster limit {limit:.0f} calls/s (concurrency {CONCURRENCY} / {LATENCY_S} s); "
        f"the driver's ceiling {driver_ceiling:.0f} answers/s"
    )
    figure(f"{CALLS}_calls_in_process_s", seconds["in_process"], "s")
    figure(f"{CALLS}_calls_ray_s", seconds["ray"], "s")
    at_most(f"{CALLS}_calls_ray_over_in_process", ratio, FLOOR_OVERHEAD, "x")
    figure("ray_calls_per_s_one_node", per_node, "calls/s")
    for nodes in NODES:
        throughput = min(nodes * per_node, driver_ceiling, limit)
        unlimited = CALLS / min(nodes * per_node, driver_ceiling)
        bound = "the nodes" if nodes * per_node <= min(driver_ceiling, limit) else "the driver"
        bound = "the cluster limit" if limit < min(nodes * per_node, driver_ceiling) else bound
        print(
            f"projected on {nodes} nodes: {CALLS / throughput:.1f} s at this limit (bound by {bound}), "
            f"{unlimited:.1f} s with the limit raised to {min(nodes * per_node, driver_ceiling):.0f} calls/s or more"
        )
        figure(f"{CALLS}_calls_projected_{nodes}_nodes_s", CALLS / throughput, "s")
        figure(f"{CALLS}_calls_projected_{nodes}_nodes_unlimited_s", unlimited, "s")


def test_outputs_x_50_assertions_in_process_and_on_ray(ray_cluster: Any) -> None:
    from spade_lsp._ray import run_assertions_ray

    rng = random.Random(21)
    parts = _module(rng).split("\n\n@assertion")  # the imports, then the sandbox benchmark's 100 assertions
    module = ModuleSource("\n\n@assertion".join(parts[: ASSERTIONS + 1]) + "\n", "bench_assertions.py")
    responses = [_response(rng) for _ in range(1000)]
    cases = [SandboxCase({"id": i}, "Write a reply.", responses[i % 1000]) for i in range(OUTPUTS)]
    rates: dict[str, float] = {}
    verdicts: dict[str, list[list[bool | None]]] = {}
    for name in ("in_process", "ray"):
        started = time.perf_counter()
        if name == "ray":
            result = run_assertions_ray(
                module, cases, names=None, limits=SandboxLimits(workers=2), ask_llm=None, address=None
            )
        else:
            result = run_assertions(module, cases, limits=SandboxLimits(workers=2))
        elapsed = time.perf_counter() - started
        assert result.module_error is None and result.errors == []
        assert len(result.assertions) == ASSERTIONS
        verdicts[name] = result.passed
        rates[name] = OUTPUTS / elapsed
        print(
            f"\n{name}: {OUTPUTS} outputs x {ASSERTIONS} assertions in {elapsed:.1f} s, {rates[name]:.0f} outputs/s "
            f"({result.timing.worker_starts} sandbox workers)"
        )
    assert verdicts["ray"] == verdicts["in_process"]
    scale = "" if OUTPUTS == 100_000 else f" (measured at {OUTPUTS} outputs)"
    print(
        f"100,000 outputs would take {100_000 / rates['in_process']:.0f} s in process, {100_000 / rates['ray']:.0f} s"
        f" on Ray{scale}"
    )
    at_least("outputs_x_50_assertions_in_process_per_s", rates["in_process"], FLOOR_OUTPUTS_PER_S, "outputs/s")
    at_least("outputs_x_50_assertions_ray_per_s", rates["ray"], FLOOR_OUTPUTS_PER_S, "outputs/s")
    figure("outputs_x_50_assertions_ray_over_in_process", rates["ray"] / rates["in_process"], "x")
    figure("outputs_measured", OUTPUTS, "outputs")


def test_the_drivers_own_ceiling(driver_ceiling: float) -> None:
    """Last, so its burst of answers disturbs no other measurement (the calls test asks for it after its runs)."""
    figure("ray_driver_ceiling_answers_per_s", driver_ceiling, "answers/s")
