"""Chat prompts in the editor: a Prompty file (front matter as Prompty's specification writes it, then ``system:``
and ``user:`` sections with Jinja placeholders) and message lists (``.prompt.yaml``, ``.prompt.json``).
Diagnostics land inside the right message and say which, hovers name the message, the outline lists the roles,
the settings beside the messages apply, a half-typed list breaks nothing, and a sentence added to the system
message between two commits is a delta of the system message."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import git
from lsprotocol import types

from spade_lsp.workspace import Workspace

OFFLINE = {"daemon_autostart": False}

PROMPTY_HEAD = """---
name: Customer Support Reply
description: Answers a customer's question about an order
authors:
  - spade
model:
  api: chat
  configuration:
    type: openai
    name: gpt-4o-mini
  parameters:
    max_tokens: 300
    temperature: 0.2
sample:
  firstName: Jane
  question: Where is my order?
inputs:
  firstName:
    type: string
  question:
    type: string
---
system:
You are a support agent for an online shop.
Keep the answer under 80 words.
"""
NEVER = "Never mention competitors.\n"
PROMPTY_TAIL = """
user:
{{firstName}} asks: {{question}}
Answer in a friendly tone.
"""
PROMPTY = PROMPTY_HEAD + NEVER + PROMPTY_TAIL

MESSAGES_YAML = """model: openai/gpt-4o-mini
temperature: 0.3
messages:
  - role: system
    content: |
      You answer questions about invoices.
      Answer in JSON.
  - role: user
    content: "Question: {question}. Keep it under 50 words."
"""


def line_of(text: str, wording: str) -> int:
    return next(number for number, line in enumerate(text.splitlines()) if wording in line)


def span(diagnostic: types.Diagnostic) -> tuple[int, int, int, int]:
    r = diagnostic.range
    return (r.start.line, r.start.character, r.end.line, r.end.character)


def rng(value: types.Range) -> tuple[int, int, int, int]:
    return (value.start.line, value.start.character, value.end.line, value.end.character)


def hover_text(hover: types.Hover | None) -> str:
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    return hover.contents.value


async def test_a_prompty_file_in_the_editor(editor_factory: Any, workspace_dir: Path) -> None:
    prompt = workspace_dir / "support.prompty"
    prompt.write_text(PROMPTY, encoding="utf-8")
    editor = await editor_factory(workspace_dir, settings=OFFLINE)
    uri = await editor.open(prompt, language="prompty")
    diagnostics = await editor.diagnostics_where(
        uri, lambda d: len(d) == 3 and "no history yet" in d[0].message, "three diagnostics, the history read"
    )
    system, user = line_of(PROMPTY, "system:"), line_of(PROMPTY, "user:")
    words, never, tone = (line_of(PROMPTY, w) for w in ("under 80 words", "Never mention", "friendly tone"))
    by_line = {d.range.start.line: d for d in diagnostics}
    assert sorted(by_line) == [words, never, tone]  # nothing in the front matter, nothing on the role lines
    assert all(d.source == "spade" for d in diagnostics)
    assert by_line[words].code == "Content/Count" and span(by_line[words]) == (words, 0, words, 31)
    assert by_line[words].message == (
        "Length or count (system message): no history yet (save to record the first version); "
        "not checked yet; Add assertion writes assert_at_most_79_words"
    )
    assert by_line[never].code == "Content/Exclusion"
    assert by_line[never].message.startswith("Must avoid (system message): ")
    assert by_line[tone].code == "Content/QualitativeAssessment" and span(by_line[tone]) == (tone, 0, tone, 26)
    assert by_line[tone].message.startswith("Tone or quality (user message): ")

    value = hover_text(await editor.hover(uri, words, 5))
    assert value.startswith("**Length or count**") and "In the **system** message" in value
    assert "In the **user** message" in hover_text(await editor.hover(uri, tone, 3))
    assert await editor.hover(uri, line_of(PROMPTY, "max_tokens"), 4) is None  # front matter: no sentence
    placeholders = hover_text(await editor.hover(uri, line_of(PROMPTY, "{{firstName}}"), 3))
    assert "In the **user** message" in placeholders

    symbols = await editor.symbols(uri)
    assert all(isinstance(s, types.DocumentSymbol) for s in symbols)
    assert [(s.name, s.kind) for s in symbols] == [
        ("system", types.SymbolKind.Namespace),
        ("user", types.SymbolKind.Namespace),
    ]
    assert rng(symbols[0].range) == (system, 0, user, 0) and rng(symbols[0].selection_range) == (system, 0, system, 7)
    assert rng(symbols[1].range) == (user, 0, len(PROMPTY.splitlines()), 0)
    assert rng(symbols[1].selection_range) == (user, 0, user, 5)
    assert symbols[0].detail == "3 instructions" and symbols[1].detail == "2 instructions"
    children = [(c.name, c.detail, c.range.start.line) for c in symbols[0].children or []]
    assert children == [
        ("You are a support agent for an online shop.", "Steps to follow", system + 1),
        ("Keep the answer under 80 words.", "Length or count", words),
        ("Never mention competitors.", "Must avoid", never),
    ]
    assert [c.name for c in symbols[1].children or []] == [
        "{{firstName}} asks: {{question}}",
        "Answer in a friendly tone.",
    ]

    # an edit that adds a second user message: the labels number the messages that share a role
    edited = PROMPTY + "\nassistant:\nSure.\n\nuser:\nNever use emoji.\n"
    editor.change(uri, edited)
    diagnostics = await editor.diagnostics_where(uri, lambda d: len(d) == 4, "the second user message")
    emoji = next(d for d in diagnostics if d.range.start.line == line_of(edited, "emoji"))
    assert emoji.message.startswith("Must avoid (user 2 message): ")
    assert next(d for d in diagnostics if d.range.start.line == tone).message.startswith(
        "Tone or quality (user 1 message): "
    )
    names = [s.name for s in await editor.symbols(uri)]
    assert names == ["system", "user 1", "assistant", "user 2"]


async def test_prompty_front_matter_settings_apply(editor_factory: Any, workspace_dir: Path) -> None:
    prompt = workspace_dir / "tiny.prompty"
    prompt.write_text(PROMPTY.replace("name: Customer", "max_prompt_bytes: 40\nname: Customer"), encoding="utf-8")
    editor = await editor_factory(workspace_dir, settings=OFFLINE)
    uri = await editor.open(prompt, language="prompty")
    [only] = await editor.diagnostics_where(uri, lambda d: len(d) == 1, "the front matter's size limit")
    assert only.code == "spade/unreadable-prompt" and "max_prompt_bytes" in only.message


async def test_a_message_list_in_the_editor(editor_factory: Any, workspace_dir: Path) -> None:
    prompt = workspace_dir / "invoices.prompt.yaml"
    prompt.write_text(MESSAGES_YAML, encoding="utf-8")
    editor = await editor_factory(workspace_dir, settings=OFFLINE)
    uri = await editor.open(prompt, language="yaml")
    diagnostics = await editor.diagnostics_where(uri, lambda d: len(d) == 2, "two diagnostics")
    json_line, user_line = line_of(MESSAGES_YAML, "Answer in JSON."), line_of(MESSAGES_YAML, "Question:")
    fmt, count = sorted(diagnostics, key=lambda d: d.range.start.line)
    assert fmt.code == "Structural/PresentationFormat" and span(fmt) == (json_line, 6, json_line, 21)
    assert fmt.message.startswith("Format rule (system message): ")
    # inside the quoted scalar: the wording's columns in the file, the quotes and the key left out
    start = MESSAGES_YAML.splitlines()[user_line].index("Keep")
    assert count.code == "Content/Count" and span(count) == (user_line, start, user_line, start + 23)
    assert count.message.startswith("Length or count (user message): ")
    assert "In the **user** message" in hover_text(await editor.hover(uri, user_line, start + 2))
    assert "In the **system** message" in hover_text(await editor.hover(uri, json_line, 8))
    assert await editor.hover(uri, 0, 3) is None  # a setting, not a sentence

    symbols = await editor.symbols(uri)
    assert [s.name for s in symbols] == ["system", "user"]
    system_entry = line_of(MESSAGES_YAML, "role: system")
    assert rng(symbols[0].range) == (system_entry, 4, user_line - 1, 0)
    assert rng(symbols[0].selection_range) == (system_entry, 4, system_entry, 16)
    end = len(MESSAGES_YAML.splitlines()[user_line])
    assert rng(symbols[1].range) == (user_line - 1, 4, user_line, end)
    assert [c.name for c in symbols[0].children or []] == ["Answer in JSON."]  # the first sentence has no category
    assert symbols[0].detail == "1 instruction" and symbols[1].detail == "2 instructions"
    assert [(c.name, c.detail) for c in symbols[1].children or []] == [
        ("Question: {question}.", "Input data"),
        ("Keep it under 50 words.", "Length or count"),
    ]


async def test_settings_beside_the_messages_apply(editor_factory: Any, workspace_dir: Path) -> None:
    small = workspace_dir / "small.prompt.yaml"
    small.write_text("max_prompt_bytes: 40\n" + MESSAGES_YAML, encoding="utf-8")
    small_json = workspace_dir / "small.prompt.json"
    small_json.write_text(
        json.dumps({"max_prompt_bytes": 40, "messages": [{"role": "user", "content": "Keep it under 9 words."}]}),
        encoding="utf-8",
    )
    editor = await editor_factory(workspace_dir, settings=OFFLINE)
    for path in (small, small_json):
        uri = await editor.open(path, language="json")
        [only] = await editor.diagnostics_where(uri, lambda d: len(d) == 1, f"the size limit of {path.name}")
        assert only.code == "spade/unreadable-prompt", path.name
    # the editor's settings beat the file's own
    other = await editor_factory(workspace_dir, settings={**OFFLINE, "max_prompt_bytes": 5000})
    uri = await other.open(small, language="yaml")
    diagnostics = await other.diagnostics_where(uri, lambda d: len(d) == 2, "the editor's limit")
    assert {d.code for d in diagnostics} == {"Structural/PresentationFormat", "Content/Count"}


async def test_a_half_typed_message_list_breaks_nothing(editor_factory: Any, workspace_dir: Path) -> None:
    prompt = workspace_dir / "chat.prompt.json"
    valid = json.dumps(
        [
            {"role": "system", "content": "Answer in JSON. Never mention prices."},
            {"role": "user", "content": "{question}"},
        ],
        indent=2,
    )
    prompt.write_text(valid, encoding="utf-8")
    editor = await editor_factory(workspace_dir, settings=OFFLINE)
    uri = await editor.open(prompt, language="json")
    await editor.diagnostics_where(uri, lambda d: len(d) == 2, "the valid list's diagnostics")
    half = valid[: valid.index("prices.") + 3]  # '... "content": "Answer in JSON. Never mention pri'
    editor.change(uri, half)
    [note] = await editor.diagnostics_where(
        uri, lambda d: len(d) == 1 and d[0].code == "spade/prompt-note", "only the note"
    )
    assert note.message.startswith("spade: invalid message list") and note.source == "spade"
    assert rng(note.range) == (0, 0, 0, 0)
    assert await editor.hover(uri, 2, 20) is None  # no sentence made of JSON syntax
    assert await editor.symbols(uri) == []

    async def titles() -> list[str]:
        return [lens.command.title for lens in await editor.code_lenses(uri) if lens.command]

    for _ in range(100):  # the history is read just after opening: the lens says so until then
        if "reading history" not in (await titles())[0]:
            break
        await asyncio.sleep(0.1)
    assert await titles() == ["spade: no versions recorded yet · 0 instructions · 0 assertions", "Open examples"]
    editor.change(uri, valid)
    diagnostics = await editor.diagnostics_where(uri, lambda d: len(d) == 2, "the list parsing again")
    assert [d.code for d in diagnostics] == ["Structural/PresentationFormat", "Content/Exclusion"]
    assert all("(system message)" in d.message for d in diagnostics)


async def test_a_sentence_added_to_the_system_message_is_a_delta_of_it(editor_factory: Any, tmp_path: Path) -> None:
    """Two commits of a Prompty file, the second adding a sentence to the system message: the daemon imports
    them, the sentence is introduced in v2 in the system message, and v2's delta holds one change, in it."""
    root = tmp_path / "repo"
    root.mkdir()
    repo = git.Repo.init(root)
    prompt = root / "support.prompty"
    shas = []
    for number, (text, message) in enumerate(
        [(PROMPTY_HEAD + PROMPTY_TAIL, "First draft"), (PROMPTY, "System: never mention competitors")], 1
    ):
        prompt.write_text(text, encoding="utf-8")
        repo.index.add([prompt.name])
        when = f"{1_704_103_200 + number * 86_400} +0000"
        shas.append(repo.index.commit(message, author_date=when, commit_date=when).hexsha)

    editor = await editor_factory(root)
    uri = await editor.open(prompt, language="prompty")
    never = line_of(PROMPTY, "Never mention")
    editor.save(uri)
    diagnostics = await editor.diagnostics_where(
        uri,
        lambda d: any(x.range.start.line == never and "introduced in v2" in x.message for x in d),
        "the git history to be recorded",
        30,
    )
    added = next(d for d in diagnostics if d.range.start.line == never)
    assert added.message == (
        "Must avoid (system message): introduced in v2; "
        "not checked yet; Add assertion writes assert_excludes_competitors"
    )
    words = next(d for d in diagnostics if d.range.start.line == line_of(PROMPTY, "under 80 words"))
    assert words.message.startswith("Length or count (system message): introduced in v1")
    value = hover_text(await editor.hover(uri, never, 3))
    assert "In the **system** message" in value
    assert f"- v2 (2024-01-03, commit `{shas[1][:10]}` “System: never mention competitors”): added" in value

    system, user = line_of(PROMPTY, "system:"), line_of(PROMPTY, "user:")
    with Workspace(root) as workspace:
        deltas = workspace.history.deltas(prompt)
    assert [(d.from_number, d.to_number) for d in deltas] == [(None, 1), (1, 2)]
    [change] = deltas[-1].changes
    assert change.kind == "added" and change.new_text == "Never mention competitors."
    assert change.range is not None
    assert (system, 0) < (change.range.start.line, change.range.start.character)
    assert (change.range.end.line, change.range.end.character) <= (user, 0)
    assert (change.range.start.line, change.range.start.character, change.range.end.character) == (never, 0, 26)
    assert change.message == "system"
    assert "Content/Exclusion" in deltas[-1].labels


async def test_a_half_typed_save_is_not_a_version_and_the_history_carries_on(
    editor_factory: Any, workspace_dir: Path
) -> None:
    """A message list saved half-typed is not recorded (as text it would make every sentence removed and added
    again, losing its origin and labels): the daemon says why, and the next valid save is the next version."""
    prompt = workspace_dir / "chat.prompt.json"
    first = json.dumps([{"role": "system", "content": "Answer in JSON."}, {"role": "user", "content": "{q}"}])
    prompt.write_text(first, encoding="utf-8")
    editor = await editor_factory(workspace_dir)
    uri = await editor.open(prompt, language="json")
    editor.save(uri)
    await editor.diagnostics_where(
        uri, lambda d: len(d) == 1 and "introduced in v1" in d[0].message, "the first version recorded", 30
    )
    half = first[:-12]
    prompt.write_text(half, encoding="utf-8")
    editor.change(uri, half)
    editor.save(uri, half)
    await editor.diagnostics_where(uri, lambda d: [x.code for x in d] == ["spade/prompt-note"], "only the note")
    refused = await editor.wait_for(
        lambda: [m.message for m in editor.client.log_messages if "not recorded until it parses" in m.message],
        "the daemon's refusal in the log",
    )
    assert refused[0].startswith("spade: chat.prompt.json was not recorded: ") and "invalid message list" in refused[0]
    with_never = first.replace("Answer in JSON.", "Answer in JSON. Never mention prices.")
    prompt.write_text(with_never, encoding="utf-8")
    editor.change(uri, with_never)
    editor.save(uri, with_never)
    diagnostics = await editor.diagnostics_where(
        uri, lambda d: len(d) == 2 and "introduced in v2" in d[1].message, "the second version recorded", 30
    )
    assert diagnostics[0].message == (
        "Format rule (system message): introduced in v1; not checked yet; Add assertion writes assert_valid_json"
    )
    assert diagnostics[1].message.startswith("Must avoid (system message): introduced in v2")
    with Workspace(workspace_dir) as workspace:
        assert len(workspace.history.versions(prompt)) == 2
        deltas = workspace.history.deltas(prompt)
    assert [(c.kind, c.new_text, c.message) for c in deltas[-1].changes] == [
        ("added", "Never mention prices.", "system")
    ]
