"""The LLM layer: every LLM call in spade-lsp goes through this module.

litellm is imported lazily (it takes seconds and must never sit on the language server's start-up path),
with its cost map read locally so the import fetches nothing. Every call has a timeout; rate limits, server
errors and timeouts are retried with exponential backoff and jitter, at most ``max_retries`` times, honouring
``Retry-After`` (a server asking for longer than ``max_retry_after_s`` fails the call at once); a client caps
its concurrent requests and, optionally, its requests per minute. Responses are cached in the store, keyed by
endpoint (the server asked), model, messages, parameters and sample index, so the j-th sample of an input is
reproducible, different samples stay independent, and re-runs cost nothing. :class:`Usage` accounts calls,
tokens and cost.

A request with a ``response_schema`` gets an answer that is JSON meeting that schema, or an :class:`LLMError`
saying what was wrong. Servers differ in what they take for structured output, so the client negotiates a
*mode* per endpoint (its api_base, or a stable name such as the local model's) and model, best first:
``json_schema`` (OpenAI's strict ``response_format``), ``json_object`` (``response_format`` type ``json_object``
carrying the schema, which llama.cpp turns into a grammar, and the schema stated in the instructions) and
``prompt`` (no ``response_format``: the instructions alone). A server that rejects a mode (an error naming the
format; while the mode is still being probed, also a bare 400, 415 or 422) is asked again at once in the next
mode, without spending the retry budget; a first answer that holds no JSON at all makes the probing request
try the lower modes too (servers that ignore ``response_format``). The mode that answered is remembered in memory and in
the store (``llm_capabilities``), so a new process goes straight to it. Answers are read tolerantly (code
fences, prose around the JSON), validated against the schema, and an invalid one is re-asked a bounded number
of times with what was wrong; only a valid answer is cached, as normalised JSON text, under the same key
whatever the mode.

Requests run on one event loop in a background thread shared by every client of the process (litellm's
async HTTP clients are bound to the loop that made them), so synchronous callers (:meth:`complete`) and
batches (:meth:`complete_many`) share the same limits. The store is only touched from the caller's thread.

:class:`LLMClient` is the seam: tests and callers may pass any object with its ``complete`` method.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import contextvars
import copy
import email.utils
import functools
import gc
import hashlib
import importlib
import itertools
import json
import logging
import math
import os
import queue
import random
import re
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeVar

from spade_lsp.errors import LLMError
from spade_lsp.store import StoredCapability, cached_responses, load_capability, save_responses

if TYPE_CHECKING:
    from spade_lsp._llm_helper import Helper, Helpers
    from spade_lsp.store import Store

__all__ = [
    "STRUCTURED_MODES",
    "ClientSpec",
    "Completion",
    "EmptyAnswerError",
    "InvalidAnswerError",
    "LLMClient",
    "LLMRequest",
    "LiteLLMClient",
    "StructuredMode",
    "Usage",
    "ask_json",
    "cache_key",
    "error_of",
    "error_parts",
    "model_name",
    "parse_json_answer",
]

log = logging.getLogger(__name__)
Message = Mapping[str, str]
T = TypeVar("T")
#: batch numbers, by which a helper is told to stop sending one
_BATCHES: Final = itertools.count(1)
StructuredMode = Literal["json_schema", "json_object", "prompt"]
#: How a structured request can be sent, best first (see the module's docstring).
STRUCTURED_MODES: Final[tuple[StructuredMode, ...]] = ("json_schema", "json_object", "prompt")
_PROMPT: Final = len(STRUCTURED_MODES) - 1


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
#: The longest ``Retry-After`` a client waits by default; a server asking for longer fails the call at once
#: (retrying sooner than it asked would only be refused again).
MAX_RETRY_AFTER_S: Final = 120.0
_CACHE_BATCH: Final = 64
_CACHE_EVERY_S: Final = 0.25
#: How long a stopped batch lets the calls it already sent finish before it cancels them (a stop stays quick
#: against a slow model), and then how long it waits for the cancelled ones to unwind.
_STOP_GRACE_S: Final = 1.0
_UNWIND_S: Final = 5.0
#: Failures that say nothing about the response format, whatever their status code.
_NOT_FORMAT: Final = frozenset(
    {
        "APIConnectionError",
        "AuthenticationError",
        "ContentPolicyViolationError",
        "ContextWindowExceededError",
        "NotFoundError",
        "PermissionDeniedError",
        "RateLimitError",
        "Timeout",
        "TimeoutError",
    }
)
_FORMAT_WORDS: Final = re.compile(r"response_format|json_schema|json_object", re.IGNORECASE)
_FENCE: Final = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)
_OPENER: Final = re.compile(r"[\[{]")
_MAX_JSON_STARTS: Final = 200


class InvalidAnswerError(LLMError):
    """A structured answer still invalid after its re-asks. ``text`` is the model's last answer, for a caller
    that can still use part of it or tell why (a refusal, say)."""

    def __init__(self, message: str, text: str) -> None:
        super().__init__(message)
        self.text = text


class EmptyAnswerError(LLMError):
    """The server answered (HTTP 200) with no text at all: no output to check, so a failed call, not a pass."""


@dataclass(frozen=True, slots=True)
class Completion:
    """One answer: its text, the tokens and dollars it cost (0 when cached; cost None when unknown), and the
    calls it took (a structured answer may take re-asks and step-downs, each a call). ``mode`` is the
    structured mode that answered (None for a plain request or a cached answer)."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    cost: float | None = None
    retries: int = 0
    calls: int = 1
    reasks: int = 0
    downgrades: int = 0
    mode: StructuredMode | None = None


@dataclass(frozen=True, slots=True)
class LLMRequest:
    """One request of a batch (:meth:`LiteLLMClient.complete_many`). ``reasks`` bounds the re-asks of an invalid
    structured answer (None: the client's ``max_reasks``); a caller with its own re-ask loop passes 0 and reads
    :attr:`InvalidAnswerError.text` itself. Not part of the cache key: only valid answers are cached."""

    messages: Sequence[Message]
    response_schema: Mapping[str, Any] | None = None
    temperature: float = 0.0
    sample_index: int = 0
    reasks: int | None = None

    def __post_init__(self) -> None:
        if self.reasks is not None and self.reasks < 0:
            raise ValueError("reasks must be at least 0 (or None for the client's default)")


@dataclass
class Usage:
    """Running totals for one client (or one run: see :meth:`LiteLLMClient.usage_since`). ``calls`` counts the
    requests a server answered (re-asks and answers given up on included); ``reasks`` the answers asked again
    for being invalid; ``downgrades`` the requests sent again in a lower structured mode."""

    calls: int = 0
    cached: int = 0
    failed: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    cost_known: bool = True
    reasks: int = 0
    downgrades: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, completion: Completion) -> None:
        with self._lock:
            if completion.cached:
                self.retries += completion.retries
                self.cached += 1
                return
            self._spend(completion)

    def add_failure(self, spent: Completion) -> None:
        """A request that failed for good, with what it spent on the way (``spent.text`` is unused)."""
        with self._lock:
            self.failed += 1
            self._spend(spent)

    def _spend(self, completion: Completion) -> None:
        self.calls += completion.calls
        self.retries += completion.retries
        self.reasks += completion.reasks
        self.downgrades += completion.downgrades
        self.prompt_tokens += completion.prompt_tokens
        self.completion_tokens += completion.completion_tokens
        if completion.cost is None:
            self.cost_known = False
        else:
            self.cost += completion.cost

    def copy(self) -> Usage:
        with self._lock:
            return Usage(
                calls=self.calls,
                cached=self.cached,
                failed=self.failed,
                retries=self.retries,
                prompt_tokens=self.prompt_tokens,
                completion_tokens=self.completion_tokens,
                cost=self.cost,
                cost_known=self.cost_known,
                reasks=self.reasks,
                downgrades=self.downgrades,
            )

    def minus(self, earlier: Usage) -> Usage:
        """What was spent since ``earlier`` (a :meth:`copy` taken before)."""
        now = self.copy()
        return Usage(
            calls=now.calls - earlier.calls,
            cached=now.cached - earlier.cached,
            failed=now.failed - earlier.failed,
            retries=now.retries - earlier.retries,
            prompt_tokens=now.prompt_tokens - earlier.prompt_tokens,
            completion_tokens=now.completion_tokens - earlier.completion_tokens,
            cost=now.cost - earlier.cost,
            cost_known=now.cost_known,
            reasks=now.reasks - earlier.reasks,
            downgrades=now.downgrades - earlier.downgrades,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "cached": self.cached,
            "failed": self.failed,
            "retries": self.retries,
            "reasks": self.reasks,
            "downgrades": self.downgrades,
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


async def _litellm_imported() -> None:
    """litellm imported, in a thread when it is not yet: an import takes seconds, and the loop has other senders
    to run meanwhile (the helpers')."""
    if "litellm" not in sys.modules:
        await asyncio.get_running_loop().run_in_executor(None, _import_litellm)


_litellm_import_lock = threading.Lock()


@functools.cache
def _import_litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    # litellm's default mode loads a .env file into the environment at import (the current directory's under a
    # debugger or `python -c`, else the first above its install directory): it would choose keys, endpoints and
    # proxies; the environment is the user's
    os.environ.setdefault("LITELLM_MODE", "PRODUCTION")
    with _litellm_import_lock, _collection_paused():
        _default_encoding_loaded_on_first_use()
        with _models_built_on_first_use():
            import litellm

            # the OpenAI SDK's resources, which litellm's first call of an OpenAI-compatible model imports (about
            # 0.6 s here): imported with litellm, so no call (and no event loop) waits on them
            importlib.import_module("openai.resources")
        # What the import built lives as long as the process, so no collection need ever walk it: frozen before
        # collection resumes, since the first allocation after would otherwise start a collection of the
        # youngest generation, which then holds all of it (half a million objects, 0.2-0.3 s here, on the
        # critical path of a cold start), only to find 2,335 objects of garbage (1.8 MB, kept, in a process of
        # a few hundred MB).
        gc.freeze()
    litellm.telemetry = False
    litellm.suppress_debug_info = True
    return litellm


@contextlib.contextmanager
def _unlogged() -> Iterator[None]:
    """litellm's calls inside the block are not logged by litellm: its switch for the calls it makes itself is set,
    which skips the success and failure logging it does after every call (a standard logging payload built, a
    logging worker fed) for callbacks spade never registers. Measured here at 64 in flight (medians of three):
    litellm alone 7.7 -> 6.5 ms of CPU per call; ``spade sample``, 4,000 calls, 13.4 -> 12.9 ms and 31.4 -> 30.3 s.
    Without such a switch in this litellm, its calls are logged as by default."""
    switch = _logging_switch()
    if switch is None:
        yield
        return
    token = switch.set(True)
    try:
        yield
    finally:
        switch.reset(token)


@functools.cache
def _logging_switch() -> contextvars.ContextVar[bool] | None:
    _import_litellm()
    try:
        switch = importlib.import_module("litellm._internal_context").is_internal_call
    except (ImportError, AttributeError):
        return None
    return switch if isinstance(switch, contextvars.ContextVar) else None


@contextlib.contextmanager
def _models_built_on_first_use() -> Iterator[None]:
    """pydantic models defined inside the block build their validators when first used, not when defined. litellm
    and the OpenAI SDK define a few thousand models at import, and a call uses a few dozen: building them all was
    about an eighth of the import here (1.90 -> 1.68 s, medians of five). The switch is pydantic's own
    (``defer_build``), read from the base model's configuration by every model defined meanwhile, and restored
    after; a model behaves the same either way. Callers hold :data:`_litellm_import_lock`."""
    import pydantic

    config = pydantic.BaseModel.model_config
    before = config.get("defer_build")
    config["defer_build"] = True
    try:
        yield
    finally:
        if before is None:
            config.pop("defer_build", None)
        else:
            config["defer_build"] = before


def _default_encoding_loaded_on_first_use() -> None:
    """tiktoken's ``cl100k_base`` encoding, which litellm's import loads for token counting that a completion from
    a server reporting its usage never does, is loaded when first used instead: reading its hundred thousand
    ranks was about 5% of the import here (0.21 s of 4.0 s on a slow day). The encoding given in its place is a
    :class:`tiktoken.Encoding`, built by tiktoken's own constructor on its first attribute read (from the file
    litellm ships, whose directory litellm's import names). Callers hold :data:`_litellm_import_lock`."""
    try:
        import tiktoken
        from tiktoken import registry
    except ImportError:  # litellm without tiktoken: nothing to defer
        return
    if "cl100k_base" in registry.ENCODINGS:
        return
    building = threading.Lock()

    class OnFirstUse(tiktoken.Encoding):
        def __init__(self) -> None:  # tiktoken's own __init__ runs on first use
            pass

        def __getattr__(self, name: str) -> Any:  # only for what this instance does not have yet
            with building:
                if "_core_bpe" not in self.__dict__:
                    from tiktoken_ext.openai_public import cl100k_base

                    tiktoken.Encoding.__init__(self, **cl100k_base())
            return object.__getattribute__(self, name)

    registry.ENCODINGS["cl100k_base"] = OnFirstUse()


@contextlib.contextmanager
def _collection_paused() -> Iterator[None]:
    """No cyclic garbage collection inside the block. An import of litellm allocates a million long-lived objects,
    and the collections that allocation triggers walk the growing heap again and again: a quarter of its import
    time here (2.6 -> 1.9 s). Callers hold :data:`_litellm_import_lock`, so two threads cannot interleave their
    pause and restore."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def cache_key(
    model: str,
    messages: Sequence[Message],
    parameters: Mapping[str, Any],
    sample_index: int,
    *,
    endpoint: str = "",
) -> str:
    """The cache key of one answer: everything that changes it. ``endpoint`` is the server asked (the client's
    api_base, or the stable name of a server whose port changes, see :attr:`LiteLLMClient.endpoint`; "" for the
    provider's own): the same model name on another server is another model. Keys written before the endpoint
    was part of them hash a payload without it, so those rows match nothing any more (they are only asked
    again, never wrongly reused)."""
    payload = json.dumps(
        {
            "endpoint": endpoint,
            "model": model,
            "messages": list(map(dict, messages)),
            "parameters": parameters,
            "sample": sample_index,
        },
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


#: Providers whose ``litellm.completion(acompletion=True)`` only builds the request and returns a coroutine:
#: litellm hands that step to the loop's default executor, and for these it runs inline instead.
_INLINE_PROVIDERS: Final = frozenset({"openai", "hosted_vllm", "anthropic"})
_inline_dispatch: contextvars.ContextVar[bool] = contextvars.ContextVar("spade_inline_dispatch", default=False)


class _Prepared(concurrent.futures.Future[Any]):
    """An inline step's result. When the awaiting task is cancelled before it takes the result (a stopped run),
    asyncio cancels this future; a prepared request coroutine is then closed, never left unawaited."""

    def cancel(self) -> bool:
        if self.done() and self.exception() is None and asyncio.iscoroutine(prepared := self.result()):
            prepared.close()
        return super().cancel()


class _DispatchExecutor(concurrent.futures.ThreadPoolExecutor):
    """The LLM loop's default executor. ``litellm.acompletion`` runs its synchronous ``completion`` step through
    ``run_in_executor``; for a provider that only prepares a coroutine there, a thread hop costs more than the
    work (a handoff each way, and threads contending for the GIL: about a third of the CPU per call measured
    at 64 in flight), so while ``_inline_dispatch`` is set the step runs in the loop's thread. Anything else
    (a provider whose step blocks, a sync callback) still gets a thread."""

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[T]:
        if not _inline_dispatch.get():
            return super().submit(fn, *args, **kwargs)
        future: concurrent.futures.Future[T] = _Prepared()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as error:  # the caller awaits it and sees it raised
            future.set_exception(error)
        return future


@functools.cache
def _dispatches_inline(model: str) -> bool:
    """Whether litellm's synchronous step for ``model`` only prepares a coroutine (see :class:`_DispatchExecutor`)."""
    try:
        provider = _import_litellm().get_llm_provider(model)[1]
    except Exception:  # litellm cannot place the model: the call itself will say why, from a thread
        return False
    return provider in _INLINE_PROVIDERS


class _LoopThread:
    """One event loop in a daemon thread, shared by every client of the process."""

    _instance: _LoopThread | None = None
    _guard = threading.Lock()

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.loop.set_default_executor(_DispatchExecutor(thread_name_prefix="spade-llm-step"))
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


class _Spent:
    """What one request spent across its calls (transient retries, re-asks, step-downs)."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.calls = 0
        self.retries = 0
        self.reasks = 0
        self.downgrades = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cost: float | None = 0.0

    @classmethod
    def of(cls, model: str, completion: Completion) -> _Spent:
        """What another process reported spending (as a :class:`Completion`)."""
        spent = cls(model)
        spent.calls, spent.retries, spent.reasks = completion.calls, completion.retries, completion.reasks
        spent.downgrades = completion.downgrades
        spent.prompt_tokens, spent.completion_tokens = completion.prompt_tokens, completion.completion_tokens
        spent.cost = completion.cost
        return spent

    def text(self, response: Any) -> str:
        """The answer's text, counted as a call with its tokens and cost."""
        text = response.choices[0].message.content
        if not isinstance(text, str):
            raise _Failure(LLMError(f"{self.model} returned no text content"), self)
        usage = getattr(response, "usage", None)
        hidden = getattr(response, "_hidden_params", None) or {}
        cost = hidden.get("response_cost")
        self.calls += 1
        self.prompt_tokens += int(getattr(usage, "prompt_tokens", 0) or 0)
        self.completion_tokens += int(getattr(usage, "completion_tokens", 0) or 0)
        self.cost = self.cost + float(cost) if self.cost is not None and isinstance(cost, int | float) else None
        return text

    def completion(self, text: str, mode: StructuredMode | None = None) -> Completion:
        return Completion(
            text=text,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            cost=self.cost,
            retries=self.retries,
            calls=self.calls,
            reasks=self.reasks,
            downgrades=self.downgrades,
            mode=mode,
        )


class _Failure(Exception):
    """An LLM call that failed for good, with what it spent on the way."""

    def __init__(self, error: LLMError, spent: _Spent) -> None:
        super().__init__(str(error))
        self.error = error
        self.spent = spent


class _Rejected(Exception):
    """The server refused a structured mode: ``explicit`` when its message names the response format (so the
    step down is remembered at once), else only when a lower mode then answers."""

    def __init__(self, reason: str, *, explicit: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.explicit = explicit


class _Invalid(Exception):
    """An answer that is not the JSON asked for: ``problem`` completes "the model's answer ..."; ``prose`` when
    it holds no JSON at all and does not even start like JSON (a server ignoring the response format)."""

    def __init__(self, problem: str, *, prose: bool = False) -> None:
        super().__init__(problem)
        self.problem = problem
        self.prose = prose


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


class _Capability:
    """The structured mode one (api_base, model) takes, as far as this process knows.

    Until it is settled (read from the store, or learnt from a first request), one request at a time probes
    while the others of the batch wait for it, so a server that rejects a mode sees one rejected request, not
    one per request in flight. Touched by the LLM loop and, for the store, by callers' threads: hence the lock.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.mode = 0  # index into STRUCTURED_MODES
        self.reason = "not negotiated yet"
        self.settled = False  # requests go out without waiting for a probe
        self.learnt = False  # the mode was learnt from an answer or an explicit rejection: worth storing
        self.loaded = False  # the store was read
        self.stored: int | None = None  # what the store holds
        self._probe: asyncio.Event | None = None

    async def enter(self) -> bool:
        """Wait while another request probes; True when this request is to probe."""
        while True:
            with self.lock:
                if self.settled:
                    return False
                if self._probe is None:
                    self._probe = asyncio.Event()
                    return True
                probe = self._probe
            await probe.wait()

    def leave(self, *, settle: bool) -> None:
        """End a probe; without ``settle`` (the probe was stopped) the next waiting request probes instead."""
        with self.lock:
            self.settled = self.settled or settle
            probe, self._probe = self._probe, None
        if probe is not None:
            probe.set()

    def step_down(self, mode: int, reason: str) -> None:
        """The server said it does not take ``mode``."""
        with self.lock:
            if mode + 1 > self.mode:
                self.mode, self.reason, self.learnt = mode + 1, reason, True

    def answered(self, mode: int, reason: str) -> None:
        """A valid answer came in ``mode``: it works (and a higher mode, if one was skipped, did not)."""
        with self.lock:
            if mode > self.mode or (mode == self.mode and not self.learnt):
                self.mode, self.reason = mode, reason
            self.settled = self.learnt = True

    def load(self, row: tuple[str, str] | None) -> None:
        with self.lock:
            self.loaded = True
            if row is None or row[0] not in STRUCTURED_MODES:
                return
            self.stored = STRUCTURED_MODES.index(row[0])
            if not self.settled:
                self.mode, self.reason, self.settled = self.stored, row[1], True

    def unsaved(self) -> tuple[int, str] | None:
        with self.lock:
            return (self.mode, self.reason) if self.learnt and self.mode != self.stored else None


class _Capabilities:
    """Each (api_base, model)'s :class:`_Capability`, shared by the clients :meth:`LiteLLMClient.with_model`
    derives."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_key: dict[tuple[str, str], _Capability] = {}

    def get(self, api_base: str | None, model: str) -> _Capability:
        with self._lock:
            return self._by_key.setdefault((api_base or "", model), _Capability())


class LiteLLMClient:
    """litellm behind :class:`LLMClient`: timeouts, retries, concurrency and rate limits, structured-output
    negotiation and validation, the store's cache."""

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
        max_reasks: int = 2,
        max_tokens: int | None = None,
        parameters: Mapping[str, Any] | None = None,
        endpoint: str | None = None,
        max_retry_after_s: float = MAX_RETRY_AFTER_S,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if rpm is not None and rpm < 1:
            raise ValueError("rpm must be at least 1 (or None for no limit)")
        if max_reasks < 0:
            raise ValueError("max_reasks must be at least 0")
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
        self.max_reasks = max_reasks
        self.max_tokens = max_tokens  # a cap on every answer's length; None: the server's own
        self.parameters = dict(parameters or {})  # more litellm parameters (top_p, stop, ...), in every cache key
        self.max_retry_after_s = max_retry_after_s
        # what the negotiated response format is remembered under: the api_base, or a stable name for a server
        # whose port changes at every start (the embedded local model)
        self.endpoint = endpoint if endpoint is not None else (api_base or "")
        self.usage = Usage()
        #: the processes that send its plain batches (``llm_processes``; the pipeline's client only)
        self.helpers: Helpers | None = None
        self._shared = _Limits(concurrency, rpm)
        self._capabilities = _Capabilities()
        self._random = random.Random()

    def with_model(self, model: str) -> LiteLLMClient:
        """A client for another model on the same endpoint that shares this one's concurrency and rate
        limits, usage totals and cache (a judge pipeline may give each unit its own model)."""
        if model == self.model:
            return self
        other = copy.copy(self)
        other.model = model
        return other

    @property
    def _inline(self) -> bool:
        return _dispatches_inline(self.model)

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

    def structured_mode(self) -> StructuredMode:
        """The mode structured requests to this client's (api_base, model) go out in now (``json_schema``
        until a server has said otherwise)."""
        capability = self._capability()
        with capability.lock:
            return STRUCTURED_MODES[capability.mode]

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
        structured = any(request.response_schema is not None for request in requests)
        capability = self._capability() if structured else None
        for index, completion in self._cached_answers(requests, keys).items():
            results[index] = completion
            self.usage.add(completion)
            if on_result is not None:
                on_result(index, completion)
        pending = {i for i, result in enumerate(results) if result is None}
        if not pending:
            return results  # type: ignore[return-value]
        stop = threading.Event()
        # One coroutine runs the whole batch and hands each outcome over a queue: a future per request waited on
        # with concurrent.futures.wait re-arms a waiter on every pending future at each arrival (quadratic in the
        # batch) and wakes the loop thread once per request to submit it.
        arrivals: queue.SimpleQueue[tuple[int, Completion | BaseException]] = queue.SimpleQueue()
        unwound = threading.Event()

        async def whole_batch() -> None:
            try:
                await self._acall_each(requests, sorted(pending), stop, arrivals)
            finally:
                unwound.set()

        batch = _LoopThread.get().submit(whole_batch())
        unsaved: list[tuple[str, str]] = []
        saved_at = time.monotonic()
        remaining = len(pending)
        try:
            while remaining:
                # answers are cached in batches, and at least every _CACHE_EVERY_S: a process killed mid-batch
                # loses at most that much of what it was answered (a rerun asks only for the rest)
                try:
                    index, outcome = arrivals.get(timeout=_CACHE_EVERY_S)
                except queue.Empty:
                    if batch.done():
                        batch.result()  # the batch itself failed: raise why
                    outcome = None
                if outcome is not None:
                    remaining -= 1
                    answer: Completion | LLMError
                    if isinstance(outcome, _Failure):
                        self.usage.add_failure(outcome.spent.completion(""))
                        answer = outcome.error
                    elif isinstance(outcome, BaseException):
                        raise outcome
                    else:
                        answer = outcome
                        self.usage.add(answer)
                        unsaved.append((keys[index], answer.text))
                    results[index] = answer
                    if len(unsaved) >= _CACHE_BATCH:
                        self._remember_many(unsaved, capability)
                        unsaved, saved_at = [], time.monotonic()
                    if on_result is not None:
                        on_result(index, answer)
                    if should_stop is not None and not stop.is_set() and should_stop():
                        stop.set()
                if unsaved and time.monotonic() - saved_at >= _CACHE_EVERY_S:
                    self._remember_many(unsaved, capability)
                    unsaved, saved_at = [], time.monotonic()
        except BaseException:
            # a stopped caller leaves no call in flight: nothing more is sent, the calls already sent may finish
            # (a call cancelled mid-way leaves litellm's own coroutine unawaited), and what still runs after
            # _STOP_GRACE_S is cancelled; the batch has ended before the error returns
            stop.set()
            if not unwound.wait(_STOP_GRACE_S):
                batch.cancel()
                unwound.wait(_UNWIND_S)
            raise
        finally:
            self._remember_many(unsaved, capability)
        return results  # type: ignore[return-value]

    # -- the network ---------------------------------------------------------------------------------------

    def _parameters(self, request: LLMRequest) -> dict[str, Any]:
        """The parameters of the cache key (and of a plain request): a structured request is keyed as its
        ``json_schema`` form whatever mode it goes out in, so the key names the logical request."""
        parameters: dict[str, Any] = {**self.parameters, "temperature": request.temperature}
        if self.max_tokens is not None:  # keys without a cap stay what they were
            parameters["max_tokens"] = self.max_tokens
        if request.response_schema is not None:
            parameters["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": dict(request.response_schema), "strict": True},
            }
        return parameters

    def _key(self, request: LLMRequest) -> str:
        return cache_key(
            self.model, request.messages, self._parameters(request), request.sample_index, endpoint=self.endpoint
        )

    def _limits(self) -> tuple[asyncio.Semaphore, Any]:
        return self._shared.get()

    async def _acall_each(
        self,
        requests: Sequence[LLMRequest],
        indices: Sequence[int],
        stop: threading.Event,
        arrivals: queue.SimpleQueue[tuple[int, Completion | BaseException]],
    ) -> None:
        """Every request of ``indices`` at once (the client's semaphore and rate limit pace them), each outcome
        put on ``arrivals`` as it comes: an answer, or the exception that ended that request."""

        async def one(index: int) -> None:
            arrivals.put((index, await self._outcome(requests[index], stop)))

        helpers = self._helpers_for([requests[index] for index in indices])
        if not helpers:
            await asyncio.gather(*(one(index) for index in indices))
            return
        # One queue of work for every helper's senders; a sender starts when its helper has imported litellm, so
        # a helper started late (for a large batch) takes work only once it can send it. Should every helper
        # exit, the rest is sent from here.
        work = collections.deque(indices)
        batch, spec = next(_BATCHES), ClientSpec.of(self)

        async def there(helper: Helper) -> None:
            from spade_lsp._llm_helper import HelperGone

            try:
                client = helper.client(spec) if await asyncio.wrap_future(helper.ready) else None
            except HelperGone:
                client = None
            while work and client is not None and helper.alive:
                index = work.popleft()
                arrivals.put((index, await self._outcome_there(helper, client, batch, requests[index], stop)))
            if work and not any(other.alive for other in helpers):
                await _litellm_imported()
                while work:
                    await one(work.popleft())

        try:
            await asyncio.gather(*(there(helper) for helper in helpers for _ in range(self.concurrency)))
        finally:
            if stop.is_set() or work:  # stopped, or cancelled: the helpers retry nothing more of this batch
                for helper in helpers:
                    helper.stop(batch)

    async def _outcome(self, request: LLMRequest, stop: threading.Event) -> Completion | BaseException:
        try:
            return await self._acall(request, stop)
        except asyncio.CancelledError:
            raise
        except BaseException as error:  # handed to the caller, which knows what each one means
            return error

    async def _outcome_there(
        self, helper: Helper, client: int, batch: int, request: LLMRequest, stop: threading.Event
    ) -> Completion | BaseException:
        """``request`` sent by ``helper`` under one of this client's permits; sent from here instead when the
        helper exits or fails before it answers."""
        from spade_lsp._llm_helper import HelperGone

        semaphore, _ = self._limits()
        async with semaphore:
            if stop.is_set():
                return _Failure(LLMError(f"{self.model}: not sent, the run was stopped"), _Spent(self.model))
            try:
                answer = await helper.call(client, request, batch)
            except HelperGone as gone:
                log.warning("%s; its request is sent from this process", gone)
                answer = ("fault", str(gone))
        if isinstance(answer, Completion):
            return answer
        if answer[0] == "failure":
            _, parts, spent = answer
            return _Failure(error_of(*parts), _Spent.of(self.model, spent))
        await _litellm_imported()
        return await self._outcome(request, stop)

    def _helpers_for(self, requests: Sequence[LLMRequest]) -> list[Helper]:
        """The helpers that may send ``requests``: plain ones, from a client whose rate is not limited here."""
        if self.helpers is None or self.rpm is not None or any(r.response_schema is not None for r in requests):
            return []
        return self.helpers.for_batch(len(requests), self.concurrency)

    async def _acall(self, request: LLMRequest, stop: threading.Event) -> Completion:
        if request.response_schema is not None:
            return await self._astructured(request, request.response_schema, stop)
        spent = _Spent(self.model)
        response = await self._send(request.messages, self._parameters(request), stop, spent)
        text = spent.text(response)
        if not text.strip():  # never cached: a later run asks again
            raise _Failure(EmptyAnswerError(f"{self.model} returned an empty answer (HTTP 200, no text)"), spent)
        return spent.completion(text)

    async def _send(
        self,
        messages: Sequence[Message],
        parameters: Mapping[str, Any],
        stop: threading.Event,
        spent: _Spent,
        *,
        negotiating: bool = False,
        probing: bool = False,
    ) -> Any:
        """One call, retried with backoff on transient failures; while ``negotiating`` a response format, a
        rejection of it raises :class:`_Rejected` at once (retrying would only be refused again). A failure that
        only may be one (a bare 400) counts only while ``probing``: once the format is settled it is an error."""
        litellm = _import_litellm()
        semaphore, limiter = self._limits()
        retries = 0
        while True:
            async with semaphore:
                if stop.is_set():
                    raise _Failure(LLMError(f"{self.model}: not sent, the run was stopped"), spent)
                if limiter is not None:
                    await limiter.acquire()
                inline = _inline_dispatch.set(self._inline)
                try:
                    with _unlogged():
                        return await asyncio.wait_for(
                            litellm.acompletion(
                                model=self.model,
                                messages=[dict(m) for m in messages],
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
                finally:
                    _inline_dispatch.reset(inline)
            explicit = _format_rejection(failure) if negotiating else None
            if explicit or (explicit is not None and probing):
                raise _Rejected(_first_line(failure), explicit=explicit) from failure
            if type(failure).__name__ not in _RETRYABLE or retries >= self.max_retries or stop.is_set():
                raise _Failure(_llm_error(model_name(self), failure, retries), spent) from failure
            retry_after = _retry_after(failure)
            if retry_after is not None and retry_after > self.max_retry_after_s:
                wait = (
                    f"the server asks to wait {retry_after:g} s, longer than the {self.max_retry_after_s:g} s allowed"
                )
                raise _Failure(_llm_error(model_name(self), failure, retries, wait), spent) from failure
            await asyncio.sleep(self._delay(failure, retries))
            retries += 1
            spent.retries += 1

    async def _astructured(self, request: LLMRequest, schema: Mapping[str, Any], stop: threading.Event) -> Completion:
        """A valid answer to a structured request: sent in the negotiated mode, stepping down when the server
        rejects it (or, while probing, when the answer holds no JSON at all), and re-asked when invalid."""
        capability = self._capabilities.get(self.endpoint, self.model)
        probing = await capability.enter()
        settle = False  # whether the probe's outcome lets the others go ahead without probing again
        spent = _Spent(self.model)
        conversation = [dict(m) for m in request.messages]
        mode = capability.mode
        walked_from: int | None = None  # the mode whose answer held no JSON, while a probe tries lower ones
        try:
            while True:
                mode = max(mode, capability.mode)
                try:
                    response = await self._send(
                        _mode_messages(conversation, schema, mode),
                        {**self.parameters, **_mode_parameters(request, schema, mode, self.max_tokens)},
                        stop,
                        spent,
                        negotiating=mode < _PROMPT,
                        probing=probing,
                    )
                except _Rejected as rejected:
                    if rejected.explicit:
                        capability.step_down(mode, f"{STRUCTURED_MODES[mode]} rejected: {rejected.reason}"[:500])
                    mode += 1
                    spent.downgrades += 1
                    continue
                text = spent.text(response)
                try:
                    value = _read_json(text, schema)
                except _Invalid as invalid:
                    if invalid.prose and probing and not spent.reasks:
                        if mode < _PROMPT:
                            walked_from = mode if walked_from is None else walked_from
                            mode += 1
                            spent.downgrades += 1
                            continue
                        if walked_from is not None:  # every mode answered prose: no verdict on the format
                            mode, walked_from = walked_from, None
                    if spent.reasks >= (self.max_reasks if request.reasks is None else request.reasks):
                        plural = "s" if spent.reasks > 1 else ""
                        after = f" (after {spent.reasks} re-ask{plural})" if spent.reasks else ""
                        message = f"{self.model}: the model's answer {invalid.problem}{after}"
                        raise _Failure(InvalidAnswerError(message, text), spent) from None
                    conversation += [
                        {"role": "assistant", "content": text},
                        {"role": "user", "content": _reask(invalid, schema)},
                    ]
                    spent.reasks += 1
                    continue
                how = f"{STRUCTURED_MODES[walked_from]} answered with no JSON; " if walked_from is not None else ""
                capability.answered(mode, f"{how}{STRUCTURED_MODES[mode]} answered")
                settle = True
                return spent.completion(_normalised(value), STRUCTURED_MODES[mode])
        except _Failure as failure:
            settle = bool(failure.spent.calls) or not stop.is_set()  # a stopped probe told nothing
            raise
        finally:
            if probing:
                capability.leave(settle=settle)

    def _delay(self, error: Exception, retries: int) -> float:
        """Retry-After when the server sent one, else exponential backoff with full jitter."""
        retry_after = _retry_after(error)
        if retry_after is not None:
            return min(retry_after, self.max_retry_after_s)
        ceiling = min(self.backoff_max_s, self.backoff_s * 2**retries)
        return float(self._random.uniform(ceiling / 2, ceiling))

    # -- the store: the cache and what each endpoint takes ------------------------------------------------------

    def _capability(self) -> _Capability:
        """This client's (api_base, model) capability, read from the store the first time."""
        capability = self._capabilities.get(self.endpoint, self.model)
        if self.store is not None and not capability.loaded:
            stored = load_capability(self.store, self.endpoint, self.model)
            capability.load(None if stored is None else (stored.structured_mode, stored.reason))
        return capability

    def _cached_answers(self, requests: Sequence[LLMRequest], keys: Sequence[str]) -> dict[int, Completion]:
        """The cached answers of ``requests`` (by index): a structured one is read and normalised as a fresh
        answer is, and one that no longer validates (cached by an older spade-lsp) is left out, to be asked
        again and replaced."""
        found: dict[int, Completion] = {}
        for index, text in self._cached_many(keys).items():
            schema = requests[index].response_schema
            if schema is not None:
                try:
                    text = _normalised(_read_json(text, schema))
                except _Invalid:
                    continue
            found[index] = Completion(text=text, cached=True, calls=0)
        return found

    def _cached_many(self, keys: Sequence[str]) -> dict[int, str]:
        if self.store is None or not keys:
            return {}
        positions: dict[str, list[int]] = {}
        for index, key in enumerate(keys):
            positions.setdefault(key, []).append(index)
        found: dict[int, str] = {}
        for key, text in cached_responses(self.store, list(positions)).items():
            for index in positions[key]:
                found[index] = text
        return found

    def _remember_many(self, entries: Sequence[tuple[str, str]], capability: _Capability | None) -> None:
        """Cache ``entries`` and store what the capability learnt, in one transaction."""
        learnt = capability.unsaved() if capability is not None else None
        if self.store is None or (not entries and learnt is None):
            return
        stored = (
            None
            if learnt is None
            else StoredCapability(self.endpoint, self.model, STRUCTURED_MODES[learnt[0]], learnt[1])
        )
        save_responses(self.store, self.model, entries, capability=stored)
        if learnt is not None and capability is not None:
            with capability.lock:
                capability.stored = learnt[0]


C = TypeVar("C", bound=LiteLLMClient)


@dataclass(frozen=True, slots=True)
class ClientSpec:
    """What another of spade's processes (a Ray task, the LLM helper) needs to make a store-less copy of a client.
    The API key is part of it: it reaches those processes, never a sandbox worker."""

    model: str
    api_base: str | None
    api_key: str | None
    timeout_s: float
    max_retries: int
    concurrency: int
    rpm: int | None
    max_reasks: int
    max_tokens: int | None
    parameters: dict[str, Any]
    endpoint: str
    mode: tuple[str, str] | None  # the structured mode the client knows, as the store keeps it
    backoff_s: float
    backoff_max_s: float
    max_retry_after_s: float

    @classmethod
    def of(cls, client: LiteLLMClient, mode: tuple[str, str] | None = None) -> ClientSpec:
        return cls(
            client.model,
            client.api_base,
            client.api_key,
            client.timeout_s,
            client.max_retries,
            client.concurrency,
            client.rpm,
            client.max_reasks,
            client.max_tokens,
            dict(client.parameters),
            client.endpoint,
            mode,
            client.backoff_s,
            client.backoff_max_s,
            client.max_retry_after_s,
        )

    def make(self, kind: type[C], *, rpm: int | None) -> C:
        client = kind(
            self.model,
            api_base=self.api_base,
            api_key=self.api_key,
            timeout_s=self.timeout_s,
            max_retries=self.max_retries,
            concurrency=self.concurrency,
            rpm=rpm,
            max_reasks=self.max_reasks,
            max_tokens=self.max_tokens,
            parameters=self.parameters,
            endpoint=self.endpoint,
            backoff_s=self.backoff_s,
            backoff_max_s=self.backoff_max_s,
            max_retry_after_s=self.max_retry_after_s,
        )
        if self.mode is not None:
            client._capability().load(self.mode)
        return client


def error_of(name: str, message: str, text: str | None) -> LLMError:
    """An :class:`LLMError` sent from another process as (class name, message, text): some subclasses do not
    survive pickling, so they travel as their parts."""
    if name == "InvalidAnswerError":
        return InvalidAnswerError(message, text or "")
    if name == "EmptyAnswerError":
        return EmptyAnswerError(message)
    return LLMError(message)


def error_parts(error: LLMError) -> tuple[str, str, str | None]:
    """``error`` as :func:`error_of` takes it."""
    return type(error).__name__, str(error), getattr(error, "text", None)


def _retry_after(error: Exception) -> float | None:
    """How long the server asked to wait, in seconds: ``retry-after-ms``, or ``Retry-After`` as seconds or as an
    HTTP date (RFC 9110); None when it said nothing usable. Every place litellm may keep the headers is read."""
    candidates = (
        getattr(error, "litellm_response_headers", None),
        getattr(getattr(error, "response", None), "headers", None),
        getattr(error, "headers", None),
    )
    for headers in candidates:
        if not headers or not hasattr(headers, "get"):
            continue
        milliseconds = _seconds(headers.get("retry-after-ms") or headers.get("Retry-After-Ms"))
        if milliseconds is not None:
            return milliseconds / 1000.0
        value = headers.get("retry-after") or headers.get("Retry-After")
        seconds = _seconds(value)
        if seconds is None and isinstance(value, str) and value.strip():
            try:
                when = email.utils.parsedate_to_datetime(value)
            except (TypeError, ValueError, IndexError):
                when = None
            if when is not None:
                when = when if when.tzinfo is not None else when.replace(tzinfo=UTC)
                seconds = max(0.0, (when - datetime.now(UTC)).total_seconds())
        if seconds is not None:
            return seconds
    return None


def _seconds(value: Any) -> float | None:
    """A non-negative finite number of seconds, or None."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number >= 0 else None


def _first_line(error: Exception) -> str:
    message = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def model_name(client: LLMClient) -> str:
    """The model as the user named it: ``local`` for the embedded model, not the alias its server answers to."""
    from spade_lsp.local_model import LOCAL_MODEL_NAME

    return LOCAL_MODEL_NAME if getattr(client, "endpoint", None) == LOCAL_MODEL_NAME else client.model


def _llm_error(model: str, error: Exception, retries: int, why: str | None = None) -> LLMError:
    after = f" (after {retries} retries)" if retries else ""
    because = f"; {why}" if why else ""
    return LLMError(f"{model}: {plain_failure(error)}{after}{because}")


#: A provider's failure in the words a user acts on, by litellm's exception type, with the fix that applies.
_PLAIN_FAILURES: Final = {
    "AuthenticationError": "the provider refused the API key: check the key (the variable named for this model)",
    "PermissionDeniedError": "the provider refused this model to this API key",
    "NotFoundError": "the endpoint has no model by this name: check the model's name and its api_base",
    "RateLimitError": "the provider's rate limit stopped the calls: lower llm_rpm or llm_concurrency, or wait",
    "APIConnectionError": "cannot reach the model's endpoint: check its api_base and that its server runs",
    "Timeout": "no answer within the time limit (llm_timeout_s)",
    "TimeoutError": "no answer within the time limit (llm_timeout_s)",
    "ContentPolicyViolationError": "the provider refused the request under its content policy",
    "InternalServerError": "the provider failed with a server error: try again later",
    "ServiceUnavailableError": "the provider is unavailable: try again later",
    "BadGatewayError": "the provider's gateway failed: try again later",
}
_CONTEXT_NUMBERS: Final = re.compile(r"maximum context length is (\d+).*?(?:requested|resulted in) (\d+)", re.DOTALL)


def plain_failure(error: Exception) -> str:
    """What went wrong with a model call, in plain words with the fix (never the provider's raw text, which
    stays in the log); an error of a kind not known here keeps its first line."""
    kind = type(error).__name__
    if kind == "ContextWindowExceededError":
        numbers = _CONTEXT_NUMBERS.search(str(error))
        sizes = f" ({int(numbers[1]):,} tokens; this request needs {int(numbers[2]):,})" if numbers else ""
        return (
            f"the request is longer than the model's context window{sizes}: use a model with a larger window, "
            "or a shorter prompt"
        )
    plain = _PLAIN_FAILURES.get(kind)
    if plain is None:
        return _first_line(error)
    log.info("%s: %s", kind, _first_line(error))
    return plain


def _format_rejection(error: Exception) -> bool | None:
    """Whether a failed call refused the response format: True when its message names it, False when it may
    have (any other 400, 415 or 422, or a 5xx naming a schema), None when it says nothing about the format
    (transient failures, keys, context windows: those keep their own handling)."""
    if type(error).__name__ in _NOT_FORMAT:
        return None
    status = getattr(error, "status_code", None)
    if not isinstance(status, int) or status < 400:
        return None
    text = str(error)
    if _FORMAT_WORDS.search(text):
        return True
    if status in (400, 415, 422) or (status >= 500 and "schema" in text.lower()):
        return False
    return None


def _kind(schema: Mapping[str, Any]) -> str:
    kind = schema.get("type")
    return f"JSON {kind}" if kind in ("object", "array") else "JSON value"


def _instruction(schema: Mapping[str, Any]) -> str:
    return (
        f"Answer with only one {_kind(schema)} that matches this JSON Schema, with no other text and no code "
        f"fences:\n{json.dumps(dict(schema), ensure_ascii=False)}"
    )


def _mode_messages(conversation: Sequence[Message], schema: Mapping[str, Any], mode: int) -> list[dict[str, str]]:
    """The conversation as sent in ``mode``: below ``json_schema`` the schema is also stated as an instruction,
    at the end of the first system message (or in one of its own)."""
    messages = [dict(m) for m in conversation]
    if STRUCTURED_MODES[mode] == "json_schema":
        return messages
    for message in messages:
        if message.get("role") == "system":
            message["content"] = f"{message.get('content', '')}\n\n{_instruction(schema)}"
            return messages
    return [{"role": "system", "content": _instruction(schema)}, *messages]


def _mode_parameters(
    request: LLMRequest, schema: Mapping[str, Any], mode: int, max_tokens: int | None
) -> dict[str, Any]:
    parameters: dict[str, Any] = {"temperature": request.temperature}
    if max_tokens is not None:
        parameters["max_tokens"] = max_tokens
    match STRUCTURED_MODES[mode]:
        case "json_schema":
            parameters["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": dict(schema), "strict": True},
            }
        case "json_object":  # llama.cpp constrains its grammar to the schema given here; others ignore it
            parameters["response_format"] = {"type": "json_object", "schema": dict(schema)}
    return parameters


def _reask(invalid: _Invalid, schema: Mapping[str, Any]) -> str:
    """The user message that asks again, naming what was wrong (and the schema, in case the server ignored
    the response format)."""
    return f"Your answer {invalid.problem}. {_instruction(schema)}"


def _json_candidates(text: str) -> list[Any]:
    """The JSON values an answer holds, best first: the whole text, else its fenced blocks, else every balanced
    object or array found scanning it (prose around JSON)."""
    stripped = text.strip()
    try:
        return [json.loads(stripped)]
    except ValueError:
        pass
    fenced: list[Any] = []
    for block in _FENCE.findall(stripped):
        try:
            fenced.append(json.loads(block))
        except ValueError:
            continue
    if fenced:
        return fenced
    found: list[Any] = []
    decoder = json.JSONDecoder()
    position = 0
    for _ in range(_MAX_JSON_STARTS):
        match = _OPENER.search(stripped, position)
        if match is None:
            break
        try:
            value, position = decoder.raw_decode(stripped, match.start())
        except ValueError:
            position = match.start() + 1
            continue
        found.append(value)
    return found


def _read_json(text: str, schema: Mapping[str, Any] | None) -> Any:
    """The JSON value an answer holds: the first candidate (see :func:`_json_candidates`) that meets
    ``schema``, or :class:`_Invalid` saying what is wrong with the first one."""
    candidates = _json_candidates(text)
    if not candidates:
        stripped = text.strip()
        if stripped.startswith(("{", "[", "`")):
            try:
                json.loads(stripped.strip("`").removeprefix("json"))
            except ValueError as error:
                raise _Invalid(f"is not valid JSON: {error}") from None
        shown = stripped if len(stripped) <= 80 else f"{stripped[:77]}..."
        raise _Invalid(f"is not valid JSON: found none in {json.dumps(shown, ensure_ascii=False)}", prose=True)
    if schema is None:
        return candidates[0]
    import jsonschema

    validator = jsonschema.validators.validator_for(schema)(dict(schema))
    first: jsonschema.ValidationError | None = None
    for candidate in candidates:
        value = _spelt_as_listed(candidate, validator)
        mismatch = jsonschema.exceptions.best_match(validator.iter_errors(value))
        if mismatch is None:
            return value
        first = first or mismatch
    assert first is not None
    where = "/".join(str(part) for part in first.absolute_path) or "the answer"
    raise _Invalid(f"does not match its schema at {where}: {first.message}")


def _spelt_as_listed(value: Any, validator: Any) -> Any:
    """``value`` with each string that differs from a member of its ``enum`` only in case or surrounding space
    replaced by that member: "yes" for "Yes" is the answer asked for (judges' scales read it so), not a reason
    to ask again."""
    for error in list(validator.iter_errors(value)):
        if error.validator != "enum" or not isinstance(error.instance, str):
            continue
        wanted = error.instance.strip().casefold()
        member = next((m for m in error.validator_value if isinstance(m, str) and m.casefold() == wanted), None)
        if member is None:
            continue
        path = list(error.absolute_path)
        if not path:
            return member
        container = value
        for part in path[:-1]:
            container = container[part]
        container[path[-1]] = member
    return value


def _normalised(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def ask_json(client: LLMClient, messages: Sequence[Message], schema: Mapping[str, Any], *, what: str) -> Any:
    """The JSON a structured request got. An answer the client gave up on (still off the schema after its
    re-asks) is returned too when it holds JSON, for callers whose own rules judge an answer item by item
    (dropping one bad criterion rather than all); without any JSON the client's error stands."""
    try:
        completion = client.complete(messages, response_schema=schema)
    except InvalidAnswerError as error:
        try:
            return parse_json_answer(Completion(error.text), what=what)
        except LLMError:
            raise error from None
    return parse_json_answer(completion, what=what)


def parse_json_answer(completion: Completion, *, what: str, schema: Mapping[str, Any] | None = None) -> Any:
    """The JSON a structured-output call returned (read as tolerantly as the client reads it: code fences and
    prose around the JSON are fine), or :class:`LLMError` naming what was expected; with ``schema``, the answer
    must also validate against it."""
    try:
        return _read_json(completion.text, schema)
    except _Invalid as invalid:
        raise LLMError(f"the model's answer for {what} {invalid.problem}") from None
