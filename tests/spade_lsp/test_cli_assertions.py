"""`spade import --examples`, `spade synthesize` and `spade eval`, end to end through the real sandbox."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.blurb import examples_jsonl
from tests.support.cli import run
from tests.support.openai_stub import OpenAIStub, chat_reply, judged_response

PROMPT = (
    "Write a product blurb for {product}.\n"
    "Keep it not exceeding 12 words.\n"
    'Never use the word "cheap".\n'
    "Use a friendly tone.\n"
)


@pytest.fixture
def prompt(workspace_dir: Path) -> Path:
    path = workspace_dir / "blurb.prompt"
    path.write_text(PROMPT, encoding="utf-8")
    source = workspace_dir / "labelled.jsonl"
    source.write_text(examples_jsonl(), encoding="utf-8")
    return path


def _import_and_synthesize(capsys: pytest.CaptureFixture[str], prompt: Path, *extra: str) -> dict[str, Any]:
    code, out, _ = run(capsys, "import", str(prompt), "--examples", str(prompt.parent / "labelled.jsonl"), "--json")
    assert code == 0 and json.loads(out)["added"] == 4
    code, out, _ = run(capsys, "synthesize", str(prompt), "--json", *extra)
    assert code == 0
    return dict(json.loads(out))


def test_synthesize_then_eval_prints_the_benchmark_matrix_shape(
    capsys: pytest.CaptureFixture[str], prompt: Path
) -> None:
    synthesized = _import_and_synthesize(capsys, prompt)
    module = prompt.parent / "blurb_assertions.py"
    assert synthesized["module"] == str(module) and module.exists()
    before = module.read_bytes()
    assert run(capsys, "synthesize", str(prompt))[0] == 0 and module.read_bytes() == before  # deterministic

    code, out, _ = run(capsys, "eval", str(prompt), "--json")
    matrix = json.loads(out)
    names = [a["name"] for a in matrix["assertions"]]
    assert code == 0 and matrix["examples"] == ["g1", "g2", "b1", "b2"] and matrix["y"] == [1, 1, 0, 0]
    assert len(matrix["M"]) == 4 and all(len(row) == len(names) for row in matrix["M"])
    column = {name: [row[j] for row in matrix["M"]] for j, name in enumerate(names)}
    assert column["assert_at_most_12_words"] == [1, 1, 1, 0]
    assert column["assert_excludes_cheap"] == [1, 1, 0, 1]
    asks = [a for a in matrix["assertions"] if a["cost"] > 0]
    assert asks and set(matrix["needs_model"]) == {a["name"] for a in asks}  # no model: reported, not run
    assert all(e["kind"] == "needs_model" for e in matrix["errors"])
    assert all(isinstance(i, int) and isinstance(j, int) and i != j for i, j in matrix["K"])


def test_eval_matrix_feeds_select(capsys: pytest.CaptureFixture[str], prompt: Path) -> None:
    _import_and_synthesize(capsys, prompt)
    code, out, _ = run(capsys, "eval", str(prompt), "--json")
    matrix_file = prompt.parent / "matrix.json"
    matrix_file.write_text(out)
    matrix = json.loads(out)
    strict = ("--json", "--alpha", "1.0", "--tau", "0.0", "--method", "cov")
    code, out, _ = run(capsys, "select", "--matrix", str(matrix_file), *strict)
    chosen = json.loads(out)
    assert code == 0 and chosen["coverage"] == 1.0 and chosen["ffr"] == 0.0 and len(chosen["selected"]) >= 1
    columns = [[a["name"] for a in matrix["assertions"]].index(name) for name in chosen["selected"]]
    flagged = [any(row[j] == 0 for j in columns) for row in matrix["M"]]
    assert flagged == [False, False, True, True]  # recomputed from M: both bad caught, no good flagged
    code, out, _ = run(capsys, "select", str(prompt), *strict)  # the stored run gives the same answer
    assert code == 0 and json.loads(out)["selected"] == chosen["selected"]


def test_checks_that_need_a_model_are_left_out_of_selection_not_failed(
    capsys: pytest.CaptureFixture[str], prompt: Path
) -> None:
    """Without a model, ``ask_llm`` cells are no verdict: selection leaves those assertions out (and says so)
    instead of counting six failures per column, which used to make every selection infeasible."""
    _import_and_synthesize(capsys, prompt)
    code, out, _ = run(capsys, "eval", str(prompt), "--json")
    waiting = sorted(json.loads(out)["needs_model"])
    assert code == 0 and waiting
    code, out, _ = run(capsys, "select", str(prompt), "--json")
    chosen = json.loads(out)
    assert code == 0 and chosen["status"] in ("optimal", "feasible") and chosen["selected"]
    assert not set(chosen["selected"]) & set(waiting)
    assert chosen["coverage"] == 1.0 and chosen["ffr"] == 0.0
    assert any(note.startswith(f"left out {len(waiting)} assertion(s) that need a model") for note in chosen["notes"])
    assert not any("were errors" in note for note in chosen["notes"])


def test_selection_with_only_model_checks_says_there_is_nothing_to_select(
    capsys: pytest.CaptureFixture[str], prompt: Path
) -> None:
    prompt.write_text("Never promise refunds.\nBe warm.\n", encoding="utf-8")
    module = prompt.parent / "blurb_assertions.py"
    module.write_text(
        "from spade_lsp.assertions import ask_llm\n\n\n"
        "def assert_no_refunds(example: dict, prompt: str, response: str) -> bool:\n"
        "    return ask_llm('Does it avoid promising a refund?', response)\n",
        encoding="utf-8",
    )
    code, _, _ = run(capsys, "import", str(prompt), "--examples", str(prompt.parent / "labelled.jsonl"))
    assert code == 0
    assert run(capsys, "eval", str(prompt), "--json")[0] == 0
    code, _, err = run(capsys, "select", str(prompt))
    assert code != 0 and "every assertion of evaluation run" in err and "needs a model (assert_no_refunds)" in err
    assert "configure an assistant model" in err


def test_ask_llm_is_proxied_to_the_parent_and_cached(
    capsys: pytest.CaptureFixture[str], prompt: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPADE_TEST_SECRET_KEY", "sk-do-not-leak")
    questions: list[str] = []

    def judge(request: dict[str, Any]) -> Any:
        questions.append(request["messages"][-1]["content"])
        answered = judged_response(request)  # the prompt above it says "cheap" too
        return chat_reply(json.dumps({"answer": "no" if "cheap" in answered else "yes"}))

    with OpenAIStub(judge) as stub:
        (prompt.parent / "spade.toml").write_text(
            f'assistant_model = "same"\nmodel = "openai/judge"\napi_base = "{stub.api_base}"\n'
            'api_key_env = "SPADE_TEST_SECRET_KEY"\n'
        )
        _import_and_synthesize(capsys, prompt, "--synthesizer", "offline", "--classifier", "offline")
        code, out, _ = run(capsys, "eval", str(prompt), "--json", "--classifier", "offline")
        matrix = json.loads(out)
        asked = len(stub.requests)
        assert code == 0 and matrix["needs_model"] == [] and asked > 0
        assert all("sk-do-not-leak" not in json.dumps(request) for request in stub.requests)
        llm_columns = [j for j, a in enumerate(matrix["assertions"]) if a["cost"] > 0]
        assert [matrix["M"][2][j] for j in llm_columns] == [0] * len(llm_columns)  # "cheap" answered no
        assert [matrix["M"][0][j] for j in llm_columns] == [1] * len(llm_columns)
        # Each question shows the judge the prompt as rendered for that example, its input filled in.
        for product in ("Kettle", "Lamp", "Mug", "Shoe"):
            rendered = f"<prompt>\nWrite a product blurb for {product}.\n"
            assert any(rendered in question for question in questions), product
        # prompt, response, question: the checks of one example share the prefix a prompt cache reuses
        assert all(
            question.index("</prompt>")
            < question.index("<response>")
            < question.index("</response>")
            < question.rindex("Question:")
            for question in questions
        )
        assert run(capsys, "eval", str(prompt), "--json", "--classifier", "offline")[0] == 0
        assert len(stub.requests) == asked  # re-run answered from the store's cache


def test_bad_assertions_are_contained_and_reported(capsys: pytest.CaptureFixture[str], prompt: Path) -> None:
    _import_and_synthesize(capsys, prompt)
    module = prompt.parent / "blurb_assertions.py"
    module.write_text(
        module.read_text()
        + "\n\ndef assert_raises(example: dict, prompt: str, response: str) -> bool:\n    return 1 / 0 == 1\n"
        + "\n\ndef assert_not_bool(example: dict, prompt: str, response: str) -> bool:\n    return 'yes'\n"
        + "\n\ndef assert_reads_env(example: dict, prompt: str, response: str) -> bool:\n"
        + "    import subprocess\n    return True\n"
    )
    code, out, _ = run(capsys, "eval", str(prompt), "--json")
    matrix = json.loads(out)
    kinds = {(e["assertion"], e["kind"]) for e in matrix["errors"]}
    assert code == 1  # the run finished, and cells errored
    assert {("assert_raises", "exception"), ("assert_not_bool", "not_bool"), ("assert_reads_env", "forbidden")} <= kinds
    assert matrix["M"][0][[a["name"] for a in matrix["assertions"]].index("assert_raises")] == 0  # error: not a pass


def test_syntax_error_in_the_sidecar_is_reported_with_its_line(
    capsys: pytest.CaptureFixture[str], prompt: Path
) -> None:
    _import_and_synthesize(capsys, prompt)
    module = prompt.parent / "blurb_assertions.py"
    lines = module.read_text().splitlines()
    module.write_text("\n".join([*lines, "def assert_broken(example, prompt, response)", "    return True", ""]))
    code, _, err = run(capsys, "eval", str(prompt))
    assert code == 2 and f"blurb_assertions.py:{len(lines) + 1}" in err and "Traceback" not in err
    code, _, err = run(capsys, "synthesize", str(prompt))
    assert code == 2 and f"blurb_assertions.py:{len(lines) + 1}: syntax error" in err


def test_missing_inputs_and_unknown_placeholders_are_reported(capsys: pytest.CaptureFixture[str], prompt: Path) -> None:
    prompt.write_text("Write {count} lines about {topic}.\nThe reply should be no more than {limit} words.\n")
    (prompt.parent / "labelled.jsonl").write_text(
        json.dumps({"id": "x", "inputs": {"topic": "cats"}, "output": "Cats purr.", "label": "good"}) + "\n"
        + json.dumps({"id": "y", "inputs": {"topic": "dogs", "limit": 1}, "output": "Dogs bark.", "label": 0}) + "\n"
        + json.dumps({"id": "z", "inputs": {"topic": "fish"}, "output": "Fish swim.", "label": "good"}) + "\n"
        + json.dumps({"id": "w", "inputs": {"topic": "owls"}, "output": "Owls hoot.", "label": "bad"}) + "\n"
    )  # fmt: skip
    _import_and_synthesize(capsys, prompt)
    code, out, err = run(capsys, "eval", str(prompt), "--json")
    matrix = json.loads(out)
    assert "example x: no input for count, limit in the prompt" in err
    bound = [a["name"] for a in matrix["assertions"]].index("assert_at_most_limit_words")
    assert matrix["M"][1][bound] == 0  # "Dogs bark." is 2 words > 1
    cell = next(e for e in matrix["errors"] if e["example"] == "x" and e["assertion"] == "assert_at_most_limit_words")
    # an example without the input the check reads: not applicable, neither a failure nor an error
    assert cell["kind"] == "not_applicable" and "limit" in cell["message"] and code == 0


def test_prompt_without_instructions_and_eval_without_examples(
    capsys: pytest.CaptureFixture[str], workspace_dir: Path
) -> None:
    prompt = workspace_dir / "bare.prompt"
    prompt.write_text("{document}\n")
    code, out, err = run(capsys, "synthesize", str(prompt), "--json")
    assert code == 0 and json.loads(out)["candidates"] == [] and "no checkable instruction" in err
    assert not (workspace_dir / "bare_assertions.py").exists()  # no module created to hold nothing
    (workspace_dir / "bare_assertions.py").write_text(
        "def assert_short(example: dict, prompt: str, response: str) -> bool:\n    return len(response) < 100\n"
    )
    code, _, err = run(capsys, "eval", str(prompt))
    assert code == 2 and "no examples" in err and "spade import" in err


def test_eval_in_chunks_gives_the_matrix_of_one_pass(
    capsys: pytest.CaptureFixture[str], prompt: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Examples run a chunk at a time (memory follows the chunk, not the file); the matrix, labels, ids and cell
    errors are the ones a single pass gives, in file order."""
    from spade_lsp import _assertion_jobs

    _import_and_synthesize(capsys, prompt)
    whole = json.loads(run(capsys, "eval", str(prompt), "--json")[1])
    monkeypatch.setattr(_assertion_jobs, "EVAL_CHUNK", 3)  # 4 examples: a chunk of 3, then one of 1
    chunked = json.loads(run(capsys, "eval", str(prompt), "--json")[1])
    keys = ("assertions", "examples", "y", "M", "errors", "needs_model")
    assert {key: chunked[key] for key in keys} == {key: whole[key] for key in keys}
    assert chunked["examples"] == ["g1", "g2", "b1", "b2"] and chunked["errors"]


def test_eval_text_gives_each_check_its_verdict_as_the_editor_does(
    capsys: pytest.CaptureFixture[str], prompt: Path
) -> None:
    """The verdict column is the engine's ``check_outcome`` at the prompt's tau, the one the editor's test
    explorer shows; a check that catches no bad example fails, naming the examples."""
    _import_and_synthesize(capsys, prompt)
    module = prompt.parent / "blurb_assertions.py"
    blind = "\n\ndef assert_anything(example: dict, prompt: str, response: str) -> bool:\n    return True\n"
    module.write_text(module.read_text(encoding="utf-8") + blind, encoding="utf-8")
    code, out, _ = run(capsys, "eval", str(prompt))
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines() if line.startswith("assert_")}
    assert code == 0 and "verdict (tau 0.25)" in out
    assert rows["assert_at_most_12_words"] == rows["assert_excludes_cheap"] == "passed"
    assert rows["assert_anything"] == "failed"
    assert "  assert_anything failed: catches none of the 2 bad examples (expected fail, got pass: b1, b2)" in out
    asks = [name for name in rows if name.startswith("assert_llm_")]
    assert asks and all(rows[name] == "skipped" for name in asks)
    assert f"  {len(asks)} skipped, it needs a model (configure an assistant model): " in out
