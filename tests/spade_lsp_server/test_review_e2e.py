"""LLM-written code is shown as unreviewed until accepted, end to end: the real server and daemon, the LLM
synthesizer through litellm against the loopback stub (its function validated in the real sandbox), the
sidecar written through ``workspace/applyEdit``; a Warning on the function's ``def`` line, the quick fix that
records the acceptance in the daemon, and the Warning gone; an edit brings it back. Offline (template)
functions are never flagged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lsprotocol import types

from tests.spade_lsp.test_review import LLM_FUNCTION, PROMPT, model
from tests.spade_lsp_server._workspaces import synthesize_offline
from tests.support.blurb import V3, record
from tests.support.openai_stub import OpenAIStub

UNREVIEWED = "spade/unreviewed-code"
WARNING = types.DiagnosticSeverity.Warning


def _flags(diagnostics: list[types.Diagnostic]) -> list[types.Diagnostic]:
    return [d for d in diagnostics if d.code == UNREVIEWED]


async def test_llm_code_is_flagged_until_accepted(editor_factory: Any, workspace_dir: Path) -> None:
    with OpenAIStub(model) as stub:
        (workspace_dir / "spade.toml").write_text(
            f'assistant_model = "openai/assistant"\nassistant_api_base = "{stub.api_base}"\nclassifier = "offline"\n',
            encoding="utf-8",
        )
        prompt = workspace_dir / "blurb.prompt"
        prompt.write_text(PROMPT, encoding="utf-8")
        editor = await editor_factory(workspace_dir)
        uri = await editor.open(prompt)
        editor.save(uri)
        diagnostics = await editor.diagnostics_where(
            uri, lambda d: any("introduced in v1" in x.message for x in d), "the first version to be recorded", 30
        )
        count = next(d for d in diagnostics if d.code == "Content/Count")

        # the quick fix synthesizes with the LLM in the daemon; the server applies the module's text
        actions = await editor.code_actions(uri, count.range, diagnostics=[count])
        fix = next(a for a in actions if a.title == "Add assertion for this instruction")
        assert fix.command is not None
        result = await editor.command(fix.command.command, *(fix.command.arguments or []))
        assert result["added"] == ["assert_short_blurb"] and result["applied"] is True
        assert any("LLM-written, not reviewed: assert_short_blurb" in w for w in result["warnings"])
        told = await editor.wait_for(
            lambda: [m for m in editor.client.messages if "not reviewed" in m.message], "a tip"
        )
        assert told[0].message.startswith("spade: blurb_assertions.py: LLM-written, not reviewed: assert_short_blurb")
        criteria = [r for r in stub.requests if "criterion" not in json.loads(r["messages"][-1]["content"])]
        assert criteria, "the assistant was asked for criteria"
        module = workspace_dir / "blurb_assertions.py"
        text = module.read_text(encoding="utf-8")
        assert LLM_FUNCTION.splitlines()[1] in text and "synthesizer='llm'" in text
        def_line = text.splitlines().index(LLM_FUNCTION.splitlines()[0])

        # the sidecar shows the function as new, unreviewed code
        sidecar = await editor.open(module, language="python")
        shown = await editor.diagnostics_where(sidecar, lambda d: bool(_flags(d)), "the unreviewed-code warning", 30)
        [flag] = _flags(shown)
        assert flag.severity == WARNING and flag.source == "spade"
        assert flag.range.start.line == def_line and flag.range.start.character == len("def ")
        assert flag.range.end.character == len("def assert_short_blurb")
        assert flag.message.startswith("LLM-written, not reviewed: read assert_short_blurb, then accept it")

        # the quick fixes: this function, or every one in the file
        quick = await editor.code_actions(sidecar, flag.range, diagnostics=[flag], only=["quickfix"])
        titles = [a.title for a in quick]
        assert titles == [
            "Accept reviewed code: assert_short_blurb",
            "Accept all in this file (1 unreviewed LLM-written function(s))",
        ]
        accept = quick[0]
        assert accept.kind == types.CodeActionKind.QuickFix and list(accept.diagnostics or []) == [flag]
        assert accept.command is not None and accept.command.command == "spade.acceptReviewed"
        elsewhere = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0))
        source_actions = await editor.code_actions(sidecar, elsewhere, only=["source.spade.acceptReviewed"])
        assert [a.title for a in source_actions] == [titles[1]]

        accepted = await editor.command(accept.command.command, *(accept.command.arguments or []))
        assert accepted["accepted"] == ["assert_short_blurb"]
        await editor.diagnostics_where(sidecar, lambda d: not _flags(d), "the warning to go", 30)
        assert await editor.code_actions(sidecar, flag.range, only=["quickfix"]) == []

        # an edit is not acceptance: the changed function is flagged again, and undoing the edit clears it
        editor.change(sidecar, text.replace("<= 12", "<= 13"))
        again = await editor.diagnostics_where(sidecar, lambda d: bool(_flags(d)), "the warning after an edit")
        assert _flags(again)[0].message.endswith("(changed since it was accepted)")
        editor.change(sidecar, text)
        await editor.diagnostics_where(sidecar, lambda d: not _flags(d), "the warning to go after the undo")

        # the whole-file command without items accepts what the editor holds
        editor.change(sidecar, text.replace("<= 12", "<= 14"))
        await editor.diagnostics_where(sidecar, lambda d: bool(_flags(d)), "the warning after another edit")
        everything = await editor.command("spade.acceptReviewed", sidecar)
        assert everything["accepted"] == ["assert_short_blurb"]
        await editor.diagnostics_where(sidecar, lambda d: not _flags(d), "the warning to go after accepting all")


async def test_offline_functions_are_not_flagged(editor_factory: Any, workspace_dir: Path) -> None:
    prompt = workspace_dir / "blurb.prompt"
    record(workspace_dir, prompt, V3)
    module = synthesize_offline(workspace_dir, prompt)
    text = module.read_text(encoding="utf-8")
    assert "synthesizer='offline'" in text and "asks_llm=True" in text
    editor = await editor_factory(workspace_dir, settings={"daemon_autostart": False})
    sidecar = await editor.open(module, language="python")
    await editor.wait_for(lambda: sidecar in editor.client.diagnostics, "the sidecar's diagnostics")
    assert _flags(editor.diagnostics(sidecar)) == []
    whole = types.Range(
        start=types.Position(line=0, character=0), end=types.Position(line=len(text.splitlines()), character=0)
    )
    actions = await editor.code_actions(sidecar, whole)
    assert not [a for a in actions if a.title.startswith("Accept")]

    # the same module once its decorator says an LLM wrote a function (a module from another clone): flagged
    llm_text = text.replace("synthesizer='offline'", "synthesizer='llm'", 1)
    editor.change(sidecar, llm_text)
    shown = await editor.diagnostics_where(sidecar, lambda d: bool(_flags(d)), "a decorator-declared LLM function")
    [flag] = _flags(shown)
    assert flag.message.endswith("(its decorator says synthesizer='llm'; no review is recorded in this workspace)")
