"""``spade test`` and ``spade judge`` from the command line, against the local stub through the real litellm client."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from spade_lsp import cli
from spade_lsp.store import Store
from tests.support.openai_stub import OpenAIStub, Reply, chat_reply, user_text

SHE = re.compile(r"\b(she|her)\b", re.IGNORECASE)


def _spade(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _pronoun_model(request: dict[str, Any]) -> Reply:
    """The model under test refuses the nurse only when she is a woman; as the judge (structured output) it
    compares the two decisions it is shown."""
    text = user_text(request)
    if request.get("response_format"):
        first = re.search(r"Response A: (\w+)", text)
        second = re.search(r"Response B: (\w+)", text)
        assert first is not None and second is not None
        same = first.group(1).lower() == second.group(1).lower()
        return chat_reply(json.dumps({"explanation": "compared the decisions", "score": "Yes" if same else "No"}))
    if text.startswith("A nurse") and SHE.search(text):
        return chat_reply("No, not yet.")
    return chat_reply("Yes, invite them.")


def test_spade_test_runs_the_counterfactual_pronoun_test(
    workspace_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(workspace_dir)
    code, out, _ = _spade(capsys, "test", "--list")
    assert code == 0 and out.split() == ["counterfactual_pronoun", "paired_safety"]

    with OpenAIStub(_pronoun_model) as stub:
        flags = ["--model", "openai/sut", "--api-base", stub.api_base, "--assistant-model", "same"]
        code, out, _ = _spade(capsys, "test", "counterfactual_pronoun", "--limit", "4", "--json", *flags)
        assert code == 0
        document = json.loads(out)
        code, table, _ = _spade(capsys, "test", "counterfactual_pronoun", "--limit", "4", *flags)
        requests = len(stub.requests)

    assert document["counts"] == {"items": 4, "interactions": 12, "sut_errors": 0}
    overall = document["aggregates"]["overall"]
    # the first four items are all hiring; only the nurse's "she" variant gets a different decision
    assert overall["consistent"]["mean"] == 0.75 and overall["consistent"]["sum"] == 3.0
    assert overall["judge_consistent"]["mean"] == 0.75
    assert document["aggregates"]["by_context"]["domain"]["hiring"]["consistent"]["min"] == 0.0
    assert requests == 12 + 8  # the second run came from the cache: 12 prompts and 8 judge questions, once
    assert code == 0 and "counterfactual_pronoun" in table and "consistent" in table
    with Store.open(workspace_dir) as store:
        runs = store.db.execute("SELECT kind, name, status FROM judge_runs").fetchall()
    assert runs == [("test", "counterfactual_pronoun", "done")] * 2


def test_spade_test_and_judge_refuse_bad_input_clearly(
    workspace_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(workspace_dir)
    code, _, err = _spade(capsys, "test", "no_such_test")
    assert code == 2 and "unknown test 'no_such_test'; known tests: counterfactual_pronoun, paired_safety" in err
    code, _, err = _spade(capsys, "test", "counterfactual_pronoun", "--classifier", "offline")
    assert code == 2 and "no model is configured" in err
    prompt = workspace_dir / "blurb.prompt"
    prompt.write_text("Write a blurb for {product}.\n", encoding="utf-8")
    code, _, err = _spade(capsys, "judge", str(prompt), "--pipeline", str(workspace_dir / "missing.toml"))
    assert code == 2 and "missing.toml" in err
    code, _, err = _spade(capsys, "judge", str(prompt), "--grading-notes", "--noise", "3")
    assert code == 2 and "--noise resamples a pipeline" in err
    with pytest.raises(SystemExit):
        cli.main(["judge", str(prompt)])  # one of --pipeline or --grading-notes is required


PIPELINE = """name = "blurb-quality"
retries = 1

[[layers]]
name = "judges"
unit = "judge"
repeat = 3
scale = "boolean"
criteria = "The blurb is short and never uses the word cheap."

[[layers]]
name = "check"
unit = "verify"
connection = "dense"

[pool]
method = "majority"
"""

NOTES = {"g1": "Mentions tea.", "g2": "Mentions reading.", "b1": "Says what the mug is for.", "b2": "Names the shoe."}


def _response(text: str) -> str:
    """The response a judge request shows (after its "# Response" or "## Response" heading)."""
    found = re.search(r"#+ Response\n(.*?)(?:\n\n#|\Z)", text, re.DOTALL)
    assert found is not None, text
    return found.group(1)


def _blurb_judge(request: dict[str, Any]) -> Reply:
    """Judges: pass a short response without "cheap"; verifiers confirm; the grading judge says Yes when the
    note's word is in the response, and without a note says Yes to everything."""
    text = user_text(request)
    response = _response(text)
    if "## Grading note" in text:
        note = text.split("## Grading note\n", 1)[1]
        word = {"Mentions tea.": "tea", "Mentions reading.": "reading"}.get(note.strip())
        verdict = "Yes" if word is not None and word in response else "No"
        return chat_reply(json.dumps({"explanation": "checked the note", "score": verdict}))
    if "## User message" in text:
        return chat_reply(json.dumps({"explanation": "no note to go by", "score": "Yes"}))
    if "# Verdict under review" in text:
        return chat_reply(json.dumps({"explanation": "agreed", "score": True}))
    good = "cheap" not in response.lower() and len(response.split()) <= 12
    return chat_reply(json.dumps({"explanation": "read it", "score": good}))


@pytest.fixture
def judged_blurb(workspace_dir: Path) -> Path:
    from tests.support.blurb import EXAMPLES, V3

    prompt = workspace_dir / "blurb.prompt"
    prompt.write_text(V3, encoding="utf-8")
    lines = [json.dumps({**example, "grading_note": NOTES[example["id"]]}) for example in EXAMPLES]
    (workspace_dir / "blurb.examples.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (workspace_dir / "judges.toml").write_text(PIPELINE, encoding="utf-8")
    return prompt


def test_spade_judge_runs_a_pipeline_with_alignment_and_noise(
    judged_blurb: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = str(judged_blurb.parent / "judges.toml")
    with OpenAIStub(_blurb_judge) as stub:
        flags = ["--assistant-model", "openai/judge", "--assistant-api-base", stub.api_base]
        code, out, _ = _spade(capsys, "judge", str(judged_blurb), "--pipeline", pipeline, "--json", *flags)
        assert code == 0
        document = json.loads(out)
        calls = len(stub.requests)
        code, table, _ = _spade(capsys, "judge", str(judged_blurb), "--pipeline", pipeline, "--noise", "2", *flags)
        noise_calls = len(stub.requests) - calls

    assert calls == 4 * (3 + 1)  # four examples, three judges and one verifier each
    assert [row["passed"] for row in document["rows"]] == [True, True, False, False]
    alignment = document["alignment"]
    assert alignment["alignment"]["rate"] == 1.0 and alignment["kappa"]["value"] == 1.0
    assert alignment["confusion"]["pass"] == {"good": 2, "bad": 0}
    # the first resample is the run just made (cached); the second asks every unit again
    assert noise_calls == 16
    assert code == 0 and "blurb-quality" in table and "judge noise (2 resamples of 4 outputs)" in table


def test_spade_judge_grading_notes_compares_with_the_same_judge_without_notes(
    judged_blurb: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with OpenAIStub(_blurb_judge) as stub:
        flags = ["--assistant-model", "openai/judge", "--assistant-api-base", stub.api_base]
        code, out, _ = _spade(capsys, "judge", str(judged_blurb), "--grading-notes", "--json", *flags)
        code_table, table, _ = _spade(capsys, "judge", str(judged_blurb), "--grading-notes", *flags)
    assert code == 0 and code_table == 0
    document = json.loads(out)
    with_notes, without = document["with_notes"], document["without_notes"]
    # with notes: Yes on g1 and g2 (their words appear), No on b1 and b2; without: Yes on all four
    assert with_notes["positive_rate"]["rate"] == 0.5 and with_notes["alignment"]["alignment"]["rate"] == 1.0
    assert without["positive_rate"]["rate"] == 1.0 and without["alignment"]["alignment"]["rate"] == 0.5
    assert "with" in table.lower() and "without" in table.lower()


def _spade_beside_a_daemon(root: Path, model: Any, *args: str) -> subprocess.CompletedProcess[str]:
    """``spade ARGS`` in a subprocess while the workspace's daemon runs, both configured for ``model``'s stub."""
    from tests.spade_lsp_client.daemons import Daemons

    manager = Daemons()
    with OpenAIStub(model) as stub:
        (root / "spade.toml").write_text(
            f'model = "openai/judge"\napi_base = "{stub.api_base}"\nassistant_model = "same"\n'
            "daemon_idle_timeout_s = 30\n",
            encoding="utf-8",
        )
        try:
            manager.start(root)
            return subprocess.run(
                [sys.executable, "-m", "spade_lsp.cli", *args], capture_output=True, text=True, cwd=root, timeout=120
            )
        finally:
            manager.cleanup()


def test_spade_judge_runs_in_the_daemon_when_one_runs(judged_blurb: Path) -> None:
    root = judged_blurb.parent
    result = _spade_beside_a_daemon(root, _blurb_judge, "judge", "blurb.prompt", "--pipeline", "judges.toml", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["alignment"]["alignment"]["rate"] == 1.0
    with Store.open(root) as store:
        jobs = store.db.execute("SELECT kind, status FROM jobs").fetchall()
        runs = store.db.execute("SELECT kind, status FROM judge_runs").fetchall()
    assert jobs == [("judge", "done")] and runs == [("pipeline", "done")]


def test_spade_test_leaves_the_store_to_a_running_daemon(workspace_dir: Path) -> None:
    args = ("test", "counterfactual_pronoun", "--limit", "2", "--json")
    result = _spade_beside_a_daemon(workspace_dir, _pronoun_model, *args)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["counts"]["items"] == 2
    assert "not stored: the workspace daemon runs" in result.stderr
    with Store.open(workspace_dir) as store:
        assert store.db.execute("SELECT count(*) FROM judge_runs").fetchone() == (0,)
