"""Checks that read the example's inputs, cells that do not apply, and candidates checked on the labelled
examples before they are written: ``spade synthesize`` and ``spade eval`` end to end through the real sandbox,
with inputs that vary from one example to the next."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from spade_lsp import checks
from spade_lsp.errors import NotApplicable
from tests.support.cli import run

FRENCH = "Bonjour ! Merci pour votre message, nous allons regarder votre commande et revenir vers vous très vite."
GERMAN = "Hallo! Vielen Dank für Ihre Nachricht, wir prüfen Ihre Bestellung und melden uns sehr bald bei Ihnen."
ENGLISH = "Hello! Thanks for your message, we will look into your order and get back to you very soon."
SPANISH = "¡Hola! Gracias por tu mensaje, vamos a revisar tu pedido y te responderemos muy pronto, de verdad."


def _example(id_: str, inputs: dict[str, Any], output: str, label: str) -> str:
    return json.dumps({"id": id_, "inputs": inputs, "output": output, "label": label}) + "\n"


def _workspace(root: Path, prompt_text: str, examples: list[str]) -> Path:
    (root / "spade.toml").write_text('classifier = "offline"\n', encoding="utf-8")
    prompt = root / "reply.prompt"
    prompt.write_text(prompt_text, encoding="utf-8")
    (root / "reply.examples.jsonl").write_text("".join(examples), encoding="utf-8")
    return prompt


def _columns(matrix: dict[str, Any]) -> dict[str, list[int]]:
    names = [a["name"] for a in matrix["assertions"]]
    return {name: [row[j] for row in matrix["M"]] for j, name in enumerate(names)}


def test_a_language_and_a_limit_read_from_the_inputs_are_caught_exactly(
    capsys: pytest.CaptureFixture[str], workspace_dir: Path
) -> None:
    """ "Answer in {language}." and "Use at most {n} words." on examples whose inputs vary: each check fails
    exactly the examples that break it, whatever language or limit the example asks for."""
    examples = [
        _example("fr", {"message": "Où est ma commande ?", "language": "French", "n": 30}, FRENCH, "good"),
        _example("de", {"message": "Wo ist meine Bestellung?", "language": "German", "n": 30}, GERMAN, "good"),
        _example("en", {"message": "Where is my order?", "language": "English", "n": 30}, ENGLISH, "good"),
        _example("fr-wrong", {"message": "Où est ma commande ?", "language": "French", "n": 30}, ENGLISH, "bad"),
        _example("es-long", {"message": "¿Dónde está?", "language": "Spanish", "n": 8}, SPANISH, "bad"),
        _example("de-wrong", {"message": "Wo?", "language": "de", "n": 40}, SPANISH, "bad"),
    ]
    prompt = _workspace(
        workspace_dir, "Reply to the customer: {message}\nAnswer in {language}.\nUse at most {n} words.\n", examples
    )
    code, out, err = run(capsys, "synthesize", str(prompt), "--json")
    assert code == 0, err
    expressions = {c["name"]: c["expression"] for c in json.loads(out)["candidates"]}
    assert expressions["assert_in_the_language_language"] == (
        "checks.in_language(response, checks.value(example, 'language'))"
    )
    assert expressions["assert_at_most_n_words"] == "checks.count(response, 'words') <= checks.bound(example, 'n')"
    assert not any("mentions_language" in name or "mentions_n" in name for name in expressions)  # values, not words
    code, out, err = run(capsys, "eval", str(prompt), "--json")
    assert code == 0, err
    columns = _columns(json.loads(out))
    assert columns["assert_in_the_language_language"] == [1, 1, 1, 0, 1, 0]
    assert columns["assert_at_most_n_words"] == [1, 1, 1, 1, 0, 1]


def test_figures_not_in_the_inputs_are_caught_exactly(capsys: pytest.CaptureFixture[str], workspace_dir: Path) -> None:
    """ "Refrain from speculating" on reports whose figures vary: the check fails exactly the outputs that state a
    figure their own report does not give (a rounding is the report's figure; code is not a claim), and does not
    apply to an example with no report (its prompt is not one the model saw)."""
    examples = [
        _example("g1", {"report": "Revenue rose 16.27% to $61.14 billion."}, "Revenue: $61.1 billion, up 16%.", "good"),
        _example("g2", {"report": "We opened three stores in 2023."}, "3 new stores opened in 2023.", "good"),
        _example("g3", {"report": "Costs fell 5%."}, "Costs fell 5%:\n```\ncost = 0.95 * 100\n```", "good"),
        _example("b1", {"report": "Revenue rose 16.27% to $61.14 billion."}, "Revenue: $61.1 billion, up 18%.", "bad"),
        _example("b2", {"report": "Costs fell 5%."}, "Costs fell 5% and will fall 10% next year.", "bad"),
        _example("n1", {}, "Revenue grew 7%.", "bad"),
    ]
    text = "Summarize the report: {report}\nRefrain from speculating unless a figure is stated in the report.\n"
    prompt = _workspace(workspace_dir, text, examples)
    code, out, err = run(capsys, "synthesize", str(prompt), "--json")
    assert code == 0, err
    expressions = {c["name"]: c["expression"] for c in json.loads(out)["candidates"]}
    assert expressions["assert_states_only_sourced_numbers"] == (
        "checks.sourced_numbers(response, example, prompt, inputs=['report'])"
    )
    code, out, err = run(capsys, "eval", str(prompt), "--json")
    assert code == 0, err
    matrix = json.loads(out)
    j = [a["name"] for a in matrix["assertions"]].index("assert_states_only_sourced_numbers")
    assert [row[j] for row in matrix["M"]] == [1, 1, 1, 0, 0, 1]
    assert [5, j] in matrix["not_applicable"]


@pytest.mark.parametrize(
    ("sentence", "inputs", "passing", "failing"),
    [
        ("Use at most {n} words.", {"n": 5}, "One two three four.", "One two three four five six."),
        ("Write between {low} and {high} sentences.", {"low": 2, "high": 3}, "A. B.", "A. B. C. D."),
        ("Write exactly {k} bullet points.", {"k": 2}, "- a\n- b", "- a\n- b\n- c"),
        (
            "Write a thread staying within the limit of {word_count} words per tweet.",
            {"word_count": 4},
            "1/ one two three\n2/ four five six",
            "1/ one two three\n2/ four five six seven eight",
        ),
        ("Write it in {language}.", {"language": "Spanish"}, SPANISH, FRENCH),
        ("Translate the text into {target_lang}.", {"target_lang": "de"}, GERMAN, ENGLISH),
        ("Write a tweet about {topic}.", {"topic": "green tea"}, "Green tea, every morning!", "Coffee, every day!"),
        ("Never repeat {secret}.", {"secret": "hunter2"}, "I cannot share that.", "It is hunter2."),
        ("Respond in {n} bullet points.", {"n": 2}, "- a\n- b", "- a\n- b\n- c"),
        (
            "Answer in the same language as {question}.",
            {"question": "Où est ma commande ? Je l'attends depuis deux semaines."},
            FRENCH,
            ENGLISH,
        ),
        ("Make sure the output contains the keyword {keyword}.", {"keyword": "matcha"}, "Try matcha!", "Try tea!"),
        (
            "Include the customer's name, {customer_name}, in the greeting.",
            {"customer_name": "Ada Lovelace"},
            "Dear Ada Lovelace, thank you!",
            "Dear customer, thank you!",
        ),
    ],
)
def test_each_family_reads_its_input_per_example(
    sentence: str, inputs: dict[str, Any], passing: str, failing: str
) -> None:
    """Every family that takes a value from the prompt's inputs reads it from the example it runs on: the same
    check passes one example and fails another with other inputs, and does not apply to one without them."""
    from spade_lsp.synthesis import Instruction, OfflineSynthesizer, PromptContext

    context = PromptContext(sentence, tuple(inputs))
    candidates = OfflineSynthesizer().synthesize([Instruction(sentence, (), 1)], context)
    # the reading that takes every input the sentence names (a range's one-sided halves are readings too)
    reading = [c for c in candidates if not c.asks_llm and all(f"'{name}'" in (c.expression or "") for name in inputs)]
    assert reading, [c.expression for c in candidates]
    for candidate in reading:
        namespace = {"checks": checks, "example": dict(inputs)}
        assert eval(candidate.expression or "", {**namespace, "response": passing}) is True, candidate.expression
        assert eval(candidate.expression or "", {**namespace, "response": failing}) is False, candidate.expression
        with pytest.raises(NotApplicable):
            eval(candidate.expression or "", {"checks": checks, "example": {}, "response": passing})


@pytest.mark.parametrize(
    ("sentence", "inputs", "passing", "failing"),
    [
        ("Start the email with 'Hi {first_name},'.", {"first_name": "Ada"}, "Hi Ada, thanks!", "Hi there, thanks!"),
        ("Sign off with the sender's name, {sender_name}.", {"sender_name": "Bob"}, "Thanks!\n\nBob", "Thanks!"),
        ("Always include the phrase 'Welcome to {company}'.", {"company": "Acme"}, "Welcome to Acme!", "Welcome!"),
    ],
)
def test_a_quoted_phrase_with_a_placeholder_is_filled_from_the_example(
    sentence: str, inputs: dict[str, Any], passing: str, failing: str
) -> None:
    from spade_lsp.synthesis import Instruction, OfflineSynthesizer, PromptContext

    candidates = OfflineSynthesizer().synthesize([Instruction(sentence, (), 1)], PromptContext(sentence, tuple(inputs)))
    (edge,) = [c for c in candidates if "checks.fill(" in (c.expression or "")]
    namespace = {"checks": checks, "example": dict(inputs)}
    assert eval(edge.expression or "", {**namespace, "response": passing}) is True
    assert eval(edge.expression or "", {**namespace, "response": failing}) is False
    with pytest.raises(NotApplicable):
        eval(edge.expression or "", {"checks": checks, "example": {}, "response": passing})


def test_a_missing_input_is_not_applicable_in_the_matrix_selection_and_the_cli(
    capsys: pytest.CaptureFixture[str], workspace_dir: Path
) -> None:
    examples = [
        _example("g1", {"language": "French"}, FRENCH, "good"),
        _example("g2", {}, ENGLISH, "good"),  # no language: the check does not apply
        _example("b1", {"language": "French"}, ENGLISH, "bad"),
        _example("b2", {}, GERMAN, "bad"),
    ]
    prompt = _workspace(workspace_dir, "Answer the customer in {language}.\n", examples)
    assert run(capsys, "synthesize", str(prompt))[0] == 0
    code, out, err = run(capsys, "eval", str(prompt), "--json")
    assert code == 0, err  # not applicable is neither a failure nor an error
    matrix = json.loads(out)
    names = [a["name"] for a in matrix["assertions"]]
    j = names.index("assert_in_the_language_language")
    assert [e["kind"] for e in matrix["errors"] if e["assertion"] == names[j]] == ["not_applicable"] * 2
    assert sorted(matrix["not_applicable"]) == [[1, j], [3, j]]
    assert [row[j] for row in matrix["M"]] == [1, 1, 0, 1]  # a check that does not apply flags nothing
    code, out, _ = run(capsys, "eval", str(prompt))
    assert code == 0 and "not applicable" in out
    line = next(line for line in out.splitlines() if line.startswith(names[j]))
    assert line.split()[1:] == ["passed", "1.00", "(1/1)", "0.00", "(0/1)", "2"]  # rates over the cells that apply
    code, out, err = run(capsys, "select", str(prompt), "--json", "--alpha", "0.5")
    assert code == 0, err
    selection = json.loads(out)
    assert names[j] in selection["selected"] and selection["ffr"] == 0.0
    assert any("does not apply" in note for note in selection.get("notes", [])), selection


def test_candidates_are_checked_on_the_labelled_examples_before_they_are_written(
    capsys: pytest.CaptureFixture[str], workspace_dir: Path
) -> None:
    """A check that fails more than tau of the good examples is held back with the reason, in the output and
    in the store the editor reads; it is written on request."""
    short = "Thanks, we will look into it."
    long = "Thank you so much for writing to us today; we will look into your order right away and reply."
    examples = [
        _example("g1", {"order": "A1"}, short + " Order A1.", "good"),
        _example("g2", {"order": "B2"}, long + " Order B2.", "good"),
        _example("g3", {"order": "C3"}, long + " Order C3.", "good"),
        _example("b1", {"order": "D4"}, "No.", "bad"),
    ]
    text = "Reply about order {order}.\nKeep it under 10 words.\nMention the order number.\n"
    prompt = _workspace(workspace_dir, text, examples)
    code, out, err = run(capsys, "synthesize", str(prompt), "--json")
    assert code == 0, err
    document = json.loads(out)
    held = {v["name"]: v for v in document["held_back"]}
    assert set(held) == {"assert_at_most_9_words"}
    assert held["assert_at_most_9_words"]["held_back"] == (
        "would fail 2 of 3 good examples (more than tau 0.25): ids g2, g3"
    )
    written = (workspace_dir / "reply_assertions.py").read_text(encoding="utf-8")
    assert "def assert_at_most_9_words" not in written and "def assert_mentions_order" in written
    assert document["verdicts"]["assert_mentions_order"]["good_failed"] == []
    code, out, err = run(capsys, "synthesize", str(prompt))
    assert code == 0 and "held back 1 candidate(s)" in out and "ids g2, g3" in out

    from spade_lsp.overview import build_overview
    from spade_lsp.store import Store

    with Store.open(workspace_dir) as store:
        overview = build_overview(store, workspace_dir, prompt, max_prompt_bytes=1_000_000)
    limit = next(i for i in overview.instructions if i.text == "Keep it under 10 words.")
    assert limit.all_held_back and limit.held_back == (
        ("assert_at_most_9_words", held["assert_at_most_9_words"]["held_back"]),
    )

    code, out, err = run(capsys, "synthesize", str(prompt), "--include-held-back", "--json")
    assert code == 0, err
    assert "def assert_at_most_9_words" in (workspace_dir / "reply_assertions.py").read_text(encoding="utf-8")


def test_checks_that_read_inputs_never_raise_on_a_missing_one() -> None:
    with pytest.raises(NotApplicable, match="no input 'n'"):
        checks.bound({"inputs": {}}, "n")
    with pytest.raises(NotApplicable, match="holds no number"):
        checks.bound({"n": "unlimited"}, "n")
    assert checks.bound({"inputs": {"n": "1,000 words"}}, "n") == 1000
    with pytest.raises(NotApplicable):
        checks.value({"language": None}, "language")
    with pytest.raises(KeyError):  # code written for a plain dict still catches it
        checks.value({}, "language")


def test_candidates_are_checked_on_the_first_labelled_examples_each_id_once(tmp_path: Path) -> None:
    from spade_lsp._precheck import labelled_examples

    prompt = tmp_path / "p.prompt"
    source = tmp_path / "p.examples.jsonl"
    rows = [
        {"id": "a", "inputs": {}, "output": "x", "label": "good"},
        {"id": "a", "inputs": {}, "output": "y", "label": "bad"},  # a reused id: skipped, as everywhere
        {"id": "b", "inputs": {}, "label": "bad"},  # no output: nothing to run a check on
        {"id": "c", "inputs": {}, "output": "z"},  # unlabelled
        {"id": "d", "inputs": {}, "output": "w", "label": "bad"},
    ]
    source.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    assert [(e.id, e.label) for e in labelled_examples(prompt)] == [("a", 1), ("d", 0)]
    source.write_text("{not json\n", encoding="utf-8")
    assert labelled_examples(prompt) == []  # no usable example: no pre-check (eval reports the file)
    source.unlink()
    assert labelled_examples(prompt) == []


def test_the_precheck_reads_labelled_examples_skipping_a_reused_id(tmp_path: Path) -> None:
    from spade_lsp._precheck import labelled_examples

    prompt = tmp_path / "p.prompt"
    prompt.write_text("Write {x}.\n", encoding="utf-8")
    rows = [
        {"id": "a", "inputs": {"x": 1}, "output": "one", "label": "good"},
        {"id": "a", "inputs": {"x": 2}, "output": "two", "label": "bad"},  # reuses line 1's id: skipped
        {"id": "b", "inputs": {"x": 3}, "output": "three"},  # unlabelled: not for the precheck
        {"id": "c", "inputs": {"x": 4}, "output": "four", "label": "bad"},
    ]
    (tmp_path / "p.examples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert [(e.id, e.output) for e in labelled_examples(prompt)] == [("a", "one"), ("c", "four")]
