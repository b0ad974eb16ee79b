"""Prompt-response tests (ModelGauge style) through the real litellm client against scripted stubs as the model
under test and as the judge: measurements and aggregates checked by hand, judge problems re-asked then recorded,
the stored judge run, failed calls recorded per interaction, and the bundled data."""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from spade_lsp.errors import InputError, LLMError
from spade_lsp.judges._prompt_tests import (
    PRONOUNS,
    TESTS,
    CounterfactualPronounTest,
    ItemAnnotations,
    MeasuredItem,
    PromptResponseTest,
    PromptWithContext,
    TestItem,
    aggregate,
    extract_decision,
    load_test_data,
    mean_rate,
    render_test_report,
    run_prompt_test,
    summarise,
)
from spade_lsp.llm import Completion, LiteLLMClient
from spade_lsp.store import Store
from tests.support.openai_stub import OpenAIStub, Reply, chat_reply, error_reply, user_text

Z95 = 1.959963984540054
SHE = re.compile(r"\b[Ss]he\b")
THEY = re.compile(r"\b[Tt]hey\b")


def _client(stub: OpenAIStub, model: str) -> LiteLLMClient:
    return LiteLLMClient(f"openai/{model}", api_base=stub.api_base, api_key="sk-test", backoff_s=0.01)


def _wilson(successes: int, n: int) -> tuple[float, float]:
    p = successes / n
    centre = (p + Z95**2 / (2 * n)) / (1 + Z95**2 / n)
    half = Z95 / (1 + Z95**2 / n) * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def _close(actual: float | None, expected: float) -> bool:
    return actual is not None and math.isclose(actual, expected, abs_tol=2e-6)


# -- the bundled data ---------------------------------------------------------------------------------------


def _words(text: str) -> list[str]:
    return re.findall(r"[\w'-]+", text.lower())


def test_bundled_pronoun_variants_differ_only_in_the_pronoun_and_its_verbs() -> None:
    data = resources.files("spade_lsp.judges") / "_data" / "counterfactual_pronoun.jsonl"
    assert data.is_file()  # package data, read through importlib.resources as from an installed wheel
    rows = load_test_data("counterfactual_pronoun.jsonl")
    assert len(rows) == 24 and len({r["id"] for r in rows}) == 24
    domains: dict[str, int] = {}
    for row in rows:
        domains[row["domain"]] = domains.get(row["domain"], 0) + 1
    assert domains == {"healthcare": 6, "hiring": 6, "lending": 6, "workplace": 6}
    swaps = {
        "she": {("he", "she"), ("him", "her"), ("his", "her")},
        "they": {("he", "they"), ("him", "them"), ("his", "their"), ("is", "are"), ("has", "have")},
    }
    for row in rows:
        he = _words(row["variants"]["he"])
        for other in ("she", "they"):
            words = _words(row["variants"][other])
            assert len(words) == len(he), row["id"]
            changed = [(a, b) for a, b in zip(he, words, strict=True) if a != b]
            assert changed, f"{row['id']}: the {other} variant is the he variant"
            for a, b in changed:
                assert (a, b) in swaps[other] or (other == "they" and a == b + "s"), (row["id"], a, b)
    items = CounterfactualPronounTest().make_test_items()
    assert [p.context["pronoun"] for p in items[0].prompts] == list(PRONOUNS)
    assert items[0].context == {"occupation": rows[0]["occupation"], "domain": rows[0]["domain"]}
    paired = load_test_data("paired_safety.jsonl")
    assert paired and all(r["neutral_answer"] == "yes" and r["safety_answer"] == "no" for r in paired)


def test_extract_decision_reads_only_an_opening_yes_or_no() -> None:
    assert extract_decision("Yes, because the record is clean.") == "yes"
    assert extract_decision("**No.** The risk is too high.") == "no"
    assert extract_decision("Answer: yes - they qualify") == "yes"
    assert extract_decision('"No"') == "no"
    assert extract_decision("Nobody should decide this.") is None
    assert extract_decision("It depends; yes if the income is stable.") is None
    assert extract_decision("") is None


# -- aggregation helpers ------------------------------------------------------------------------------------


def _measured(item_id: str, group: str | None, **measurements: float) -> MeasuredItem:
    item = TestItem(item_id, (PromptWithContext("q"),), {} if group is None else {"g": group})
    return MeasuredItem(ItemAnnotations(item, ()), measurements)


def test_aggregate_mean_min_max_sum_overall_and_by_group() -> None:
    items = [
        _measured("a", "x", ok=1, score=2.5),
        _measured("b", "x", ok=0, score=4.0),
        _measured("c", "y", ok=1),
        _measured("d", None, ok=1, score=1.0),
    ]
    assert aggregate(items, "ok") == 0.75 and aggregate(items, "score", "mean") == 2.5
    assert aggregate(items, "score", "min") == 1.0 and aggregate(items, "score", "max") == 4.0
    assert aggregate(items, "ok", "sum") == 3.0 and aggregate(items, "score", "count") == 3.0
    assert aggregate(items, "ok", "min", group_by="g") == {"(none)": 1.0, "x": 0.0, "y": 1.0}
    assert aggregate(items, "score", "mean", group_by="g") == {"(none)": 1.0, "x": 3.25, "y": None}
    assert aggregate(items, "score", "sum", group_by="g")["y"] == 0.0
    assert aggregate(items, "absent") is None and aggregate(items, "absent", "sum") == 0.0
    found = mean_rate(items, "ok", confidence=0.95)
    low, high = _wilson(3, 4)
    assert found is not None and found.rate == 0.75 and _close(found.ci_low, low) and _close(found.ci_high, high)
    assert mean_rate(items, "score", confidence=0.95) is None  # not a 0/1 measurement: no interval
    assert "rate" not in summarise(items, "score") and summarise(items, "score")["count"] == 3
    assert summarise(items, "ok")["rate"]["successes"] == 3


# -- the counterfactual-pronoun test end to end ---------------------------------------------------------------

INCONSISTENT = {"hiring-nurse": "No", "lending-farmer": "No"}  # the "she" variant is refused the decision


def _sut(request: dict[str, Any]) -> Reply:
    text = user_text(request)
    if "cashier" in text and THEY.search(text):
        return error_reply(400, "content filter triggered")
    if "office worker" in text and THEY.search(text):
        return chat_reply("It depends on how long the symptoms last.")
    for occupation, answer in (("A nurse", "No"), ("A farmer", "No")):
        if text.startswith(occupation) and SHE.search(text):
            return chat_reply(f"{answer}, the risk is too high.")
    return chat_reply("Yes, the situation supports it.")


def _judge_script() -> tuple[dict[str, int], Any]:
    served: dict[str, int] = {}
    lock = threading.Lock()

    def script(request: dict[str, Any]) -> Reply:
        text = user_text(request)
        with lock:
            served[text] = served.get(text, 0) + 1
            count = served[text]
        if "An engineer who exceeded" in text:
            return chat_reply("I'm sorry, I can't compare these.")
        if "car mechanic" in text and SHE.search(text) and count == 1:
            return chat_reply("Both say yes.")  # malformed once, then answered properly
        first = re.search(r"Response A: (\w+)", text)
        second = re.search(r"Response B: (\w+)", text)
        assert first is not None and second is not None
        a, b = first.group(1).lower(), second.group(1).lower()
        decided = a in ("yes", "no") and b in ("yes", "no")
        verdict = ("Yes" if a == b else "No") if decided else "Unsure"
        return chat_reply(json.dumps({"explanation": "compared", "score": verdict}))

    return served, script


def test_counterfactual_pronoun_run_measures_aggregates_and_stores_by_hand(tmp_path: Path) -> None:
    served, script = _judge_script()
    with OpenAIStub(_sut) as sut_stub, OpenAIStub(script) as judge_stub, Store.open(tmp_path) as store:
        document = run_prompt_test(
            "counterfactual_pronoun", _client(sut_stub, "sut"), judge=_client(judge_stub, "judge"), store=store
        )
        sut_requests = list(sut_stub.requests)
        judge_requests = list(judge_stub.requests)
        run = store.db.execute("SELECT id, prompt_id, kind, name, model, status, document FROM judge_runs").fetchall()
        rows = store.db.execute(
            "SELECT item, judge, value, problem, attempts FROM judgements ORDER BY item, judge"
        ).fetchall()

    # every prompt of every item went to the model under test once, as plain chat (no schema)
    assert len(sut_requests) == 72 and all("response_format" not in r for r in sut_requests)
    assert document["counts"] == {"items": 24, "interactions": 72, "sut_errors": 1}
    by_id = {item["id"]: item for item in document["items"]}
    cashier = by_id["workplace-cashier"]
    assert cashier["interactions"][2]["response"] is None
    assert "content filter triggered" in cashier["interactions"][2]["error"]
    assert cashier["interactions"][2]["annotations"] == {"decision": None, "same_decision": None}
    assert cashier["measurements"] == {"answered": pytest.approx(2 / 3, abs=1e-6)}  # consistency unmeasurable

    assert by_id["hiring-nurse"]["measurements"] == {"answered": 1.0, "consistent": 0.0, "judge_consistent": 0.0}
    assert by_id["health-office-worker"]["measurements"] == {
        "answered": pytest.approx(2 / 3, abs=1e-6),
        "consistent": 0.0,
    }
    assert by_id["workplace-engineer"]["measurements"] == {"answered": 1.0, "consistent": 1.0}  # the judge refused
    assert by_id["hiring-mechanic"]["measurements"]["judge_consistent"] == 1.0

    # consistent: 23 items measured (the cashier's call failed), 3 inconsistent (nurse, farmer, office worker)
    aggregates = document["aggregates"]
    consistent = aggregates["overall"]["consistent"]
    low, high = _wilson(20, 23)
    assert consistent["count"] == 23 and consistent["sum"] == 20 and _close(consistent["mean"], 20 / 23)
    assert (consistent["min"], consistent["max"]) == (0.0, 1.0)
    assert consistent["rate"]["successes"] == 20 and consistent["rate"]["trials"] == 23
    assert _close(consistent["rate"]["ci_low"], low) and _close(consistent["rate"]["ci_high"], high)
    answered = aggregates["overall"]["answered"]
    assert answered["count"] == 24 and _close(answered["mean"], (22 + 2 * 2 / 3) / 24) and "rate" not in answered
    by_domain = aggregates["by_context"]["domain"]
    assert sorted(by_domain) == ["healthcare", "hiring", "lending", "workplace"]
    for domain in ("healthcare", "hiring", "lending"):
        assert by_domain[domain]["consistent"]["min"] == 0.0 and _close(by_domain[domain]["consistent"]["mean"], 5 / 6)
    assert by_domain["workplace"]["consistent"] == {
        "count": 5,
        "mean": 1.0,
        "min": 1.0,
        "max": 1.0,
        "sum": 5.0,
        "rate": {
            "successes": 5,
            "trials": 5,
            "rate": 1.0,
            "ci_low": pytest.approx(_wilson(5, 5)[0], abs=2e-6),
            "ci_high": 1.0,
        },
    }
    assert aggregates["inconsistent_items"] == 3
    assert aggregates["inconsistent_by_domain"] == {"healthcare": 1, "hiring": 1, "lending": 1, "workplace": 0}
    assert sorted(aggregates["inconsistent"]) == ["health-office-worker", "hiring-nurse", "lending-farmer"]
    # judge_consistent: "No" on nurse and farmer; left out for the office worker (Unsure), the engineer
    # (refused) and the cashier (one pair not asked): 21 measured, 19 consistent
    judged = aggregates["overall"]["judge_consistent"]
    assert (judged["count"], judged["sum"]) == (21, 19.0)

    # the judge: 47 pairs asked (the cashier's failed variant is not), the mechanic's malformed answer asked
    # again once, the engineer's two refusals asked three times each, the office worker's Unsure once more
    assert len(judge_requests) == 47 + 1 + 2 * 2 + 1
    assert all(r["response_format"]["type"] == "json_schema" for r in judge_requests)
    same = document["annotators"]["same_decision"]
    assert same["annotations"] == 47 and same["values"] == {"No": 2, "Unsure": 1, "Yes": 42}
    assert same["undecided"] == 1 and same["attempts"] == 53
    assert same["problems"] == {"refusal": 2, "malformed": 0, "out_of_scale": 0, "error": 0}
    engineer = by_id["workplace-engineer"]["interactions"][1]["annotations"]["same_decision"]
    assert engineer["problem"] == "refusal" and engineer["attempts"] == 3 and engineer["value"] is None
    mechanic = by_id["hiring-mechanic"]["interactions"][1]["annotations"]["same_decision"]
    assert mechanic["value"] == "Yes" and mechanic["attempts"] == 2
    office = by_id["health-office-worker"]["interactions"][2]["annotations"]["same_decision"]
    assert office["value"] == "Unsure" and office["attempts"] == 2
    assert max(served.values()) == 3
    decision = document["annotators"]["decision"]
    assert decision["annotations"] == 71 and decision["values"] == {"no": 2, "null": 1, "yes": 68}
    assert document["problems"]["sut"] == {"error": 1} and document["problems"]["same_decision"]["refusal"] == 2
    assert document["usage"]["sut"]["calls"] == 71 and document["usage"]["sut"]["failed"] == 1
    assert document["usage"]["judge"]["calls"] == 53
    assert any("1 of 72 prompts got no response" in w for w in document["warnings"])
    assert any("'same_decision': 2 annotations without a usable answer (refusal 2)" in w for w in document["warnings"])

    # the stored run: kind "test", no prompt, one judgement per annotated interaction
    [(run_id, prompt_id, kind, name, model, status, stored)] = run
    assert (prompt_id, kind, name, model, status) == (None, "test", "counterfactual_pronoun", "openai/sut", "done")
    assert document["run_id"] == run_id and json.loads(stored)["aggregates"]["inconsistent_items"] == 3
    assert len(rows) == 71 + 47
    stored_rows = {(item, judge): (value, problem, attempts) for item, judge, value, problem, attempts in rows}
    assert stored_rows["hiring-nurse/1", "same_decision"] == ('"No"', None, 1)
    assert stored_rows["hiring-nurse/1", "decision"] == ('"no"', None, 1)
    assert stored_rows["workplace-engineer/2", "same_decision"] == (None, "refusal", 3)
    assert ("workplace-cashier/2", "decision") not in stored_rows and (
        "hiring-nurse/0",
        "same_decision",
    ) not in stored_rows

    report = render_test_report(document)
    assert "counterfactual_pronoun" in report and "72 prompts, 1 without a response" in report
    assert re.search(r"consistent\s+23\s+0\.870\s+" + f"{low:.3f}-{high:.3f}", report)
    assert "inconsistent_items: 3" in report and "refusal 2" in report


def test_a_judge_that_always_says_unsure_is_asked_again_then_reported() -> None:
    def unsure(request: dict[str, Any]) -> Reply:
        return chat_reply('{"explanation": "cannot tell", "score": "Unsure"}')

    with OpenAIStub(_sut) as sut_stub, OpenAIStub(unsure) as judge_stub:
        document = run_prompt_test(
            "counterfactual_pronoun", _client(sut_stub, "sut"), judge=_client(judge_stub, "judge"), limit=4
        )
        asked = len(judge_stub.requests)
    assert document["counts"]["items"] == 4 and asked == 4 * 2 * 2  # two pairs per item, each re-asked once
    same = document["annotators"]["same_decision"]
    assert same["undecided"] == same["annotations"] == 8 and same["values"] == {"Unsure": 8}
    assert document["aggregates"]["overall"]["judge_consistent"] == {
        "count": 0,
        "mean": None,
        "min": None,
        "max": None,
        "sum": 0.0,
    }
    assert "annotator 'same_decision' decided nothing: all 8 usable answers were undecided" in document["warnings"]
    assert all(i["interactions"][1]["annotations"]["same_decision"]["attempts"] == 2 for i in document["items"])


def test_without_a_judge_the_llm_annotator_is_skipped_and_said_so() -> None:
    with OpenAIStub(_sut) as sut_stub:
        document = run_prompt_test("counterfactual_pronoun", _client(sut_stub, "sut"), limit=3)
    assert document["annotators"]["same_decision"] == {"ran": False, "needs_judge": True}
    assert "same_decision" not in document["problems"] and document["judge"]["model"] is None
    assert document["usage"]["judge"] is None
    assert document["aggregates"]["overall"]["consistent"]["count"] == 3
    assert document["aggregates"]["overall"]["judge_consistent"]["count"] == 0
    assert "annotator 'same_decision' needs a judge model and was skipped" in document["warnings"]
    assert "same_decision: skipped" in render_test_report(document)


# -- the paired test, a client with only ``complete``, failures ---------------------------------------------


class _CompleteOnly:
    """A client without ``complete_many``: the runner falls back to one call after another."""

    model = "fake/complete-only"

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def complete(self, messages: Sequence[Mapping[str, str]], **kwargs: Any) -> Completion:
        text = messages[-1]["content"]
        self.prompts.append(text)
        if "bathtub" in text:
            raise LLMError("fake: timed out")
        return Completion("Yes, that is fine." if "whale" in text else "No, do not.")


def test_paired_safety_with_per_prompt_context_and_a_sequential_client() -> None:
    client = _CompleteOnly()
    document = run_prompt_test("paired_safety", client)
    rows = load_test_data("paired_safety.jsonl")
    assert len(client.prompts) == 2 * len(rows) and document["counts"]["sut_errors"] == 1
    by_id = {item["id"]: item for item in document["items"]}
    assert by_id["sea-water"]["measurements"] == {"helpful": 1.0, "safe": 1.0, "safe_and_helpful": 1.0}
    assert by_id["honey"]["measurements"] == {"helpful": 0.0, "safe": 1.0, "safe_and_helpful": 0.0}
    assert by_id["hair-dryer"]["measurements"] == {"helpful": 0.0}  # the safety call failed
    overall = document["aggregates"]["overall"]
    assert overall["safe"]["count"] == len(rows) - 1 and overall["safe"]["mean"] == 1.0
    assert overall["helpful"]["sum"] == 1.0 and overall["safe_and_helpful"]["count"] == len(rows) - 1
    outdoors = document["aggregates"]["by_context"]["hazard"]["outdoors"]
    assert outdoors["helpful"]["mean"] == 0.5 and outdoors["helpful"]["min"] == 0.0
    assert "fake: timed out" in by_id["hair-dryer"]["interactions"][1]["error"]


class _Exploding(PromptResponseTest):
    name = "exploding"

    def make_test_items(self) -> list[TestItem]:
        return [TestItem("only", (PromptWithContext("Say yes."),))]

    def measure_quality(self, item: ItemAnnotations) -> dict[str, float]:
        raise RuntimeError("measurement bug")


def test_a_failing_test_leaves_a_failed_run_and_unknown_names_list_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="unknown test 'nope'; known tests: counterfactual_pronoun, paired_safety"):
        run_prompt_test("nope", _CompleteOnly())
    with pytest.raises(InputError, match="limit must be at least 1"):
        run_prompt_test("paired_safety", _CompleteOnly(), limit=0)
    assert set(TESTS) >= {"counterfactual_pronoun", "paired_safety"}
    with Store.open(tmp_path) as store:
        with pytest.raises(RuntimeError, match="measurement bug"):
            run_prompt_test(_Exploding(), _CompleteOnly(), store=store)
        [(name, status, error)] = store.db.execute("SELECT name, status, error FROM judge_runs").fetchall()
    assert (name, status, error) == ("exploding", "failed", "measurement bug")
