"""What a sidecar module (``NAME_assertions.py``) imports: the :func:`assertion` decorator and :func:`ask_llm`.

Kept free of heavy imports: sandbox workers import it before running any assertion. An assertion is
``def assert_<name>(example: dict, prompt: str, response: str) -> bool`` (plain or async); the decorator only
attaches metadata, so a decorated function still runs as written. Undecorated ``assert_*`` functions count
too, with :data:`USER_WRITTEN` metadata.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

__all__ = [
    "ASSERTION_PREFIX",
    "USER_WRITTEN",
    "AskLLMUnavailable",
    "AssertionInfo",
    "RenderedPrompt",
    "ask_llm",
    "assertion",
    "info_of",
    "set_ask_llm_handler",
]

ASSERTION_PREFIX: Final = "assert_"
_ATTRIBUTE: Final = "__spade_assertion__"

F = TypeVar("F", bound=Callable[..., Any])


class RenderedPrompt(str):
    """The ``prompt`` an assertion receives: the rendered prompt as text (a conversation as its role sections,
    ``system:`` lines as Prompty writes them), so assertions written for one-message prompts keep working, with
    the rendered messages as sent in :attr:`messages` (``[{"role": ..., "content": ...}, ...]``)."""

    messages: tuple[dict[str, str], ...]

    def __new__(cls, text: str, messages: Sequence[Mapping[str, str]] = ()) -> RenderedPrompt:
        made = super().__new__(cls, text)
        made.messages = tuple(dict(m) for m in messages) or ({"role": "user", "content": text},)
        return made


@dataclass(frozen=True, slots=True)
class AssertionInfo:
    """Where an assertion came from and what it checks.

    ``check`` describes a generated check's family and parameters (e.g. ``{"family": "count", "unit": "words",
    "max": 100}``) so selection can reason about subsumption without running code; ``None`` for opaque code.
    ``asks_llm`` marks assertions whose cost is tokens, not microseconds.
    """

    category: str | None = None
    sentence: str | None = None
    version: int | None = None
    synthesizer: str = "user"
    min_success: float | None = None
    check: Mapping[str, Any] | None = None
    asks_llm: bool = False
    description: str | None = None
    removed_in: int | None = None
    """The version that removed (or reworded) the sentence it checks: it came from an earlier version's
    instruction, so that sentence is expected to be absent from the prompt."""
    extra: Mapping[str, Any] = field(default_factory=dict)


USER_WRITTEN: Final = AssertionInfo()


def assertion(
    *,
    category: str | None = None,
    sentence: str | None = None,
    version: int | None = None,
    synthesizer: str = "user",
    min_success: float | None = None,
    check: Mapping[str, Any] | None = None,
    asks_llm: bool = False,
    description: str | None = None,
    removed_in: int | None = None,
) -> Callable[[F], F]:
    """Attach metadata to an assertion function; the function itself is returned unchanged."""
    info = AssertionInfo(
        category=category,
        sentence=sentence,
        version=version,
        synthesizer=synthesizer,
        min_success=min_success,
        check=dict(check) if check is not None else None,
        asks_llm=asks_llm,
        description=description,
        removed_in=removed_in,
    )

    def attach(function: F) -> F:
        setattr(function, _ATTRIBUTE, info)
        return function

    return attach


def info_of(function: Callable[..., Any]) -> AssertionInfo:
    """The metadata of an assertion function (:data:`USER_WRITTEN` when it has none)."""
    info = getattr(function, _ATTRIBUTE, None)
    return info if isinstance(info, AssertionInfo) else USER_WRITTEN


class AskLLMUnavailable(RuntimeError):
    """:func:`ask_llm` was called where no model is configured; the cell is reported as "needs a model"."""


_handler: Callable[[str, str, Mapping[str, Any]], bool] | None = None


def set_ask_llm_handler(handler: Callable[[str, str, Mapping[str, Any]], bool] | None) -> None:
    """Install what answers :func:`ask_llm` (the sandbox worker installs a proxy to its parent)."""
    global _handler
    _handler = handler


def ask_llm(question: str, response: str, **context: Any) -> bool:
    """Ask the configured model a yes/no ``question`` about ``response``; True means yes.

    Inside the sandbox the call is proxied to the parent process, which holds the keys and caches answers.
    """
    if _handler is None:
        raise AskLLMUnavailable("needs a model: ask_llm has no assistant model (set `assistant_model` in settings)")
    return bool(_handler(question, response, context))
