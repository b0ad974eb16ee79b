"""Grading notes through the real litellm client against a scripted judge: hand-computed rates, alignment,
kappa, confusion tables and intervals for both arms, the paired comparison, bad answers re-asked then
recorded, a judge that always says Unsure, and the judgements in the store."""

from __future__ import annotations

import json
import math
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from spade_lsp import cli
from spade_lsp.config import Settings, resolve_file
from spade_lsp.errors import InputError
from spade_lsp.judges import GRADING_SCALE, grade_with_notes, mcnemar_exact, render_grading_report
from spade_lsp.store import note_history
from spade_lsp.workspace import Workspace
from tests.support.openai_stub import OpenAIStub, Reply, chat_reply, error_reply, user_text

Z = 1.959963984540054  # the normal quantile of 0.975
TEMPLATE = "Write a product blurb for {product}.\n"

# id: (label, note or None, the judge's answer with the note, its answer without)
CASES: dict[str, tuple[str | None, str | None, str | None, str]] = {
    "a": ("good", "Note A: mentions tea.", "Yes", "Yes"),
    "b": ("good", "Note B: mentions reading.", "Yes", "No"),
    "c": ("bad", "Note C: never says cheap.", "No", "Yes"),
    "d": ("bad", "Note D: at most 12 words.", "No", "No"),
    "e": ("good", "Note E: names the colour.", "Unsure", "No"),
    "f": ("bad", "Note F: has a call to action.", "Yes", "Yes"),
    "i": ("good", "Note I: is friendly.", "Yes", "Unsure"),
    "j": ("bad", "Note J: no exclamation marks.", "No", "Yes"),
    "g": ("good", None, None, "Yes"),
    "h": (None, "Note H: says warm.", "Yes", "No"),
}


def wilson(k: int, n: int) -> tuple[float, float]:
    """The Wilson score interval, straight from its formula."""
    p = k / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def assert_rate(rate: dict[str, Any], k: int, n: int) -> None:
    low, high = wilson(k, n)
    assert (rate["successes"], rate["trials"]) == (k, n)
    assert rate["rate"] == pytest.approx(k / n, abs=1e-6)
    assert (rate["ci_low"], rate["ci_high"]) == (pytest.approx(low, abs=1e-6), pytest.approx(high, abs=1e-6))


def _answer(score: str, rationale: str = "because") -> Reply:
    return chat_reply(json.dumps({"explanation": rationale, "score": score}))


def _id_of(text: str) -> str:
    found = re.search(r"## Response\nout-(\w+)", text)
    assert found is not None, text
    return found.group(1)


class ScriptedJudge:
    """Answers from CASES, branching on whether the example's note is in the user message."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: list[tuple[str, bool]] = []

    def __call__(self, request: dict[str, Any]) -> Reply:
        text = user_text(request)
        item = _id_of(text)
        _, note, with_note, without_note = CASES[item]
        noted = note is not None and note in text
        with self.lock:
            self.seen.append((item, noted))
        assert noted == ("## Grading note" in text)
        return _answer(with_note if noted and with_note else without_note, f"{item} {'with' if noted else 'without'}")


def write_examples(root: Path, cases: dict[str, tuple[str | None, str | None, str | None, str]]) -> Path:
    prompt = root / "blurb.prompt"
    prompt.write_text(TEMPLATE, encoding="utf-8")
    lines = []
    for item, (label, note, _, _) in cases.items():
        row: dict[str, Any] = {"id": item, "inputs": {"product": f"thing {item}"}, "output": f"out-{item}"}
        if label is not None:
            row["label"] = label
        if note is not None:
            row["grading_note"] = note
        lines.append(json.dumps(row) + "\n")
    (root / "blurb.examples.jsonl").write_text("".join(lines), encoding="utf-8")
    return prompt


def _overrides(stub: OpenAIStub) -> dict[str, Any]:
    return {"assistant_model": "openai/judge", "assistant_api_base": stub.api_base}


def _workspace(root: Path, stub: OpenAIStub) -> Workspace:
    return Workspace(root, overrides=_overrides(stub))


def _settings(prompt: Path, stub: OpenAIStub) -> Settings:
    """The prompt's settings, resolved once as the CLI and the judge job resolve them."""
    return resolve_file(prompt.parent, prompt, _overrides(stub))


def test_both_arms_and_their_comparison_match_the_hand_computed_figures(workspace_dir: Path) -> None:
    prompt = write_examples(workspace_dir, CASES)
    judge = ScriptedJudge()
    with OpenAIStub(judge) as stub, _workspace(workspace_dir, stub) as workspace:
        document = grade_with_notes(workspace, prompt, settings=_settings(prompt, stub))
        requests = list(stub.requests)
    # nine examples have a note, and all ten are judged again without one: 19 calls in one batch
    assert len(requests) == 19 and sorted(judge.seen).count(("g", True)) == 0
    assert sum(1 for _, noted in judge.seen if noted) == 9
    schema = requests[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["score"]["enum"] == ["Yes", "No", "Unsure"]
    assert list(schema["properties"]) == ["explanation", "score"]
    assert {r["temperature"] for r in requests} == {0.0}
    text = user_text(next(r for r in requests if "Note A" in user_text(r)))
    assert text.index("## User message\nWrite a product blurb for thing a.") < text.index("## Context\n")
    assert '"product": "thing a"' in text and text.endswith(
        "## Response\nout-a\n\n## Grading note\nNote A: mentions tea."
    )
    without = next(r for r in requests if _id_of(user_text(r)) == "a" and "Note A" not in user_text(r))
    assert without["messages"][0] == requests[0]["messages"][0]  # the same judge, minus the note section
    assert user_text(without) == text.split("\n\n## Grading note")[0]

    assert (document["items"], document["noted"], document["labelled"], document["compare"]) == (10, 9, 9, True)
    assert document["model"] == "openai/judge" and document["prompt"] == "blurb.prompt"

    notes = document["with_notes"]
    assert notes["items"] == 9 and notes["answers"] == {"Yes": 5, "No": 3, "Unsure": 1, "none": 0}
    assert_rate(notes["positive_rate"], 5, 9)  # a b f i h
    assert_rate(notes["unsure_rate"], 1, 9)  # e
    assert notes["problems"] == {} and notes["reasked"] == 0 and notes["always_unsure"] is False
    aligned = notes["alignment"]
    assert (aligned["labelled"], aligned["decided"]) == (8, 7)
    assert_rate(aligned["alignment"], 6, 8)  # a b c d i j; e (Unsure) and f (Yes on a bad one) are not
    assert_rate(aligned["alignment_decided"], 6, 7)
    assert aligned["confusion"] == {
        "pass": {"good": 3, "bad": 1}, "fail": {"good": 0, "bad": 3}, "undecided": {"good": 1, "bad": 0},
    }  # fmt: skip
    # kappa of [[3, 1], [0, 3]]: po = 6/7, pe = 4/7 * 3/7 + 3/7 * 4/7 = 24/49, kappa = (42 - 24) / (49 - 24) = 18/25.
    # Fleiss-Cohen-Everitt variance, term by term (p11 = p22 = 3/7, p12 = 1/7, p21 = 0, row + column sums 1):
    #   diagonal: 2 * 3/7 * (25/49 - 1 * 1/7)^2 = 1944/16807; off: (1/7)^2 * 1/7 * (3/7 + 3/7)^2 = 36/16807;
    #   (po pe - 2 pe + po)^2 = (102/343)^2 = 10404/117649; so the numerator is 3456/117649, and over
    #   n (1 - pe)^4 = 7 * (25/49)^4 it gives 24192/390625.
    kappa = aligned["kappa"]
    se = math.sqrt(24192 / 390625)
    assert kappa["value"] == pytest.approx(18 / 25, abs=1e-6) and kappa["se"] == pytest.approx(se, abs=1e-6)
    assert kappa["ci_low"] == pytest.approx(18 / 25 - Z * se, abs=1e-6) and kappa["ci_high"] == 1.0  # clipped

    plain = document["without_notes"]
    assert plain["items"] == 10 and plain["answers"] == {"Yes": 5, "No": 4, "Unsure": 1, "none": 0}
    assert_rate(plain["positive_rate"], 5, 10)
    assert_rate(plain["unsure_rate"], 1, 10)
    aligned = plain["alignment"]
    assert_rate(aligned["alignment"], 3, 9)  # a d g
    assert_rate(aligned["alignment_decided"], 3, 8)
    assert aligned["confusion"] == {
        "pass": {"good": 2, "bad": 3}, "fail": {"good": 2, "bad": 1}, "undecided": {"good": 1, "bad": 0},
    }  # fmt: skip
    # kappa of [[2, 3], [2, 1]]: po = 3/8, pe = 5/8 * 4/8 + 3/8 * 4/8 = 1/2, kappa = (3/8 - 1/2) / (1/2) = -1/4
    assert aligned["kappa"]["value"] == pytest.approx(-0.25, abs=1e-6)

    comparison = document["comparison"]
    assert comparison["paired"] == 8  # noted and labelled: a b c d e f i j
    assert_rate(comparison["with_notes"], 6, 8)
    assert_rate(comparison["without_notes"], 2, 8)  # a d
    assert comparison["discordant"] == {"with_notes_only": 4, "without_notes_only": 0}  # b c i j
    # differences 0 1 1 0 0 0 1 1: mean 1/2, sample variance 8 * (1/2)^2 / 7 = 2/7, se = sqrt(2/7 / 8)
    difference = comparison["difference"]
    se = math.sqrt(2 / 7 / 8)
    assert difference["value"] == 0.5 and difference["se"] == pytest.approx(se, abs=1e-6)
    assert difference["ci_low"] == pytest.approx(0.5 - Z * se, abs=1e-6)
    assert difference["ci_high"] == pytest.approx(0.5 + Z * se, abs=1e-6)
    assert comparison["mcnemar_p"] == pytest.approx(2 * 0.5**4, abs=1e-9)  # both tails of 4 of 4 discordant

    rows = {row["id"]: row for row in document["rows"]}
    assert rows["e"]["with_notes"] == {
        "value": "Unsure", "pass": None, "rationale": "e with", "problem": None, "detail": None, "attempts": 1,
    }  # fmt: skip
    assert rows["g"]["with_notes"] is None and rows["g"]["without_notes"]["pass"] is True
    assert rows["h"]["label"] is None and rows["h"]["note"] == "Note H: says warm."
    assert any("1 example(s) have no grading note (g): only the judge without notes" in w for w in document["warnings"])


def test_the_run_and_every_judgement_are_stored(workspace_dir: Path) -> None:
    prompt = write_examples(workspace_dir, CASES)
    with OpenAIStub(ScriptedJudge()) as stub, _workspace(workspace_dir, stub) as workspace:
        document = grade_with_notes(workspace, prompt, settings=_settings(prompt, stub))
        db = workspace.store.db
        kind, name, status, stored, model = db.execute(
            "SELECT kind, name, status, document, model FROM judge_runs WHERE id = ?", [document["run_id"]]
        ).fetchone()
        counts = dict(
            db.execute(
                "SELECT judge, count(*) FROM judgements WHERE run_id = ? GROUP BY judge", [document["run_id"]]
            ).fetchall()
        )
        prompt_id = db.execute("SELECT id FROM prompts WHERE path = 'blurb.prompt'").fetchone()[0]
        history = note_history(workspace.store, prompt_id, "b")
        # from the cache: no new calls, a second run
        again = grade_with_notes(workspace, prompt, settings=_settings(prompt, stub))
        newest = note_history(workspace.store, prompt_id, "b")
        sent = len(stub.requests)
    assert (kind, name, status, model) == ("grading", "grading-notes", "done", "openai/judge")
    assert json.loads(stored) == document and counts == {"with_notes": 9, "without_notes": 10}
    assert [(h["judge"], h["value"], h["note"], h["explanation"]) for h in history] == [
        ("with_notes", "Yes", "Note B: mentions reading.", "b with"),
        ("without_notes", "No", None, "b without"),
    ]
    assert history[0]["run_id"] == document["run_id"] and history[0]["version"] == document["version"]
    assert sent == 19 and again["usage"]["calls"] == 0 and again["usage"]["cached"] == 19
    assert len(newest) == 4 and newest[0]["run_id"] == again["run_id"] > document["run_id"]


def test_a_judge_that_always_says_unsure_is_reported(workspace_dir: Path) -> None:
    prompt = write_examples(workspace_dir, CASES)
    with OpenAIStub(lambda request: _answer("unsure")) as stub, _workspace(workspace_dir, stub) as workspace:
        document = grade_with_notes(workspace, prompt, settings=_settings(prompt, stub))
    for arm, items, labelled in (("with_notes", 9, 8), ("without_notes", 10, 9)):
        stats = document[arm]
        assert stats["always_unsure"] is True and stats["answers"]["Unsure"] == items
        assert_rate(stats["positive_rate"], 0, items)
        assert_rate(stats["unsure_rate"], items, items)
        assert_rate(stats["alignment"]["alignment"], 0, labelled)
        assert stats["alignment"]["decided"] == 0 and stats["alignment"]["alignment_decided"]["rate"] is None
        assert stats["alignment"]["kappa"]["value"] is None  # nothing decided: kappa is undefined
    warnings = document["warnings"]
    assert any("the judge with notes answered Unsure (or nothing usable) on every one of its 9" in w for w in warnings)
    assert any("the judge without notes answered Unsure" in w for w in warnings)
    assert "ALWAYS UNSURE" in render_grading_report(document)


def test_bad_answers_are_asked_again_then_recorded_per_item(workspace_dir: Path) -> None:
    cases: dict[str, tuple[str | None, str | None, str | None, str]] = {
        "ok": ("good", "Note ok.", "Yes", "Yes"),
        "once": ("good", "Note once.", "Yes", "Yes"),
        "scale": ("bad", "Note scale.", "No", "No"),
        "refuse": ("bad", "Note refuse.", "No", "No"),
        "broken": ("good", "Note broken.", "Yes", "Yes"),
        "plain": ("bad", None, None, "No"),
    }
    prompt = write_examples(workspace_dir, cases)
    served: dict[str, int] = {}
    lock = threading.Lock()

    def script(request: dict[str, Any]) -> Reply:
        item = _id_of(user_text(request))
        with lock:
            served[item] = served.get(item, 0) + 1
            count = served[item]
        if item == "once":
            return chat_reply(
                "Yes, it mentions it." if count == 1 else json.dumps({"explanation": "ok", "score": "yes"})
            )
        if item == "scale":
            return _answer("Maybe")
        if item == "refuse":
            return chat_reply("I'm sorry, but I can't grade this response.")
        if item == "broken":
            return error_reply(400, "bad request")
        return _answer(cases[item][2] or cases[item][3])

    with OpenAIStub(script) as stub, _workspace(workspace_dir, stub) as workspace:
        document = grade_with_notes(workspace, prompt, settings=_settings(prompt, stub), compare=False, retries=2)
    # "plain" has no note; "broken"'s 400 comes once the first answer settled the format: an error, sent once
    assert served == {"ok": 1, "once": 2, "scale": 3, "refuse": 3, "broken": 1}
    assert document["without_notes"] is None and document["comparison"] is None
    stats = document["with_notes"]
    assert stats["problems"] == {"refusal": 1, "out_of_scale": 1, "error": 1}
    assert stats["answers"] == {"Yes": 2, "No": 0, "Unsure": 0, "none": 3} and stats["reasked"] == 3
    assert_rate(stats["positive_rate"], 2, 5)
    assert_rate(stats["unsure_rate"], 3, 5)
    assert_rate(stats["alignment"]["alignment"], 2, 5)
    assert stats["alignment"]["confusion"]["undecided"] == {"good": 1, "bad": 2}
    rows = {row["id"]: row["with_notes"] for row in document["rows"]}
    assert (rows["once"]["value"], rows["once"]["attempts"], rows["once"]["problem"]) == ("Yes", 2, None)
    assert (rows["scale"]["problem"], rows["scale"]["attempts"]) == ("out_of_scale", 3)
    assert "'Maybe' is not one of" in rows["scale"]["detail"] and rows["scale"]["rationale"] == "because"
    assert (rows["refuse"]["problem"], rows["refuse"]["attempts"]) == ("refusal", 3)
    assert rows["broken"]["problem"] == "error" and "bad request" in rows["broken"]["detail"]
    assert rows["plain"] is None
    warnings = document["warnings"]
    assert any("no usable answer on 3 example(s) (1 refusal, 1 out_of_scale, 1 error)" in w for w in warnings)
    assert any("1 example(s) have no grading note (plain): they were not judged" in w for w in warnings)
    with _workspace(workspace_dir, stub) as workspace:
        stored = workspace.store.db.execute(
            "SELECT item, problem, attempts FROM judgements WHERE run_id = ? ORDER BY item", [document["run_id"]]
        ).fetchall()
    assert stored == [
        ("broken", "error", 1), ("ok", None, 1), ("once", None, 2),
        ("refuse", "refusal", 3), ("scale", "out_of_scale", 3),
    ]  # fmt: skip


def test_a_stopped_run_is_recorded_as_failed(workspace_dir: Path) -> None:
    prompt = write_examples(workspace_dir, CASES)

    class Stop(Exception):
        pass

    def progress(message: str, percentage: float | None) -> None:
        if message.startswith("grading:"):
            raise Stop("stopped by the user")

    with OpenAIStub(ScriptedJudge()) as stub, _workspace(workspace_dir, stub) as workspace:
        with pytest.raises(Stop):
            grade_with_notes(workspace, prompt, settings=_settings(prompt, stub), progress=progress)
        status, error = workspace.store.db.execute("SELECT status, error FROM judge_runs").fetchone()
    assert (status, error) == ("failed", "stopped by the user")


def test_examples_without_notes_are_an_input_error(workspace_dir: Path) -> None:
    prompt = write_examples(workspace_dir, {"g": ("good", None, None, "Yes")})
    with OpenAIStub(ScriptedJudge()) as stub, _workspace(workspace_dir, stub) as workspace:
        with pytest.raises(InputError, match="no example with an output has a grading note"):
            grade_with_notes(workspace, prompt, settings=_settings(prompt, stub))
        assert stub.requests == []


def test_scale_and_mcnemar() -> None:
    assert GRADING_SCALE.values == ("Yes", "No", "Unsure") and GRADING_SCALE.passing == frozenset({"Yes"})
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(5, 1) == pytest.approx(2 * (1 + 6) / 64)  # P(X <= 1) + P(X >= 5) for Bin(6, 1/2)
    assert mcnemar_exact(1, 5) == mcnemar_exact(5, 1)


def test_spade_judge_grading_notes_prints_both_arms(workspace_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prompt = write_examples(workspace_dir, CASES)
    with OpenAIStub(ScriptedJudge()) as stub:
        flags = ["--assistant-model", "openai/judge", "--assistant-api-base", stub.api_base]
        code = cli.main(["judge", str(prompt), "--grading-notes", *flags])
        out = capsys.readouterr().out
        code_json = cli.main(["judge", str(prompt), "--grading-notes", "--no-compare", "--json", *flags])
        document = json.loads(capsys.readouterr().out)
    assert code == 0 and code_json == 0
    assert "with notes" in out and "without notes" in out and "Cohen's kappa" in out
    assert "75.0% 6/8" in out and "33.3% 3/9" in out and "0.72 (" in out
    assert "notes change alignment by +50.0 points" in out and "exact McNemar p = 0.125" in out
    assert document["compare"] is False and document["without_notes"] is None
