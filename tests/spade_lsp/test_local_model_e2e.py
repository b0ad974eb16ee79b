"""The main jobs end to end against a real model nobody scripted: SmolLM2-135M-Instruct on llama.cpp's
OpenAI-compatible server (``model = "local"``), which rejects ``json_schema`` and often answers in prose.

These tests assert that each command finishes, that its counts and intervals agree with the calls it made, and
that whatever fell back is reported; never the model's quality (a 135M model is wrong often and at random).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from spade_lsp.cli import main
from tests.support.local_model import local_model_dir  # noqa: F401  (a fixture)

VERSIONS = [
    "Write a greeting for {name}.",
    "Write a short, friendly greeting for {name}.\nUse at most 30 words.",
]
SIDECAR = """from spade_lsp.assertions import ask_llm, assertion


@assertion(category="Content/Count", min_success=0.5)
def assert_at_most_30_words(example: dict, prompt: str, response: str) -> bool:
    return len(response.split()) <= 30


@assertion(category="Content/Inclusion", min_success=0.5)
def assert_mentions_name(example: dict, prompt: str, response: str) -> bool:
    return example["name"].lower() in response.lower()


@assertion(category="Content/QualitativeAssessment", min_success=0.5)
def assert_friendly(example: dict, prompt: str, response: str) -> bool:
    return ask_llm("Is this greeting friendly?", response)
"""
EXAMPLES = [
    {"id": "ada", "inputs": {"name": "Ada"}, "output": "Hello Ada, lovely to see you!", "label": "good",
     "grading_note": "Greets Ada by name."},
    {"id": "bo", "inputs": {"name": "Bo"}, "output": "Go away.", "label": "bad",
     "grading_note": "Greets Bo by name in a friendly way."},
    {"id": "cy", "inputs": {"name": "Cy"}, "output": "Hi Cy! Have a wonderful day.", "label": "good",
     "grading_note": "Greets Cy by name."},
]  # fmt: skip


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    try:
        document = json.loads(captured.out) if captured.out.strip() else None
    except json.JSONDecodeError:
        document = captured.out
    return code, document, captured.err


@pytest.fixture
def greet(workspace_dir: Path, local_model_dir: Path) -> Path:  # noqa: F811
    """A workspace whose only model settings name the local model in both roles (``max_tokens`` keeps a
    135M model's rambling short enough for a test)."""
    (workspace_dir / "spade.toml").write_text(
        'model = "local"\nassistant_model = "local"\nmax_tokens = 48\n', encoding="utf-8"
    )
    prompt = workspace_dir / "greet.prompt"
    prompt.write_text(VERSIONS[-1], encoding="utf-8")
    (workspace_dir / "versions.json").write_text(json.dumps(VERSIONS), encoding="utf-8")
    (workspace_dir / "greet_assertions.py").write_text(SIDECAR, encoding="utf-8")
    lines = "".join(json.dumps(example) + "\n" for example in EXAMPLES)
    (workspace_dir / "greet.examples.jsonl").write_text(lines, encoding="utf-8")
    return prompt


def _check_rates(document: dict[str, Any]) -> None:
    for validator in document["validators"]:
        if validator["trials"]:
            assert 0 <= validator["successes"] <= validator["trials"]
            assert validator["rate"] == pytest.approx(validator["successes"] / validator["trials"])
            assert validator["ci_low"] <= validator["rate"] <= validator["ci_high"]


def test_import_relabels_with_the_local_model_or_says_why(capsys: pytest.CaptureFixture[str], greet: Path) -> None:
    code, document, _ = run(capsys, "import", str(greet), "--versions", str(greet.parent / "versions.json"), "--json")
    assert code == 0 and document["added"] == 2
    labels = document["labels"]
    assert labels["classifier"].startswith("llm:")
    assert labels["relabelled"] + labels["kept_offline"] == 2  # every delta: relabelled, or kept and said why
    assert (labels["kept_offline"] > 0) == bool(document["fallbacks"])


def test_sample_counts_agree_with_the_calls_made(capsys: pytest.CaptureFixture[str], greet: Path) -> None:
    argv = ["sample", str(greet), "--inputs", "3", "--samples", "2", "--no-early-stop", "--json"]
    code, document, err = run(capsys, *argv)
    assert code == 0, err
    assert document["calls"] + document["calls_cached"] + document["calls_failed"] == 6 == document["calls_planned"]
    assert len(document["validators"]) == 3
    _check_rates(document)
    friendly = next(v for v in document["validators"] if v["name"] == "assert_friendly")
    errored = 6 - document["calls_failed"] - friendly["trials"]
    steps = {f["step"] for f in document["fallbacks"]}
    assert (errored > 0) == ("ask_llm" in steps)  # an ask_llm answer that failed is an error cell, and said so
    # a re-run is served from the store's cache: same outputs, no new pipeline call
    code, again, _ = run(capsys, *argv)
    assert code == 0 and again["calls"] == 0 and again["calls_cached"] == 6 - document["calls_failed"]


def test_compare_two_versions(capsys: pytest.CaptureFixture[str], greet: Path) -> None:
    run(capsys, "import", str(greet), "--versions", str(greet.parent / "versions.json"))
    code, document, err = run(capsys, "compare", str(greet), "--inputs", "3", "--samples", "2", "--json")
    assert code == 0, err
    assert [variant["version"] for variant in document["variants"]] == [1, 2]
    for variant in document["variants"]:  # 3 inputs x 2 samples each, made or cached
        assert variant["calls"] + variant["calls_cached"] + variant["calls_failed"] == 6
    [comparison] = document["comparisons"]
    assert {row["name"] for row in comparison["checks"]} == {
        "assert_at_most_30_words",
        "assert_mentions_name",
        "assert_friendly",
    }
    for row in [*comparison["checks"], comparison["overall"]]:
        if row["difference"] is not None:
            assert row["low"] <= row["difference"] <= row["high"]
            assert row["difference"] == pytest.approx(row["candidate"] - row["baseline"], abs=1e-5)


def test_synthesize_with_the_local_model_picks_checks_without_falling_back(
    capsys: pytest.CaptureFixture[str], greet: Path
) -> None:
    (greet.parent / "greet_assertions.py").unlink()
    code, document, err = run(capsys, "synthesize", str(greet), "--synthesizer", "llm", "--json")
    assert code == 0, err
    made_by = {c["synthesizer"] for c in document["candidates"]}
    # the model answers one instruction at a time, so a real model never falls back offline: each of its picks
    # is a library check (or code it wrote), and a pick the sentence does not support is named with its reason
    assert document["fallbacks"] == [] and made_by <= {"llm", "llm-library"}
    assert made_by or "not offered" in err or "no check from the model" in err
    assert (greet.parent / "greet_assertions.py").exists() == bool(document["candidates"])


def test_judge_grading_notes_with_the_local_model(capsys: pytest.CaptureFixture[str], greet: Path) -> None:
    # two of the three examples (a good and a bad one): every item is the same check, and each costs the 135M
    # model several generations (re-asks and retries of unusable answers), the slowest test of the suite with three
    lines = "".join(json.dumps(example) + "\n" for example in EXAMPLES[:2])
    (greet.parent / "greet.examples.jsonl").write_text(lines, encoding="utf-8")
    code, document, err = run(capsys, "judge", str(greet), "--grading-notes", "--json")
    assert code == 0, err
    problems = 0
    for name in ("with_notes", "without_notes"):
        arm = document[name]
        assert arm["items"] == 2 and sum(arm["answers"].values()) == 2
        assert arm["answers"]["none"] == sum(arm["problems"].values())  # every unusable answer has its reason
        problems += sum(arm["problems"].values())
    assert sum(f["count"] for f in document["fallbacks"]) == problems


def test_eval_asks_the_local_model_for_ask_llm(capsys: pytest.CaptureFixture[str], greet: Path) -> None:
    code, matrix, err = run(capsys, "eval", str(greet), "--json")
    assert code == (1 if matrix["errors"] else 0), err  # 1: the run finished and some cells errored
    names = [a["name"] for a in matrix["assertions"]]
    column = names.index("assert_friendly")
    assert matrix["needs_model"] == []  # the assistant model answered, or its failure is an llm_error cell
    errors = {(e["example"], e["assertion"]): e["kind"] for e in matrix["errors"]}
    for example_id, row in zip(matrix["examples"], matrix["M"], strict=True):
        kind = errors.get((example_id, "assert_friendly"))
        assert kind in (None, "llm_error") and (kind is None or row[column] == 0)


def test_a_workspace_with_only_the_pipeline_model_runs_offline_for_its_own_work(
    capsys: pytest.CaptureFixture[str], greet: Path
) -> None:
    """``model`` alone: spade-lsp never borrows it for labels, criteria or ask_llm."""
    (greet.parent / "spade.toml").write_text('model = "local"\nmax_tokens = 48\n', encoding="utf-8")
    code, document, _ = run(capsys, "import", str(greet), "--versions", str(greet.parent / "versions.json"), "--json")
    assert code == 0 and document["labels"]["classifier"] is None
    code, document, err = run(capsys, "synthesize", str(greet), "--json")
    assert code == 0, err
    assert document["candidates"] and {c["synthesizer"] for c in document["candidates"]} == {"offline"}
    asks = {c["name"] for c in document["candidates"] if c["asks_llm"]}
    argv = ["sample", str(greet), "--inputs", "2", "--samples", "2", "--no-early-stop", "--json"]
    code, document, err = run(capsys, *argv)
    assert code == 0, err
    assert document["calls"] + document["calls_failed"] == 4
    unanswered = {v["name"] for v in document["validators"] if v["trials"] == 0}
    ask_fallbacks = [f for f in document["fallbacks"] if f["step"] == "ask_llm"]
    assert unanswered >= asks  # an ask_llm check needs the assistant, which is not the pipeline's model
    assert bool(ask_fallbacks) == bool(asks)
    assert all("assistant_model" in f["reason"] for f in ask_fallbacks)


def test_the_local_model_command_starts_shows_and_stops_the_server(
    capsys: pytest.CaptureFixture[str],
    local_model_dir: Path,  # noqa: F811
) -> None:
    from spade_lsp.local_model import stop_server

    stop_server()  # the module's server, if an earlier test started one
    code, out, _ = run(capsys, "local-model", "status")
    assert code == 0 and out == "local model: installed; no server running\n"
    code, document, _ = run(capsys, "local-model", "start", "--json")
    assert code == 0 and document["installed"] and document["server"]["healthy"]
    assert document["server"]["state_file"] == str(local_model_dir / "server.json")
    code, out, _ = run(capsys, "local-model", "status")
    assert out == f"local model: serving at {document['server']['api_base']} (pid {document['server']['pid']})\n"
    code, out, _ = run(capsys, "local-model", "stop")
    assert code == 0 and out == "local model: stopped\n"
    code, out, _ = run(capsys, "local-model", "stop")
    assert out == "local model: no server was running\n"


def test_compare_the_local_model_with_a_model_on_another_server(
    capsys: pytest.CaptureFixture[str], greet: Path
) -> None:
    """``--models local openai/other``: each variant is sampled on its own endpoint (the local model's server,
    and the api_base for the other), on the same inputs."""
    from tests.support.openai_stub import OpenAIStub, chat_reply

    with OpenAIStub(lambda request: chat_reply("Hello there, Ada! Welcome.")) as stub:
        argv = ["compare", str(greet), "--models", "local", "openai/other", "--inputs", "2", "--samples", "2"]
        code, document, err = run(capsys, *argv, "--api-base", stub.api_base, "--json")
        assert code == 0, err
        assert {r["model"] for r in stub.requests} == {"other"} and len(stub.requests) == 4
    local, other = document["variants"]
    assert (local["label"], local["model"]) == ("local", "local")  # the name the user gave, not the served alias
    assert (other["label"], other["model"]) == ("openai/other", "openai/other")
    assert local["calls"] + local["calls_cached"] + local["calls_failed"] == 4


PROMPTY = """---
name: Greeting
description: A chat prompt as Prompty writes it; its model configuration names a hosted model
model:
  api: chat
  configuration:
    type: openai
    name: gpt-4o-mini
  parameters:
    max_tokens: 40
sample:
  name: Dee
---
system:
You greet people. Use at most 30 words.
{% if formal %}Be formal.{% endif %}

user:
Greet {{name}}.
"""


def test_a_prompty_chat_prompt_sampled_with_the_local_model(capsys: pytest.CaptureFixture[str], greet: Path) -> None:
    prompty = greet.with_name("greeting.prompty")
    prompty.write_text(PROMPTY, encoding="utf-8")
    (greet.parent / "greeting_assertions.py").write_text(SIDECAR, encoding="utf-8")
    lines = "".join(json.dumps(example) + "\n" for example in EXAMPLES)
    (greet.parent / "greeting.examples.jsonl").write_text(lines, encoding="utf-8")
    # --model beats the Prompty file's gpt-4o-mini (which would need the internet); its max_tokens still holds
    argv = ["sample", str(prompty), "--model", "local", "--samples", "2", "--no-early-stop", "--json"]
    code, document, err = run(capsys, *argv)
    assert code == 0, err
    assert document["inputs"] == ["ada", "bo", "cy", "prompty-sample"]  # the Prompty sample is an input too
    assert document["calls"] + document["calls_cached"] + document["calls_failed"] == 8 == document["calls_planned"]
    _check_rates(document)
