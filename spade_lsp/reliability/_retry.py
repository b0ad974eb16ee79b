"""Retry in production: what turns a measured pass rate into an answer that meets its checks.

Sampling (``spade sample``) measures P_pass; a pipeline that needs every answer to pass regenerates until one
does. Validator-driven retry (:func:`retry_until_valid`) resamples blindly and keeps the first output that
passes every validator. Verifier-driven retry (:func:`retry_until_verified`) feeds the verifier's reasons back
into the next attempt, so the model can repair what was wrong. Both record every attempt, never raise for a
failed generation or check, and stop at a bound: a number of attempts and, optionally, a deadline.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol, TypeAlias

from spade_lsp.llm import LLMClient
from spade_lsp.reliability._validators import Validator

__all__ = [
    "DEFAULT_FEEDBACK_TEMPLATE",
    "LOGGER_NAME",
    "Attempt",
    "Generate",
    "RetryResult",
    "Verdict",
    "Verifier",
    "llm_generator",
    "retry_until_valid",
    "retry_until_verified",
]

LOGGER_NAME: Final = "spade_lsp.retry"

DEFAULT_FEEDBACK_TEMPLATE: Final = (
    "Your previous answer was rejected for these reasons:\n{feedback}\nWrite a new answer that fixes them."
)

Generate: TypeAlias = Callable[[int, str | None], str]
"""``(attempt index, feedback or None) -> output``. Feedback is ``None`` for validator-driven retry, for the
first attempt, and after a verifier error; otherwise it is the numbered list of the verifier's reasons."""


@dataclass(frozen=True, slots=True)
class Attempt:
    """One attempt: what was generated and whether it passed."""

    index: int  # 0-based
    output: str | None  # None when generation failed
    passed: bool
    failures: tuple[str, ...]  # names of failed validators, or the verifier's reasons
    seconds: float
    error: str | None = None  # generation or validator/verifier error, one line


@dataclass(frozen=True, slots=True)
class RetryResult:
    """The outcome of a retry: the first passing output (None when none passed) and every attempt made."""

    output: str | None
    passed: bool
    attempts: tuple[Attempt, ...]
    stopped: Literal["passed", "exhausted", "timeout"]


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a verifier returns: pass or fail, and why it failed (fed back to the next attempt)."""

    passed: bool
    reasons: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "reasons", tuple(str(reason) for reason in self.reasons))


class Verifier(Protocol):
    def verify(self, input: str, output: str) -> Verdict:
        """Judge ``output`` as an answer to ``input``."""
        ...


@dataclass(frozen=True, slots=True)
class _Outcome:
    output: str | None
    passed: bool
    failures: tuple[str, ...] = ()
    error: str | None = None


def retry_until_valid(
    generate: Generate,
    validators: Sequence[Validator],
    *,
    input: Mapping[str, Any] | str | None = None,
    max_attempts: int = 3,
    timeout_s: float | None = None,
    logger: logging.Logger | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> RetryResult:
    """Regenerate until an output passes every validator, at most ``max_attempts`` times.

    ``generate`` always gets ``None`` as feedback. Every validator is checked (``input`` is passed to those
    that take it), so an attempt's ``failures`` names all it failed; a validator that raises counts as failed
    and its error goes to ``Attempt.error``. A generation that raises (an :class:`~spade_lsp.errors.LLMError`
    after the LLM layer's own retries, or any exception from the caller's code) is a failed attempt with no
    output; only ``KeyboardInterrupt`` and ``SystemExit`` propagate.

    ``timeout_s`` is a deadline for the whole retry, measured on ``clock``: no attempt starts once it has
    passed (``stopped="timeout"``). An attempt already in flight is not interrupted; it is bounded by the
    LLM client's own per-call timeout (and its retries), so the retry can overrun the deadline by one attempt.
    """
    _check_bounds(max_attempts, timeout_s)
    checks = tuple(validators)
    if not checks:
        raise ValueError("retry_until_valid needs at least one validator")

    def attempt(index: int) -> _Outcome:
        output, error = _generate(generate, index, None)
        if output is None:
            return _Outcome(None, False, error=error)
        failures: list[str] = []
        errors: list[str] = []
        for validator in checks:
            try:
                ok = validator.check(output, input)
            except Exception as exc:
                ok = False
                errors.append(f"{validator.name}: {_one_line(exc)}")
            if not ok:
                failures.append(validator.name)
        return _Outcome(output, not failures, tuple(failures), "; ".join(errors) or None)

    return _run(attempt, max_attempts=max_attempts, timeout_s=timeout_s, logger=logger, clock=clock)


def retry_until_verified(
    generate: Generate,
    verifier: Verifier,
    *,
    input: str,
    max_attempts: int = 3,
    timeout_s: float | None = None,
    logger: logging.Logger | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> RetryResult:
    """Regenerate with the verifier's reasons as feedback until it passes an output, at most ``max_attempts`` times.

    The first attempt gets no feedback. After a failing verdict the next attempt gets its reasons as a
    numbered list (which become that attempt's ``failures``). A verifier that raises (or returns something
    other than a :class:`Verdict`) fails the attempt with the error recorded, and the next attempt gets no
    feedback. After a failed generation the feedback stays what it was: the reasons still describe the last
    output the generator produced. Errors, the deadline and logging are as in :func:`retry_until_valid`.
    """
    _check_bounds(max_attempts, timeout_s)
    feedback: str | None = None

    def attempt(index: int) -> _Outcome:
        nonlocal feedback
        output, error = _generate(generate, index, feedback)
        if output is None:
            return _Outcome(None, False, error=error)
        try:
            verdict = verifier.verify(input, output)
            if not isinstance(verdict, Verdict):
                raise TypeError(f"the verifier returned {type(verdict).__name__}, not a Verdict")
        except Exception as exc:
            feedback = None
            return _Outcome(output, False, error=f"verifier: {_one_line(exc)}")
        if verdict.passed:
            feedback = None
            return _Outcome(output, True)
        feedback = _numbered(verdict.reasons)
        return _Outcome(output, False, verdict.reasons)

    return _run(attempt, max_attempts=max_attempts, timeout_s=timeout_s, logger=logger, clock=clock)


def llm_generator(
    client: LLMClient,
    messages: Sequence[Mapping[str, str]],
    *,
    temperature: float = 1.0,
    feedback_template: str = DEFAULT_FEEDBACK_TEMPLATE,
) -> Generate:
    """A :data:`Generate` that asks ``client`` for a completion of ``messages``.

    Attempt ``i`` uses ``sample_index=i``: each attempt is an independent sample, and with a store behind the
    client a re-run replays the same attempts from the cache. With feedback, the messages are followed by the
    generator's previous output (as the assistant) and ``feedback_template`` with ``{feedback}`` replaced by
    the feedback (as the user). The generator remembers its last output, so use one per retry.
    """
    if not messages:
        raise ValueError("llm_generator needs at least one message")
    if "{feedback}" not in feedback_template:
        raise ValueError("feedback_template must contain the placeholder {feedback}")
    return _LLMGenerator(client, tuple(dict(m) for m in messages), temperature, feedback_template)


class _LLMGenerator:
    def __init__(
        self, client: LLMClient, messages: tuple[dict[str, str], ...], temperature: float, template: str
    ) -> None:
        self._client = client
        self._messages = messages
        self._temperature = temperature
        self._template = template
        self._last_output: str | None = None

    def __call__(self, index: int, feedback: str | None) -> str:
        messages = list(self._messages)
        if feedback is not None:
            if self._last_output is not None:
                messages.append({"role": "assistant", "content": self._last_output})
            messages.append({"role": "user", "content": self._template.replace("{feedback}", feedback)})
        text = self._client.complete(messages, temperature=self._temperature, sample_index=index).text
        self._last_output = text
        return text


def _check_bounds(max_attempts: int, timeout_s: float | None) -> None:
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
        raise ValueError(f"max_attempts must be an integer of at least 1, not {max_attempts!r}")
    if timeout_s is not None and not (timeout_s > 0 and not math.isnan(timeout_s)):
        raise ValueError(f"timeout_s must be a positive number of seconds or None, not {timeout_s!r}")


def _generate(generate: Generate, index: int, feedback: str | None) -> tuple[str | None, str | None]:
    """The output, or None and the error in one line; only KeyboardInterrupt and SystemExit escape."""
    try:
        output = generate(index, feedback)
    except Exception as exc:
        return None, _one_line(exc)
    if not isinstance(output, str):
        return None, f"TypeError: the generator returned {type(output).__name__}, not str"
    return output, None


def _run(
    attempt: Callable[[int], _Outcome],
    *,
    max_attempts: int,
    timeout_s: float | None,
    logger: logging.Logger | None,
    clock: Callable[[], float],
) -> RetryResult:
    log = logger if logger is not None else logging.getLogger(LOGGER_NAME)
    deadline = None if timeout_s is None else clock() + timeout_s
    attempts: list[Attempt] = []
    for index in range(max_attempts):
        if deadline is not None and clock() >= deadline:
            return RetryResult(None, False, tuple(attempts), "timeout")
        started = clock()
        outcome = attempt(index)
        record = Attempt(index, outcome.output, outcome.passed, outcome.failures, clock() - started, outcome.error)
        attempts.append(record)
        log.info(
            "retry attempt index=%d of=%d passed=%s failures=%s seconds=%.3f%s",
            record.index,
            max_attempts,
            record.passed,
            list(record.failures),
            record.seconds,
            f" error={record.error}" if record.error else "",
            extra={"retry_attempt": record},
        )
        if record.passed:
            return RetryResult(record.output, True, tuple(attempts), "passed")
    return RetryResult(None, False, tuple(attempts), "exhausted")


def _numbered(reasons: Sequence[str]) -> str:
    items = reasons or ("The answer was rejected without a stated reason.",)
    return "\n".join(f"{number}. {reason}" for number, reason in enumerate(items, start=1))


def _one_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__
