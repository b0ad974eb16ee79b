"""The editor's views of chat prompts without an editor: the outline (``features.symbols``), the hover's message
line, and the settings a message list or a Prompty file holds (``WorkspaceState.settings_for``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from spade_lsp.overview import build_overview
from spade_lsp_server import _render
from spade_lsp_server._convert import Columns
from spade_lsp_server._state import WorkspaceState
from spade_lsp_server.features.symbols import flatten, prompt_symbols
from tests.spade_lsp_server.test_chat_prompts import MESSAGES_YAML, PROMPTY

UTF16 = "utf-16"


def _symbols(root: Path, name: str, text: str, encoding: str = UTF16) -> list[types.DocumentSymbol]:
    overview = build_overview(None, root, root / name, text, read_sidecar=False, max_prompt_bytes=1_000_000)
    return prompt_symbols(overview, Columns(text, encoding))


def _inside(inner: types.Range, outer: types.Range) -> bool:
    def key(p: types.Position) -> tuple[int, int]:
        return (p.line, p.character)

    return key(outer.start) <= key(inner.start) and key(inner.end) <= key(outer.end)


def test_every_symbol_holds_its_selection_and_its_children(tmp_path: Path) -> None:
    one_line = json.dumps(
        [
            {"role": "system", "content": "Answer in JSON. Never mention prices."},
            {"role": "user", "content": "{question}"},
            {"role": "user", "content": "Keep it under 20 words."},
        ]
    )
    for name, text in (("a.prompty", PROMPTY), ("b.prompt.yaml", MESSAGES_YAML), ("c.prompt.json", one_line)):
        symbols = _symbols(tmp_path, name, text)
        assert symbols, name
        for symbol in symbols:
            assert _inside(symbol.selection_range, symbol.range), (name, symbol.name)
            for child in symbol.children or []:
                assert _inside(child.range, symbol.range), (name, symbol.name, child.name)
    json_symbols = _symbols(tmp_path, "c.prompt.json", one_line)
    assert [s.name for s in json_symbols] == ["system", "user 1", "user 2"]
    assert [c.name for c in json_symbols[0].children or []] == ["Answer in JSON.", "Never mention prices."]
    # On one line, "{question}" and the next message's sentence reach the splitter as one unit (their JSON
    # syntax is blanked to spaces): the outline keeps it in the message it starts in, cut to that message.
    [merged] = json_symbols[1].children or []
    assert merged.range.end == json_symbols[1].range.end
    system = json_symbols[0].range  # from its entry's "{" to the end of its content string, on line 0
    assert (system.start.line, system.start.character) == (0, one_line.index('{"role": "system"'))
    assert system.end.character == one_line.index('"}, {"role": "user"') + 1


def test_a_plain_prompt_lists_its_instructions(tmp_path: Path) -> None:
    text = "You are a support agent.\nKeep the answer under 80 words.\nNever mention competitors.\n"
    symbols = _symbols(tmp_path, "reply.prompt", text)
    assert [(s.name, s.detail, s.kind, s.range.start.line) for s in symbols] == [
        ("You are a support agent.", "Steps to follow", types.SymbolKind.String, 0),
        ("Keep the answer under 80 words.", "Length or count", types.SymbolKind.String, 1),
        ("Never mention competitors.", "Must avoid", types.SymbolKind.String, 2),
    ]
    assert _symbols(tmp_path, "empty.prompt", "") == []
    binary = build_overview(
        None, tmp_path, tmp_path / "bin.prompt", "\x00\x01\x02" * 10, read_sidecar=False, max_prompt_bytes=1_000_000
    )
    assert binary.problem is not None and prompt_symbols(binary, Columns("", UTF16)) == []


def test_long_sentences_are_cut_and_columns_follow_the_encoding(tmp_path: Path) -> None:
    long = "Never mention " + ", ".join(f"competitor {n}" for n in range(12)) + "."
    text = f"system:\nRéponds 😀 vite. {long}\nuser:\nHi.\n"
    [system, _user] = _symbols(tmp_path, "x.prompt", text, "utf-8")
    [child] = system.children or []
    assert child.name == "Never mention competitor 0, competitor 1, competitor 2, competitor 3, co…"[:59] + "…"
    assert len(child.name) == 60 and child.detail == "Must avoid"
    start = text.splitlines()[1].index("Never")
    assert child.range.start.character == len(text.splitlines()[1][:start].encode())  # UTF-8 bytes
    utf16 = _symbols(tmp_path, "x.prompt", text)[0]
    [child16] = utf16.children or []
    assert child16.range.start.character == start + 1  # the emoji is two UTF-16 units


def test_the_flat_outline_names_each_container(tmp_path: Path) -> None:
    flat = flatten(_symbols(tmp_path, "a.prompty", PROMPTY), "file:///a.prompty")
    assert [(s.name, s.container_name) for s in flat][:3] == [
        ("system", None),
        ("You are a support agent for an online shop.", "system"),
        ("Keep the answer under 80 words.", "system"),
    ]
    assert all(s.location.uri == "file:///a.prompty" for s in flat)


def test_the_hover_names_the_message_only_in_a_chat_prompt(tmp_path: Path) -> None:
    chat = build_overview(
        None, tmp_path, tmp_path / "a.prompty", PROMPTY, read_sidecar=False, max_prompt_bytes=1_000_000
    )
    words = next(i for i in chat.instructions if "80 words" in i.text)
    assert "\n\nIn the **system** message\n\n**History**" in _render.instruction_hover(words, chat, ())
    plain = build_overview(
        None,
        tmp_path,
        tmp_path / "p.prompt",
        "Keep it under 80 words.\n",
        read_sidecar=False,
        max_prompt_bytes=1_000_000,
    )
    assert "message" not in _render.instruction_hover(plain.instructions[0], plain, ())


@pytest.fixture
def state(workspace_dir: Path) -> WorkspaceState:
    (workspace_dir / "spade.toml").write_text("tau = 0.4\ntemperature = 0.9\n", encoding="utf-8")

    def ignore(*_: Any) -> None:
        return None

    return WorkspaceState(workspace_dir, on_notification=ignore, tell=ignore)


def test_settings_of_a_prompty_file(state: WorkspaceState, workspace_dir: Path) -> None:
    settings, notes = state.settings_for(PROMPTY, workspace_dir / "a.prompty")
    assert notes == ()
    assert (settings.model, settings.max_tokens, settings.temperature, settings.tau) == (
        "openai/gpt-4o-mini",
        300,
        0.2,
        0.4,
    )
    assert state.settings_for(PROMPTY, workspace_dir / "a.prompty")[0] is settings  # cached on the front matter
    state.set_client_values({"temperature": 0.5})
    assert state.settings_for(PROMPTY, workspace_dir / "a.prompty")[0].temperature == 0.5  # the editor wins
    bad = PROMPTY.replace("    type: openai\n", "    type: openai\n    api_key: 12\n").replace(
        "  parameters:\n", "  parameters: [1]\n  old:\n"
    )
    settings, notes = state.settings_for(bad, workspace_dir / "a.prompty")
    assert settings.model is None and notes and "model.parameters" in notes[0]


def test_settings_beside_the_messages(state: WorkspaceState, workspace_dir: Path) -> None:
    yaml_path = workspace_dir / "a.prompt.yaml"
    settings, notes = state.settings_for(MESSAGES_YAML, yaml_path)
    assert notes == () and (settings.model, settings.temperature, settings.tau) == ("openai/gpt-4o-mini", 0.3, 0.4)
    # a keystroke in a message changes nothing the settings depend on: the cached settings come back
    assert state.settings_for(MESSAGES_YAML.replace("invoices", "bills"), yaml_path)[0] is settings
    # the same text read as a plain prompt has no front matter: the workspace's settings
    assert state.settings_for(MESSAGES_YAML, workspace_dir / "a.prompt")[0].temperature == 0.9
    compact = "---\nmessages:\n- role: user\n  content: Hi.\n# a comment\ntau: 0.2\n"
    assert state.settings_for(compact, yaml_path)[0].tau == 0.2
    flow = "messages: [\n  {role: user, content: Hi.}\n]\nalpha: 0.7\n"
    assert state.settings_for(flow, yaml_path)[0].alpha == 0.7
    as_json = json.dumps({"temperature": 0.1, "messages": [{"role": "user", "content": "Hi."}]})
    assert state.settings_for(as_json, workspace_dir / "a.prompt.json")[0].temperature == 0.1
    listed = json.dumps([{"role": "user", "content": "Hi."}])
    assert state.settings_for(listed, workspace_dir / "a.prompt.json") == (state.settings, ())
    half = as_json[:-10]
    assert state.settings_for(half, workspace_dir / "a.prompt.json") == (state.settings, ())
    settings, notes = state.settings_for("tau: 7\nmessages: []\n", yaml_path)
    assert settings.tau == 0.4 and notes and notes[0].startswith("the settings beside messages: tau")
    # the sandbox stays a workspace-file setting, whatever a message list says
    assert state.settings_for("sandbox: python-only\nmessages: []\n", yaml_path)[0].sandbox == state.settings.sandbox


def test_front_matter_that_does_not_parse_is_said_once(state: WorkspaceState, workspace_dir: Path) -> None:
    """The overview reports front matter that is not YAML; the settings add no second note for it (a setting
    with a bad value still gets its own)."""
    prompt = workspace_dir / "a.prompt"
    broken = "---\ntau: [0.2\n---\nKeep it short.\n"
    settings, notes = state.settings_for(broken, prompt)
    assert notes == () and settings.tau == 0.4
    overview_notes = state.overview(prompt.as_uri(), prompt, broken, lambda _: None).notes
    assert len([note for note in overview_notes if "front matter" in note]) == 1, overview_notes
    _, notes = state.settings_for("---\ntau: 3\n---\nKeep it short.\n", prompt)
    assert len(notes) == 1 and "tau" in notes[0]
