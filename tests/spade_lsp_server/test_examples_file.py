"""The examples file in the editor: a hover on an example shows its grading note and the note's judgement
history from the store (written here by the engine's own judge-run functions); lines the engine cannot read
get a diagnostic, a readable file gets none; the prompt and its sidecar behave as before. No daemon runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from lsprotocol import types

from spade_lsp.judges import Answer
from spade_lsp.store import Judgement, save_judgements
from spade_lsp.store import finish_judge_run as finish_run
from spade_lsp.store import start_judge_run as start_run
from spade_lsp.workspace import Workspace
from tests.support.blurb import V3, record

OFFLINE = {"daemon_autostart": False}
NOTE = "Mentions tea, and says the kettle is lovely."
OLD_NOTE = "Mentions tea."
ROWS = [
    {"id": "g1", "inputs": {"product": "Kettle"}, "output": "A lovely kettle. Great for tea!", "label": "good"},
    {"id": "g2", "inputs": {"product": "Lamp"}, "output": "A warm lamp.", "label": "good"},
]


def _lines(note: str = NOTE) -> list[str]:
    first = json.dumps({**ROWS[0], "grading_note": note})
    never_judged = json.dumps({"inputs": {"product": "Mug"}, "output": "A mug.", "grading_note": "Says mug."})
    return [first, json.dumps(ROWS[1]), '{"id": "broken", "inputs": {', never_judged]


def _grading_run(root: Path, judgements: list[Judgement], *, status: str = "done", model: str = "openai/judge") -> int:
    """A grading run as the engine stores one: started, its judgements saved, finished."""
    with Workspace(root) as workspace:
        store = workspace.store
        prompt_id = store.db.execute("SELECT id FROM prompts WHERE path = 'blurb.prompt'").fetchone()[0]
        run_id = start_run(
            store,
            kind="grading",
            name="grading-notes",
            parameters={"compare": True},
            prompt_id=int(prompt_id),
            version=1,
            model=model,
        )
        save_judgements(store, run_id, judgements)
        if status != "running":
            finish_run(store, run_id, status=status, document={})
        return run_id


def _workspace(root: Path) -> tuple[Path, Path]:
    prompt = root / "blurb.prompt"
    record(root, prompt, V3)
    examples = root / "blurb.examples.jsonl"
    examples.write_text("\n".join(_lines()) + "\n", encoding="utf-8")
    _grading_run(
        root,
        [
            Judgement("g1", "with_notes", Answer(problem="refusal", detail="I cannot judge this."), note=OLD_NOTE),
            Judgement("g1", "without_notes", Answer(value="No", explanation="Too short to tell.")),
        ],
        model="openai/older",
    )
    _grading_run(
        root,
        [
            Judgement(
                "g1", "with_notes", Answer(value="Yes", explanation="It mentions tea and calls it lovely."), note=NOTE
            ),
            Judgement("g1", "without_notes", Answer(value="Unsure", explanation="No criteria given.")),
            Judgement("g2", "with_notes", Answer(value="No", explanation="Not about g1."), note="other"),
        ],
    )
    _grading_run(root, [Judgement("g1", "with_notes", Answer(value="No", explanation="unfinished"))], status="running")
    return prompt, examples


def _markdown(hover: types.Hover | None) -> str:
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert hover.contents.kind == types.MarkupKind.Markdown
    return hover.contents.value


async def test_a_hover_on_a_grading_note_shows_its_judgement_history(editor_factory: Any, workspace_dir: Path) -> None:
    prompt, examples = _workspace(workspace_dir)
    editor = await editor_factory(workspace_dir, settings=OFFLINE)
    prompt_uri = await editor.open(prompt)
    await editor.diagnostics_where(prompt_uri, lambda d: len(d) >= 2, "the prompt's diagnostics as before")
    uri = await editor.open(examples, language="jsonl")

    value = _markdown(await editor.hover(uri, 0, 10))
    assert value.startswith("**Example g1** · label: good")
    assert "**Grading note:** “Mentions tea, and says the kettle is lovely.”" in value
    newest, older = value.index("- run 2 · "), value.index("- run 1 · ")
    assert newest < older  # newest first; the unfinished run 3 is not shown
    assert "run 3" not in value and "unfinished" not in value
    run2 = value[newest:older]
    assert "`openai/judge` · v1" in run2 and " UTC" in run2
    assert "  - with notes: **Yes**: “It mentions tea and calls it lovely.”" in run2
    assert "  - without notes: **Unsure**: “No criteria given.”" in run2
    assert "earlier note" not in run2
    run1 = value[older:]
    assert "`openai/older`" in run1
    assert "  - with notes: no answer (refusal)" in run1
    assert "(judged against an earlier note: “Mentions tea.”)" in run1
    assert "  - without notes: **No**: “Too short to tell.”" in run1
    hover = await editor.hover(uri, 0, 0)
    assert hover is not None and hover.range is not None
    assert (hover.range.start.line, hover.range.end.line, hover.range.end.character) == (0, 0, len(_lines()[0]))

    plain = _markdown(await editor.hover(uri, 1, 3))  # no note: the example, and how to add one
    assert plain.startswith("**Example g2** · label: good") and "No grading note" in plain
    assert "Judgements" not in plain

    assert await editor.hover(uri, 2, 5) is None  # invalid JSON: no hover, a diagnostic instead
    never = _markdown(await editor.hover(uri, 3, 1))  # no id: its line number is its id, as the engine reads it
    assert never.startswith("**Example 4** · label: unlabelled")
    assert "- not judged yet: judging the notes needs a model (set the `spade.model` setting)" in never
    assert await editor.hover(uri, 9, 0) is None  # past the end

    diagnostics = await editor.diagnostics_where(uri, lambda d: len(d) == 1, "the broken line's diagnostic")
    broken = diagnostics[0]
    assert (broken.source, broken.code, broken.severity) == (
        "spade",
        "spade/invalid-example",
        types.DiagnosticSeverity.Error,
    )
    assert broken.range.start.line == 2 and broken.message.startswith("example on line 3: invalid JSON: ")

    # a new finished run shows on the next hover (the store is read afresh, as after a daemon's job/finished)
    _grading_run(workspace_dir, [Judgement("g1", "with_notes", Answer(value="No", explanation="Changed its mind."))])
    latest = _markdown(await editor.hover(uri, 0, 1))
    assert latest.index("- run 4 · ") < latest.index("- run 2 · ")
    assert "  - with notes: **No**: “Changed its mind.”" in latest

    # fixing the line withdraws its diagnostic; a repeated id gets one
    fixed = _lines()
    fixed[2] = json.dumps({"id": "g2", "inputs": {"product": "Mug"}})
    editor.change(uri, "\n".join(fixed) + "\n")
    repeated = await editor.diagnostics_where(
        uri, lambda d: len(d) == 1 and d[0].range.start.line == 2 and "already used" in d[0].message, "repeated id"
    )
    assert repeated[0].message == "example on line 3: id 'g2' already used on line 2"
    fixed[2] = json.dumps({"id": "m1", "inputs": {"product": "Mug"}, "label": "good"})
    editor.change(uri, "\n".join(fixed) + "\n")
    await editor.diagnostics_where(uri, lambda d: d == [], "the diagnostics withdrawn")
    assert _markdown(await editor.hover(uri, 2, 0)).startswith("**Example m1** · label: good")

    # the prompt keeps its own views: its hover and lenses are untouched by the examples file
    assert _markdown(await editor.hover(prompt_uri, 2, 3)).startswith("**Length or count**")
    assert await editor.code_lenses(uri) == []
    whole = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=1))
    assert await editor.code_actions(uri, whole) == []


async def test_a_readable_examples_file_gets_no_diagnostics(editor_factory: Any, workspace_dir: Path) -> None:
    prompt = workspace_dir / "blurb.prompt"
    prompt.write_text(V3, encoding="utf-8")
    examples = workspace_dir / "blurb.examples.jsonl"
    examples.write_text("".join(json.dumps(row) + "\n" for row in ROWS), encoding="utf-8")
    elsewhere = workspace_dir / "notes.examples.jsonl"  # no prompt beside it: not spade's
    elsewhere.write_text('{"broken\n', encoding="utf-8")
    editor = await editor_factory(workspace_dir, settings=OFFLINE)
    prompt_uri = await editor.open(prompt)
    await editor.diagnostics_where(prompt_uri, lambda d: len(d) >= 2, "the prompt's diagnostics")
    uri = await editor.open(examples, language="jsonl")
    other = await editor.open(elsewhere, language="jsonl")
    hover = _markdown(await editor.hover(uri, 0, 0))  # answered after both opens were handled
    assert "No grading note" in hover
    assert await editor.hover(other, 0, 0) is None

    # a changed file on disk refreshes the root: open documents are re-published, the examples file still silent
    record(workspace_dir, prompt, V3)  # a version recorded: the prompt's diagnostics change on the refresh
    editor.client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(changes=[types.FileEvent(uri=uri, type=types.FileChangeType.Changed)])
    )
    await editor.diagnostics_where(
        prompt_uri, lambda d: any("introduced in v1" in x.message for x in d), "the refreshed prompt"
    )
    editor.close(uri)
    assert await editor.hover(prompt_uri, 0, 0) is not None
    assert uri not in editor.client.diagnostics and other not in editor.client.diagnostics


def test_an_examples_hover_loads_nothing_heavy(workspace_dir: Path) -> None:
    """Reading a note's history in the server process pulls in neither numpy nor litellm (nor the solvers)."""
    _workspace(workspace_dir)
    code = """
import sys, pathlib
from spade_lsp_server.server import create_server
from spade_lsp_server._state import WorkspaceState
from spade_lsp_server import _examples, _render
create_server()
root = pathlib.Path(sys.argv[1])
state = WorkspaceState(root, on_notification=lambda m, p: None, tell=lambda m, i: None)
source = (root / "blurb.examples.jsonl").read_text()
example = _examples.read_line(_examples.lines_of(source)[0], 0)
history = _examples.note_history(state.store(), root, root / "blurb.prompt", example.id)
assert history and history[0]["value"] == "Yes", history
assert "run 2" in _render.example_hover(example, history, "blurb.prompt")
heavy = ("numpy", "pandas", "litellm", "highspy", "pulp", "scipy", "spade_lsp.selection", "git", "spade_lsp.sandbox")
print(sorted(name for name in heavy if name in sys.modules))
"""
    done = subprocess.run([sys.executable, "-c", code, str(workspace_dir)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
