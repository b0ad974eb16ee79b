"""The LLM layer: every LLM call in spade-lsp goes through this module.

litellm is imported lazily (it takes seconds and must never sit on the language server's start-up path),
with its cost map read locally so the import fetches nothing. Every call has a timeout and bounded retries
with backoff. Responses are cached in the store, keyed by model, messages, parameters and sample index, so
the j-th sample of an input is reproducible, different samples stay independent, and re-runs cost nothing.

:class:`LLMClient` is the seam: tests and callers may pass any object with its ``complete`` method.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from spade_lsp._store import Store
from spade_lsp.config import Settings
from spade_lsp.errors import LLMError, ModelNotConfiguredError

Message = Mapping[str, str]

HOW_TO_CONFIGURE = (
    "no model is configured: set `model` under [tool.spade] in pyproject.toml or spade.toml "
    '(any litellm model name, e.g. model = "openai/gpt-4o-mini"), or pass --model; '
    "for a local OpenAI-compatible server also set api_base"
)


@dataclass(frozen=True, slots=True)
class Completion:
    """One answer: its text and the tokens it cost (0 when it came from the cache)."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False


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


class LiteLLMClient:
    """litellm behind :class:`LLMClient`, with a timeout, retries and the store's cache."""

    RETRYABLE = (
        "RateLimitError",
        "InternalServerError",
        "ServiceUnavailableError",
        "BadGatewayError",
        "APIConnectionError",
        "Timeout",
    )

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
    ) -> None:
        self.model = model
        self.store = store
        self.api_base = api_base
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def complete(
        self,
        messages: Sequence[Message],
        *,
        response_schema: Mapping[str, Any] | None = None,
        temperature: float = 0.0,
        sample_index: int = 0,
    ) -> Completion:
        parameters: dict[str, Any] = {"temperature": temperature}
        if response_schema is not None:
            parameters["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": dict(response_schema), "strict": True},
            }
        key = cache_key(self.model, messages, parameters, sample_index)
        cached = self._cached(key)
        if cached is not None:
            return Completion(text=cached, cached=True)
        completion = self._call(messages, parameters)
        self._remember(key, completion.text)
        return completion

    def _cached(self, key: str) -> str | None:
        if self.store is None:
            return None
        row = self.store.db.execute("SELECT response FROM llm_cache WHERE key = ?", [key]).fetchone()
        return str(json.loads(row[0])["text"]) if row else None

    def _remember(self, key: str, text: str) -> None:
        if self.store is None:
            return
        with self.store.write() as db:
            db.execute(
                "INSERT OR REPLACE INTO llm_cache (key, model, response, created_at) VALUES (?, ?, ?, ?)",
                [key, self.model, json.dumps({"text": text}), datetime.now(UTC).isoformat()],
            )

    def _call(self, messages: Sequence[Message], parameters: Mapping[str, Any]) -> Completion:
        litellm = _import_litellm()
        last_error: Exception | None = None
        for attempt in range(self.max_retries + 1):
            try:
                response = litellm.completion(
                    model=self.model,
                    messages=[dict(m) for m in messages],
                    timeout=self.timeout_s,
                    api_base=self.api_base,
                    api_key=self.api_key,
                    num_retries=0,
                    **parameters,
                )
            except Exception as error:  # litellm maps every provider error onto its own classes
                last_error = error
                if type(error).__name__ not in self.RETRYABLE or attempt == self.max_retries:
                    break
                time.sleep(self.backoff_s * 2**attempt)
                continue
            self.calls += 1
            usage = getattr(response, "usage", None)
            prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
            completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens
            text = response.choices[0].message.content
            if not isinstance(text, str):
                raise LLMError(f"{self.model} returned no text content")
            return Completion(text=text, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
        message = str(last_error).splitlines()[0] if last_error else "unknown error"
        raise LLMError(f"{self.model}: {type(last_error).__name__}: {message}") from last_error


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
    )


def parse_json_answer(completion: Completion, *, what: str) -> Any:
    """The JSON a structured-output call returned, or :class:`LLMError` naming what was expected."""
    text = completion.text.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise LLMError(f"the model's answer for {what} is not valid JSON: {error}") from error
