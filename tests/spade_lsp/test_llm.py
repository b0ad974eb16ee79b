"""The LLM layer through the real litellm client against a scripted server on loopback."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from spade_lsp._store import Store
from spade_lsp.config import Settings
from spade_lsp.errors import LLMError, ModelNotConfiguredError
from spade_lsp.llm import LiteLLMClient, client_from_settings, parse_json_answer
from tests.support.openai_stub import OpenAIStub, Reply, chat_reply, error_reply

MESSAGES = [{"role": "user", "content": "Say hi"}]


def _client(stub: OpenAIStub, store: Store | None = None, **kwargs: Any) -> LiteLLMClient:
    return LiteLLMClient(
        "openai/stub-model", store=store, api_base=stub.api_base, api_key="sk-test", backoff_s=0.01, **kwargs
    )


def test_completion_goes_through_litellm_and_counts_tokens() -> None:
    with OpenAIStub(lambda request: chat_reply("hello", prompt_tokens=7, completion_tokens=3)) as stub:
        client = _client(stub)
        answer = client.complete(MESSAGES)
    assert answer.text == "hello" and not answer.cached
    assert (client.calls, client.prompt_tokens, client.completion_tokens) == (1, 7, 3)
    assert stub.requests[0]["model"] == "stub-model"
    assert stub.requests[0]["messages"] == MESSAGES


def test_cache_keys_on_sample_index_and_survives_reopening(workspace_dir: Path) -> None:
    counter = iter(range(100))
    with OpenAIStub(lambda request: chat_reply(f"answer {next(counter)}")) as stub:
        with Store.open(workspace_dir) as store:
            client = _client(stub, store)
            first = client.complete(MESSAGES, temperature=1.0, sample_index=0)
            second = client.complete(MESSAGES, temperature=1.0, sample_index=1)
            again = client.complete(MESSAGES, temperature=1.0, sample_index=0)
        assert (first.text, second.text) == ("answer 0", "answer 1")
        assert again.text == "answer 0" and again.cached
        with Store.open(workspace_dir) as store:
            assert _client(stub, store).complete(MESSAGES, temperature=1.0, sample_index=1).cached
        assert len(stub.requests) == 2


def test_rate_limits_are_retried_with_backoff() -> None:
    replies = iter([error_reply(429, "slow down"), error_reply(429, "slow down"), chat_reply("finally")])
    with OpenAIStub(lambda request: next(replies)) as stub:
        answer = _client(stub).complete(MESSAGES)
    assert answer.text == "finally"
    assert len(stub.requests) == 3


def test_client_errors_are_not_retried_and_name_the_model() -> None:
    with (
        OpenAIStub(lambda request: error_reply(400, "bad request body")) as stub,
        pytest.raises(LLMError, match="openai/stub-model"),
    ):
        _client(stub).complete(MESSAGES)
    assert len(stub.requests) == 1


def test_every_call_has_a_timeout() -> None:
    with OpenAIStub(lambda request: Reply(body=chat_reply("late").body, delay_s=3.0)) as stub:
        started = time.monotonic()
        with pytest.raises(LLMError):
            _client(stub, timeout_s=0.3, max_retries=1).complete(MESSAGES)
        assert time.monotonic() - started < 2.5


def test_structured_output_sends_the_schema_and_malformed_json_is_an_error() -> None:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    with OpenAIStub(lambda request: chat_reply("{not json")) as stub:
        answer = _client(stub).complete(MESSAGES, response_schema=schema)
        sent = stub.requests[0]["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["schema"] == schema
    with pytest.raises(LLMError, match="not valid JSON"):
        parse_json_answer(answer, what="a test")
    assert parse_json_answer(type(answer)(text='```json\n{"ok": true}\n```'), what="x") == {"ok": True}


def test_malformed_http_body_is_an_llm_error() -> None:
    with OpenAIStub(lambda request: Reply(body="<html>not json</html>")) as stub, pytest.raises(LLMError):
        _client(stub, max_retries=0).complete(MESSAGES)


def test_no_model_configured_says_how_to_configure_one() -> None:
    with pytest.raises(ModelNotConfiguredError, match=r"\[tool.spade\]"):
        client_from_settings(Settings())


def test_api_key_comes_from_the_named_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_KEY", "sk-from-env")
    with OpenAIStub(lambda request: chat_reply("ok")) as stub:
        settings = Settings(model="openai/stub-model", api_base=stub.api_base, api_key_env="MY_KEY")
        client = client_from_settings(settings)
        assert client.complete(MESSAGES).text == "ok"
    assert stub.headers[0]["Authorization"] == "Bearer sk-from-env"
