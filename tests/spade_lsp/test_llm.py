"""The LLM layer through the real litellm client against a scripted server on loopback."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from spade_lsp._roles import make_client, pipeline_endpoint, require
from spade_lsp.config import Settings
from spade_lsp.errors import LLMError, ModelNotConfiguredError
from spade_lsp.llm import (
    Completion,
    InvalidAnswerError,
    LiteLLMClient,
    LLMRequest,
    _import_litellm,
    parse_json_answer,
)
from spade_lsp.store import Store
from tests.support.openai_stub import OpenAIStub, Reply, chat_reply, error_reply, user_text

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


def test_litellm_does_not_log_spades_calls_and_still_prices_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """litellm's success logging after each call (for callbacks spade never registers) is skipped for spade's
    calls; the same call made directly is logged, and the price litellm computes for a known model still reaches
    spade's usage."""
    import asyncio

    import litellm.utils

    _import_litellm()
    logged: list[str] = []

    def recording(logging_obj: Any, **kwargs: Any) -> Any:
        logged.append(logging_obj.model)
        return asyncio.sleep(0)

    monkeypatch.setattr(litellm.utils, "_client_async_logging_helper", recording)
    with OpenAIStub(lambda request: chat_reply("hello", prompt_tokens=1000, completion_tokens=1000)) as stub:
        answer = LiteLLMClient("openai/gpt-4o-mini", api_base=stub.api_base, api_key="sk-test").complete(MESSAGES)
        assert logged == []
        direct = litellm.acompletion(model="openai/gpt-4o-mini", api_base=stub.api_base, api_key="k", messages=MESSAGES)
        asyncio.run(direct)
    assert logged == ["gpt-4o-mini"]
    assert answer.text == "hello" and answer.cost is not None and answer.cost > 0


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


def test_the_cache_key_includes_the_endpoint(workspace_dir: Path) -> None:
    """The same model name on two servers is two models: a run against one never reuses the other's answers,
    and rows keyed as before the endpoint was part of the key match nothing."""
    with (
        OpenAIStub(lambda request: chat_reply("from A")) as first,
        OpenAIStub(lambda request: chat_reply("from B")) as second,
        Store.open(workspace_dir) as store,
    ):
        assert first.port != second.port
        old_key = hashlib.sha256(
            json.dumps(
                {"model": "openai/stub-model", "messages": MESSAGES, "parameters": {"temperature": 0.0}, "sample": 0},
                sort_keys=True,
                ensure_ascii=False,
            ).encode("utf-8")
        ).hexdigest()
        with store.write() as db:
            db.execute(
                "INSERT INTO llm_cache (key, model, response, created_at) VALUES (?, ?, ?, 'then')",
                [old_key, "openai/stub-model", json.dumps({"text": "stale"})],
            )
        a = _client(first, store).complete(MESSAGES)
        b = _client(second, store).complete(MESSAGES)
        assert (a.text, a.cached, b.text, b.cached) == ("from A", False, "from B", False)
        assert len(first.requests) == len(second.requests) == 1
        again_a, again_b = _client(first, store).complete(MESSAGES), _client(second, store).complete(MESSAGES)
        assert (again_a.text, again_a.cached, again_b.text, again_b.cached) == ("from A", True, "from B", True)
        assert len(first.requests) == len(second.requests) == 1
        keys = {row[0] for row in store.db.execute("SELECT key FROM llm_cache").fetchall()}
    assert len(keys) == 3 and old_key in keys  # the old row is left alone, and unused


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


@pytest.mark.parametrize(
    ("reply", "plain"),
    [
        (
            error_reply(
                400,
                "This model's maximum context length is 2048 tokens. However, you requested 4460 tokens (4400 in "
                "the messages, 60 in the completion). Please reduce the length of the messages or completion.",
            ),
            "the request is longer than the model's context window (2,048 tokens; this request needs 4,460): use a "
            "model with a larger window, or a shorter prompt",
        ),
        (error_reply(401, "Incorrect API key provided: sk-abc"), "the provider refused the API key"),
        (error_reply(404, "The model `stub-model` does not exist"), "the endpoint has no model by this name"),
    ],
)
def test_a_failed_call_is_said_in_plain_words_with_its_fix(reply: Reply, plain: str) -> None:
    """What the provider said goes to the log; the error a user reads names the model, what went wrong and
    what to do, through the real litellm client's own mapping of the provider's answer."""
    with OpenAIStub(lambda request: reply) as stub, pytest.raises(LLMError) as failed:
        _client(stub, max_retries=0).complete(MESSAGES)
    message = str(failed.value)
    assert message.startswith(f"openai/stub-model: {plain}"), message
    assert "Error" not in message and "sk-abc" not in message and "litellm" not in message.lower()


def test_every_call_has_a_timeout() -> None:
    _import_litellm()  # seconds on a slow machine, and no part of a call's time
    with OpenAIStub(lambda request: Reply(body=chat_reply("late").body, delay_s=3.0)) as stub:
        started = time.monotonic()
        with pytest.raises(LLMError):
            _client(stub, timeout_s=0.3, max_retries=1).complete(MESSAGES)
        assert time.monotonic() - started < 2.5


def test_structured_output_sends_the_schema_and_malformed_json_is_an_error() -> None:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    with OpenAIStub(lambda request: chat_reply("{not json")) as stub:
        with pytest.raises(LLMError, match="not valid JSON"):
            _client(stub, max_reasks=0).complete(MESSAGES, response_schema=schema)
        sent = stub.requests[0]["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["schema"] == schema
    with pytest.raises(LLMError, match="not valid JSON"):
        parse_json_answer(Completion(text="{not json"), what="a test")
    assert parse_json_answer(Completion(text='```json\n{"ok": true}\n```'), what="x") == {"ok": True}


def test_a_request_may_bound_its_own_reasks() -> None:
    """A caller with its own re-ask loop (the judges) sends ``reasks=0``: one call, then the model's answer in
    the error; None keeps the client's ``max_reasks``."""
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    with OpenAIStub(lambda request: chat_reply('{"ok": "maybe"}')) as stub:
        client = _client(stub, max_reasks=2)
        once, default = client.complete_many(
            [LLMRequest(MESSAGES, schema, reasks=0), LLMRequest(MESSAGES, schema, sample_index=1)]
        )
        calls = len(stub.requests)
    assert isinstance(once, InvalidAnswerError) and once.text == '{"ok": "maybe"}' and "re-ask" not in str(once)
    assert isinstance(default, InvalidAnswerError) and "after 2 re-asks" in str(default)
    assert calls == 1 + 3 and client.usage.reasks == 2
    with pytest.raises(ValueError, match="reasks must be at least 0"):
        LLMRequest(MESSAGES, schema, reasks=-1)


def test_malformed_http_body_is_an_llm_error() -> None:
    with OpenAIStub(lambda request: Reply(body="<html>not json</html>")) as stub, pytest.raises(LLMError):
        _client(stub, max_retries=0).complete(MESSAGES)


def client_from_settings(settings: Settings) -> LiteLLMClient:
    """The pipeline's client as a workspace makes it."""
    return make_client(require(pipeline_endpoint(settings), "pipeline"), settings)


def test_no_model_configured_says_how_to_configure_one() -> None:
    with pytest.raises(ModelNotConfiguredError, match=r"\[tool.spade\]"):
        client_from_settings(Settings())  # no `model`


def test_api_key_comes_from_the_named_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_KEY", "sk-from-env")
    with OpenAIStub(lambda request: chat_reply("ok")) as stub:
        settings = Settings(model="openai/stub-model", api_base=stub.api_base, api_key_env="MY_KEY")
        client = client_from_settings(settings)
        assert client.complete(MESSAGES).text == "ok"
    assert stub.headers[0]["Authorization"] == "Bearer sk-from-env"


# -- concurrency, rate limits, batches, accounting -----------------------------------------------------------


class _InFlight:
    """A script that answers after ``delay_s`` and records the most requests it ever held at once."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self.now = 0
        self.peak = 0
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Reply:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        threading.Timer(self.delay_s, self._done).start()
        return chat_reply(f"echo {user_text(request)}", delay_s=self.delay_s)

    def _done(self) -> None:
        with self.lock:
            self.now -= 1


def _requests(n: int) -> list[LLMRequest]:
    return [LLMRequest([{"role": "user", "content": f"q{i}"}], temperature=1.0, sample_index=i) for i in range(n)]


def test_batches_run_concurrently_up_to_the_limit_and_keep_order() -> None:
    script = _InFlight(0.15)
    with OpenAIStub(script) as stub:
        client = _client(stub, concurrency=4)
        arrived: list[int] = []
        answers = client.complete_many(_requests(12), on_result=lambda i, answer: arrived.append(i))
    assert [a.text for a in answers if isinstance(a, Completion)] == [f"echo q{i}" for i in range(12)]
    assert script.peak == 4  # concurrent (twelve in a row would peak at 1), never more than the limit
    assert sorted(arrived) == list(range(12))
    # the throughput this buys is a figure: tests/benchmarks/test_llm_bench.py
    assert client.usage.calls == 12 and client.usage.prompt_tokens == 120


def test_requests_per_minute_limit_spaces_out_requests() -> None:
    with OpenAIStub(lambda request: chat_reply("ok")) as stub:
        client = _client(stub, concurrency=8, rpm=120)  # two per second once the bucket is drained
        started = time.monotonic()
        client.complete_many(_requests(124))
        elapsed = time.monotonic() - started
    assert len(stub.requests) == 124
    assert elapsed >= 1.5, elapsed  # 120 at once (the bucket), then 4 more at 2 per second


def test_a_burst_of_429s_is_absorbed_honouring_retry_after() -> None:
    state = {"n": 0}
    lock = threading.Lock()

    def script(request: dict[str, Any]) -> Reply:
        with lock:
            state["n"] += 1
            n = state["n"]
        if n <= 6:  # the first six requests of the burst are rate limited
            return error_reply(429, "rate limited", retry_after=0.2)
        return chat_reply("ok")

    with OpenAIStub(script) as stub:
        client = _client(stub, concurrency=6)
        started = time.monotonic()
        answers = client.complete_many(_requests(6))
        elapsed = time.monotonic() - started
    assert all(isinstance(a, Completion) and a.text == "ok" for a in answers)
    assert elapsed >= 0.2  # waited as the server asked
    assert client.usage.retries == 6 and client.usage.failed == 0


def test_timeouts_are_retried_and_then_reported() -> None:
    replies = iter([Reply(body=chat_reply("late").body, delay_s=2.0), chat_reply("in time")])
    with OpenAIStub(lambda request: next(replies)) as stub:
        answer = _client(stub, timeout_s=0.3).complete(MESSAGES)
    assert answer.text == "in time" and answer.retries == 1


def test_a_failed_request_in_a_batch_does_not_sink_the_others() -> None:
    def script(request: dict[str, Any]) -> Reply:
        return error_reply(400, "bad") if user_text(request) == "q1" else chat_reply("fine")

    with OpenAIStub(script) as stub:
        client = _client(stub)
        answers = client.complete_many(_requests(3))
    assert isinstance(answers[1], LLMError) and "BadRequestError" in str(answers[1])
    assert [a.text for a in (answers[0], answers[2]) if isinstance(a, Completion)] == ["fine", "fine"]
    assert client.usage.failed == 1 and client.usage.calls == 2


def test_stopping_a_batch_abandons_what_was_not_sent() -> None:
    with OpenAIStub(lambda request: chat_reply("x", delay_s=0.05)) as stub:
        client = _client(stub, concurrency=1)
        done: list[int] = []
        answers = client.complete_many(
            _requests(20), on_result=lambda i, a: done.append(i), should_stop=lambda: len(done) >= 3
        )
    stopped = [a for a in answers if isinstance(a, LLMError)]
    assert stopped and all("stopped" in str(a) for a in stopped)
    assert len(stub.requests) < 20


def _requests_in_flight() -> list[str]:
    """The tasks of a batch still alive on the LLM layer's event loop."""
    import asyncio

    from spade_lsp.llm import _LoopThread

    async def alive() -> list[str]:
        names = [getattr(task.get_coro(), "__qualname__", "") for task in asyncio.all_tasks()]
        return [name for name in names if "complete_many" in name or "_acall_each" in name or "acompletion" in name]

    return _LoopThread.get().submit(alive()).result(timeout=10)


def test_a_caller_that_stops_a_batch_by_raising_leaves_no_request_in_flight() -> None:
    """A progress callback that raises (a user's stop) ends the batch: nothing more is sent, and every request
    already sent has finished before the error reaches the caller, none left running (or never awaited) later."""

    class Stop(Exception):
        pass

    def stop_at_first(index: int, answer: Completion | LLMError) -> None:
        raise Stop

    with OpenAIStub(lambda request: chat_reply("x", delay_s=0.3)) as stub:
        client = _client(stub, concurrency=4)
        with pytest.raises(Stop):
            client.complete_many(_requests(12), on_result=stop_at_first)
        assert _requests_in_flight() == []
    assert len(stub.requests) < 12


def test_a_batch_answers_cached_requests_without_calling(workspace_dir: Path) -> None:
    echo = OpenAIStub(lambda request: chat_reply(f"echo {user_text(request)}"))
    with echo as stub, Store.open(workspace_dir) as store:
        _client(stub, store).complete_many(_requests(5))
        client = _client(stub, store)
        answers = client.complete_many(_requests(8))
    assert [a.cached for a in answers if isinstance(a, Completion)] == [True] * 5 + [False] * 3
    assert len(stub.requests) == 8 and client.usage.cached == 5 and client.usage.calls == 3


def test_cost_comes_from_the_local_price_map() -> None:
    with OpenAIStub(lambda request: chat_reply("hi", prompt_tokens=1000, completion_tokens=1000)) as stub:
        priced = LiteLLMClient("openai/gpt-4o-mini", api_base=stub.api_base, api_key="k").complete(MESSAGES)
        unpriced = _client(stub).complete(MESSAGES)
    # gpt-4o-mini: $0.15 per million input tokens and $0.60 per million output tokens
    assert priced.cost == pytest.approx(1000 * 0.15e-6 + 1000 * 0.60e-6)
    assert unpriced.cost is None


def test_a_wrong_schema_is_an_error_naming_where() -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
        "required": ["answer"],
    }
    with pytest.raises(LLMError, match="does not match its schema at answer"):
        parse_json_answer(Completion(text='{"answer": "maybe"}'), what="a yes/no check", schema=schema)
    with pytest.raises(LLMError, match="does not match its schema"):
        parse_json_answer(Completion(text='{"verdict": "yes"}'), what="a yes/no check", schema=schema)
    assert parse_json_answer(Completion(text='{"answer": "no"}'), what="x", schema=schema) == {"answer": "no"}


def test_client_from_settings_applies_the_limits() -> None:
    settings = Settings(model="openai/x", api_base="http://127.0.0.1:9/v1", llm_concurrency=3, llm_rpm=30)
    client = client_from_settings(settings)
    assert (client.concurrency, client.rpm, client.max_retries) == (3, 30, 3)


def test_an_openai_compatible_call_is_prepared_in_the_loop_thread_not_handed_to_another() -> None:
    """litellm runs its synchronous ``completion`` step through the loop's default executor; for a provider whose
    step only builds the request that hop costs more than the step, so it runs inline: a fresh process that makes
    40 calls starts no executor thread. Answers and their order are unchanged."""
    script = """
import json, sys, threading
from spade_lsp.llm import LiteLLMClient, LLMRequest
client = LiteLLMClient("openai/stub-model", api_base=sys.argv[1], api_key="sk-test", concurrency=8)
answers = client.complete_many([LLMRequest([{"role": "user", "content": f"q{i}"}], None, 0.0, i) for i in range(40)])
print(json.dumps({"texts": [a.text for a in answers], "threads": [t.name for t in threading.enumerate()]}))
"""
    with OpenAIStub(lambda request: chat_reply(f"re: {user_text(request)}")) as stub:
        done = subprocess.run(
            [sys.executable, "-c", script, stub.api_base], capture_output=True, text=True, timeout=300, check=True
        )
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["texts"] == [f"re: q{i}" for i in range(40)]
    assert "spade-llm" in seen["threads"]  # the loop's own thread
    assert not [name for name in seen["threads"] if name.startswith("spade-llm-step")]


def test_litellms_import_is_frozen_without_a_collection_walking_it() -> None:
    """What importing litellm builds is frozen before cyclic collection resumes: no collection runs while
    ``_import_litellm`` does (one would walk half a million new objects, a few tenths of a second of a cold start),
    and collection then runs as usual on what is allocated after."""
    script = """
import gc, json
collections = []
gc.callbacks.append(lambda phase, info: phase == "start" and collections.append(info["generation"]))
from spade_lsp.llm import _import_litellm
before = len(collections)
_import_litellm()
during = len(collections) - before
young = [[index] for index in range(100_000)]
print(json.dumps({"during": during, "after": len(collections) - before - during,
                  "frozen": gc.get_freeze_count(), "enabled": gc.isenabled()}))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True)
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["during"] == 0
    assert seen["frozen"] > 100_000  # litellm's modules, classes and tables
    assert seen["enabled"] and seen["after"] >= 1


def test_litellms_import_leaves_its_default_encoding_to_its_first_use() -> None:
    """litellm's import loads tiktoken's ``cl100k_base`` for token counting (a few tenths of a second of a cold
    start) that a call never needs when the server reports its usage: it is built when first used, and then counts
    exactly as tiktoken's own encoding does, an :class:`tiktoken.Encoding` for litellm's type checks."""
    script = """
import json
from spade_lsp.llm import _import_litellm
litellm = _import_litellm()
import tiktoken
from tiktoken_ext.openai_public import cl100k_base
from litellm.litellm_core_utils.default_encoding import encoding
loaded_at_import = "_core_bpe" in encoding.__dict__
text = "Keep it under 100 words, please. <|endoftext|> Ünïcödé ✓"
own = tiktoken.Encoding(**cl100k_base())
print(json.dumps({
    "loaded_at_import": loaded_at_import,
    "is_encoding": isinstance(encoding, tiktoken.Encoding),
    "same": encoding.encode(text, disallowed_special=()) == own.encode(text, disallowed_special=()),
    "name": encoding.name,
    "counted": litellm.token_counter(model="gpt-3.5-turbo", text=text),
    "expected": len(own.encode(text, disallowed_special=())),
}))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True)
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["loaded_at_import"] is False
    assert seen["is_encoding"] and seen["same"] and seen["name"] == "cl100k_base"
    assert seen["counted"] == seen["expected"] > 10


def test_a_prepared_request_dropped_by_a_stopped_run_is_closed_not_left_unawaited() -> None:
    """litellm's inline step returns the request's coroutine; a run stopped before it is awaited cancels the
    step's future, and the coroutine is closed (no request, no "never awaited" warning)."""
    import asyncio
    import inspect

    from spade_lsp import llm

    async def request() -> str:
        return "sent"

    prepared = request()

    async def stopped_before_awaiting() -> None:
        token = llm._inline_dispatch.set(True)
        try:
            step = asyncio.get_running_loop().run_in_executor(llm._DispatchExecutor(), lambda: prepared)
        finally:
            llm._inline_dispatch.reset(token)
        step.cancel()  # the task stopped before the step's result reached it
        await asyncio.sleep(0)

    asyncio.run(stopped_before_awaiting())
    assert inspect.getcoroutinestate(prepared) == inspect.CORO_CLOSED


def test_models_defined_while_litellm_imports_are_built_on_first_use_and_validate_the_same() -> None:
    import pydantic

    from spade_lsp.llm import _litellm_import_lock, _models_built_on_first_use

    with _litellm_import_lock, _models_built_on_first_use():

        class Inside(pydantic.BaseModel):
            count: int

    class After(pydantic.BaseModel):
        count: int

    assert not Inside.__pydantic_complete__  # not built at definition: litellm defines thousands, a call uses dozens
    assert After.__pydantic_complete__  # the switch is pydantic's base configuration, restored after the block
    assert "defer_build" not in pydantic.BaseModel.model_config
    assert Inside(count="3").count == 3 and Inside.__pydantic_complete__
    with pytest.raises(pydantic.ValidationError):
        Inside(count="three")
