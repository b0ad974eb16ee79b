"""The LLM verifier through the real litellm client against the scripted stub: PASS/FAIL with reasons, bad
answers asked again, batches, the judge of verifier-driven retry, and the `verifier` column of `spade sample`."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from spade_lsp import cli
from spade_lsp.config import resolve_file
from spade_lsp.errors import LLMError
from spade_lsp.judges import DEFAULT_CRITERIA, VERDICT_SCHEMA, LLMVerifier, read_verdict
from spade_lsp.judges._ask import RETRY_STRIDE
from spade_lsp.llm import LiteLLMClient
from spade_lsp.reliability import (
    SampleOptions,
    Verdict,
    llm_generator,
    retry_until_valid,
    retry_until_verified,
    sample_prompt,
)
from spade_lsp.workspace import Workspace
from tests.support.blurb import sampling_workspace
from tests.support.openai_stub import OpenAIStub, Reply, chat_reply, error_reply, user_text
from tests.support.sampling import with_knobs


def _client(stub: OpenAIStub) -> LiteLLMClient:
    return LiteLLMClient("openai/judge", api_base=stub.api_base, api_key="sk-test", backoff_s=0.01)


def _answer(verdict: str, *reasons: str) -> Reply:
    return chat_reply(json.dumps({"reasons": list(reasons), "verdict": verdict}))


def _output_of(request: dict[str, Any]) -> str:
    """The OUTPUT section of a verification request."""
    return user_text(request).split("\n\nOUTPUT:\n", 1)[1]


def _is_verification(request: dict[str, Any]) -> bool:
    """Told by the request's text, not its ``response_format``, which a lower structured mode leaves out."""
    return user_text(request).startswith("CRITERIA:\n")


def test_pass_and_fail_with_reasons_through_structured_output() -> None:
    def script(request: dict[str, Any]) -> Reply:
        if "cheap" in _output_of(request):
            return _answer("FAIL", "It calls the product cheap.", "  ", "It is too short.")
        return _answer("PASS", "Nothing wrong.")

    with OpenAIStub(script) as stub:
        verifier = LLMVerifier(_client(stub), "Never call the product cheap.")
        failed = verifier.verify("Write a blurb for a mug.", "A cheap mug.")
        passed = verifier.verify("Write a blurb for a lamp.", "A lovely lamp.")
        request = stub.requests[0]
    assert failed == Verdict(False, ("It calls the product cheap.", "It is too short."))
    assert passed == Verdict(True, ())  # a PASS names no failures, whatever the model added
    schema = request["response_format"]["json_schema"]
    assert schema["schema"] == dict(VERDICT_SCHEMA) and schema["strict"] is True
    assert schema["schema"]["properties"]["verdict"]["enum"] == ["PASS", "FAIL"]
    text = user_text(request)
    assert "CRITERIA:\nNever call the product cheap." in text
    assert "INPUT:\nWrite a blurb for a mug." in text and text.endswith("OUTPUT:\nA cheap mug.")
    assert request["temperature"] == 0.0 and request["messages"][0]["role"] == "system"


def test_read_verdict_names_each_problem() -> None:
    assert read_verdict('{"reasons": ["bad"], "verdict": "fail"}').value == Verdict(False, ("bad",))
    assert read_verdict('```json\n{"reasons": "one", "verdict": "FAIL"}\n```').value == Verdict(False, ("one",))
    assert read_verdict('{"reasons": [], "verdict": "MAYBE"}').problem == "out_of_scale"
    assert read_verdict('{"reasons": []}').problem == "malformed"
    assert read_verdict('{"reasons": [1, 2], "verdict": "PASS"}').problem == "malformed"
    assert read_verdict("PASS").problem == "malformed"
    assert read_verdict("I'm sorry, I can't evaluate this.").problem == "refusal"


def test_unusable_answers_are_asked_again_with_a_new_sample_index_then_raise() -> None:
    served: dict[str, int] = {}
    lock = threading.Lock()

    def script(request: dict[str, Any]) -> Reply:
        output = _output_of(request)
        with lock:
            served[output] = served.get(output, 0) + 1
            count = served[output]
        if output == "malformed once":
            return chat_reply("PASS, clearly" if count == 1 else json.dumps({"reasons": [], "verdict": "PASS"}))
        if output == "always out of scale":
            return _answer("MAYBE")
        if output == "refuses":
            return chat_reply("I cannot judge this.")
        if output == "fine":
            return _answer("PASS")
        return error_reply(400, "bad request")

    with OpenAIStub(script) as stub:
        client = _client(stub)
        verifier = LLMVerifier(client, retries=2)
        # a first answer settles the structured mode; were it prose, the LLM layer would try the lower modes
        assert verifier.verify("q", "fine") == Verdict(True)
        assert verifier.verify("q", "malformed once") == Verdict(True)
        with pytest.raises(LLMError, match=r"after 3 attempt\(s\): out_of_scale: 'MAYBE' is not one of"):
            verifier.verify("q", "always out of scale")
        with pytest.raises(LLMError, match="refusal: I cannot judge this"):
            LLMVerifier(client, retries=0).verify("q", "refuses")
        with pytest.raises(LLMError, match=r"error: .*bad request"):
            verifier.verify("q", "server error")
    # the first answer settled the format (json_schema): a later bare 400 is an error, sent once
    assert served == {"fine": 1, "malformed once": 2, "always out of scale": 3, "refuses": 1, "server error": 1}


def test_reasks_are_fresh_calls_under_new_cache_keys(tmp_path: Path) -> None:
    from spade_lsp.store import Store

    # an unusable answer that is still JSON: a prose one would make the client's first request try lower modes
    bad = json.dumps({"reasons": ["wrong"], "verdict": "MAYBE"})
    replies = iter([bad, json.dumps({"reasons": ["wrong"], "verdict": "FAIL"}), bad])
    with OpenAIStub(lambda request: chat_reply(next(replies))) as stub, Store.open(tmp_path) as store:
        client = LiteLLMClient("openai/judge", store=store, api_base=stub.api_base, api_key="sk-test")
        [answer] = LLMVerifier(client).judge_many([("q", "a")])
        # an unusable answer is never cached: the re-run asks the first attempt again, and the re-ask (under
        # its own key) is replayed from the cache
        again = LLMVerifier(client).judge_many([("q", "a")])
        keys = store.db.execute("SELECT count(*) FROM llm_cache").fetchone()[0]
        sent = [r["messages"] for r in stub.requests]
    assert answer.value == Verdict(False, ("wrong",)) and answer.attempts == 2 and answer.explanation == "wrong"
    assert again == [answer] and keys == 1 and len(sent) == 3 and sent[0] == sent[1] == sent[2]
    assert RETRY_STRIDE > 10_000


def test_verify_many_sends_one_batch_and_gives_none_where_no_usable_answer_came() -> None:
    lock = threading.Lock()
    in_flight = {"now": 0, "most": 0}

    def script(request: dict[str, Any]) -> Reply:
        with lock:
            in_flight["now"] += 1
            in_flight["most"] = max(in_flight["most"], in_flight["now"])
        output = _output_of(request)
        reply = (
            chat_reply("no idea")
            if output == "o3"
            else _answer("FAIL", f"{output} is wrong")
            if output in {"o1", "o5"}
            else _answer("PASS")
        )
        reply.delay_s = 0.05

        def done() -> None:
            with lock:
                in_flight["now"] -= 1

        threading.Timer(0.05, done).start()
        return reply

    pairs = [(f"i{k}", f"o{k}") for k in range(8)]
    with OpenAIStub(script) as stub:
        verdicts = LLMVerifier(_client(stub), retries=1).verify_many(pairs)
        sent = len(stub.requests)
    assert verdicts == [
        Verdict(True), Verdict(False, ("o1 is wrong",)), Verdict(True), None,
        Verdict(True), Verdict(False, ("o5 is wrong",)), Verdict(True), Verdict(True),
    ]  # fmt: skip
    assert sent == 8 + 1  # o3 asked again once
    assert in_flight["most"] >= 4  # the batch goes out concurrently, not one call after another
    assert LLMVerifier(_client(stub)).verify_many([]) == []


def test_the_judge_of_verifier_driven_retry_feeds_its_reasons_back() -> None:
    def script(request: dict[str, Any]) -> Reply:
        if _is_verification(request):
            output = _output_of(request)
            if "cheap" in output:
                return _answer("FAIL", "It calls the lamp cheap.", "It has no call to action.")
            return _answer("PASS")
        if "rejected for these reasons" in user_text(request):
            return chat_reply("A lovely lamp. Buy it today!")
        return chat_reply("A cheap lamp.")

    messages = [{"role": "user", "content": "Write a blurb for a lamp."}]
    with OpenAIStub(script) as stub:
        client = _client(stub)
        result = retry_until_verified(
            llm_generator(client, messages), LLMVerifier(client), input="Write a blurb for a lamp.", max_attempts=3
        )
        generations = [r for r in stub.requests if not _is_verification(r)]
        verifications = [r for r in stub.requests if _is_verification(r)]
    assert result.passed and result.output == "A lovely lamp. Buy it today!"
    assert [a.failures for a in result.attempts] == [("It calls the lamp cheap.", "It has no call to action."), ()]
    assert len(generations) == 2 and len(verifications) == 2
    second = generations[1]["messages"]
    assert second[-2] == {"role": "assistant", "content": "A cheap lamp."}
    assert "1. It calls the lamp cheap.\n2. It has no call to action." in second[-1]["content"]
    assert _output_of(verifications[1]) == "A lovely lamp. Buy it today!"
    assert "INPUT:\nWrite a blurb for a lamp." in user_text(verifications[0])


def test_an_unusable_verdict_is_a_failed_attempt_without_feedback() -> None:
    # unusable answers that are still JSON: a prose one would make the client's first request try lower modes
    answers = iter(['{"reasons": []}', '{"reasons": []}', json.dumps({"reasons": [], "verdict": "PASS"})])

    def script(request: dict[str, Any]) -> Reply:
        return chat_reply(next(answers)) if _is_verification(request) else chat_reply("an answer")

    seen: list[str | None] = []

    def generate(index: int, feedback: str | None) -> str:
        seen.append(feedback)
        return "an answer"

    with OpenAIStub(script) as stub:
        result = retry_until_verified(generate, LLMVerifier(_client(stub), retries=1), input="q", max_attempts=2)
    first = result.attempts[0]
    assert not first.passed and first.error is not None and first.error.startswith("verifier: LLMError:")
    assert "malformed" in first.error and seen == [None, None]
    assert result.passed and len(result.attempts) == 2


def test_as_validator_judges_input_and_output() -> None:
    def script(request: dict[str, Any]) -> Reply:
        text = user_text(request)
        return _answer("PASS") if '"product": "lamp"' in text and "lamp" in _output_of(request) else _answer("FAIL")

    with OpenAIStub(script) as stub:
        validator = LLMVerifier(_client(stub), "Mentions the product.").as_validator(minimum=0.8)
        outputs = ["a mug", "a lamp"]
        result = retry_until_valid(lambda i, feedback: outputs[i], [validator], input={"product": "lamp"})
    assert validator.name == "verifier" and validator.minimum == 0.8 and validator.takes_input
    assert validator.message == "LLM verifier: Mentions the product."
    assert result.output == "a lamp" and [a.failures for a in result.attempts] == [("verifier",), ()]


# -- the `verifier` column of `spade sample` --------------------------------------------------------------


class GeneratorAndVerifier:
    """Generation: every product's first sample says "cheap", the others not. Verification: FAIL when the
    output holds "lovely" for a Mug (the verifier sees something the assertions do not), PASS otherwise;
    a Shoe's verification is never usable."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Reply:
        if _is_verification(request):
            text = user_text(request)
            if "Shoe" in text:
                return chat_reply("I'm sorry, I cannot help with that.")
            if "Mug" in text and "lovely" in _output_of(request):
                return _answer("FAIL", "A mug is not lovely.")
            return _answer("PASS")
        product = user_text(request).split("for ", 1)[1].split(".", 1)[0]
        with self.lock:
            count = self.counts.get(product, 0)
            self.counts[product] = count + 1
        return chat_reply(f"A cheap {product}." if count == 0 else f"A lovely {product}.")


@pytest.fixture
def blurb(workspace_dir: Path) -> Path:
    return sampling_workspace(workspace_dir)


def test_sampling_adds_the_verifier_column_judged_in_batches(blurb: Path) -> None:
    overrides = {"model": "openai/stub", "assistant_model": "same", "verifier": "No product is called cheap."}
    with OpenAIStub(GeneratorAndVerifier()) as stub:
        given = {**overrides, "api_base": stub.api_base}
        with Workspace(blurb.parent, overrides=given) as workspace:
            settings = resolve_file(blurb.parent, blurb, given)
            knobs = with_knobs(settings, samples=4, early_stopping=False)
            document = sample_prompt(workspace, blurb, SampleOptions(), settings=knobs)
            results = workspace.store.db.execute(
                "SELECT input, sample, passed, error FROM sample_results WHERE run_id = ? AND validator = 2",
                [document["run_id"]],
            ).fetchall()
            mug = [
                text
                for (text,) in workspace.store.db.execute(
                    "SELECT output FROM sample_outputs WHERE run_id = ? AND input = 2 ORDER BY sample",
                    [document["run_id"]],
                )
            ]
        verifications = [r for r in stub.requests if _is_verification(r)]
    names = [v["name"] for v in document["validators"]]
    assert names == ["assert_short", "assert_no_cheap", "verifier"]  # the verifier is the last column
    verifier = document["validators"][2]
    # inputs Kettle, Lamp, Mug, Shoe x 4 samples: the Shoe's 4 are errors; the Mug's 3 "lovely" ones fail
    assert (verifier["successes"], verifier["trials"], verifier["errors"]) == (4 + 4 + 1, 12, 4)
    assert verifier["minimum"] == 0.9 and verifier["message"] == "LLM verifier: No product is called cheap."
    assert document["verifier"] == {"name": "verifier", "criteria": "No product is called cheap."}
    # the Mug: the first answer the server gave says "cheap", the others "lovely" (which sample was first depends on
    # which process sent it); each verdict is its own output's
    assert sorted(mug) == ["A cheap Mug."] + ["A lovely Mug."] * 3
    assert [cell[2] for cell in document["tensor"][2]] == [0 if "lovely" in text else 1 for text in mug]
    assert all(cell[2] is None for cell in document["tensor"][3])
    assert any("verifier gave no usable answer on 4 output(s)" in w and "refusal" in w for w in document["warnings"])
    assert len(verifications) == 16 + 4 * 2  # one per output; the Shoe's refusals asked twice more each
    assert {r["temperature"] for r in verifications} == {0.0}
    assert sorted(r[2] for r in results if r[2] is not None) == [0, 0, 0] + [1] * 9
    assert all(r[3].startswith("verifier refusal:") for r in results if r[2] is None)


def test_sampling_without_the_verifier_is_unchanged(blurb: Path) -> None:
    with OpenAIStub(GeneratorAndVerifier()) as stub:
        given = {"model": "openai/stub", "api_base": stub.api_base, "assistant_model": "same"}
        with Workspace(blurb.parent, overrides=given) as workspace:
            settings = resolve_file(blurb.parent, blurb, given)
            document = sample_prompt(
                workspace, blurb, SampleOptions(), settings=with_knobs(settings, samples=2, early_stopping=False)
            )
        assert not any(_is_verification(r) for r in stub.requests)
    assert [v["name"] for v in document["validators"]] == ["assert_short", "assert_no_cheap"]
    assert document["verifier"] is None


def test_spade_sample_verify_flag(blurb: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with OpenAIStub(GeneratorAndVerifier()) as stub:
        flags = ["--model", "openai/stub", "--api-base", stub.api_base, "--assistant-model", "same"]
        code = cli.main(["sample", str(blurb), "--samples", "2", "--no-early-stop", "--verify", "--json", *flags])
        document = json.loads(capsys.readouterr().out)
        assert code == 0
        code = cli.main(["sample", str(blurb), "--samples", "2", "--no-early-stop", *flags])
        out = capsys.readouterr().out
    assert code == 0 and "verifier" not in out
    assert document["verifier"] == {"name": "verifier", "criteria": DEFAULT_CRITERIA}
    verifier = next(v for v in document["validators"] if v["name"] == "verifier")
    assert (verifier["successes"], verifier["trials"], verifier["errors"]) == (5, 6, 2)
