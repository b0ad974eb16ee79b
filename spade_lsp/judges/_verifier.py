"""The LLM verifier: an LLM judges an (input, output) pair PASS or FAIL and names the failures, through
structured output (``{"reasons": [...], "verdict": "PASS" | "FAIL"}``).

It is reliability's :class:`~spade_lsp.reliability.Verifier` (the judge of :func:`retry_until_verified`, whose
reasons are fed back to the generator), a :class:`~spade_lsp.reliability.Validator` (``as_validator``), and the
``verifier`` column of ``spade sample`` (docs/reliability.md). Answers that are not JSON, miss a field, name a
verdict other than PASS or FAIL, or refuse are asked again, each time with a new sample index so the re-ask is
a fresh call rather than the cached bad answer; what is still unusable after ``retries`` is recorded, never
guessed: :meth:`LLMVerifier.verify` raises :class:`LLMError` and :meth:`LLMVerifier.verify_many` gives None.
Those re-asks are the verifier's own: requests go out with ``reasks=0`` and an answer the LLM layer finds
invalid is read here from :attr:`InvalidAnswerError.text`, which tells a refusal from a malformed answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from spade_lsp.errors import LLMError
from spade_lsp.judges._ask import RETRY_STRIDE, Answer, JudgeClients, Message, json_object
from spade_lsp.judges._scales import OutOfScale, Scale
from spade_lsp.llm import Completion, InvalidAnswerError, LLMClient, LLMRequest
from spade_lsp.reliability import DEFAULT_MINIMUM, Validator, Verdict

__all__ = ["DEFAULT_CRITERIA", "VERDICT_SCHEMA", "LLMVerifier", "read_verdict"]

DEFAULT_CRITERIA: Final = (
    "The output is a correct, complete and appropriate answer to the input and follows every instruction in it."
)
#: Reasons first, so the model looks for failures before it decides.
VERDICT_SCHEMA: Final[Mapping[str, Any]] = {
    "type": "object",
    "properties": {
        "reasons": {"type": "array", "items": {"type": "string"}},
        "verdict": {"type": "string", "enum": ["PASS", "FAIL"]},
    },
    "required": ["reasons", "verdict"],
    "additionalProperties": False,
}
_VERDICTS: Final = Scale.discrete(["PASS", "FAIL"], passing=["PASS"])
_REASKED: Final = frozenset({"malformed", "out_of_scale", "refusal"})
_SYSTEM: Final = (
    "You are a strict verifier. Decide whether the OUTPUT meets the criteria as an answer to the INPUT.\n"
    "Answer in JSON with `reasons`, a list of short, specific sentences, one for each way the output fails "
    "the criteria (an empty list when it meets them), then `verdict`: PASS when the output meets every "
    "criterion, FAIL otherwise."
)


def read_verdict(text: str, *, attempts: int = 1) -> Answer:
    """An :class:`Answer` whose value is a :class:`Verdict`, or one carrying the problem that left it without.

    A FAIL keeps its reasons (the failures it names); a PASS keeps none, since there is nothing to repair."""
    data = json_object(text, "verdict", attempts=attempts)
    if isinstance(data, Answer):
        return data
    reasons = data.get("reasons", [])
    if isinstance(reasons, str):
        reasons = [reasons]
    if not isinstance(reasons, list) or not all(isinstance(reason, str) for reason in reasons):
        return Answer(problem="malformed", detail='"reasons" is not a list of strings', attempts=attempts, raw=text)
    named = tuple(reason.strip() for reason in reasons if reason.strip())
    try:
        verdict = _VERDICTS.parse(data["verdict"])
    except OutOfScale as error:
        return Answer(problem="out_of_scale", detail=str(error), attempts=attempts, raw=text)
    passed = _VERDICTS.passes(verdict)
    value = Verdict(passed, () if passed else named)
    return Answer(value=value, explanation="; ".join(named) or None, attempts=attempts, raw=text)


class LLMVerifier:
    """PASS or FAIL with reasons from ``client`` (or its ``model``), judged against ``criteria`` (default: the
    output correctly does what the input asks). ``retries`` bounds the re-asks of unusable answers."""

    def __init__(
        self,
        client: JudgeClients | LLMClient,
        criteria: str | None = None,
        *,
        model: str | None = None,
        temperature: float = 0.0,
        retries: int = 2,
    ) -> None:
        if retries < 0:
            raise ValueError("retries must be at least 0")
        if criteria is not None and not criteria.strip():
            raise ValueError("criteria must not be blank (None takes the default)")
        self.pool = client if isinstance(client, JudgeClients) else JudgeClients(client)
        self.criteria = criteria.strip() if criteria is not None else DEFAULT_CRITERIA
        self.model = model
        self.temperature = temperature
        self.retries = retries

    def messages(self, input: str, output: str) -> tuple[Message, ...]:
        """The verification request for one pair."""
        user = f"CRITERIA:\n{self.criteria}\n\nINPUT:\n{input}\n\nOUTPUT:\n{output}"
        return ({"role": "system", "content": _SYSTEM}, {"role": "user", "content": user})

    def judge_many(
        self, pairs: Sequence[tuple[str, str]], *, should_stop: Callable[[], bool] | None = None
    ) -> list[Answer]:
        """One answer per pair, in order, all sent as one batch (re-asks as a second, smaller one): the value a
        :class:`Verdict`, or None with the problem (refusal, malformed, out_of_scale, error) and its detail."""
        client = self.pool.for_model(self.model)
        answers: list[Answer | None] = [None] * len(pairs)
        pending = list(range(len(pairs)))
        for attempt in range(self.retries + 1):
            if not pending or (should_stop is not None and should_stop()):
                break
            requests = [
                LLMRequest(self.messages(*pairs[i]), VERDICT_SCHEMA, self.temperature, attempt * RETRY_STRIDE, reasks=0)
                for i in pending
            ]
            again: list[int] = []
            for index, result in zip(pending, _complete_all(client, requests, should_stop), strict=True):
                if isinstance(result, InvalidAnswerError | Completion):
                    answer = read_verdict(result.text, attempts=attempt + 1)
                else:
                    answer = Answer(problem="error", detail=str(result), attempts=attempt + 1)
                if answer.problem in _REASKED and attempt < self.retries:
                    again.append(index)
                else:
                    answers[index] = answer
            pending = again
        stopped = Answer(problem="error", detail="not asked: the run was stopped")
        return [answer if answer is not None else stopped for answer in answers]

    def verify_many(self, pairs: Sequence[tuple[str, str]]) -> list[Verdict | None]:
        """A verdict per pair, None where no usable answer came within the retries (see :meth:`judge_many`
        for why)."""
        return [answer.value if answer.valid else None for answer in self.judge_many(pairs)]

    def verify(self, input: str, output: str) -> Verdict:
        """The verdict on one pair; :class:`LLMError` when no usable answer came within the retries (so
        :func:`retry_until_verified` records a failed attempt rather than a guess)."""
        [answer] = self.judge_many([(input, output)])
        if not answer.valid:
            raise LLMError(f"the verifier gave no usable answer after {answer.attempts} attempt(s): {_why(answer)}")
        verdict: Verdict = answer.value
        return verdict

    def as_validator(
        self, name: str = "verifier", *, minimum: float = DEFAULT_MINIMUM, message: str | None = None
    ) -> Validator:
        """A validator over (input, output); a mapping input (an example's inputs) is shown as JSON. An
        unusable answer raises, which retry and sampling count as an error, not as a pass."""

        def predicate(input: Mapping[str, Any] | str | None, output: str) -> bool:
            return self.verify(_as_text(input), output).passed

        return Validator(name, predicate, message or f"LLM verifier: {self.criteria}", minimum, takes_input=True)


def _why(answer: Answer) -> str:
    return f"{answer.problem}: {answer.detail}" if answer.detail else str(answer.problem)


def _as_text(input: Mapping[str, Any] | str | None) -> str:
    if input is None:
        return ""
    if isinstance(input, str):
        return input
    return json.dumps(dict(input), ensure_ascii=False, indent=2, default=str)


def _complete_all(
    client: LLMClient, requests: Sequence[LLMRequest], should_stop: Callable[[], bool] | None
) -> list[Completion | LLMError]:
    """The batch through the LLM layer, or one call at a time for an injected client with only ``complete``."""
    batch = getattr(client, "complete_many", None)
    if batch is not None:
        results: list[Completion | LLMError] = batch(requests, should_stop=should_stop)
        return results
    answers: list[Completion | LLMError] = []
    for request in requests:
        try:
            answers.append(
                client.complete(
                    request.messages,
                    response_schema=request.response_schema,
                    temperature=request.temperature,
                    sample_index=request.sample_index,
                )
            )
        except LLMError as error:
            answers.append(error)
    return answers
