"""The sidecar module's diagnostics, lenses and hovers, and the code actions of prompts and sidecars, over a
store the engine wrote (synthesis, a real sandbox run, a stored selection); no daemon runs here."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from lsprotocol import types

from tests.spade_lsp_server._workspaces import evaluate_now, store_selection, synthesize_offline, write_examples
from tests.spade_lsp_server.conftest import apply_text_edits
from tests.support.blurb import V3, record

OFFLINE = {"daemon_autostart": False}
CRASHES = (
    "\n\ndef assert_crashes(example: dict, prompt: str, response: str) -> bool:\n    return 1 / 0 > 0\n\n\n"
    "@assertion(category='Content/Count', sentence='Keep it under 3 words.', version=1)\n"
    "def assert_old_rule(example: dict, prompt: str, response: str) -> bool:\n    return True\n\n\n"
    "def assert_flags_tea(example: dict, prompt: str, response: str) -> bool:\n    return 'tea' not in response\n"
)


LATER = "\n\ndef assert_added_later(example: dict, prompt: str, response: str) -> bool:\n    return True\n"


def _module(root: Path) -> Path:
    prompt = root / "blurb.prompt"
    record(root, prompt, V3)
    write_examples(prompt)
    module = synthesize_offline(root, prompt)
    module.write_text(module.read_text(encoding="utf-8") + CRASHES, encoding="utf-8")
    run_id = evaluate_now(root, prompt)
    store_selection(root, prompt, run_id, ["assert_positive_tone"], [("assert_positive_tone", "assert_excludes_cheap")])
    module.write_text(module.read_text(encoding="utf-8") + LATER, encoding="utf-8")
    return module


def _def_line(text: str, name: str) -> int:
    return next(i for i, line in enumerate(text.splitlines()) if line.startswith(f"def {name}("))


async def test_sidecar_diagnostics_lenses_and_hovers(editor_factory: Any, workspace_dir: Path) -> None:
    module = _module(workspace_dir)
    text = module.read_text(encoding="utf-8")
    editor = await editor_factory(workspace_dir, settings=OFFLINE)
    uri = await editor.open(module, language="python")
    diagnostics = await editor.diagnostics_where(uri, lambda d: len(d) > 3, "sidecar diagnostics")
    by_code: dict[str, dict[int, types.Diagnostic]] = {}
    for d in diagnostics:
        assert d.source == "spade"
        by_code.setdefault(str(d.code), {})[d.range.start.line] = d

    crash_line = _def_line(text, "assert_crashes")
    errored = by_code["spade/assertion-error"][crash_line]
    assert errored.severity == types.DiagnosticSeverity.Warning
    assert errored.message.startswith("assert_crashes raised an error on 4 of 4 example(s) in evaluation run 1: ")
    assert "ZeroDivisionError" in errored.message
    assert errored.range.start.character == 4 and errored.range.end.character == 4 + len("assert_crashes")

    stale = by_code["spade/stale-assertion"][_def_line(text, "assert_old_rule")]
    assert stale.message == (
        "assert_old_rule is stale: its source sentence is no longer in blurb.prompt: “Keep it under 3 words.”"
    )

    dropped = by_code["spade/dropped-assertion"]
    cheap = dropped[_def_line(text, "assert_excludes_cheap")]
    assert cheap.message == (
        "assert_excludes_cheap is dropped by the latest selection (sub, tau 0.25): subsumed by assert_positive_tone"
    )
    assert (
        list(cheap.tags or []) == [types.DiagnosticTag.Unnecessary]
        and cheap.severity == types.DiagnosticSeverity.Information
    )
    words = dropped[_def_line(text, "assert_at_most_12_words")]
    assert words.message.endswith(": not needed for coverage")
    tea = dropped[_def_line(text, "assert_flags_tea")]  # fails one of the two good examples
    assert tea.message.endswith(": fails 50% of the good examples, more than the 25% allowed (FFR 0.50 > tau 0.25)")
    assert _def_line(text, "assert_positive_tone") not in dropped  # the one selected
    assert _def_line(text, "assert_added_later") not in dropped  # written after the run: not part of the selection

    lenses = {lens.range.start.line: lens.command for lens in await editor.code_lenses(uri)}
    positive, cheap_lens = (
        lenses[_def_line(text, "assert_positive_tone")],
        lenses[_def_line(text, "assert_excludes_cheap")],
    )
    # a friendly tone is a sentiment not below zero: the blurb's bad outputs ("A cheap mug.", twenty words) are
    # neutral, so it fails none of the four
    assert positive is not None and positive.title == "pass 100% on 4 examples · selected"
    assert cheap_lens is not None and cheap_lens.title == "pass 75% on 4 examples · subsumed by assert_positive_tone"
    crash_lens = lenses[crash_line]
    assert crash_lens is not None and crash_lens.title == "pass 0% on 4 examples (4 errors) · not selected"
    asks = lenses[_def_line(text, "assert_llm_use_a_warm_and_friendly_tone")]
    assert asks is not None and asks.title == "needs a model · not selected"
    later = lenses[_def_line(text, "assert_added_later")]
    assert later is not None and later.title == "not evaluated yet · no selection yet"
    assert later.command == "spade.evaluate" and list(later.arguments or []) == [
        (workspace_dir / "blurb.prompt").as_uri()
    ]

    hover = await editor.hover(uri, _def_line(text, "assert_at_most_12_words"), 6)
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    value = hover.contents.value
    assert value.startswith("**assert_at_most_12_words** · Length or count")
    assert "From “Keep it not exceeding 12 words.” (v1)" in value
    assert "Evaluation run 1: pass 75% (3/4) · coverage 0.50 · FFR 0.00" in value
    assert "Selection: dropped: not needed for coverage" in value

    # prompt side: every instruction is covered (hints), and its hover lists the figures
    prompt_uri = await editor.open(workspace_dir / "blurb.prompt")
    prompt_diagnostics = await editor.diagnostics_where(prompt_uri, lambda d: len(d) >= 2, "prompt diagnostics")
    assert all(d.severity == types.DiagnosticSeverity.Hint for d in prompt_diagnostics)
    hover = await editor.hover(prompt_uri, 3, 3)
    assert hover is not None
    assert "`assert_excludes_cheap`: pass 75% (3/4) · coverage 0.50 · FFR 0.00 · dropped: subsumed by " in str(
        hover.contents
    )


async def test_remove_the_assertions_the_selection_drops(editor_factory: Any, workspace_dir: Path) -> None:
    module = _module(workspace_dir)
    text = module.read_text(encoding="utf-8")
    editor = await editor_factory(workspace_dir, settings=OFFLINE)
    uri = await editor.open(module, language="python")
    diagnostics = await editor.diagnostics_where(uri, lambda d: len(d) > 3, "sidecar diagnostics")
    whole = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0))
    actions = await editor.code_actions(uri, whole, only=["source"])
    remove = next(a for a in actions if a.title.startswith("Remove assertions the selection drops"))
    assert remove.kind == "source.spade.removeDropped" and remove.edit is not None
    dropped_line = _def_line(text, "assert_excludes_cheap")
    related = [d for d in diagnostics if d.code == "spade/dropped-assertion" and d.range.start.line == dropped_line]
    quick = await editor.code_actions(uri, related[0].range, diagnostics=related, only=["quickfix"])
    assert [a.kind for a in quick] == [types.CodeActionKind.QuickFix] and list(quick[0].diagnostics or []) == related

    assert remove.edit.document_changes is not None
    change = remove.edit.document_changes[0]
    assert isinstance(change, types.TextDocumentEdit) and change.text_document.version == 1
    edits = [e for e in change.edits if isinstance(e, types.TextEdit)]
    result = apply_text_edits(text, edits)
    names = [n.name for n in ast.parse(result).body if isinstance(n, ast.FunctionDef)]
    assert names == ["assert_positive_tone", "assert_added_later"]  # the selected one, and one never evaluated
    assert "# spade: generated" in result and "assert_excludes_cheap" not in result
    assert result.startswith('"""Assertions on the outputs of blurb.prompt') and "\n\n\n\n" not in result


async def test_a_sidecar_with_a_syntax_error(editor_factory: Any, workspace_dir: Path) -> None:
    module = _module(workspace_dir)
    text = module.read_text(encoding="utf-8")
    broken_line = _def_line(text, "assert_crashes") + 1
    lines = text.splitlines()
    lines[broken_line] = "    return (1 / 0"
    broken = "\n".join(lines) + "\n"
    editor = await editor_factory(workspace_dir, settings=OFFLINE)
    uri = await editor.open(module, broken, language="python")
    diagnostics = await editor.diagnostics_where(
        uri, lambda d: any(x.code == "spade/syntax-error" for x in d), "the syntax error"
    )
    error = next(d for d in diagnostics if d.code == "spade/syntax-error")
    assert error.severity == types.DiagnosticSeverity.Error
    assert error.message.startswith(f"blurb_assertions.py:{broken_line + 1}: syntax error: ")
    assert error.range.start.line == broken_line
    # the functions that still parse keep their figures; deleting code from a broken tree is not offered
    assert any(d.code == "spade/dropped-assertion" for d in diagnostics)
    whole = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0))
    actions = await editor.code_actions(uri, whole)
    assert [a.title for a in actions] == ["Open examples"]


async def test_prompt_code_actions(editor_factory: Any, workspace_dir: Path) -> None:
    prompt = workspace_dir / "reply.prompt"
    prompt.write_text("Hello.\nKeep the answer under 80 words.\nNever mention competitors.\n", encoding="utf-8")
    editor = await editor_factory(workspace_dir, settings=OFFLINE)
    uri = await editor.open(prompt)
    diagnostics = await editor.diagnostics_where(uri, lambda d: len(d) == 2, "diagnostics")
    on_count = [d for d in diagnostics if d.range.start.line == 1]
    actions = await editor.code_actions(uri, on_count[0].range, diagnostics=on_count)
    fix = actions[0]
    assert fix.title == "Add assertion for this instruction" and fix.kind == types.CodeActionKind.QuickFix
    assert list(fix.diagnostics or []) == on_count and fix.is_preferred
    assert fix.command is not None and fix.command.command == "spade.addAssertions"
    assert list(fix.command.arguments or []) == [uri, ["Keep the answer under 80 words."]]
    # the workflow's next steps are quick fixes too (Ctrl+. in VS Code lists them), not only source actions
    everything = next(a for a in actions if a.kind == "quickfix.spade.addAssertions")
    assert everything.title == "Add assertions for all uncovered instructions (2)"
    assert everything.command is not None and list(everything.command.arguments or [])[1] == [
        "Keep the answer under 80 words.",
        "Never mention competitors.",
    ]
    assert actions[-1].title == "Open examples" and actions[-1].kind == "quickfix.spade.openExamples"
    assert not any(a.kind.startswith("source.") for a in actions if a.kind)  # no duplicates in the same menu
    on_hello = types.Range(start=types.Position(line=0, character=1), end=types.Position(line=0, character=1))
    anywhere = await editor.code_actions(uri, on_hello, only=[types.CodeActionKind.QuickFix])
    assert [a.title for a in anywhere] == ["Add assertions for all uncovered instructions (2)", "Open examples"]
    sources = await editor.code_actions(uri, on_count[0].range, only=[types.CodeActionKind.Source])
    assert [a.kind for a in sources] == ["source.spade.addAssertions", "source.spade.openExamples"]
    # the light bulb's automatic request does not offer them on every line
    automatic = await editor.client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=on_hello,
            context=types.CodeActionContext(diagnostics=[], trigger_kind=types.CodeActionTriggerKind.Automatic),
        )
    )
    assert not automatic


async def test_an_instruction_only_a_model_can_check_offers_no_empty_add(
    editor_factory: Any, workspace_dir: Path
) -> None:
    """ "Never blame the customer." needs judgement: its hint says so and names the next step, and no "Add assertion"
    (lens or quick fix) is offered that would add nothing; "End with a question." and the sign-off get checks."""
    prompt = workspace_dir / "support.prompt"
    prompt.write_text(
        "Never blame the customer.\nEnd with a question.\nAlways sign off as The Acme Team.\n", encoding="utf-8"
    )
    editor = await editor_factory(workspace_dir, settings=OFFLINE)
    uri = await editor.open(prompt)
    diagnostics = await editor.diagnostics_where(
        uri, lambda d: len(d) == 3 and "no history yet" in d[0].message, "three hints"
    )
    lines = {d.range.start.line: d for d in diagnostics}
    assert lines[0].message == (
        "Must avoid: no history yet (save to record the first version); "
        "needs a model: no check can be written for it offline (configure an assistant model)"
    )
    assert lines[1].message.endswith("Add assertion writes assert_ends_with_a_question")
    assert lines[2].message.endswith("Add assertion writes assert_signs_off_as_the_acme_team")
    assert lines[1].code == lines[2].code == "Structural/PresentationFormat"
    blame = await editor.code_actions(uri, lines[0].range, diagnostics=[lines[0]])
    assert "Add assertion for this instruction" not in [a.title for a in blame]
    adds = [lens for lens in await editor.code_lenses(uri) if lens.command and lens.command.title == "Add assertion"]
    assert [lens.range.start.line for lens in adds] == [1, 2]
    hover = await editor.hover(uri, 0, 3)
    assert hover is not None and "set an assistant model" in str(hover.contents)


async def test_a_sidecar_changed_on_disk_refreshes_the_prompt(editor_factory: Any, workspace_dir: Path) -> None:
    prompt = workspace_dir / "reply.prompt"
    prompt.write_text("Keep the answer under 80 words.\nNever mention competitors.\n", encoding="utf-8")
    editor = await editor_factory(workspace_dir, settings=OFFLINE)
    uri = await editor.open(prompt)
    await editor.diagnostics_where(uri, lambda d: len(d) == 2, "diagnostics")
    module = workspace_dir / "reply_assertions.py"
    module.write_text(
        "from spade_lsp.assertions import assertion\n\n\n"
        "@assertion(category='Content/Exclusion', sentence='Never   mention competitors.')\n"
        "def assert_no_competitors(example: dict, prompt: str, response: str) -> bool:\n    return True\n",
        encoding="utf-8",
    )
    editor.client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=module.as_uri(), type=types.FileChangeType.Created)]
        )
    )
    diagnostics = await editor.diagnostics_where(
        uri,
        lambda d: any(x.severity == types.DiagnosticSeverity.Hint and "no history yet" in x.message for x in d),
        "the new coverage",
    )
    covered = next(d for d in diagnostics if d.range.start.line == 1)  # matched after collapsing whitespace
    assert (
        covered.message == "Must avoid: no history yet (save to record the first version); "
        "checked by assert_no_competitors"
    )


async def test_checks_as_tests_with_their_places_and_outcomes(editor_factory: Any, workspace_dir: Path) -> None:
    """``spade.checks``: what the editor's test explorer shows. A check passes when it fails at most tau of the
    good examples and catches a bad one; a failure names the examples, expected and actual."""
    module = _module(workspace_dir)
    text = module.read_text(encoding="utf-8")
    editor = await editor_factory(workspace_dir, settings=OFFLINE)
    uri = await editor.open(module, language="python")
    result = await editor.command("spade.checks", uri)
    assert result["prompt"] == str(workspace_dir / "blurb.prompt") and result["sidecar"] == str(module)
    assert result["tau"] == 0.25 and result["run_id"] == 1 and result["stale"] is True  # assert_added_later since
    checks = {check["name"]: check for check in result["checks"]}
    for name, check in checks.items():
        assert check["line"] == _def_line(text, name)
    tea = checks["assert_flags_tea"]["outcome"]
    assert tea["state"] == "failed"
    assert tea["message"].startswith("fails 1 of 2 good examples, more than tau 0.25 allows (expected pass, got fail: ")
    assert checks["assert_excludes_cheap"]["outcome"]["state"] == "passed"
    assert checks["assert_excludes_cheap"]["outcome"]["message"] == "catches 1 of 2 bad, fails 0 of 2 good"
    tone = checks["assert_positive_tone"]["outcome"]  # the bad outputs are neutral in tone: it catches neither
    assert tone["state"] == "failed" and tone["message"].startswith("catches none of the 2 bad examples")
    crashed = checks["assert_crashes"]["outcome"]
    assert crashed["state"] == "errored" and "ZeroDivisionError" in crashed["message"]
    assert checks["assert_llm_use_a_warm_and_friendly_tone"]["outcome"] == {
        "state": "skipped",
        "message": "not judged: it needs a model (configure an assistant model)",
    }
    assert checks["assert_added_later"]["outcome"] is None  # written after the evaluation: not run yet
    old = checks["assert_old_rule"]["outcome"]  # passes everything: catches no bad example
    assert old["state"] == "failed" and old["message"].startswith("catches none of the 2 bad examples (expected fail")
