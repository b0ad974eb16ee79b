"""Structured answers through the real litellm client against scripted servers on loopback: the mode negotiated
per (api_base, model) and remembered in the store, tolerant reading, bounded re-asks, and only valid answers
cached."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from spade_lsp.errors import LLMError
from spade_lsp.llm import Completion, InvalidAnswerError, LiteLLMClient, LLMRequest, cache_key
from spade_lsp.store import Store
from tests.support.openai_stub import OpenAIStub, Reply, chat_reply, error_reply

MODEL = "openai/stub-model"
MESSAGES = [{"role": "system", "content": "You check emails."}, {"role": "user", "content": "Is it polite?"}]
YES_NO = {
    "type": "object",
    "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
    "required": ["answer"],
    "additionalProperties": False,
}
YES = json.dumps({"answer": "yes"})
# llama-cpp-python's server validates response_format.type with pydantic and wraps the error as an HTTP 500
LLAMA_CPP_REJECTION = Reply(
    status=500,
    body={
        "error": {
            "message": "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
            "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
            "'ctx': {'expected': \"'text' or 'json_object'\"}}]",
            "type": "internal_server_error",
            "param": None,
            "code": None,
        }
    },
)


def _client(stub: OpenAIStub, store: Store | None = None, **kwargs: Any) -> LiteLLMClient:
    return LiteLLMClient(MODEL, store=store, api_base=stub.api_base, api_key="sk-test", backoff_s=0.01, **kwargs)


def _mode(request: dict[str, Any]) -> str:
    """The structured mode a request the stub saw went out in."""
    response_format = request.get("response_format")
    return "prompt" if response_format is None else str(response_format["type"])


def _instructed(request: dict[str, Any]) -> bool:
    """Whether the request states the schema in its instructions."""
    return any(m["role"] == "system" and "JSON Schema" in m["content"] for m in request["messages"])


def _key(api_base: str) -> str:
    """The cache key of MESSAGES asked with YES_NO of the server at ``api_base``, as it has always been computed."""
    response_format = {"type": "json_schema", "json_schema": {"name": "answer", "schema": YES_NO, "strict": True}}
    return cache_key(MODEL, MESSAGES, {"temperature": 0.0, "response_format": response_format}, 0, endpoint=api_base)


def _stored(store: Store) -> list[tuple[str, str, str, str]]:
    rows = store.db.execute("SELECT api_base, model, structured_mode, reason FROM llm_capabilities").fetchall()
    return [tuple(row) for row in rows]


def _cached(store: Store) -> int:
    return int(store.db.execute("SELECT count(*) FROM llm_cache").fetchone()[0])


def _llama_cpp(request: dict[str, Any]) -> Reply:
    """llama-cpp-python's server: json_schema rejected, json_object honoured (its schema becomes a grammar)."""
    if _mode(request) == "json_schema":
        return LLAMA_CPP_REJECTION
    return chat_reply(YES, delay_s=0.02)


# -- negotiation ---------------------------------------------------------------------------------------------


def test_llama_cpp_rejection_steps_down_at_once_and_a_new_process_goes_straight_to_json_object(
    workspace_dir: Path,
) -> None:
    with OpenAIStub(_llama_cpp) as stub:
        with Store.open(workspace_dir) as store:
            client = _client(stub, store)
            answer = client.complete(MESSAGES, response_schema=YES_NO)
            assert _stored(store) == [
                (
                    stub.api_base,
                    MODEL,
                    "json_object",
                    "json_schema rejected: InternalServerError: litellm.InternalServerError: "
                    "InternalServerError: OpenAIException - [{'type': 'literal_error', 'loc': ('body', "
                    "'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", "
                    "'input': 'json_schema', 'ctx': {'expected': \"'text' or 'json_object'\"}}]",
                )
            ]
            # cached under the key a json_schema request always had, whatever mode answered
            assert store.db.execute(
                "SELECT response FROM llm_cache WHERE key = ?", [_key(stub.api_base)]
            ).fetchone() == (json.dumps({"text": YES}),)
        assert (answer.text, answer.mode, answer.downgrades, answer.retries, answer.calls) == (
            YES,
            "json_object",
            1,
            0,
            1,
        )
        assert [_mode(r) for r in stub.requests] == ["json_schema", "json_object"]  # no retries spent on it
        sent = stub.requests[1]
        assert sent["response_format"] == {"type": "json_object", "schema": YES_NO}
        assert sent["messages"][0]["content"].startswith("You check emails.\n\nAnswer with only one JSON object")
        assert sent["messages"][0]["content"].endswith(json.dumps(YES_NO))
        assert sent["messages"][1:] == MESSAGES[1:]

        with Store.open(workspace_dir) as store:  # a new process on the same store
            fresh = _client(stub, store)
            assert fresh.structured_mode() == "json_object"
            other = [{"role": "user", "content": "Is it short?"}]
            assert fresh.complete(other, response_schema=YES_NO).mode == "json_object"
            assert fresh.complete(MESSAGES, response_schema=YES_NO).cached
        assert [_mode(r) for r in stub.requests] == ["json_schema", "json_object", "json_object"]
        # a request of its own gets the schema as a system message of its own
        assert stub.requests[2]["messages"][0]["role"] == "system" and _instructed(stub.requests[2])
        assert stub.requests[2]["messages"][1:] == other


def test_a_400_naming_the_response_format_steps_down_and_is_remembered(workspace_dir: Path) -> None:
    def script(request: dict[str, Any]) -> Reply:
        if _mode(request) == "json_schema":
            return error_reply(400, "Invalid parameter: 'response_format' of type 'json_schema' is not supported.")
        return chat_reply(YES)

    with OpenAIStub(script) as stub, Store.open(workspace_dir) as store:
        client = _client(stub, store)
        assert client.complete(MESSAGES, response_schema=YES_NO).mode == "json_object"
        assert client.complete(MESSAGES, response_schema=YES_NO, sample_index=1).mode == "json_object"
        assert [_mode(r) for r in stub.requests] == ["json_schema", "json_object", "json_object"]
        [(_, _, mode, reason)] = _stored(store)
    assert mode == "json_object" and reason.startswith("json_schema rejected: BadRequestError")
    assert client.usage.downgrades == 1 and client.usage.calls == 2 and client.usage.failed == 0


def test_a_plain_400_steps_down_but_is_remembered_only_when_a_lower_mode_answers(workspace_dir: Path) -> None:
    def picky(request: dict[str, Any]) -> Reply:  # takes no response_format at all, and does not say why
        return chat_reply(YES) if _mode(request) == "prompt" else error_reply(400, "unknown field")

    with OpenAIStub(picky) as stub, Store.open(workspace_dir) as store:
        client = _client(stub, store)
        answer = client.complete(MESSAGES, response_schema=YES_NO)
        assert [_mode(r) for r in stub.requests] == ["json_schema", "json_object", "prompt"]
        assert (answer.mode, answer.downgrades) == ("prompt", 2)
        assert _instructed(stub.requests[2]) and "response_format" not in stub.requests[2]
        assert [row[2:] for row in _stored(store)] == [("prompt", "prompt answered")]
        client.complete(MESSAGES, response_schema=YES_NO, sample_index=1)
        assert [_mode(r) for r in stub.requests][3:] == ["prompt"]

    with OpenAIStub(lambda request: error_reply(400, "bad request body")) as stub, Store.open(workspace_dir) as store:
        client = _client(stub, store)
        with pytest.raises(LLMError, match=r"BadRequestError: .*bad request body"):
            client.complete([{"role": "user", "content": "Is it long?"}], response_schema=YES_NO)
        assert [_mode(r) for r in stub.requests] == ["json_schema", "json_object", "prompt"]
        assert client.structured_mode() == "json_schema"  # nothing answered: nothing learnt
        assert [row[2] for row in _stored(store) if row[0] == stub.api_base] == []


def test_a_server_that_ignores_response_format_is_asked_in_the_instructions_from_then_on(
    workspace_dir: Path,
) -> None:
    def chatty(request: dict[str, Any]) -> Reply:  # a plain chat model: JSON only when the instructions ask
        return chat_reply(YES if _instructed(request) else "Yes, the email is polite.")

    with OpenAIStub(chatty) as stub, Store.open(workspace_dir) as store:
        client = _client(stub, store)
        answer = client.complete(MESSAGES, response_schema=YES_NO)
        assert (answer.text, answer.mode, answer.downgrades, answer.reasks, answer.calls) == (
            YES,
            "json_object",
            1,
            0,
            2,
        )
        assert [row[2:] for row in _stored(store)] == [
            ("json_object", "json_schema answered with no JSON; json_object answered")
        ]
        requests = [LLMRequest(MESSAGES, YES_NO, 1.0, i) for i in range(1, 6)]
        assert all(isinstance(a, Completion) and a.text == YES for a in client.complete_many(requests))
    assert [_mode(r) for r in stub.requests] == ["json_schema", *["json_object"] * 6]
    assert client.usage.calls == 7 and client.usage.downgrades == 1 and client.usage.reasks == 0


def test_concurrent_requests_against_a_rejecting_server_send_one_rejected_request() -> None:
    with OpenAIStub(_llama_cpp) as stub:
        client = _client(stub, concurrency=8)
        requests = [LLMRequest([{"role": "user", "content": f"q{i}"}], YES_NO, 1.0, i) for i in range(20)]
        answers = client.complete_many(requests)
    assert all(isinstance(a, Completion) and a.text == YES for a in answers)
    assert sorted(_mode(r) for r in stub.requests) == ["json_object"] * 20 + ["json_schema"]
    assert client.usage.downgrades == 1 and client.usage.calls == 20 and client.usage.failed == 0
    assert client.structured_mode() == "json_object"


def test_transient_server_errors_are_still_retried_in_the_same_mode() -> None:
    replies = iter([error_reply(500, "upstream overloaded"), error_reply(503, "busy"), chat_reply(YES)])
    lock = threading.Lock()

    def script(request: dict[str, Any]) -> Reply:
        with lock:
            return next(replies)

    with OpenAIStub(script) as stub:
        client = _client(stub)
        answer = client.complete(MESSAGES, response_schema=YES_NO)
    assert [_mode(r) for r in stub.requests] == ["json_schema"] * 3
    assert (answer.mode, answer.retries, answer.downgrades) == ("json_schema", 2, 0)
    assert client.usage.retries == 2 and client.usage.calls == 1


# -- reading answers -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        'Sure! Here is my verdict: {"answer": "yes"} Let me know if you need more.',
        '```json\n{"answer": "yes"}\n```',
        'I considered [tone, wording].\n```\n{"answer": "Yes "}\n```',
        '{"note": "first"} and then {"answer": "yes"}',
    ],
)
def test_json_is_found_in_prose_and_fences_and_normalised(workspace_dir: Path, content: str) -> None:
    with OpenAIStub(lambda request: chat_reply(content)) as stub, Store.open(workspace_dir) as store:
        answer = _client(stub, store).complete(MESSAGES, response_schema=YES_NO)
        assert store.db.execute("SELECT response FROM llm_cache").fetchall() == [(json.dumps({"text": YES}),)]
    assert (answer.text, answer.mode, answer.calls, answer.reasks) == (YES, "json_schema", 1, 0)
    assert len(stub.requests) == 1


def test_an_answer_that_never_validates_is_reasked_within_the_bound_then_an_error_never_cached(
    workspace_dir: Path,
) -> None:
    with OpenAIStub(lambda request: chat_reply("{}")) as stub, Store.open(workspace_dir) as store:
        client = _client(stub, store)
        with pytest.raises(InvalidAnswerError) as raised:
            client.complete(MESSAGES, response_schema=YES_NO)
        assert str(raised.value) == (
            f"{MODEL}: the model's answer does not match its schema at the answer: "
            "'answer' is a required property (after 2 re-asks)"
        )
        assert raised.value.text == "{}"
        assert _cached(store) == 0
        assert [len(r["messages"]) for r in stub.requests] == [2, 4, 6]
        reask = stub.requests[2]["messages"]
        assert reask[:2] == MESSAGES and reask[2] == reask[4] == {"role": "assistant", "content": "{}"}
        assert reask[3]["role"] == "user" and reask[3]["content"].startswith(
            "Your answer does not match its schema at the answer: 'answer' is a required property. "
            "Answer with only one JSON object"
        )
        assert [_mode(r) for r in stub.requests] == ["json_schema"] * 3  # JSON came back: the mode is fine
        assert (client.usage.failed, client.usage.calls, client.usage.reasks) == (1, 3, 2)
        with pytest.raises(InvalidAnswerError):  # not cached: asked afresh
            _client(stub, store, max_reasks=0).complete(MESSAGES, response_schema=YES_NO)
        assert len(stub.requests) == 4 and _cached(store) == 0
        assert [row[2] for row in _stored(store)] == []  # a failed probe teaches nothing


def test_prose_from_every_mode_is_reasked_in_the_first_mode_and_reported() -> None:
    with OpenAIStub(lambda request: chat_reply("I'm sorry, but I cannot judge this.")) as stub:
        client = _client(stub, max_reasks=1)
        with pytest.raises(LLMError, match=r"not valid JSON: found none in \"I'm sorry, but I cannot judge this.\""):
            client.complete(MESSAGES, response_schema=YES_NO)
        assert [_mode(r) for r in stub.requests] == ["json_schema", "json_object", "prompt", "json_schema"]
        assert client.structured_mode() == "json_schema"
        client.complete_many([LLMRequest(MESSAGES, YES_NO, 0.0, 1)])  # settled: no second walk down the modes
        assert [_mode(r) for r in stub.requests][4:] == ["json_schema", "json_schema"]


def test_a_reask_that_corrects_the_answer_is_cached_and_counted(workspace_dir: Path) -> None:
    replies = iter(['{"answer": "maybe"}', '{"answer": "NO"}'])
    with OpenAIStub(lambda request: chat_reply(next(replies))) as stub, Store.open(workspace_dir) as store:
        client = _client(stub, store)
        answer = client.complete(MESSAGES, response_schema=YES_NO)
        again = client.complete(MESSAGES, response_schema=YES_NO)
    assert (answer.text, answer.reasks, answer.calls, answer.prompt_tokens) == ('{"answer": "no"}', 1, 2, 20)
    assert (
        "does not match its schema at answer: 'maybe' is not one of ['yes', 'no']"
        in (stub.requests[1]["messages"][-1]["content"])
    )
    assert again.cached and again.text == answer.text and len(stub.requests) == 2
    assert (client.usage.calls, client.usage.cached, client.usage.reasks) == (2, 1, 1)


def test_an_invalid_answer_an_older_version_cached_is_asked_again_and_replaced(workspace_dir: Path) -> None:
    with OpenAIStub(lambda request: chat_reply(YES)) as stub, Store.open(workspace_dir) as store:
        client = _client(stub, store)
        with store.write() as db:
            db.execute(
                "INSERT INTO llm_cache (key, model, response, created_at) VALUES (?, ?, ?, 'then')",
                [_key(stub.api_base), MODEL, json.dumps({"text": "{}"})],
            )
        answer = client.complete(MESSAGES, response_schema=YES_NO)
        assert not answer.cached and answer.text == YES and len(stub.requests) == 1
        assert store.db.execute("SELECT response FROM llm_cache WHERE key = ?", [_key(stub.api_base)]).fetchone() == (
            json.dumps({"text": YES}),
        )


def test_plain_requests_are_sent_and_returned_as_they_are() -> None:
    with OpenAIStub(lambda request: chat_reply("Not JSON, and fine.")) as stub:
        client = _client(stub)
        answer = client.complete(MESSAGES)
    assert (answer.text, answer.mode, answer.calls) == ("Not JSON, and fine.", None, 1)
    assert stub.requests[0]["messages"] == MESSAGES and "response_format" not in stub.requests[0]
