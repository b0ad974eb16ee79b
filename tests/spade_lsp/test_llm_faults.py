"""The LLM layer under storms of faults, through the real litellm client against the loopback stub with a
deterministic fault schedule (:class:`tests.support.openai_stub.Faults`): 429s with and without Retry-After, 500s,
answers later than the timeout, bodies cut mid-JSON and bodies that are not JSON.

What must hold: a call is attempted at most 1 + max_retries times (counted at the stub); Retry-After is honoured
and bounded; what was answered is kept (plain calls, judges, sampling runs); and the counts the client and the
run report equal the stub's own counts of what it answered and what it refused.
"""

from __future__ import annotations

import email.utils
import itertools
import time
from pathlib import Path
from typing import Any

import pytest

from spade_lsp.config import resolve_file
from spade_lsp.errors import LLMError
from spade_lsp.judges import Question, Scale, ask_many
from spade_lsp.llm import Completion, LiteLLMClient, LLMRequest
from spade_lsp.reliability import SampleOptions, sample_prompt
from spade_lsp.workspace import Workspace
from tests.support.blurb import CheapEveryFourth, sampling_workspace
from tests.support.openai_stub import FAULT_KINDS, Faults, OpenAIStub, chat_reply, judge_model, user_text
from tests.support.sampling import with_knobs

RETRIES = 2
# The client's timeout: a prompt answer from the loopback stub must fit in it on a machine busy with the rest of
# the suite (at 0.5 s, an ordinary answer once timed out under load); a "timeout" fault answers well after it.
TIMEOUT_S = 1.5
LATE_S = 5.0  # how late a "timeout" fault answers
#: What each request gets on its successive attempts (then the script's answer): request ``qN`` follows pattern
#: N mod len. Patterns longer than RETRIES fail for good.
PATTERNS: list[list[str]] = [
    [],
    ["429"],
    ["429-retry-after", "500"],
    ["timeout"],
    ["truncated", "malformed"],
    ["malformed", "429"],
    ["500", "500", "500"],
    ["429-retry-after", "truncated", "timeout"],
    ["429", "429", "429", "429"],
]


def _pattern(key: str) -> list[str]:
    return PATTERNS[int(key.removeprefix("q")) % len(PATTERNS)]


def _plan(key: str, attempt: int) -> str | None:
    pattern = _pattern(key)
    return pattern[attempt] if attempt < len(pattern) else None


def _client(stub: OpenAIStub, **kwargs: Any) -> LiteLLMClient:
    options: dict[str, Any] = {"max_retries": RETRIES, "timeout_s": TIMEOUT_S, "backoff_s": 0.01, "concurrency": 16}
    return LiteLLMClient("openai/stub", api_base=stub.api_base, api_key="sk-test", **(options | kwargs))


def _faults_sent(faults: Faults) -> int:
    return sum(n for kind, n in faults.counts().items() if kind != "ok")


def test_a_storm_stays_within_the_retry_bound_keeps_the_answers_and_counts_what_the_server_did() -> None:
    faults = Faults(lambda request: chat_reply(f"answer to {user_text(request)}"), _plan, timeout_delay_s=LATE_S)
    keys = [f"q{n}" for n in range(45)]
    with OpenAIStub(faults) as stub:
        client = _client(stub)
        started = time.monotonic()
        answers = client.complete_many([LLMRequest([{"role": "user", "content": key}]) for key in keys])
        elapsed = time.monotonic() - started
    assert set(faults.counts()) == {"ok", *FAULT_KINDS}  # every kind of fault was sent
    failing = 0
    for key, answer in zip(keys, answers, strict=True):
        pattern = _pattern(key)
        attempts = faults.attempts(key)
        assert len(attempts) <= 1 + RETRIES, (key, attempts)
        if len(pattern) <= RETRIES:  # answered after its faults, and kept
            assert attempts == [*pattern, "ok"], key
            assert isinstance(answer, Completion) and answer.text == f"answer to {key}"
            assert answer.retries == len(pattern)
        else:  # failed for good after exactly 1 + RETRIES attempts
            failing += 1
            assert attempts == pattern[: 1 + RETRIES], key
            assert isinstance(answer, LLMError) and f"after {RETRIES} retries" in str(answer)
    usage = client.usage
    assert failing == 15
    assert usage.calls == faults.counts()["ok"] == len(keys) - failing
    assert usage.failed == failing
    assert usage.retries + usage.failed == _faults_sent(faults)
    # a late answer was given up at the client's timeout: the retry came long before the late answer would have
    late = [
        then - at
        for history in faults.sent.values()
        for (kind, at), (_, then) in itertools.pairwise(history)
        if kind == "timeout"
    ]
    assert late and max(late) < LATE_S - 0.5, late
    assert elapsed < 60


def test_retry_after_is_honoured() -> None:
    faults = Faults(lambda request: chat_reply("ok"), lambda key, attempt: "429-retry-after" if attempt == 0 else None)
    faults.retry_after = 0.4
    with OpenAIStub(faults) as stub:
        answer = _client(stub).complete([{"role": "user", "content": "wait"}])
    assert answer.text == "ok" and answer.retries == 1
    [(first, at), (second, then)] = faults.sent["wait"]
    assert (first, second) == ("429-retry-after", "ok")
    assert 0.4 <= then - at < 0.4 + 1.0  # not the 10 ms backoff: what the server asked


def test_retry_after_as_an_http_date_is_honoured() -> None:
    faults = Faults(lambda request: chat_reply("ok"), lambda key, attempt: "429-retry-after" if attempt == 0 else None)
    faults.retry_after = lambda: email.utils.formatdate(time.time() + 2.0, usegmt=True)  # dated as it is sent
    with OpenAIStub(faults) as stub:
        answer = _client(stub).complete([{"role": "user", "content": "wait"}])
    [(_, at), (_, then)] = faults.sent["wait"]
    assert answer.text == "ok" and then - at >= 0.9  # the date has whole seconds: at least one of the two


def test_a_retry_after_beyond_the_bound_fails_at_once() -> None:
    faults = Faults(lambda request: chat_reply("ok"), lambda key, attempt: "429-retry-after")
    faults.retry_after = 3600
    with OpenAIStub(faults) as stub:
        client = _client(stub, max_retry_after_s=1.0)
        with pytest.raises(LLMError, match="asks to wait 3600 s, longer than the 1 s allowed"):
            client.complete([{"role": "user", "content": "later"}])
        failed_at = time.monotonic()
    # timed from the refusal's arrival at the server: litellm's first import (seconds on a slow machine) is not
    # the wait under test
    [(_, refused_at)] = faults.sent["later"]
    assert failed_at - refused_at < 1.0
    assert faults.attempts("later") == ["429-retry-after"]  # no retry the server would only refuse
    assert (client.usage.failed, client.usage.retries) == (1, 0)


def test_judges_under_a_storm_keep_their_valid_answers_and_record_the_failed_calls() -> None:
    faults = Faults(judge_model(0.0), _plan, timeout_delay_s=LATE_S)
    keys = [f"q{n}" for n in range(27)]
    questions = [Question(({"role": "user", "content": key},), Scale.boolean()) for key in keys]
    with OpenAIStub(faults) as stub:
        client = _client(stub)
        answers = ask_many(client, questions)
    for key, answer in zip(keys, answers, strict=True):
        assert len(faults.attempts(key)) <= 1 + RETRIES, key
        if len(_pattern(key)) <= RETRIES:
            assert answer.valid and isinstance(answer.value, bool), (key, answer)
        else:
            assert answer.problem == "error" and answer.attempts == 1, (key, answer)
    valid = sum(answer.valid for answer in answers)
    assert valid == faults.counts()["ok"] == client.usage.calls == 27 - 9
    assert client.usage.failed == 9
    assert client.usage.retries + client.usage.failed == _faults_sent(faults)


def _sampling_plan(key: str, attempt: int) -> str | None:
    """The mug is never answered; the other products get a fault on every second arrival, kinds in turn."""
    if "Mug" in key:
        return "500"
    return FAULT_KINDS[(attempt // 2) % len(FAULT_KINDS)] if attempt % 2 == 0 else None


def test_sampling_under_a_storm_keeps_what_was_answered_and_reports_the_servers_counts(
    workspace_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prompt = sampling_workspace(workspace_dir)
    clients: list[Any] = []
    original = Workspace.llm_client

    def keep(self: Workspace, *args: Any, **kwargs: Any) -> Any:
        clients.append(original(self, *args, **kwargs))
        return clients[-1]

    monkeypatch.setattr(Workspace, "llm_client", keep)
    faults = Faults(CheapEveryFourth(), _sampling_plan, timeout_delay_s=LATE_S)
    samples = 6
    with OpenAIStub(faults) as stub:
        overrides = {
            "model": "openai/stub",
            "api_base": stub.api_base,
            "classifier": "offline",
            "llm_max_retries": RETRIES,
            "llm_timeout_s": TIMEOUT_S,
            "llm_concurrency": 24,
        }
        with Workspace(workspace_dir, overrides=overrides) as workspace:
            settings = resolve_file(workspace_dir, prompt, overrides)
            knobs = with_knobs(settings, samples=samples, early_stopping=False)
            document = sample_prompt(workspace, prompt, SampleOptions(), settings=knobs)
            rows = workspace.store.db.execute(
                "SELECT output IS NOT NULL, COUNT(*) FROM sample_outputs WHERE run_id = ? GROUP BY 1",
                [document["run_id"]],
            ).fetchall()
    [client] = clients
    counts = faults.counts()
    mug = next(key for key in faults.sent if "Mug" in key)
    # every call attempted at most 1 + retries times: per product, samples x (1 + retries) at most
    for key in faults.sent:
        assert len(faults.attempts(key)) <= samples * (1 + RETRIES), key
    assert faults.attempts(mug) == ["500"] * (samples * (1 + RETRIES))
    # what the run reports is what the server did
    assert document["calls"] == counts["ok"] == client.usage.calls
    assert document["calls_failed"] == client.usage.failed >= samples
    assert client.usage.retries + client.usage.failed == sum(n for kind, n in counts.items() if kind != "ok")
    assert any(f"{document['calls_failed']} of {4 * samples} calls failed" in w for w in document["warnings"])
    # and what was answered is kept: stored, and counted in the tensor
    assert dict(rows) == {1: counts["ok"], 0: document["calls_failed"]}
    assert {v["name"]: v["trials"] for v in document["validators"]} == {
        "assert_short": counts["ok"],
        "assert_no_cheap": counts["ok"],
    }
