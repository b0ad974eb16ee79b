"""Retry in production: validator- and verifier-driven, through the real litellm client against a scripted stub."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from spade_lsp.llm import Completion, LiteLLMClient, cache_key
from spade_lsp.reliability import Validator
from spade_lsp.reliability._retry import (
    DEFAULT_FEEDBACK_TEMPLATE,
    Verdict,
    llm_generator,
    retry_until_valid,
    retry_until_verified,
)
from spade_lsp.store import Store
from tests.support.openai_stub import OpenAIStub, Reply, chat_reply, error_reply, user_text

MESSAGES = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Describe the lamp."}]
AT_MOST_3_WORDS = Validator("at_most_3_words", lambda output: len(output.split()) <= 3, "at most 3 words")
NOT_EMPTY = Validator("not_empty", lambda output: bool(output.strip()))


def _client(stub: OpenAIStub, store: Store | None = None) -> LiteLLMClient:
    return LiteLLMClient("openai/stub", store=store, api_base=stub.api_base, api_key="sk-test", backoff_s=0.01)


def _scripted(*replies: Reply) -> Any:
    queue: Iterator[Reply] = iter(replies)
    return lambda request: next(queue)


class RecordingClient:
    """Passes calls through to a real client and records the sample index of each."""

    def __init__(self, inner: LiteLLMClient) -> None:
        self.inner = inner
        self.model = inner.model
        self.sample_indices: list[int] = []
        self.temperatures: list[float] = []

    def complete(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        response_schema: Mapping[str, Any] | None = None,
        temperature: float = 0.0,
        sample_index: int = 0,
    ) -> Completion:
        self.sample_indices.append(sample_index)
        self.temperatures.append(temperature)
        return self.inner.complete(
            messages, response_schema=response_schema, temperature=temperature, sample_index=sample_index
        )


class ScriptedVerifier:
    def __init__(self, *verdicts: Verdict | Exception) -> None:
        self.verdicts = list(verdicts)
        self.seen: list[tuple[str, str]] = []

    def verify(self, input: str, output: str) -> Verdict:
        self.seen.append((input, output))
        verdict = self.verdicts.pop(0)
        if isinstance(verdict, Exception):
            raise verdict
        return verdict


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


# --- validator-driven ------------------------------------------------------------------------------------------


def test_regenerates_until_an_output_passes_every_validator() -> None:
    script = _scripted(
        chat_reply("a warm brass desk lamp"), chat_reply("a lamp made of brass"), chat_reply("brass desk lamp")
    )
    with OpenAIStub(script) as stub:
        client = RecordingClient(_client(stub))
        result = retry_until_valid(llm_generator(client, MESSAGES), [AT_MOST_3_WORDS, NOT_EMPTY], max_attempts=5)
    assert result.passed and result.stopped == "passed"
    assert result.output == "brass desk lamp"
    assert [a.index for a in result.attempts] == [0, 1, 2]
    assert [a.passed for a in result.attempts] == [False, False, True]
    assert [a.failures for a in result.attempts] == [("at_most_3_words",), ("at_most_3_words",), ()]
    assert [a.output for a in result.attempts] == ["a warm brass desk lamp", "a lamp made of brass", "brass desk lamp"]
    assert all(a.error is None and a.seconds >= 0 for a in result.attempts)
    # each attempt is its own sample: the same messages, but a distinct sample index and so a distinct cache key
    assert len(stub.requests) == 3
    assert all(request["messages"] == MESSAGES for request in stub.requests)
    assert all(request["temperature"] == 1.0 for request in stub.requests)
    assert client.sample_indices == [0, 1, 2] and client.temperatures == [1.0, 1.0, 1.0]
    keys = {cache_key("openai/stub", MESSAGES, {"temperature": 1.0}, i) for i in client.sample_indices}
    assert len(keys) == 3


def test_a_rerun_replays_the_same_attempts_from_the_cache(workspace_dir: Path) -> None:
    script = _scripted(chat_reply("far too many words here"), chat_reply("just right"))
    with OpenAIStub(script) as stub, Store.open(workspace_dir) as store:
        first = retry_until_valid(llm_generator(_client(stub, store), MESSAGES), [AT_MOST_3_WORDS])
        again = retry_until_valid(llm_generator(_client(stub, store), MESSAGES), [AT_MOST_3_WORDS])
    assert first.output == again.output == "just right"
    assert [a.output for a in first.attempts] == [a.output for a in again.attempts]
    assert len(stub.requests) == 2


def test_exhausted_after_max_attempts() -> None:
    with OpenAIStub(lambda request: chat_reply("always far too many words")) as stub:
        result = retry_until_valid(llm_generator(_client(stub), MESSAGES), [AT_MOST_3_WORDS], max_attempts=2)
    assert not result.passed and result.output is None and result.stopped == "exhausted"
    assert len(result.attempts) == 2 and len(stub.requests) == 2
    assert all(a.failures == ("at_most_3_words",) for a in result.attempts)


def test_validators_see_the_input_when_they_take_it() -> None:
    mentions = Validator("mentions_product", lambda input, output: input["product"] in output)
    answers = iter(["a nice thing", "a nice lamp"])
    result = retry_until_valid(lambda i, feedback: next(answers), [mentions], input={"product": "lamp"})
    assert result.output == "a nice lamp" and len(result.attempts) == 2


def test_a_generation_error_is_recorded_and_counted_not_raised() -> None:
    with OpenAIStub(_scripted(error_reply(400, "bad request body"), chat_reply("short"))) as stub:
        result = retry_until_valid(llm_generator(_client(stub), MESSAGES), [AT_MOST_3_WORDS], max_attempts=2)
    assert result.passed and result.output == "short"
    failed = result.attempts[0]
    assert failed.output is None and not failed.passed and failed.failures == ()
    assert failed.error is not None and failed.error.startswith("LLMError: openai/stub")
    assert "\n" not in failed.error
    assert len(stub.requests) == 2


def test_generation_errors_alone_exhaust_the_attempts() -> None:
    with OpenAIStub(lambda request: error_reply(400)) as stub:
        result = retry_until_valid(llm_generator(_client(stub), MESSAGES), [AT_MOST_3_WORDS], max_attempts=3)
    assert result.stopped == "exhausted" and result.output is None
    assert [a.output for a in result.attempts] == [None, None, None]
    assert len(stub.requests) == 3


def test_errors_from_the_callers_generator_are_recorded_too() -> None:
    def generate(index: int, feedback: str | None) -> str:
        if index == 0:
            raise ValueError("first line\nsecond line")
        if index == 1:
            return 42  # type: ignore[return-value]
        return "ok"

    result = retry_until_valid(generate, [NOT_EMPTY])
    assert [a.error for a in result.attempts] == [
        "ValueError: first line",
        "TypeError: the generator returned int, not str",
        None,
    ]
    assert result.output == "ok"


def test_keyboard_interrupt_propagates() -> None:
    def generate(index: int, feedback: str | None) -> str:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        retry_until_valid(generate, [NOT_EMPTY])


def test_a_validator_that_raises_fails_the_attempt_and_is_recorded() -> None:
    def explode(output: str) -> bool:
        if output == "bad":
            raise RuntimeError("boom")
        return True

    answers = iter(["bad", "good"])
    validators = [Validator("explodes", explode), Validator("is_truthy_not_true", lambda output: 1), NOT_EMPTY]
    result = retry_until_valid(lambda i, feedback: next(answers), [validators[0], validators[2]])
    assert [a.passed for a in result.attempts] == [False, True]
    assert result.attempts[0].failures == ("explodes",)
    assert result.attempts[0].error == "explodes: RuntimeError: boom"
    assert result.attempts[0].output == "bad"
    # only an exact True passes
    result = retry_until_valid(lambda i, feedback: "x", validators[1:], max_attempts=1)
    assert result.attempts[0].failures == ("is_truthy_not_true",) and result.attempts[0].error is None


def test_validator_driven_retry_never_gives_feedback() -> None:
    seen: list[str | None] = []

    def generate(index: int, feedback: str | None) -> str:
        seen.append(feedback)
        return "too many words in here"

    retry_until_valid(generate, [AT_MOST_3_WORDS], max_attempts=3)
    assert seen == [None, None, None]


# --- verifier-driven -------------------------------------------------------------------------------------------


def test_the_verifiers_reasons_are_fed_back_with_the_previous_output() -> None:
    reasons = ("It mentions the price, which the brief forbids.", "It exceeds 50 words.")
    verifier = ScriptedVerifier(Verdict(False, reasons), Verdict(True))
    with OpenAIStub(_scripted(chat_reply("draft one"), chat_reply("draft two"))) as stub:
        result = retry_until_verified(llm_generator(_client(stub), MESSAGES), verifier, input="the lamp brief")
    assert result.passed and result.stopped == "passed" and result.output == "draft two"
    assert [a.failures for a in result.attempts] == [reasons, ()]
    assert verifier.seen == [("the lamp brief", "draft one"), ("the lamp brief", "draft two")]
    assert stub.requests[0]["messages"] == MESSAGES
    second = stub.requests[1]["messages"]
    assert second[: len(MESSAGES)] == MESSAGES
    assert second[len(MESSAGES)] == {"role": "assistant", "content": "draft one"}
    assert second[-1]["role"] == "user" and len(second) == len(MESSAGES) + 2
    feedback = f"1. {reasons[0]}\n2. {reasons[1]}"
    assert user_text(stub.requests[1]) == DEFAULT_FEEDBACK_TEMPLATE.replace("{feedback}", feedback)
    assert all(reason in second[-1]["content"] for reason in reasons)


def test_a_custom_feedback_template_and_a_failing_verdict_without_reasons() -> None:
    verifier = ScriptedVerifier(Verdict(False), Verdict(True))
    with OpenAIStub(_scripted(chat_reply("one"), chat_reply("two"))) as stub:
        generate = llm_generator(_client(stub), MESSAGES, temperature=0.7, feedback_template="Fix {feedback} {json}")
        result = retry_until_verified(generate, verifier, input="x")
    assert result.passed and result.attempts[0].failures == ()
    assert user_text(stub.requests[1]) == "Fix 1. The answer was rejected without a stated reason. {json}"
    assert stub.requests[1]["temperature"] == 0.7


def test_a_verifier_that_raises_fails_the_attempt_and_the_next_gets_no_feedback() -> None:
    verifier = ScriptedVerifier(RuntimeError("judge unavailable"), Verdict(True))
    with OpenAIStub(_scripted(chat_reply("draft one"), chat_reply("draft two"))) as stub:
        result = retry_until_verified(llm_generator(_client(stub), MESSAGES), verifier, input="x")
    assert result.output == "draft two"
    assert result.attempts[0].error == "verifier: RuntimeError: judge unavailable"
    assert result.attempts[0].output == "draft one" and not result.attempts[0].passed
    assert stub.requests[1]["messages"] == MESSAGES


def test_a_verifier_returning_something_else_is_an_error() -> None:
    class Sloppy:
        def verify(self, input: str, output: str) -> Verdict:
            return True  # type: ignore[return-value]

    result = retry_until_verified(lambda i, feedback: "x", Sloppy(), input="x", max_attempts=1)
    assert result.stopped == "exhausted"
    assert result.attempts[0].error == "verifier: TypeError: the verifier returned bool, not a Verdict"


def test_after_a_generation_error_the_feedback_still_applies_to_the_last_output() -> None:
    verifier = ScriptedVerifier(Verdict(False, ("too vague",)), Verdict(False, ("still vague",)))
    script = _scripted(chat_reply("draft one"), error_reply(400), chat_reply("draft two"))
    with OpenAIStub(script) as stub:
        result = retry_until_verified(llm_generator(_client(stub), MESSAGES), verifier, input="x")
    assert result.stopped == "exhausted" and result.output is None
    assert [a.output for a in result.attempts] == ["draft one", None, "draft two"]
    assert [a.failures for a in result.attempts] == [("too vague",), (), ("still vague",)]
    third = stub.requests[2]["messages"]
    assert third[-2] == {"role": "assistant", "content": "draft one"}
    assert "1. too vague" in third[-1]["content"]
    assert stub.requests[1]["messages"] == third


# --- the deadline, logging, arguments ---------------------------------------------------------------------------


def test_the_deadline_stops_before_starting_another_attempt() -> None:
    clock = FakeClock()
    calls: list[int] = []

    def generate(index: int, feedback: str | None) -> str:
        calls.append(index)
        clock.now += 4.0
        return "far too many words here"

    result = retry_until_valid(generate, [AT_MOST_3_WORDS], max_attempts=10, timeout_s=10.0, clock=clock)
    assert result.stopped == "timeout" and not result.passed and result.output is None
    assert calls == [0, 1, 2]  # started at 0 s, 4 s, 8 s; none at 12 s
    assert [a.seconds for a in result.attempts] == [4.0, 4.0, 4.0]


def test_the_deadline_is_exclusive_and_applies_to_verifier_retry() -> None:
    clock = FakeClock()

    class SlowVerifier:
        def verify(self, input: str, output: str) -> Verdict:
            clock.now += 5.0
            return Verdict(False, ("no",))

    result = retry_until_verified(
        lambda i, feedback: "x", SlowVerifier(), input="x", max_attempts=10, timeout_s=10.0, clock=clock
    )
    assert result.stopped == "timeout" and len(result.attempts) == 2


def test_exhausting_the_attempts_before_the_deadline_is_not_a_timeout() -> None:
    result = retry_until_valid(lambda i, feedback: "far too many words here", [AT_MOST_3_WORDS], timeout_s=60.0)
    assert result.stopped == "exhausted" and len(result.attempts) == 3


def test_one_log_record_per_attempt(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="spade_lsp.retry")
    answers = iter(["far too many words here", "ok"])
    result = retry_until_valid(lambda i, feedback: next(answers), [AT_MOST_3_WORDS])
    records = [r for r in caplog.records if r.name == "spade_lsp.retry"]
    assert len(records) == len(result.attempts) == 2
    assert all(r.levelno == logging.INFO for r in records)
    assert "index=0" in records[0].getMessage() and "passed=False" in records[0].getMessage()
    assert "at_most_3_words" in records[0].getMessage()
    assert "index=1" in records[1].getMessage() and "passed=True" in records[1].getMessage()
    assert [getattr(r, "retry_attempt", None) for r in records] == list(result.attempts)


def test_a_given_logger_is_used(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    logger = logging.getLogger("my.pipeline")
    retry_until_verified(lambda i, feedback: "x", ScriptedVerifier(Verdict(True)), input="x", logger=logger)
    assert [r.name for r in caplog.records] == ["my.pipeline"]


@pytest.mark.parametrize("max_attempts", [0, -1])
def test_max_attempts_must_be_at_least_one(max_attempts: int) -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        retry_until_valid(lambda i, feedback: "x", [NOT_EMPTY], max_attempts=max_attempts)
    with pytest.raises(ValueError, match="max_attempts"):
        retry_until_verified(lambda i, feedback: "x", ScriptedVerifier(), input="x", max_attempts=max_attempts)


def test_other_argument_errors() -> None:
    with pytest.raises(ValueError, match="at least one validator"):
        retry_until_valid(lambda i, feedback: "x", [])
    for timeout in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="timeout_s"):
            retry_until_valid(lambda i, feedback: "x", [NOT_EMPTY], timeout_s=timeout)
    client = LiteLLMClient("openai/stub")
    with pytest.raises(ValueError, match="placeholder"):
        llm_generator(client, MESSAGES, feedback_template="Try again.")
    with pytest.raises(ValueError, match="at least one message"):
        llm_generator(client, [])


def test_verdict_reasons_are_a_tuple() -> None:
    verdict = Verdict(False, ["a", "b"])  # type: ignore[arg-type]
    assert verdict.reasons == ("a", "b")
