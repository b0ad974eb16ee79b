"""The Ray executor (``executor = "ray"``, ``--executor ray [--address ADDR]``): sampling's LLM calls and sandboxed
validation as Ray tasks across a cluster. Ray is the optional ``ray`` extra (``make ray``), imported only here and
only when the executor is chosen.

What runs where:
- the driver (the CLI or the daemon: the one writer of the store) looks answers up in the store's cache, sends the
  rest out in chunks (4 per cluster CPU, at most 256 requests each), and caches what comes back, as it arrives
  (``ray.wait``);
- each LLM task runs a store-less :class:`~spade_lsp.llm.LiteLLMClient` on its node, whose calls take permits from
  one named actor per (endpoint, model): the cluster-wide ``llm_concurrency`` and ``llm_rpm``;
- stopping a run sets its stop flag (kept by that actor): running tasks send nothing more and return what they were
  answered, which the driver caches; a task still running after the longest a call can take is cancelled, its
  requests reported as "stopped: it may have been sent";
- each validation task calls :func:`spade_lsp.sandbox.run_assertions` on its node, so the assertions run in sandbox
  worker processes under the same kernel confinement as locally (and nowhere when the node cannot confine them);
  an assertion's ``ask_llm`` is proxied by that task process (never the sandbox worker) through a store-less
  client for the assistant model, under the same cluster-wide permits. The task reads a read-only snapshot of the
  store's cached answers for that model (shipped through Ray's object store, when under 50 MB) and returns what it
  was asked anew, which the driver caches: a second run asks nothing. The assistant's client is made only when the
  module may call ``ask_llm``.

A cluster is joined with ``ray_address`` (else ``RAY_ADDRESS`` when the environment sets it); without either, a
cluster is started on this machine (once per process, with the CPUs this process may use). Every node needs the same
spade-lsp (with the ``ray`` extra) installed.

The permits actors are detached: on a shared cluster they outlive the driver that made them (until the cluster
stops, or ``ray.kill`` of ``llm-permits-v2:ENDPOINT:MODEL`` in namespace ``spade-lsp``), and every driver that uses one
sets its limits, so with several drivers on one cluster the last one's ``llm_concurrency`` and ``llm_rpm`` hold for
all of them.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import logging
import math
import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from spade_lsp._cpus import usable_cpus
from spade_lsp.errors import ConfigError, LLMError, ModelNotConfiguredError, SpadeError
from spade_lsp.llm import (
    _CACHE_BATCH,
    STRUCTURED_MODES,
    ClientSpec,
    Completion,
    LiteLLMClient,
    LLMRequest,
    Usage,
    error_of,
    error_parts,
)
from spade_lsp.store import llm_cache_size, model_responses

if TYPE_CHECKING:
    from spade_lsp._roles import Endpoint
    from spade_lsp.config import Settings
    from spade_lsp.sandbox import AskLLM, ModuleSource, SandboxCase, SandboxLimits, SandboxResult
    from spade_lsp.store import Store

__all__ = ["NOT_INSTALLED", "RayLLMClient", "import_ray", "ray_client", "run_assertions_ray", "start"]

NOT_INSTALLED: Final = (
    "executor = \"ray\" needs Ray, which is not installed: run `make ray` (or `pip install 'spade-lsp[ray]'`)"
)
NAMESPACE: Final = "spade-lsp"
#: requests per LLM task: small enough that answers stream back (and a stop abandons little), large enough that a
#: task's overhead is spread over many calls
_MAX_CHUNK: Final = 256
#: cases per validation task, at least: a task starts its own sandbox worker, which costs a fraction of a second
_MIN_CASES: Final = 500
_OBJECT_STORE_BYTES: Final = 256 * 1024 * 1024
#: the largest snapshot of cached ``ask_llm`` answers shipped to validation tasks (larger: they ask again)
_SNAPSHOT_BYTES: Final = 50 * 1024 * 1024
#: how often a driver looks at ``should_stop`` while no chunk arrives
_POLL_S: Final = 0.25

_log = logging.getLogger(__name__)

_lock = threading.Lock()
_started: dict[str, Any] = {}


def import_ray() -> Any:
    """The ray module, or a :class:`ConfigError` saying how to install it."""
    try:
        import ray
    except ImportError as error:
        raise ConfigError(NOT_INSTALLED) from error
    return ray


def start(address: str | None) -> Any:
    """Ray, initialised once per process: joined to ``address`` (else to ``RAY_ADDRESS`` when the environment sets
    it, as Ray's own tools do), or a cluster on this machine (the CPUs this process may use, no dashboard, quiet
    logs)."""
    ray = import_ray()
    with _lock:
        if ray.is_initialized():
            return ray
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        options: dict[str, Any] = {
            "namespace": NAMESPACE,
            "log_to_driver": False,
            "logging_level": "WARNING",
            "include_dashboard": False,
        }
        where = "ray_address" if address else "RAY_ADDRESS in the environment"
        address = address or os.environ.get("RAY_ADDRESS") or None
        if address:  # (with RAY_ADDRESS set, ray.init(num_cpus=...) would refuse: the cluster exists already)
            try:
                ray.init(address=address, **options)
            except (ConnectionError, RuntimeError, ValueError) as error:
                raise ConfigError(
                    f'executor = "ray": cannot join the Ray cluster at {address} ({where}): {error}'
                ) from None
        else:
            ray.init(num_cpus=usable_cpus(), object_store_memory=_OBJECT_STORE_BYTES, **options)
        _started["address"] = address
    return ray


_remotes: dict[tuple[str, str], Any] = {}


def _remote(function: Any, **options: Any) -> Any:
    """``ray.remote(**options)(function)``, made once per process (each is exported to the cluster once)."""
    key = (function.__qualname__, repr(sorted(options.items())))
    with _lock:
        if key not in _remotes:
            _remotes[key] = import_ray().remote(**options)(function)
        return _remotes[key]


def _cluster_cpus(ray: Any) -> int:
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


# -- the cluster-wide limits -------------------------------------------------------------------------------------


_GRANTS_KEPT = 10_000  # grant times the permits actor keeps for its stats


class _Permits:
    """One (endpoint, model)'s limits across the cluster: at most ``concurrency`` calls in flight and ``rpm`` started
    per minute (a sliding window, so no burst beyond it). An async Ray actor: a waiting call costs no thread.

    A permit is a lease: one not released within its ``lease_s`` (its task or node died, or the caller was cancelled
    while the grant was on its way) is taken back, so a lost release never shrinks the cluster's limit for good."""

    def __init__(self, concurrency: int, rpm: int | None, window_s: float = 60.0) -> None:
        self.concurrency, self.rpm, self.window_s = concurrency, rpm, window_s
        self.leases: dict[int, float] = {}  # permit -> when it expires
        self.next_id = self.peak = self.granted = self.expired = 0
        self.starts: list[float] = []  # the start times within the window (rpm only)
        self.recent: collections.deque[float] = collections.deque(maxlen=_GRANTS_KEPT)  # grant times, for stats
        self._changed: asyncio.Condition | None = None
        self.stopped: collections.OrderedDict[str, None] = collections.OrderedDict()  # runs whose driver stopped

    def configure(self, concurrency: int, rpm: int | None) -> None:
        """The limits of the newest client (several drivers on one cluster: the last one's settings hold)."""
        self.concurrency, self.rpm = concurrency, rpm

    def _condition(self) -> asyncio.Condition:
        if self._changed is None:  # made on the actor's event loop
            self._changed = asyncio.Condition()
        return self._changed

    async def acquire(self, lease_s: float, run: str | None = None) -> int:
        """A permit (a positive number), or 0 when ``run`` was stopped (its task then sends nothing more)."""
        if run is not None and run in self.stopped:
            return 0
        changed = self._condition()
        async with changed:
            while True:
                now = time.monotonic()
                for permit in [p for p, until in self.leases.items() if until <= now]:
                    del self.leases[permit]
                    self.expired += 1
                if len(self.leases) < self.concurrency:
                    break
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), min(60.0, max(0.01, min(self.leases.values()) - now)))
            self.next_id += 1
            permit = self.next_id
            self.leases[permit] = math.inf  # the slot is held while the rate is waited for; the lease starts after
            self.peak = max(self.peak, len(self.leases))
        try:
            while self.rpm is not None:
                now = time.monotonic()
                self.starts = [t for t in self.starts if t > now - self.window_s]
                if len(self.starts) < self.rpm:
                    self.starts.append(now)
                    break
                await asyncio.sleep(self.starts[0] + self.window_s - now)
        except BaseException:  # cancelled while waiting for the rate: the slot was never used
            await self.release(permit)
            raise
        if run is not None and run in self.stopped:  # stopped while this call waited
            await self.release(permit)
            return 0
        self.leases[permit] = time.monotonic() + lease_s
        self.granted += 1
        self.recent.append(time.monotonic())
        return permit

    async def release(self, permit: int) -> None:
        changed = self._condition()
        async with changed:
            if self.leases.pop(permit, None) is not None:
                changed.notify()

    # a run's stop flag: its driver sets it, its tasks poll it and return what they have (rather than be cancelled)

    def stop(self, run: str) -> None:
        self.stopped[run] = None
        while len(self.stopped) > _GRANTS_KEPT:  # a driver that died before forgetting its run
            self.stopped.popitem(last=False)

    def is_stopped(self, run: str) -> bool:
        return run in self.stopped

    def forget(self, run: str) -> None:
        self.stopped.pop(run, None)

    def stats(self) -> dict[str, Any]:
        return {
            "in_flight": len(self.leases),
            "peak": self.peak,
            "granted": self.granted,
            "expired": self.expired,
            "rpm": self.rpm,
            "window_s": self.window_s,
            "grant_times": list(self.recent),
        }


def permits_name(endpoint: str, model: str) -> str:
    # versioned: a detached actor of an older spade-lsp (without the stop flags) may still live on a shared cluster
    return f"llm-permits-v2:{endpoint}:{model}"


def permits_actor(endpoint: str, model: str, concurrency: int, rpm: int | None, *, window_s: float = 60.0) -> Any:
    """The named actor holding (endpoint, model)'s cluster-wide limits, made by the first driver that needs it
    (detached: it outlives that driver, so concurrent drivers share it)."""
    remote = _remote(_Permits, num_cpus=0, max_concurrency=10_000)
    actor = remote.options(
        name=permits_name(endpoint, model), namespace=NAMESPACE, get_if_exists=True, lifetime="detached"
    ).remote(concurrency, rpm, window_s)
    ray = import_ray()
    ray.get(actor.configure.remote(concurrency, rpm))
    return actor


class _RemotePermit:
    """``async with``: a local slot (so one task does not queue thousands of calls at the actor), then a permit from
    the cluster-wide actor, released without waiting for its answer. Shared by the task's concurrent calls: each
    call's permit is kept in its own context. The actor refuses permits to a stopped run: ``stopped`` is then
    called, which sets the call's stop event, so the LLM layer sends nothing (it looks at the event right after
    entering) and says so, as a local stop does. The stop costs the task no polling."""

    def __init__(
        self, actor: Any, concurrency: int, lease_s: float, run: str | None, stopped: Callable[[], None]
    ) -> None:
        self.actor, self.lease_s, self.run, self.stopped = actor, lease_s, run, stopped
        self.local = asyncio.Semaphore(concurrency)
        self.permit: contextvars.ContextVar[int] = contextvars.ContextVar("permit")

    async def __aenter__(self) -> None:
        await self.local.acquire()
        try:
            permit = await self.actor.acquire.remote(self.lease_s, self.run)
        except BaseException:
            self.local.release()
            raise
        self.permit.set(permit)
        if not permit:
            self.stopped()

    async def __aexit__(self, *exc: object) -> None:
        if permit := self.permit.get():
            self.actor.release.remote(permit)
        self.local.release()


class _PermitClient(LiteLLMClient):
    """A store-less client inside a Ray task: every call (and every retry) holds a cluster-wide permit."""

    actor: Any = None
    _permit: _RemotePermit | None = None
    #: What it was answered (cache key, text): the task has no store, so the driver caches these for it.
    answered: list[tuple[str, str]] | None = None
    #: The driver's cached answers (cache key -> text), read-only: the task's cache.
    snapshot: Mapping[str, str] | None = None
    #: the driver's run whose stop flag the permits actor keeps (None: a run that is not stopped this way)
    run: str | None = None
    _stop: threading.Event | None = None

    async def _acall(self, request: LLMRequest, stop: threading.Event) -> Completion:
        self._stop = stop  # one batch's event, shared by its calls: a refused permit sets it
        return await super()._acall(request, stop)

    def _stopped(self) -> None:
        if self._stop is not None:
            self._stop.set()

    def _cached_many(self, keys: Sequence[str]) -> dict[int, str]:
        if not self.snapshot:
            return {}
        return {index: self.snapshot[key] for index, key in enumerate(keys) if key in self.snapshot}

    def _remember_many(self, entries: Sequence[tuple[str, str]], capability: Any) -> None:
        if self.answered is None:
            self.answered = []
        self.answered.extend(entries)

    def _limits(self) -> tuple[asyncio.Semaphore, Any]:
        if self._permit is None:
            # one call lasts at most timeout_s + 5 s (the LLM layer's backstop): a permit held longer was lost
            self._permit = _RemotePermit(self.actor, self.concurrency, self.timeout_s + 15.0, self.run, self._stopped)
        return self._permit, None  # type: ignore[return-value]  # an async context manager, as the semaphore is


# -- LLM calls ---------------------------------------------------------------------------------------------------


def _permit_client(spec: ClientSpec, actor: Any, snapshot: Mapping[str, str] | None = None) -> _PermitClient:
    """A task's client made from the driver's ``spec``: its rate is the actor's, its cache the driver's snapshot."""
    client = spec.make(_PermitClient, rpm=None)  # the actor keeps the rate
    client.actor, client.snapshot = actor, snapshot
    client.usage = _SplitUsage()
    return client


class _SplitUsage(Usage):
    """A task's usage, with what its failed requests spent kept apart too (the driver counts those as failures)."""

    def __init__(self) -> None:
        super().__init__()
        self.failures = Usage()

    def add_failure(self, spent: Completion) -> None:
        super().add_failure(spent)
        self.failures.add_failure(spent)


def _complete_chunk(spec: ClientSpec, actor: Any, requests: list[LLMRequest], run: str) -> dict[str, Any]:
    """A Ray task: ``requests`` answered on this node. Errors travel as (class name, message, text): some
    :class:`LLMError` subclasses do not survive pickling. When the driver stops the run, the actor refuses the
    task's permits: it sends nothing more and returns what it was answered (what was in flight included: it was
    paid for)."""
    ray = import_ray()
    if ray.get(actor.is_stopped.remote(run)):  # started after the stop: nothing was sent
        stopped = ("LLMError", f"{spec.model}: not sent, the run was stopped", None)
        return {"results": [stopped] * len(requests), "failed_spend": Completion("", calls=0, cost=0.0), "learnt": None}
    client = _permit_client(spec, actor)
    client.run = run
    answers = client.complete_many(requests)
    results: list[Any] = []
    for answer in answers:
        if isinstance(answer, Completion):
            results.append(answer)
        else:
            results.append(error_parts(answer))
    capability = client._capability()
    learnt = capability.unsaved() if capability.learnt else None
    spent = client.usage.failures.copy() if isinstance(client.usage, _SplitUsage) else Usage()
    failed = Completion(  # what the failed requests spent, all of it (the local client counts the same per request)
        "",
        prompt_tokens=spent.prompt_tokens,
        completion_tokens=spent.completion_tokens,
        cost=spent.cost if spent.cost_known else None,
        retries=spent.retries,
        calls=spent.calls,
        reasks=spent.reasks,
        downgrades=spent.downgrades,
    )
    return {"results": results, "failed_spend": failed, "learnt": learnt}


class RayLLMClient(LiteLLMClient):
    """A :class:`LiteLLMClient` whose uncached requests run as Ray tasks across the cluster (same interface, same
    cache, same usage totals). Cache reads and writes stay in this process, the store's one writer."""

    address: str | None = None

    @classmethod
    def wrapping(cls, client: LiteLLMClient, address: str | None) -> RayLLMClient:
        other = cls.__new__(cls)
        other.__dict__.update(client.__dict__)
        other.address = address
        return other

    def complete_many(
        self,
        requests: Sequence[LLMRequest],
        *,
        on_result: Callable[[int, Completion | LLMError], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> list[Completion | LLMError]:
        results: list[Completion | LLMError | None] = [None] * len(requests)
        pending: list[int] = []

        def cached(index: int, answer: Completion | LLMError) -> None:
            results[index] = answer
            if on_result is not None:
                on_result(index, answer)

        # the cache, read as the local client reads it (an invalid cached structured answer is asked again)
        keys = [self._key(request) for request in requests]
        structured = any(request.response_schema is not None for request in requests)
        capability = self._capability() if structured else None
        found = self._cached_answers(requests, keys)
        for index in range(len(requests)):
            answer = found.get(index)
            if answer is None:
                pending.append(index)
                continue
            self.usage.add(answer)
            cached(index, answer)
        if not pending:
            return results  # type: ignore[return-value]
        ray = start(self.address)
        actor = permits_actor(self.endpoint, self.model, self.concurrency, self.rpm)
        mode = None
        if capability is not None and capability.settled:
            mode = (STRUCTURED_MODES[capability.mode], capability.reason)
        spec = ray.put(ClientSpec.of(self, mode))
        task = _remote(_complete_chunk, num_cpus=1, max_retries=0)
        size = max(1, min(_MAX_CHUNK, math.ceil(len(pending) / (4 * _cluster_cpus(ray)))))
        run = uuid.uuid4().hex  # the run's stop flag, kept by the permits actor
        chunks = {}
        for start_at in range(0, len(pending), size):
            chunk = pending[start_at : start_at + size]
            chunks[task.remote(spec, actor, [requests[i] for i in chunk], run)] = chunk
        waiting = list(chunks)
        unsaved: list[tuple[str, str]] = []
        nothing = Completion("", calls=0, cost=0.0)  # a failure that spent nothing (or whose spend is counted once)

        def answered(index: int, result: Completion | LLMError) -> None:
            results[index] = result
            if on_result is not None:
                on_result(index, result)

        # a stop sets the run's flag: running tasks send nothing more and return what they were answered (in-flight
        # calls included, as the local client waits for them), tasks not yet started return at once; a task that has
        # not returned after the longest a call can take is cancelled, its requests maybe sent
        stop_deadline: float | None = None
        try:
            while waiting:
                done, waiting = ray.wait(waiting, num_returns=1, timeout=_POLL_S)
                for ref in done:
                    chunk = chunks[ref]
                    try:
                        payload = ray.get(ref)
                    except Exception as error:  # the task failed as a whole (its node or worker died)
                        problem = _unwrapped(error)
                        payload = {
                            "results": [("LLMError", f"{self.model}: {problem}", None)] * len(chunk),
                            "failed_spend": nothing,  # what it spent before dying is not known here
                            "learnt": None,
                        }
                    if payload["learnt"] is not None and capability is not None:
                        mode_index, reason = payload["learnt"]
                        with capability.lock:
                            if mode_index > capability.mode or not capability.learnt:
                                capability.mode, capability.reason = mode_index, reason
                                capability.learnt = capability.settled = True
                    first_failure = True
                    for index, answer in zip(chunk, payload["results"], strict=True):
                        result: Completion | LLMError
                        if isinstance(answer, Completion):
                            result = answer
                            self.usage.add(answer)
                            unsaved.append((keys[index], answer.text))
                        else:
                            result = error_of(*answer)
                            self.usage.add_failure(payload["failed_spend"] if first_failure else nothing)
                            first_failure = False
                        answered(index, result)
                    if len(unsaved) >= _CACHE_BATCH or not waiting:
                        self._remember_many(unsaved, capability)
                        unsaved = []
                if not waiting:
                    break
                if stop_deadline is None and should_stop is not None and should_stop():
                    actor.stop.remote(run)
                    stop_deadline = time.monotonic() + self.timeout_s + 15.0  # a call's longest, as its lease
                if stop_deadline is not None and time.monotonic() >= stop_deadline:
                    for other in waiting:
                        ray.cancel(other)
                    for other in waiting:
                        for index in chunks[other]:
                            self.usage.add_failure(nothing)
                            answered(index, LLMError(f"{self.model}: stopped: it may have been sent"))
                    waiting = []
        except BaseException:
            for other in waiting:
                ray.cancel(other)
            raise
        finally:
            self._remember_many(unsaved, capability)
            actor.forget.remote(run)
        return results  # type: ignore[return-value]


def ray_client(endpoint: Endpoint, settings: Settings, *, store: Store | None) -> RayLLMClient:
    """``make_client`` under the Ray executor: the local client's settings, its requests run as Ray tasks. Ray is
    imported (and a missing extra reported) now; the cluster is joined at the first uncached request."""
    from spade_lsp._roles import make_client

    import_ray()
    local = make_client(endpoint, settings.merged({"executor": "local"}, source="the Ray executor"), store=store)
    return RayLLMClient.wrapping(local, settings.ray_address)


# -- validation --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _AskSpec:
    """How a validation task answers ``ask_llm``: the assistant's client, made on the task's node, or the reason
    there is none (every question is then a "needs a model" cell, as locally)."""

    client: ClientSpec | None
    error: str | None = None
    #: a Ray reference to the cached answers the tasks may need (cache key -> text), or None
    cached: Any = None


def _validate_chunk(
    module: ModuleSource,
    cases: list[SandboxCase],
    names: list[str] | None,
    limits: SandboxLimits,
    ask: _AskSpec | None,
    actor: Any,
) -> tuple[SandboxResult, list[tuple[str, str]]]:
    """A Ray task: the same :func:`run_assertions` as locally, on this node, in its own sandbox workers; with
    the ``ask_llm`` answers it got, for the driver to cache."""
    from spade_lsp.sandbox import run_assertions

    ask_llm: AskLLM | None = None
    client: _PermitClient | None = None
    if ask is not None and ask.client is not None:
        from spade_lsp._assertion_jobs import ask_llm_with

        snapshot = import_ray().get(ask.cached) if ask.cached is not None else None
        client = _permit_client(ask.client, actor, snapshot)
        ask_llm = ask_llm_with(client)
    elif ask is not None:
        reason = ask.error or "needs a model"

        def ask_llm(question: str, response: str, context: Mapping[str, Any]) -> bool:
            raise ModelNotConfiguredError(reason)

    result = run_assertions(module, cases, names=names, limits=limits, ask_llm=ask_llm)
    return result, (client.answered or []) if client is not None else []


def _may_ask(module: ModuleSource) -> bool:
    """Whether an assertion of ``module`` may call ``ask_llm``: not unless the source names it (the decorator's
    ``asks_llm`` is metadata a hand-written assertion may leave out, so the text is what is checked)."""
    return "ask_llm" in module.text


def _snapshot(client: LiteLLMClient) -> Any:
    """The store's cached answers of the assistant's model, put in Ray's object store for the validation tasks:
    the tasks have no store, and without it every run would ask (and pay) again. None when there are none, or
    when they are too many to ship (then the tasks ask again, and the driver caches the answers as ever)."""
    if client.store is None:
        return None
    count, size = llm_cache_size(client.store, client.model)
    if not count:
        return None
    if size > _SNAPSHOT_BYTES:
        _log.warning(
            "ask_llm under Ray: the %d cached answers of %s (%.0f MB) are too many to ship to the tasks, which ask "
            "again (at most %d MB are shipped)",
            count,
            client.model,
            size / 1e6,
            _SNAPSHOT_BYTES // (1024 * 1024),
        )
        return None
    return import_ray().put(model_responses(client.store, client.model))  # as the local client reads its cache


def _ask_spec(ask_llm: AskLLM | None, module: ModuleSource) -> tuple[_AskSpec | None, Any, LiteLLMClient | None]:
    """The assistant's client, from the driver's ``ask_llm`` (the sampler's, made at its first question), as a
    spec for the tasks with a snapshot of its cached answers, its permits actor, and the driver's client (which
    caches what the tasks were answered). Nothing when no assertion may ask (the assistant, perhaps the local
    model, is then never started)."""
    if ask_llm is None or not _may_ask(module):
        return None, None, None
    workspace, settings = getattr(ask_llm, "workspace", None), getattr(ask_llm, "settings", None)
    if workspace is None or settings is None:
        raise ConfigError(
            "under the Ray executor ask_llm is answered on the cluster's nodes, which needs the workspace's assistant "
            "model: this ask_llm callback cannot be sent there"
        )
    try:
        client = workspace.assistant_client(settings, what="ask_llm")
    except SpadeError as error:  # as locally: each question's cell says why (needs_model)
        return _AskSpec(None, str(error)), None, None
    if not isinstance(client, LiteLLMClient):
        raise ConfigError("under the Ray executor ask_llm needs a litellm assistant model")
    actor = permits_actor(client.endpoint, client.model, client.concurrency, client.rpm)
    return _AskSpec(ClientSpec.of(client), cached=_snapshot(client)), actor, client


def run_assertions_ray(
    module: Path | ModuleSource,
    cases: Sequence[SandboxCase],
    *,
    names: Sequence[str] | None,
    limits: SandboxLimits,
    ask_llm: AskLLM | None,
    address: str | None,
    min_cases: int | None = None,
) -> SandboxResult:
    """:func:`spade_lsp.sandbox.run_assertions` with the cases split into Ray tasks (one sandbox worker each, on
    whichever node runs it), the verdicts merged back in order. The module's text is sent, not its path."""
    from spade_lsp.sandbox import ModuleSource, run_assertions

    if isinstance(module, Path):
        module = ModuleSource(module.read_text(encoding="utf-8"), str(module))
    ray = start(address)
    tasks = min(2 * _cluster_cpus(ray), max(1, len(cases) // (min_cases or _MIN_CASES)))
    if tasks <= 1 or not cases:  # one chunk: no reason to ship it
        return run_assertions(module, cases, names=names, limits=limits, ask_llm=ask_llm)
    ask, actor, asker = _ask_spec(ask_llm, module)
    task = _remote(_validate_chunk, num_cpus=1, max_retries=0)
    size = math.ceil(len(cases) / tasks)
    module_ref = ray.put(module)
    one_worker = replace(limits, workers=1)
    started = time.monotonic()
    refs = [
        task.remote(module_ref, list(cases[i : i + size]), list(names) if names else None, one_worker, ask, actor)
        for i in range(0, len(cases), size)
    ]
    try:
        done: list[tuple[SandboxResult, list[tuple[str, str]]]] = ray.get(refs)
    except BaseException as error:
        for ref in refs:
            ray.cancel(ref)
        raise _unwrapped(error) from None
    if asker is not None:  # the driver is the store's one writer: the tasks' ask_llm answers are cached here
        asker._remember_many([entry for _, answered in done for entry in answered], None)
    return _merged([result for result, _ in done], size, time.monotonic() - started)


def _unwrapped(error: BaseException) -> BaseException:
    """What a Ray task raised (a SpadeError such as SandboxUnavailableError reads as it does locally), or the Ray
    failure as one line."""
    from spade_lsp.errors import SandboxError

    ray = import_ray()
    if isinstance(error, ray.exceptions.RayTaskError):
        cause = getattr(error, "cause", None)
        if isinstance(cause, SpadeError):
            return cause
        return SandboxError(f"a Ray task failed: {type(cause).__name__}: {cause}")
    if isinstance(error, ray.exceptions.RayError):
        return SandboxError(f"a Ray task failed: {str(error).splitlines()[0] if str(error) else type(error).__name__}")
    return error


def _merged(parts: Sequence[SandboxResult], size: int, wall_s: float) -> SandboxResult:
    """One result from the chunks' (chunk k holds cases k*size ...), as one run over every case would give."""
    from spade_lsp.sandbox import SandboxResult, SandboxTiming

    first = parts[0]
    errors = [replace(e, case=e.case + k * size) for k, part in enumerate(parts) for e in part.errors]
    module_error = next((p.module_error for p in parts if p.module_error is not None), None)
    timing = SandboxTiming(
        wall_s=wall_s,
        startup_s=max(p.timing.startup_s for p in parts),
        cells_run=sum(p.timing.cells_run for p in parts),
        worker_starts=sum(p.timing.worker_starts for p in parts),
        llm_calls=sum(p.timing.llm_calls for p in parts),
        llm_cache_hits=sum(p.timing.llm_cache_hits for p in parts),
    )
    seconds = [sum(p.seconds[i] for p in parts if i < len(p.seconds)) for i in range(len(first.seconds))]
    return SandboxResult(
        assertions=first.assertions,
        passed=[row for part in parts for row in part.passed],
        errors=errors,
        module_error=module_error,
        problems=first.problems,
        seconds=seconds,
        timing=timing,
        confinement=first.confinement,
    )


def stats(endpoint: str, model: str) -> Mapping[str, Any]:
    """The permits actor's counters (tests and benchmarks read the peak in flight)."""
    ray = import_ray()
    actor = ray.get_actor(permits_name(endpoint, model), namespace=NAMESPACE)
    return dict(ray.get(actor.stats.remote()))
