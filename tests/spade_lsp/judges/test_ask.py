"""Batched judging through the real litellm client against the scripted stub: every answer checked against its
scale, bad answers asked again with a new sample index, what still fails recorded with why."""

from __future__ import annotations

from typing import Any

import pytest

from spade_lsp.errors import ConfigError
from spade_lsp.judges import OutOfScale, Scale
from spade_lsp.judges._ask import RETRY_STRIDE, JudgeClients, Question, answer_schema, ask_many, read_answer
from spade_lsp.llm import LiteLLMClient
from tests.support.openai_stub import OpenAIStub, Reply, chat_reply, error_reply, user_text


def _client(stub: OpenAIStub, **kwargs: Any) -> LiteLLMClient:
    return LiteLLMClient("openai/judge", api_base=stub.api_base, api_key="sk-test", backoff_s=0.01, **kwargs)


def _question(text: str, scale: Scale, **kwargs: Any) -> Question:
    return Question(({"role": "user", "content": text},), scale, **kwargs)


def test_scales_parse_forgiving_spellings_and_refuse_the_rest() -> None:
    likert = Scale.likert(1, 5)
    assert likert.parse("4") == 4 and likert.parse(5.0) == 5 and likert.passing == frozenset({4, 5})
    for bad in (0, 6, "four", True, 3.5):
        with pytest.raises(OutOfScale):
            likert.parse(bad)
    assert Scale.boolean().parse("Yes") is True and Scale.boolean().parse("fail") is False
    grading = Scale.discrete(["Yes", "No", "Unsure"])
    assert grading.parse("unsure") == "Unsure" and grading.passing == frozenset({"Yes"})
    with pytest.raises(OutOfScale):
        grading.parse("Maybe")
    assert Scale.from_spec({"type": "likert", "min": 0, "max": 10}).passing == frozenset(range(6, 11))
    with pytest.raises(ConfigError, match="pass_at 9 lies outside"):
        Scale.from_spec({"type": "likert", "min": 1, "max": 5, "pass_at": 9})
    with pytest.raises(ConfigError, match="unknown key"):
        Scale.from_spec({"type": "boolean", "values": [1]})
    assert Scale.from_spec(Scale.likert(1, 7, pass_at=6).to_spec()) == Scale.likert(1, 7, pass_at=6)


def test_read_answer_names_each_problem() -> None:
    scale = Scale.likert(1, 5)
    assert read_answer('{"explanation": "fine", "score": 4}', scale).value == 4
    assert read_answer('```json\n{"explanation": "ok", "score": "2"}\n```', scale).value == 2
    assert read_answer('{"explanation": "x", "score": 9}', scale).problem == "out_of_scale"
    assert read_answer('{"explanation": "x"}', scale).problem == "malformed"
    assert read_answer("The answer is 4", scale).problem == "malformed"
    assert read_answer("I'm sorry, but I can't help with judging that.", scale).problem == "refusal"
    schema = answer_schema(scale)
    assert schema["required"] == ["explanation", "score"] and schema["properties"]["score"]["maximum"] == 5


def test_bad_answers_are_asked_again_with_a_new_sample_index_then_recorded() -> None:
    served: dict[str, int] = {}

    def script(request: dict[str, Any]) -> Reply:
        text = user_text(request)
        served[text] = served.get(text, 0) + 1
        if text == "out of scale once":
            return chat_reply(
                '{"explanation": "e", "score": 7}' if served[text] == 1 else '{"explanation": "e", "score": 3}'
            )
        if text == "always refuses":
            return chat_reply("I cannot judge this.")
        if text == "server error":
            return error_reply(400, "bad request")
        return chat_reply('{"explanation": "fine", "score": 5}')

    scale = Scale.likert(1, 5)
    with OpenAIStub(script) as stub:
        questions = [_question(t, scale) for t in ("good", "out of scale once", "always refuses", "server error")]
        answers = ask_many(_client(stub), questions, retries=2)
        formats = [(user_text(r), r.get("response_format")) for r in stub.requests]

    assert [a.value for a in answers] == [5, 3, None, None]
    assert [a.attempts for a in answers] == [1, 2, 3, 1]
    assert (
        answers[2].problem == "refusal" and answers[3].problem == "error" and "bad request" in (answers[3].detail or "")
    )
    # a bare 400 only counts as a refusal of the response format while the format is being probed; once the
    # first answer settled it (json_schema works), it is an error, sent once
    assert served == {"good": 1, "out of scale once": 2, "always refuses": 3, "server error": 1}
    assert all(f is not None and f["type"] == "json_schema" for text, f in formats)


def test_reasks_are_fresh_calls_not_the_cached_bad_answer(tmp_path: Any) -> None:
    from spade_lsp.store import Store

    bad, good = '{"explanation": "e", "score": "maybe"}', '{"explanation": "e", "score": true}'
    replies = iter([bad, good, bad])
    with OpenAIStub(lambda request: chat_reply(next(replies))) as stub, Store.open(tmp_path) as store:
        client = _client(stub, store=store)
        [answer] = ask_many(client, [_question("q", Scale.boolean(), sample_index=4)], retries=1)
        # an invalid answer is never cached, so a re-run asks sample 4 again; the re-ask's answer is replayed
        [again] = ask_many(client, [_question("q", Scale.boolean(), sample_index=4)], retries=1)
        keys = store.db.execute("SELECT count(*) FROM llm_cache").fetchone()[0]
        sent = [r["messages"] for r in stub.requests]
    assert answer.value is True and answer.attempts == 2 and again == answer
    assert keys == 1 and len(sent) == 3 and sent[0] == sent[1] == sent[2]
    assert RETRY_STRIDE > 10_000


def test_units_with_other_models_share_one_concurrency_limit() -> None:
    import threading
    import time

    lock = threading.Lock()
    models: list[str] = []

    def script(request: dict[str, Any]) -> Reply:
        with lock:
            models.append(request["model"])
        return chat_reply('{"explanation": "e", "score": true}', delay_s=0.05)

    with OpenAIStub(script) as stub:
        client = _client(stub, concurrency=3)
        pool = JudgeClients(client)
        questions = [_question(f"q{i}", Scale.boolean(), model=("openai/other" if i % 2 else None)) for i in range(24)]
        started = time.perf_counter()
        answers = ask_many(pool, questions)
        elapsed = time.perf_counter() - started
    assert all(a.value is True for a in answers)
    assert sorted(set(models)) == ["judge", "other"]
    assert pool.for_model("openai/other").usage is client.usage and client.usage.calls == 24
    # 24 calls of 50 ms under one limit of 3 take at least 8 rounds (two separate limits would allow 4)
    assert elapsed >= 8 * 0.05 * 0.9
