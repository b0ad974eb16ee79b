"""``spade test`` and ``spade judge`` from the command line, against the local stub through the real litellm client."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from spade_lsp import cli
from spade_lsp._store import Store
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
        flags = ["--model", "openai/sut", "--api-base", stub.api_base, "--classifier", "offline"]
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
