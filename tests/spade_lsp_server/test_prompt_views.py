"""Diagnostics, hovers and code lenses on prompts, read from stores the engine wrote (no daemon runs here:
``daemon_autostart`` is false, as in a workspace whose daemon is not up yet)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.spade_lsp_server._workspaces import synthesize_offline
from tests.support.blurb import V3, record

INFO = types.DiagnosticSeverity.Information
HINT = types.DiagnosticSeverity.Hint

OFFLINE = {"daemon_autostart": False}


def _by_line(diagnostics: list[types.Diagnostic]) -> dict[int, types.Diagnostic]:
    return {d.range.start.line: d for d in diagnostics}


async def test_diagnostics_follow_the_contract_without_any_history(editor_factory: Any, workspace_dir: Path) -> None:
    prompt = workspace_dir / "reply.prompt"
    text = "You are a support agent.\nKeep the answer under 80 words.\nNever mention competitors.\nBe friendly.\n"
    prompt.write_text(text, encoding="utf-8")
    editor = await editor_factory(workspace_dir, settings=OFFLINE)
    uri = await editor.open(prompt)
    diagnostics = await editor.diagnostics_where(
        uri, lambda d: len(d) == 3 and "no history yet" in d[0].message, "three diagnostics, the history read"
    )
    lines = _by_line(diagnostics)
    assert set(lines) == {1, 2, 3}  # "You are a support agent." sets a role: not an instruction (its hover says so)
    count = lines[1]
    assert count.source == "spade" and count.code == "Content/Count" and count.severity == INFO
    # the hint: the check spade can write for it, and the action that writes it
    assert count.message == (
        "Length or count: no history yet (save to record the first version); "
        "not checked yet; Add assertion writes assert_at_most_79_words"
    )
    assert (count.range.start.character, count.range.end.line, count.range.end.character) == (0, 1, 31)
    assert lines[2].code == "Content/Exclusion" and lines[2].message.startswith("Must avoid: ")
    assert lines[3].code == "Content/QualitativeAssessment"
    assert lines[3].message.startswith("Tone or quality")

    lenses = await editor.code_lenses(uri)
    titles = [lens.command.title for lens in lenses if lens.command is not None]
    assert titles[0] == "spade: no versions recorded yet · 3 instructions · 0 assertions"
    assert titles[1] == "Add assertions for 3 uncovered instructions"
    adds = [lens for lens in lenses if lens.command is not None and lens.command.title == "Add assertion"]
    assert [lens.range.start.line for lens in adds] == [1, 2, 3]
    assert adds[0].command is not None and adds[0].command.command == "spade.addAssertions"
    assert list(adds[0].command.arguments or []) == [uri, ["Keep the answer under 80 words."]]


async def test_a_sentence_of_several_categories_is_coded_by_its_first(editor_factory: Any, workspace_dir: Path) -> None:
    prompt = workspace_dir / "notes.prompt"
    prompt.write_text("Summarise the meeting notes.\nUse at most three bullet points.\n", encoding="utf-8")
    editor = await editor_factory(workspace_dir, settings=OFFLINE)
    uri = await editor.open(prompt)
    [bullets] = await editor.diagnostics_where(uri, lambda d: len(d) == 1, "one diagnostic")  # the task: none
    assert bullets.range.start.line == 1
    # a format and a quantity, not a workflow description; the code is the first in the taxonomy's order
    assert bullets.code == "Structural/PresentationFormat"
    assert bullets.message.startswith("Format rule, Length or count: ")


async def test_recorded_history_hovers_and_coverage(editor_factory: Any, workspace_dir: Path) -> None:
    prompt = workspace_dir / "blurb.prompt"
    record(workspace_dir, prompt, V3.replace("Use a warm and friendly tone.", "Use a friendly tone."), V3)
    synthesize_offline(workspace_dir, prompt)
    editor = await editor_factory(workspace_dir, settings=OFFLINE)
    uri = await editor.open(prompt)
    diagnostics = await editor.diagnostics_where(uri, lambda d: len(d) >= 2, "diagnostics")
    lines = _by_line(diagnostics)
    words = lines[2]
    assert words.code == "Content/Count" and words.severity == HINT
    assert words.message == "Length or count: introduced in v1; checked by assert_at_most_12_words"
    tone = lines[1]  # reworded in v2: a qualitative criterion, not a workflow description
    assert tone.code == "Content/QualitativeAssessment" and tone.severity == HINT
    assert tone.message.startswith("Tone or quality: introduced in v2; checked by ")

    hover = await editor.hover(uri, 1, 5)
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    value = hover.contents.value
    assert value.startswith("**Tone or quality**")
    # the category in plain words with its one-line explanation; the SPADE id only in the diagnostic's code
    assert "- **Tone or quality**: a judgement such as concise, friendly or professional" in value
    assert "Content/QualitativeAssessment" not in value
    assert "- v1 (" in value and ": added as “Use a friendly tone.”" in value
    assert "- v2 (" in value and ": reworded from “Use a friendly tone.”" in value
    assert "`assert_positive_tone`: not evaluated yet · no selection yet" in value
    assert hover.range is not None and (hover.range.start.line, hover.range.end.character) == (1, 29)
    assert await editor.hover(uri, 40, 0) is None

    lenses = await editor.code_lenses(uri)
    summary = lenses[0].command
    # three instructions, as many as the diagnostics: "Write a product blurb for {product}." frames the task with
    # its input, which a blurb need not name, so there is nothing to check in it
    assert len(diagnostics) == 3 and 0 not in lines
    assert summary is not None and summary.title.startswith("spade: 2 versions · 3 instructions · ")
    assert summary.title.endswith(" assertions") and all(
        lens.command is None or lens.command.title != "Add assertion" for lens in lenses
    )


async def test_unsaved_edits_and_a_store_that_appears_later(editor_factory: Any, workspace_dir: Path) -> None:
    prompt = workspace_dir / "blurb.prompt"
    prompt.write_text(V3, encoding="utf-8")
    editor = await editor_factory(workspace_dir, settings=OFFLINE)
    uri = await editor.open(prompt)
    await editor.diagnostics_where(uri, lambda d: d and "no history yet" in d[0].message, "no history yet")
    # (a prompt with no history is first shown without a word about history while the daemon reads it)
    record(workspace_dir, prompt, V3)  # the daemon created the store meanwhile
    edited = V3 + "Always include the price.\n"
    editor.change(uri, edited)
    diagnostics = await editor.diagnostics_where(
        uri, lambda d: any("introduced in v1" in x.message for x in d), "the store to be read"
    )
    last = _by_line(diagnostics)[4]
    assert last.code == "Content/Inclusion"
    assert last.message == (
        "Must include: not recorded yet (save to record it); "
        "needs a model: no check can be written for it offline (configure an assistant model)"
    )
    editor.close(uri)
    await editor.wait_for(lambda: editor.diagnostics(uri) == [], "diagnostics cleared on close")


async def test_untitled_and_other_schemes_get_text_only_diagnostics(editor_factory: Any, workspace_dir: Path) -> None:
    editor = await editor_factory(workspace_dir, settings=OFFLINE)
    untitled = await editor.open("untitled:Untitled-1", "Keep it under 10 words.\n", language="plaintext")
    diagnostics = await editor.diagnostics_where(untitled, lambda d: len(d) == 1, "untitled diagnostics")
    assert diagnostics[0].message == (
        "Length or count: unsaved buffer, no history; not checked yet; Add assertion writes assert_at_most_9_words"
    )
    hover = await editor.hover(untitled, 0, 2)
    assert hover is not None and "unsaved buffer: no history" in str(hover.contents)
    remote = await editor.open("git:/repo/x.prompt?ref=HEAD", "Never use emoji.\n")
    diagnostics = await editor.diagnostics_where(remote, lambda d: len(d) == 1, "diagnostics of a git: URI")
    assert diagnostics[0].code == "Content/Exclusion" and "no history" in diagnostics[0].message
    with pytest.raises(JsonRpcException) as refused:
        await editor.command("spade.report", untitled)
    assert refused.value.code == types.LSPErrorCodes.RequestFailed
    assert "this buffer has no file yet; save it as a prompt file first" in refused.value.message
    python = await editor.open("untitled:Untitled-2", "x = 1\n", language="python")
    await editor.hover(python, 0, 0)  # a round trip: the server has seen the document
    assert python not in editor.client.diagnostics


async def test_oversized_and_binary_prompts_give_one_clear_diagnostic(editor_factory: Any, workspace_dir: Path) -> None:
    big = workspace_dir / "big.prompt"
    big.write_text("Keep it under 10 words. " * 220_000, encoding="utf-8")  # 5.3 MB
    editor = await editor_factory(workspace_dir, settings=OFFLINE)
    uri = await editor.open(big)
    diagnostics = await editor.diagnostics_where(uri, lambda d: len(d) > 0, "a diagnostic")
    assert len(diagnostics) == 1
    assert (
        diagnostics[0].code == "spade/unreadable-prompt" and diagnostics[0].severity == types.DiagnosticSeverity.Warning
    )
    assert diagnostics[0].message.startswith("spade: 5.3 MB is larger than the 1 MB limit for a prompt")
    assert await editor.hover(uri, 0, 3) is None
    assert [lens.command.title for lens in await editor.code_lenses(uri) if lens.command] == ["spade: not analysed"]
    binary = workspace_dir / "blob.prompt"
    binary.write_text("GIF89a\x00\x01\x02 Keep it short.", encoding="utf-8")
    blob = await editor.open(binary)
    diagnostics = await editor.diagnostics_where(blob, lambda d: len(d) > 0, "the binary diagnostic")
    assert len(diagnostics) == 1 and "binary file" in diagnostics[0].message
    surrogate = await editor.open("untitled:odd", "Keep it \ud800 under 5 words.\n")
    diagnostics = await editor.diagnostics_where(surrogate, lambda d: len(d) == 1, "diagnostics despite a surrogate")
    assert diagnostics[0].code == "Content/Count"


async def test_client_settings_override_workspace_files(editor_factory: Any, workspace_dir: Path) -> None:
    (workspace_dir / "spade.toml").write_text('prompt_globs = ["**/*.prompt"]\nmax_prompt_bytes = 20\n')
    template = workspace_dir / "sub" / "mail.tmpl"
    template.parent.mkdir()
    template.write_text("Never use emoji.\n", encoding="utf-8")  # 17 bytes: under the limit of spade.toml
    prompt = workspace_dir / "a.prompt"
    prompt.write_text("Keep the answer under 80 words, always.\n", encoding="utf-8")
    editor = await editor_factory(workspace_dir, settings={**OFFLINE, "promptGlobs": ["**/*.tmpl", "**/*.prompt"]})
    tmpl_uri = await editor.open(template)
    diagnostics = await editor.diagnostics_where(tmpl_uri, lambda d: len(d) == 1, "the .tmpl file as a prompt")
    assert diagnostics[0].code == "Content/Exclusion"
    uri = await editor.open(prompt)
    diagnostics = await editor.diagnostics_where(uri, lambda d: len(d) == 1, "the size limit of spade.toml")
    assert diagnostics[0].code == "spade/unreadable-prompt"
    editor.client.set_configuration({"max_prompt_bytes": 1000, "daemon_autostart": False}, section="spade")
    editor.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    diagnostics = await editor.diagnostics_where(
        uri, lambda d: [x.code for x in d] == ["Content/Count"], "the editor's limit to apply"
    )
    # the editor's settings no longer list *.tmpl: that file is not a prompt any more
    await editor.wait_for(lambda: editor.diagnostics(tmpl_uri) == [], "the .tmpl diagnostics to be withdrawn")


async def test_empty_editor_settings_leave_the_decision_to_the_files(editor_factory: Any, workspace_dir: Path) -> None:
    """A settings editor's empty text box ("") and null mean unset: spade.toml decides, as if absent."""
    (workspace_dir / "spade.toml").write_text("max_prompt_bytes = 20\n")
    prompt = workspace_dir / "a.prompt"
    prompt.write_text("Keep the answer under 80 words, always.\n", encoding="utf-8")
    settings = {**OFFLINE, "maxPromptBytes": "", "model": None, "promptGlobs": None, "interpreter": "/usr/bin/python3"}
    editor = await editor_factory(workspace_dir, settings=settings)
    uri = await editor.open(prompt)
    diagnostics = await editor.diagnostics_where(uri, lambda d: len(d) == 1, "the size limit of spade.toml")
    assert diagnostics[0].code == "spade/unreadable-prompt"
    assert not [m for m in editor.client.messages if "settings" in m.message]  # nothing to complain about


async def test_front_matter_settings_sit_between_files_and_the_editor(editor_factory: Any, workspace_dir: Path) -> None:
    prompt = workspace_dir / "fm.prompt"
    prompt.write_text("---\nmax_prompt_bytes: 10\n---\nKeep it under 9 words.\n", encoding="utf-8")
    editor = await editor_factory(workspace_dir, settings=OFFLINE)
    uri = await editor.open(prompt)
    diagnostics = await editor.diagnostics_where(uri, lambda d: len(d) == 1, "the front matter's limit")
    assert diagnostics[0].code == "spade/unreadable-prompt"
    other = workspace_dir / "fm2.prompt"
    other.write_text("---\nmax_prompt_bytes: 10\n---\nKeep it under 9 words.\n", encoding="utf-8")
    editor2 = await editor_factory(workspace_dir, settings={**OFFLINE, "max_prompt_bytes": 5000})
    uri2 = await editor2.open(other)
    diagnostics = await editor2.diagnostics_where(uri2, lambda d: len(d) == 1, "the editor overriding front matter")
    assert diagnostics[0].code == "Content/Count" and diagnostics[0].range.start.line == 3


async def test_utf8_position_encoding_is_respected(editor_factory: Any, workspace_dir: Path) -> None:
    prompt = workspace_dir / "emoji.prompt"
    prompt.write_text("Réponds 😀. Keep it under 5 words.\n", encoding="utf-8")
    editor = await editor_factory(workspace_dir, settings=OFFLINE, encodings=["utf-8"])
    uri = await editor.open(prompt)
    diagnostics = await editor.diagnostics_where(uri, lambda d: len(d) == 1, "diagnostics")
    start = diagnostics[0].range.start.character
    assert start == len("Réponds 😀. ".encode())  # 15 UTF-8 bytes (12 UTF-16 units, 11 characters)
    hover = await editor.hover(uri, 0, start + 1)
    assert hover is not None and hover.range is not None and hover.range.start.character == start


async def test_a_file_deleted_while_open_keeps_working(editor_factory: Any, workspace_dir: Path) -> None:
    prompt = workspace_dir / "gone.prompt"
    prompt.write_text("Keep it under 5 words.\n", encoding="utf-8")
    editor = await editor_factory(workspace_dir, settings=OFFLINE)
    uri = await editor.open(prompt)
    await editor.diagnostics_where(uri, lambda d: len(d) == 1, "diagnostics")
    prompt.unlink()
    editor.change(uri, "Keep it under 5 words.\nNever mention prices.\n")
    await editor.diagnostics_where(uri, lambda d: len(d) == 2, "diagnostics after the file was deleted")
    editor.save(uri)
    hover = await editor.hover(uri, 1, 1)
    assert hover is not None and "Must avoid" in str(hover.contents)
