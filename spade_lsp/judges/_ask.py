"""Asking judges: structured questions in batches, every answer checked against its scale, bad answers asked
again within a limit, and whatever still fails recorded per item with why (never raised, never dropped).

All judge calls of a batch go out together through the LLM layer (:meth:`LiteLLMClient.complete_many`), under
its concurrency and rate limits; questions for other models go to clients derived with
:meth:`LiteLLMClient.with_model`, which share those limits. A re-asked question uses a new sample index, so
it is a fresh call rather than the cached bad answer. The re-asks are the judges' own: requests go out with
``reasks=0``, and an answer the LLM layer finds invalid (:class:`InvalidAnswerError`) is read here from its
text, so a refusal, a malformed answer and an out-of-scale score stay told apart (and a harmless spelling the
scale forgives, such as "4" for 4, is still an answer).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Final, Literal, cast

from spade_lsp.errors import ConfigError, LLMError
from spade_lsp.judges._scales import OutOfScale, Scale
from spade_lsp.llm import Completion, InvalidAnswerError, LLMClient, LLMRequest

__all__ = ["PROBLEMS", "Answer", "JudgeClients", "Problem", "Question", "answer_schema", "ask_many"]

Problem = Literal["refusal", "malformed", "out_of_scale", "error"]
#: Why an answer is not usable: the judge declined, its output was not the JSON asked for, its score was
#: not on the scale, or the call failed for good (after the LLM layer's own retries).
PROBLEMS: Final = ("refusal", "malformed", "out_of_scale", "error")
#: Sample-index offset of each re-ask, far above any sample index a run uses itself.
RETRY_STRIDE: Final = 1_000_000
_REFUSAL: Final = re.compile(
    r"^\W*(i\s*(?:'m|am)\s+(?:sorry|unable|not able)|i\s+(?:can(?:no|')t|cannot|won't|will not)|sorry\b|"
    r"as an ai\b|i must decline)",
    re.IGNORECASE,
)

Message = Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Question:
    """One judge call. ``model`` None means the default client's model."""

    messages: tuple[Message, ...]
    scale: Scale
    model: str | None = None
    temperature: float = 0.0
    sample_index: int = 0
    explanation: bool = True


@dataclass(frozen=True, slots=True)
class Answer:
    """A judgement: the scale's value and the explanation, or the problem that left it without one."""

    value: Any = None
    explanation: str | None = None
    problem: Problem | None = None
    detail: str | None = None
    attempts: int = 1
    raw: str | None = None

    @property
    def valid(self) -> bool:
        return self.problem is None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value, "explanation": self.explanation, "attempts": self.attempts}
        if self.problem is not None:
            out |= {"problem": self.problem, "detail": self.detail}
        return out


def looks_like_refusal(text: str) -> bool:
    """Whether an answer that is not the JSON asked for reads as the model declining to judge."""
    return _REFUSAL.match(text) is not None


def answer_schema(scale: Scale, *, explanation: bool = True) -> dict[str, Any]:
    """The structured-output schema: ``{"explanation": ..., "score": ...}`` (explanation first, so the model
    reasons before it scores)."""
    properties: dict[str, Any] = {}
    if explanation:
        properties["explanation"] = {"type": "string"}
    properties["score"] = scale.schema()
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def json_object(text: str, required: str, *, attempts: int = 1) -> dict[str, Any] | Answer:
    """The JSON object a structured answer holds (fenced or not), or the problem :class:`Answer` when it is
    not JSON (a refusal when it reads as one) or has no ``required`` key."""
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`").removeprefix("json").strip()
    try:
        data = json.loads(body)
    except json.JSONDecodeError as error:
        kind: Problem = "refusal" if looks_like_refusal(body) else "malformed"
        detail = f"not JSON: {error}" if kind == "malformed" else body[:200]
        return Answer(problem=kind, detail=detail, attempts=attempts, raw=text)
    if not isinstance(data, dict) or required not in data:
        return Answer(problem="malformed", detail=f'the answer has no "{required}"', attempts=attempts, raw=text)
    return data


def read_answer(text: str, scale: Scale, *, attempts: int = 1) -> Answer:
    """An answer from a model's text; a problem when it is not a valid answer on ``scale``."""
    data = json_object(text, "score", attempts=attempts)
    if isinstance(data, Answer):
        return data
    explanation = data.get("explanation")
    if explanation is not None and not isinstance(explanation, str):
        explanation = json.dumps(explanation)
    try:
        value = scale.parse(data["score"])
    except OutOfScale as error:
        return Answer(explanation=explanation, problem="out_of_scale", detail=str(error), attempts=attempts, raw=text)
    return Answer(value=value, explanation=explanation, attempts=attempts, raw=text)


class JudgeClients:
    """The default client and the per-model clients derived from it (sharing its limits, usage and cache)."""

    def __init__(self, client: LLMClient) -> None:
        self.default = client
        self._by_model: dict[str, LLMClient] = {client.model: client}
        self._lock = threading.Lock()

    def for_model(self, model: str | None) -> LLMClient:
        if model is None:
            return self.default
        with self._lock:
            found = self._by_model.get(model)
            if found is None:
                derive = getattr(self.default, "with_model", None)
                if derive is None:
                    raise ConfigError(
                        f"a unit asks for model {model!r}, but this client only serves {self.default.model!r}"
                    )
                found = cast("LLMClient", derive(model))
                self._by_model[model] = found
            return found


def ask_many(
    clients: JudgeClients | LLMClient,
    questions: Sequence[Question],
    *,
    retries: int = 2,
    on_answer: Callable[[int, Answer], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> list[Answer]:
    """Answers to ``questions`` in order. Malformed, out-of-scale and refused answers are asked again up to
    ``retries`` times; after that (or after a failed call) the answer carries its problem. ``on_answer`` is
    called once per question with its final answer, from the caller's thread or a worker thread (serialised)."""
    if retries < 0:
        raise ValueError("retries must be at least 0")
    pool = clients if isinstance(clients, JudgeClients) else JudgeClients(clients)
    answers: list[Answer | None] = [None] * len(questions)
    lock = threading.Lock()
    pending = list(range(len(questions)))
    for attempt in range(retries + 1):
        if not pending or (should_stop is not None and should_stop()):
            break
        last = attempt == retries
        again: list[int] = []

        def settle(index: int, answer: Answer, *, last: bool = last, again: list[int] = again) -> None:
            with lock:
                if answer.problem in ("malformed", "out_of_scale", "refusal") and not last:
                    again.append(index)
                    return
                answers[index] = answer
            if on_answer is not None:
                with lock:
                    on_answer(index, answer)

        _round(pool, questions, pending, attempt, settle, should_stop)
        pending = sorted(again)
    stopped = Answer(problem="error", detail="not asked: the run was stopped")
    return [answer if answer is not None else stopped for answer in answers]


def _round(
    pool: JudgeClients,
    questions: Sequence[Question],
    indices: Sequence[int],
    attempt: int,
    settle: Callable[[int, Answer], None],
    should_stop: Callable[[], bool] | None,
) -> None:
    """One pass over ``indices``: a batch per model, the batches side by side."""
    by_model: dict[str | None, list[int]] = {}
    for index in indices:
        by_model.setdefault(questions[index].model, []).append(index)
    batches = [(pool.for_model(model), group) for model, group in by_model.items()]

    def run(client: LLMClient, group: list[int]) -> None:
        requests = [
            LLMRequest(
                questions[i].messages,
                answer_schema(questions[i].scale, explanation=questions[i].explanation),
                questions[i].temperature,
                questions[i].sample_index + attempt * RETRY_STRIDE,
                reasks=0,
            )
            for i in group
        ]

        def arrived(position: int, result: Completion | LLMError) -> None:
            index = group[position]
            if isinstance(result, InvalidAnswerError | Completion):
                settle(index, read_answer(result.text, questions[index].scale, attempts=attempt + 1))
            else:
                settle(index, Answer(problem="error", detail=str(result), attempts=attempt + 1))

        batch = getattr(client, "complete_many", None)
        if batch is not None:
            batch(requests, on_result=arrived, should_stop=should_stop)
            return
        for position, request in enumerate(requests):  # an injected client with only ``complete``
            try:
                completion = client.complete(
                    request.messages,
                    response_schema=request.response_schema,
                    temperature=request.temperature,
                    sample_index=request.sample_index,
                )
            except LLMError as error:
                arrived(position, error)
            else:
                arrived(position, completion)

    if len(batches) == 1:
        run(*batches[0])
        return
    with ThreadPoolExecutor(max_workers=len(batches), thread_name_prefix="spade-judge") as executor:
        for future in [executor.submit(run, client, group) for client, group in batches]:
            future.result()
