"""Review of LLM-written assertion code: provenance recorded when the LLM synthesizer writes a function, tied to
its exact text; acceptance only by an explicit action (`spade review --accept`), never by an edit; template
(offline) functions never flagged; evaluation marks what ran unreviewed. The model is the loopback stub,
through the real litellm client, and validation runs the function in the real sandbox."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from spade_lsp._review import function_texts, sha_of, unreviewed
from spade_lsp.cli import main
from spade_lsp.jobs import JobParamsError, validate_params
from spade_lsp.overview import prompt_key
from spade_lsp.store import Store
from tests.spade_lsp_client.daemons import Daemons, daemons
from tests.support.blurb import examples_jsonl
from tests.support.cli import run
from tests.support.openai_stub import OpenAIStub, Reply, chat_reply

PROMPT = (
    "Write a product blurb for {product}.\n"
    "Keep it not exceeding 12 words.\n"
    'Never use the word "cheap".\n'
    "Use a friendly tone.\n"
)
__all__ = ["daemons"]

LLM_FUNCTION = (
    "def assert_short_blurb(example: dict, prompt: str, response: str) -> bool:\n"
    '    return checks.count(response, "words") <= 12\n'
)


def model(request: dict[str, Any], source: str = LLM_FUNCTION) -> Reply:
    """The assistant: for the word limit, one function it writes itself (``source``); no check for the rest."""
    payload = json.loads(next(m["content"] for m in request["messages"] if m["role"] == "user"))
    if "12 words" in payload["instruction"]:
        return chat_reply(json.dumps({"checks": [{"family": "code", "amount": "", "unit": "", "text": source}]}))
    return chat_reply(json.dumps({"checks": [{"family": "none", "amount": "", "unit": "", "text": ""}]}))


@pytest.fixture
def stub() -> Any:
    with OpenAIStub(model) as server:
        yield server


@pytest.fixture
def prompt(workspace_dir: Path, stub: OpenAIStub, capsys: pytest.CaptureFixture[str]) -> Path:
    (workspace_dir / "spade.toml").write_text(
        f'assistant_model = "openai/assistant"\nassistant_api_base = "{stub.api_base}"\nclassifier = "offline"\n',
        encoding="utf-8",
    )
    path = workspace_dir / "blurb.prompt"
    path.write_text(PROMPT, encoding="utf-8")
    (workspace_dir / "labelled.jsonl").write_text(examples_jsonl(), encoding="utf-8")
    code = main(["import", str(path), "--examples", str(workspace_dir / "labelled.jsonl"), "--json"])
    assert code == 0
    capsys.readouterr()
    return path


def _module(prompt: Path) -> Path:
    return prompt.with_name("blurb_assertions.py")


def _pending(prompt: Path) -> list[tuple[str, str]]:
    text = _module(prompt).read_text(encoding="utf-8")
    with Store.open(prompt.parent) as store:
        return [(item.name, item.state) for item in unreviewed(store, prompt_key(prompt.parent, prompt), text)]


def test_llm_synthesis_records_unreviewed_code_and_only_acceptance_clears_it(
    capsys: pytest.CaptureFixture[str], prompt: Path
) -> None:
    code, out, err = run(capsys, "synthesize", str(prompt), "--synthesizer", "llm", "--json")
    assert code == 0, err
    assert [c["name"] for c in json.loads(out)["candidates"]] == ["assert_short_blurb"]
    assert "LLM-written, not reviewed: assert_short_blurb; read them, then accept them" in err
    module = _module(prompt)
    assert _pending(prompt) == [("assert_short_blurb", "new")]

    # listing: exit 1 while something is unreviewed, the def line and the message
    code, out, _ = run(capsys, "review", str(prompt))
    line = module.read_text(encoding="utf-8").splitlines().index(LLM_FUNCTION.splitlines()[0]) + 1
    assert code == 1
    assert f"{module}:{line}: assert_short_blurb: LLM-written, not reviewed: read assert_short_blurb, then" in out
    assert "(written by openai/assistant)" in out

    # evaluation runs it (confined) and marks it: the JSON lists it, the table says so, a warning names it
    code, out, err = run(capsys, "eval", str(prompt), "--json")
    assert code == 0 and json.loads(out)["unreviewed"] == ["assert_short_blurb"]
    assert "LLM-written, not reviewed (ran confined in the sandbox): assert_short_blurb" in err
    code, out, _ = run(capsys, "eval", str(prompt))
    assert "assert_short_blurb [LLM-written, unreviewed]" in out

    # an edit is not acceptance
    text = module.read_text(encoding="utf-8")
    edited = text.replace("<= 12", "<= 13")
    module.write_text(edited, encoding="utf-8")
    code, out, _ = run(capsys, "review", str(prompt), "--json")
    document = json.loads(out)
    assert code == 1 and document["accepted"] == []
    [item] = document["unreviewed"]
    assert item["name"] == "assert_short_blurb" and item["state"] == "edited" and item["line"] == line
    assert "an edit is not acceptance" in item["message"]

    # acceptance is explicit and holds for that exact text
    code, out, _ = run(capsys, "review", str(prompt), "--accept", "assert_short_blurb")
    assert code == 0 and "accepted assert_short_blurb" in out and "no unreviewed LLM-written function" in out
    assert _pending(prompt) == []
    code, out, _ = run(capsys, "review", str(prompt))
    assert code == 0
    code, out, err = run(capsys, "eval", str(prompt), "--json")
    assert json.loads(out)["unreviewed"] == [] and "not reviewed" not in err

    # any other text is unreviewed again (the LLM's own text was never accepted: the edited one was); back to
    # the accepted text: reviewed
    module.write_text(text, encoding="utf-8")
    assert _pending(prompt) == [("assert_short_blurb", "new")]
    module.write_text(edited.replace("<= 13", "<= 14"), encoding="utf-8")
    assert _pending(prompt) == [("assert_short_blurb", "changed")]
    module.write_text(edited, encoding="utf-8")
    assert _pending(prompt) == []

    # re-synthesis keeps the user's edited function and its acceptance
    code, _, err = run(capsys, "synthesize", str(prompt), "--synthesizer", "llm", "--json")
    assert code == 0 and "kept your edited version of: assert_short_blurb" in err and "not reviewed" not in err
    assert module.read_text(encoding="utf-8") == edited


def test_resynthesis_of_accepted_code_keeps_the_acceptance_and_template_code_drops_the_record(
    capsys: pytest.CaptureFixture[str], prompt: Path
) -> None:
    assert run(capsys, "synthesize", str(prompt), "--synthesizer", "llm")[0] == 0
    assert run(capsys, "review", str(prompt), "--all")[0] == 0
    code, _, err = run(capsys, "synthesize", str(prompt), "--synthesizer", "llm")  # the same text again
    assert code == 0 and "not reviewed" not in err and _pending(prompt) == []

    # the offline synthesizer replaces the module's generated functions: nothing of it is LLM-written
    code, _, err = run(capsys, "synthesize", str(prompt), "--synthesizer", "offline", "--json")
    assert code == 0 and "not reviewed" not in err
    assert "assert_short_blurb" not in _module(prompt).read_text(encoding="utf-8")
    with Store.open(prompt.parent) as store:
        assert store.db.execute("SELECT COUNT(*) FROM generated_code").fetchone()[0] == 0
    code, out, _ = run(capsys, "review", str(prompt), "--json")
    assert code == 0 and json.loads(out)["unreviewed"] == []


def test_offline_functions_are_never_flagged(capsys: pytest.CaptureFixture[str], prompt: Path) -> None:
    code, out, err = run(capsys, "synthesize", str(prompt), "--synthesizer", "offline", "--json")
    assert code == 0 and "not reviewed" not in err
    names = [c["name"] for c in json.loads(out)["candidates"]]
    assert len(names) >= 3 and any(c["asks_llm"] for c in json.loads(out)["candidates"])  # ask_llm is no LLM code
    assert _pending(prompt) == []
    code, out, _ = run(capsys, "review", str(prompt))
    assert code == 0 and out.endswith("no unreviewed LLM-written function\n")
    code, out, _ = run(capsys, "eval", str(prompt), "--json")
    assert json.loads(out)["unreviewed"] == []


def test_review_refuses_unknown_names_and_a_missing_module(capsys: pytest.CaptureFixture[str], prompt: Path) -> None:
    code, _, err = run(capsys, "review", str(prompt))
    assert code == 2 and "no sidecar module; run `spade synthesize" in err
    assert run(capsys, "synthesize", str(prompt), "--synthesizer", "llm")[0] == 0
    code, _, err = run(capsys, "review", str(prompt), "--accept", "assert_nothing")
    assert code == 2 and "no function assert_nothing" in err
    assert _pending(prompt) == [("assert_short_blurb", "new")]


def test_a_module_from_elsewhere_is_flagged_by_its_decorator(workspace_dir: Path) -> None:
    """No record in this workspace (a colleague's clone): ``synthesizer='llm'`` in the decorator is enough;
    hand-written and offline functions are not flagged; a module that does not parse flags nothing."""
    text = (
        "from spade_lsp.assertions import assertion\n\n\n"
        "@assertion(category='Content/Count', synthesizer='llm')\n"
        "def assert_llm(example: dict, prompt: str, response: str) -> bool:\n    return True\n\n\n"
        "@assertion(category='Content/Count', synthesizer='offline')\n"
        "def assert_template(example: dict, prompt: str, response: str) -> bool:\n    return True\n\n\n"
        "def assert_by_hand(example: dict, prompt: str, response: str) -> bool:\n    return True\n"
    )
    [item] = unreviewed(None, "blurb.prompt", text)
    assert (item.name, item.line, item.state) == ("assert_llm", 4, "declared")
    assert "no review is recorded in this workspace" in item.message
    assert unreviewed(None, "blurb.prompt", text + "def broken(:\n") == []
    with Store.open(workspace_dir) as store:  # a store without the prompt: the same
        assert [i.name for i in unreviewed(store, "blurb.prompt", text)] == ["assert_llm"]


def test_the_digest_covers_decorator_and_body_split_as_python_splits_lines() -> None:
    text = (
        "@assertion(synthesizer='llm')\ndef assert_a(example, prompt, response):\n"
        '    s = "a\u2028b\x0cc"\n    return True\n'
    )
    [function] = function_texts(text)
    assert (function.first_line, function.line) == (0, 1)
    assert function.sha == sha_of(text.rstrip("\n"))
    assert function_texts(text.replace("\n", "\r\n"))[0].sha == function.sha  # line endings are not code
    changed = text.replace("synthesizer='llm'", "synthesizer='llm', check={'x': 1}")
    assert function_texts(changed)[0].sha != function.sha  # decorator arguments are code too


def test_review_job_params_are_checked() -> None:
    good = {"accept": [{"name": "assert_a", "sha": "0" * 64}], "by": "editor"}
    assert validate_params("review", good).to_json() == good
    for bad, message in [
        ({}, "non-empty list"),
        ({"accept": [{"name": "import os", "sha": "0" * 64}]}, "is not an assert_* function name"),
        ({"accept": [{"name": "assert_a", "sha": "abc"}]}, "64 lowercase hex digits"),
        ({**good, "by": "someone"}, "params.by"),
        ({**good, "extra": 1}, "unknown key"),
    ]:
        with pytest.raises(JobParamsError, match=re.escape(message)):
            validate_params("review", bad)


def test_a_function_nested_too_deep_to_check_is_rejected_not_a_crash(workspace_dir: Path) -> None:
    """``- - - ... 1`` parses, but walking its tree overflows Python's stack: rejected with a reason, and the
    synthesis goes on (nothing of it ever ran)."""
    from spade_lsp.llm import LiteLLMClient
    from spade_lsp.synthesis import Instruction, PromptContext, placeholders_of
    from spade_lsp.synthesis._llm import LLMSynthesizer

    deep = "def assert_deep(example: dict, prompt: str, response: str) -> bool:\n    return " + "-" * 1500 + "1 > 0\n"
    with OpenAIStub(lambda request: model(request, deep)) as server:
        client = LiteLLMClient("openai/assistant", api_base=server.api_base, api_key="k", max_retries=0)
        synthesizer = LLMSynthesizer(client)
        text = "Keep it not exceeding 12 words."
        context = PromptContext(text, tuple(placeholders_of(text)))
        candidates = synthesizer.synthesize([Instruction(text, ("Content/Count",), 1)], context)
    assert [(c.synthesizer, c.expression) for c in candidates] == [("offline", "checks.count(response, 'words') <= 12")]
    assert synthesizer.rejected == [("assert_deep", "too deeply nested to check")]


def test_acceptance_goes_through_the_daemon_when_one_runs(
    capsys: pytest.CaptureFixture[str], prompt: Path, daemons: Daemons
) -> None:
    assert run(capsys, "synthesize", str(prompt), "--synthesizer", "llm")[0] == 0
    daemons.start(prompt.parent)
    code, out, err = run(capsys, "review", str(prompt), "--all", "--json")
    assert code == 0, err
    assert json.loads(out) == {"sidecar": str(_module(prompt)), "accepted": ["assert_short_blurb"], "unreviewed": []}
    with Store.open(prompt.parent) as store:
        jobs = [(r["kind"], r["status"]) for r in store.db.query("SELECT kind, status FROM jobs")]
        reviews = [(r["name"], r["accepted_by"]) for r in store.db.query("SELECT name, accepted_by FROM code_reviews")]
    assert jobs == [("review", "done")] and reviews == [("assert_short_blurb", "cli")]


def test_a_rewrite_by_the_llm_of_accepted_code_is_new_unreviewed_code(
    capsys: pytest.CaptureFixture[str], workspace_dir: Path
) -> None:
    answers = [LLM_FUNCTION]
    with OpenAIStub(lambda request: model(request, answers[-1])) as server:
        (workspace_dir / "spade.toml").write_text(
            f'assistant_model = "openai/assistant"\nassistant_api_base = "{server.api_base}"\nclassifier = "offline"\n',
            encoding="utf-8",
        )
        prompt = workspace_dir / "blurb.prompt"
        prompt.write_text(PROMPT, encoding="utf-8")
        assert run(capsys, "synthesize", str(prompt), "--synthesizer", "llm")[0] == 0
        assert run(capsys, "review", str(prompt), "--all")[0] == 0 and _pending(prompt) == []

        # the prompt changes, so the model is asked again (answers are cached per request) and rewrites it
        prompt.write_text(PROMPT.replace("12 words.", "12 words, please."), encoding="utf-8")
        answers.append(LLM_FUNCTION.replace("<= 12", "< 13"))
        code, out, err = run(capsys, "synthesize", str(prompt), "--synthesizer", "llm", "--json")
        assert code == 0 and json.loads(out)["updated"] == ["assert_short_blurb"]
        assert "LLM-written, not reviewed: assert_short_blurb" in err
        assert _pending(prompt) == [("assert_short_blurb", "new")]
        assert "< 13" in _module(prompt).read_text(encoding="utf-8")
