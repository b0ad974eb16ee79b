"""The LLM layer: every LLM call in spade-lsp goes through this module.

litellm is imported lazily (it takes seconds and must never sit on the language server's start-up path),
with its cost map read locally so the import fetches nothing. Every call has a timeout; rate limits, server
errors and timeouts are retried with exponential backoff and jitter (honouring ``Retry-After``); a client
caps its concurrent requests and, optionally, its requests per minute. Responses are cached in the store,
keyed by model, messages, parameters and sample index, so the j-th sample of an input is reproducible,
different samples stay independent, and re-runs cost nothing. :class:`Usage` accounts calls, tokens and cost.

Requests run on one event loop in a background thread shared by every client of the process (litellm's
async HTTP clients are bound to the loop that made them), so synchronous callers (:meth:`complete`) and
batches (:meth:`complete_many`) share the same limits. The store is only touched from the caller's thread.

:class:`LLMClient` is the seam: tests and callers may pass any object with its ``complete`` method.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import hashlib
import json
import os
import random
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Protocol, TypeVar

from spade_lsp._store import Store
from spade_lsp.config import Settings
from spade_lsp.errors import LLMError, ModelNotConfiguredError

__all__ = [
    "HOW_TO_CONFIGURE",
    "Completion",
    "LLMClient",
    "LLMRequest",
    "LiteLLMClient",
    "Usage",
    "cache_key",
    "client_from_settings",
    "parse_json_answer",
]

Message = Mapping[str, str]
T = TypeVar("T")

HOW_TO_CONFIGURE = (
    "no model is configured: set `model` under [tool.spade] in pyproject.toml or spade.toml "
    '(any litellm model name, e.g. model = "openai/gpt-4o-mini"), pass --model, or set spade.model in the '
    "editor; for a local OpenAI-compatible server also set api_base"
)

_RETRYABLE: Final = frozenset(
    {
        "RateLimitError",
        "InternalServerError",
        "ServiceUnavailableError",
        "BadGatewayError",
        "APIConnectionError",
        "Timeout",
        "TimeoutError",
    }
)
_MAX_RETRY_AFTER_S: Final = 120.0
_CACHE_BATCH: Final = 64


@dataclass(frozen=True, slots=True)
class Completion:
    """One answer: its text, the tokens and dollars it cost (0 when cached; cost None when unknown)."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    cost: float | None = None
    retries: int = 0


@dataclass(frozen=True, slots=True)
class LLMRequest:
    """One request of a batch (:meth:`LiteLLMClient.complete_many`)."""

    messages: Sequence[Message]
    response_schema: Mapping[str, Any] | None = None
    temperature: float = 0.0
    sample_index: int = 0


@dataclass
class Usage:
    """Running totals for one client (or one run: see :meth:`LiteLLMClient.usage_since`)."""

    calls: int = 0
    cached: int = 0
    failed: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    cost_known: bool = True
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, completion: Completion) -> None:
        with self._lock:
            self.retries += completion.retries
            if completion.cached:
                self.cached += 1
                return
            self.calls += 1
            self.prompt_tokens += completion.prompt_tokens
            self.completion_tokens += completion.completion_tokens
            if completion.cost is None:
                self.cost_known = False
            else:
                self.cost += completion.cost

    def add_failure(self, retries: int) -> None:
        with self._lock:
            self.failed += 1
            self.retries += retries

    def copy(self) -> Usage:
        with self._lock:
            return Usage(
                self.calls,
                self.cached,
                self.failed,
                self.retries,
                self.prompt_tokens,
                self.completion_tokens,
                self.cost,
                self.cost_known,
            )

    def minus(self, earlier: Usage) -> Usage:
        """What was spent since ``earlier`` (a :meth:`copy` taken before)."""
        now = self.copy()
        return Usage(
            now.calls - earlier.calls,
            now.cached - earlier.cached,
            now.failed - earlier.failed,
            now.retries - earlier.retries,
            now.prompt_tokens - earlier.prompt_tokens,
            now.completion_tokens - earlier.completion_tokens,
            now.cost - earlier.cost,
            now.cost_known,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "cached": self.cached,
            "failed": self.failed,
            "retries": self.retries,
            "tokens": {"prompt": self.prompt_tokens, "completion": self.completion_tokens},
            "cost": round(self.cost, 6) if self.cost_known else None,
        }


class LLMClient(Protocol):
    model: str

    def complete(
        self,
        messages: Sequence[Message],
        *,
        response_schema: Mapping[str, Any] | None = None,
        temperature: float = 0.0,
        sample_index: int = 0,
    ) -> Completion:
        """One chat completion; with ``response_schema`` the text is JSON meeting that schema."""
        ...


def _import_litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    return litellm


def cache_key(model: str, messages: Sequence[Message], parameters: Mapping[str, Any], sample_index: int) -> str:
    payload = json.dumps(
        {
            "model": model,
            "messages": list(map(dict, messages)),
            "parameters": parameters,
            "sample": sample_index,
        },
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class _LoopThread:
    """One event loop in a daemon thread, shared by every client of the process."""

    _instance: _LoopThread | None = None
    _guard = threading.Lock()

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self.loop)
            self.loop.call_soon(ready.set)
            self.loop.run_forever()

        self.thread = threading.Thread(target=run, name="spade-llm", daemon=True)
        self.thread.start()
        ready.wait()

    @classmethod
    def get(cls) -> _LoopThread:
        with cls._guard:
            if cls._instance is None or not cls._instance.thread.is_alive():
                cls._instance = cls()
            return cls._instance

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        if threading.current_thread() is self.thread:
            coroutine.close()
            raise RuntimeError("a blocking LLM call was made from the LLM layer's own event loop")
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)


class _Failure(Exception):
    """An LLM call that failed for good, with the retries spent on it."""

    def __init__(self, error: LLMError, retries: int) -> None:
        super().__init__(str(error))
        self.error = error
        self.retries = retries


class _Limits:
    """A concurrency cap and an optional requests-per-minute limit, made on the LLM loop at first use and
    shared by the clients :meth:`LiteLLMClient.with_model` derives."""

    def __init__(self, concurrency: int, rpm: int | None) -> None:
        self.concurrency = concurrency
        self.rpm = rpm
        self._semaphore: asyncio.Semaphore | None = None
        self._limiter: Any = None  # aiolimiter.AsyncLimiter

    def get(self) -> tuple[asyncio.Semaphore, Any]:
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.concurrency)
            if self.rpm is not None:
                from aiolimiter import AsyncLimiter

                self._limiter = AsyncLimiter(self.rpm, 60.0)
        return self._semaphore, self._limiter


class LiteLLMClient:
    """litellm behind :class:`LLMClient`: timeouts, retries, concurrency and rate limits, the store's cache."""

    def __init__(
        self,
        model: str,
        *,
        store: Store | None = None,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        backoff_max_s: float = 30.0,
        concurrency: int = 8,
        rpm: int | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if rpm is not None and rpm < 1:
            raise ValueError("rpm must be at least 1 (or None for no limit)")
        self.model = model
        self.store = store
        self.api_base = api_base
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.backoff_max_s = backoff_max_s
        self.concurrency = concurrency
        self.rpm = rpm
        self.usage = Usage()
        self._shared = _Limits(concurrency, rpm)
        self._random = random.Random()

    def with_model(self, model: str) -> LiteLLMClient:
        """A client for another model on the same endpoint that shares this one's concurrency and rate
        limits, usage totals and cache (a judge pipeline may give each unit its own model)."""
        if model == self.model:
            return self
        other = copy.copy(self)
        other.model = model
        return other

    # Totals kept for callers that read them directly.
    @property
    def calls(self) -> int:
        return self.usage.calls

    @property
    def prompt_tokens(self) -> int:
        return self.usage.prompt_tokens

    @property
    def completion_tokens(self) -> int:
        return self.usage.completion_tokens

    def complete(
        self,
        messages: Sequence[Message],
        *,
        response_schema: Mapping[str, Any] | None = None,
        temperature: float = 0.0,
        sample_index: int = 0,
    ) -> Completion:
        [answer] = self.complete_many([LLMRequest(messages, response_schema, temperature, sample_index)])
        if isinstance(answer, LLMError):
            raise answer
        return answer

    def complete_many(
        self,
        requests: Sequence[LLMRequest],
        *,
        on_result: Callable[[int, Completion | LLMError], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> list[Completion | LLMError]:
        """Answers for ``requests`` in order, concurrently under the client's limits; a request that fails for
        good gives its :class:`LLMError` in its place. ``on_result(index, answer)`` runs in the caller's
        thread as answers arrive (cached ones first); when ``should_stop()`` turns true, requests not yet
        sent are abandoned and answered with an :class:`LLMError` saying so."""
        results: list[Completion | LLMError | None] = [None] * len(requests)
        keys = [self._key(request) for request in requests]
        for index, text in self._cached_many(keys).items():
            results[index] = Completion(text=text, cached=True)
            self.usage.add(results[index])  # type: ignore[arg-type]
            if on_result is not None:
                on_result(index, results[index])  # type: ignore[arg-type]
        pending = {i for i, result in enumerate(results) if result is None}
        if not pending:
            return results  # type: ignore[return-value]
        runner = _LoopThread.get()
        stop = threading.Event()
        futures = {runner.submit(self._acall(requests[i], stop)): i for i in sorted(pending)}
        unsaved: list[tuple[str, str]] = []
        try:
            for future in concurrent.futures.as_completed(futures):
                index = futures[future]
                answer: Completion | LLMError
                try:
                    answer = future.result()
                except _Failure as failure:
                    self.usage.add_failure(failure.retries)
                    answer = failure.error
                else:
                    self.usage.add(answer)
                    unsaved.append((keys[index], answer.text))
                results[index] = answer
                if len(unsaved) >= _CACHE_BATCH:
                    self._remember_many(unsaved)
                    unsaved = []
                if on_result is not None:
                    on_result(index, answer)
                if should_stop is not None and not stop.is_set() and should_stop():
                    stop.set()
        except BaseException:
            stop.set()
            for future in futures:
                future.cancel()
            raise
        finally:
            self._remember_many(unsaved)
        return results  # type: ignore[return-value]

    # -- the network ---------------------------------------------------------------------------------------

    def _parameters(self, request: LLMRequest) -> dict[str, Any]:
        parameters: dict[str, Any] = {"temperature": request.temperature}
        if request.response_schema is not None:
            parameters["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": dict(request.response_schema), "strict": True},
            }
        return parameters

    def _key(self, request: LLMRequest) -> str:
        return cache_key(self.model, request.messages, self._parameters(request), request.sample_index)

    def _limits(self) -> tuple[asyncio.Semaphore, Any]:
        return self._shared.get()

    async def _acall(self, request: LLMRequest, stop: threading.Event) -> Completion:
        litellm = _import_litellm()
        semaphore, limiter = self._limits()
        parameters = self._parameters(request)
        retries = 0
        while True:
            async with semaphore:
                if stop.is_set():
                    raise _Failure(LLMError(f"{self.model}: not sent, the run was stopped"), retries)
                if limiter is not None:
                    await limiter.acquire()
                try:
                    response = await asyncio.wait_for(
                        litellm.acompletion(
                            model=self.model,
                            messages=[dict(m) for m in request.messages],
                            timeout=self.timeout_s,
                            api_base=self.api_base,
                            api_key=self.api_key,
                            num_retries=0,
                            **parameters,
                        ),
                        self.timeout_s + 5.0,  # litellm honours ``timeout``; this is the backstop
                    )
                except Exception as error:  # litellm maps every provider error onto its own classes
                    failure = error
                else:
                    return self._completion(response, retries)
            if type(failure).__name__ not in _RETRYABLE or retries >= self.max_retries or stop.is_set():
                raise _Failure(_llm_error(self.model, failure, retries), retries) from failure
            await asyncio.sleep(self._delay(failure, retries))
            retries += 1

    def _delay(self, error: Exception, retries: int) -> float:
        """Retry-After when the server sent one, else exponential backoff with full jitter."""
        retry_after = _retry_after(error)
        if retry_after is not None:
            return min(retry_after, _MAX_RETRY_AFTER_S)
        ceiling = min(self.backoff_max_s, self.backoff_s * 2**retries)
        return float(self._random.uniform(ceiling / 2, ceiling))

    def _completion(self, response: Any, retries: int) -> Completion:
        text = response.choices[0].message.content
        if not isinstance(text, str):
            raise _Failure(LLMError(f"{self.model} returned no text content"), retries)
        usage = getattr(response, "usage", None)
        hidden = getattr(response, "_hidden_params", None) or {}
        cost = hidden.get("response_cost")
        return Completion(
            text=text,
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            cost=float(cost) if isinstance(cost, int | float) else None,
            retries=retries,
        )

    # -- the cache -----------------------------------------------------------------------------------------

    def _cached_many(self, keys: Sequence[str]) -> dict[int, str]:
        if self.store is None or not keys:
            return {}
        positions: dict[str, list[int]] = {}
        for index, key in enumerate(keys):
            positions.setdefault(key, []).append(index)
        found: dict[int, str] = {}
        unique = list(positions)
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self.store.db.execute(f"SELECT key, response FROM llm_cache WHERE key IN ({marks})", chunk)
            for key, response in rows.fetchall():
                for index in positions[key]:
                    found[index] = str(json.loads(response)["text"])
        return found

    def _remember_many(self, entries: Sequence[tuple[str, str]]) -> None:
        if self.store is None or not entries:
            return
        now = datetime.now(UTC).isoformat()
        with self.store.write() as db:
            db.conn.executemany(
                "INSERT OR REPLACE INTO llm_cache (key, model, response, created_at) VALUES (?, ?, ?, ?)",
                [(key, self.model, json.dumps({"text": text}), now) for key, text in entries],
            )


def _retry_after(error: Exception) -> float | None:
    candidates = (
        getattr(error, "litellm_response_headers", None),
        getattr(getattr(error, "response", None), "headers", None),
        getattr(error, "headers", None),
    )
    for headers in candidates:
        if not headers:
            continue
        value = headers.get("retry-after") or headers.get("Retry-After")
        try:
            return max(0.0, float(value)) if value is not None else None
        except (TypeError, ValueError):
            return None
    return None


def _llm_error(model: str, error: Exception, retries: int) -> LLMError:
    message = str(error).splitlines()[0] if str(error) else type(error).__name__
    after = f" (after {retries} retries)" if retries else ""
    return LLMError(f"{model}: {type(error).__name__}: {message}{after}")


def client_from_settings(settings: Settings, *, store: Store | None = None) -> LiteLLMClient:
    """The configured client, or :class:`ModelNotConfiguredError` saying how to configure one."""
    if not settings.model:
        raise ModelNotConfiguredError(HOW_TO_CONFIGURE)
    api_key = os.environ.get(settings.api_key_env) if settings.api_key_env else None
    if api_key is None and settings.api_base:
        api_key = "no-key"  # local OpenAI-compatible servers need none, but litellm insists on one
    return LiteLLMClient(
        settings.model,
        store=store,
        api_base=settings.api_base,
        api_key=api_key,
        timeout_s=settings.llm_timeout_s,
        max_retries=settings.llm_max_retries,
        concurrency=settings.llm_concurrency,
        rpm=settings.llm_rpm,
    )


def parse_json_answer(completion: Completion, *, what: str, schema: Mapping[str, Any] | None = None) -> Any:
    """The JSON a structured-output call returned, or :class:`LLMError` naming what was expected; with
    ``schema``, the answer must also validate against it (models do not always honour structured output)."""
    text = completion.text.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        answer = json.loads(text)
    except json.JSONDecodeError as error:
        raise LLMError(f"the model's answer for {what} is not valid JSON: {error}") from error
    if schema is not None:
        import jsonschema

        try:
            jsonschema.validate(answer, dict(schema))
        except jsonschema.ValidationError as error:
            where = "/".join(str(part) for part in error.absolute_path) or "the answer"
            raise LLMError(
                f"the model's answer for {what} does not match its schema at {where}: {error.message}"
            ) from error
    return answer
