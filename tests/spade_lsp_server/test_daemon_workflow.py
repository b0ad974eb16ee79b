"""The language server with the real daemon: a prompt in a real git repository with three committed versions,
code actions that synthesize through the daemon and edit the sidecar through ``workspace/applyEdit``, jobs
with progress and cancellation, reports, and a daemon that dies and comes back."""

from __future__ import annotations

import ast
import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.spade_lsp_server._workspaces import COMMITS, git_repo, write_examples
from tests.support.blurb import PRICE_SENTENCE, SAMPLING_SIDECAR, V3, TwoModels, sampling_workspace
from tests.support.openai_stub import OpenAIStub

HINT = types.DiagnosticSeverity.Hint
INFO = types.DiagnosticSeverity.Information


def _line(diagnostics: list[types.Diagnostic], line: int) -> types.Diagnostic:
    return next(d for d in diagnostics if d.range.start.line == line)


def _daemon_pid(root: Path) -> int | None:
    try:
        return int(json.loads((root / ".spade" / "daemon.json").read_text(encoding="utf-8"))["pid"])
    except (OSError, ValueError, KeyError):
        return None


async def test_a_git_prompt_end_to_end(editor_factory: Any, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    prompt, shas = git_repo(root)
    write_examples(prompt)
    editor = await editor_factory(root)
    uri = await editor.open(prompt)
    # three instructions: "Write a product blurb for {product}." frames the task with its input, nothing to check
    await editor.diagnostics_where(uri, lambda d: len(d) == 3, "diagnostics before any history")

    # saving records the prompt: the daemon starts, imports the three commits, and the views follow
    editor.save(uri)
    diagnostics = await editor.diagnostics_where(
        uri, lambda d: "introduced in v2" in _line(d, 2).message, "the git history to be recorded", 30
    )
    count = _line(diagnostics, 2)
    # only the newest version's unchecked instructions are squiggled (Information); older ones are Hints
    assert count.code == "Content/Count" and count.severity == HINT and _line(diagnostics, 3).severity == INFO
    assert (
        count.message == "Length or count: introduced in v2; not checked yet; "
        "Add assertion writes assert_at_most_12_words"
    )
    assert _line(diagnostics, 3).message == (
        "Must avoid: introduced in v3; not checked yet; Add assertion writes assert_excludes_cheap"
    )
    assert _line(diagnostics, 1).message.startswith("Tone or quality: introduced in v3")

    hover = await editor.hover(uri, 2, 4)
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert f"- v2 (2024-01-03, commit `{shas[1][:10]}` “{COMMITS[1]}”): added" in hover.contents.value
    hover = await editor.hover(uri, 1, 4)
    assert hover is not None
    text = str(hover.contents)
    assert f"- v1 (2024-01-02, commit `{shas[0][:10]}` “{COMMITS[0]}”): added as “Use a friendly tone.”" in text
    assert f"- v3 (2024-01-04, commit `{shas[2][:10]}` “Warmer tone; never say cheap”): reworded from" in text

    lenses = await editor.code_lenses(uri)
    assert lenses[0].command is not None
    assert lenses[0].command.title == "spade: 3 versions · 3 instructions · 0 assertions"
    history = await editor.command("spade.showHistory", uri)
    assert [(v["number"], v["origin"], v["commit"], v["message"].strip()) for v in history["versions"]] == [
        (1, "git", shas[0], COMMITS[0]),
        (2, "git", shas[1], COMMITS[1]),
        (3, "git", shas[2], COMMITS[2]),
    ]
    history_file = root / ".spade" / "reports" / "blurb.history.md"
    assert history["path"] == str(history_file) and history["shown"] is True
    assert f"| v2 | 2024-01-03 10:00:00 | git | {shas[1][:10]} | {COMMITS[1]} |" in history_file.read_text()

    # the quick fix: synthesis in the daemon, the module created through workspace/applyEdit
    actions = await editor.code_actions(uri, count.range, diagnostics=[count])
    fix = actions[0]
    assert fix.title == "Add assertion for this instruction" and fix.command is not None
    result = await editor.command(fix.command.command, *(fix.command.arguments or []))
    assert result["added"] == ["assert_at_most_12_words"] and result["applied"] is True
    module = root / "blurb_assertions.py"
    edit = editor.applied[-1].edit
    assert edit.document_changes is not None
    assert isinstance(edit.document_changes[0], types.CreateFile) and edit.document_changes[0].uri == module.as_uri()
    source = module.read_text(encoding="utf-8")
    assert [n.name for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)] == ["assert_at_most_12_words"]
    assert "    sentence='Keep it not exceeding 12 words.',\n    version=2,\n" in source
    assert source.startswith('"""Assertions on the outputs of blurb.prompt')
    # what was written is said, and shown beside the prompt at the new function, the prompt keeping the focus
    said = [m.message for m in editor.client.messages if m.type == types.MessageType.Info]
    assert said[-1] == "spade: added assert_at_most_12_words in blurb_assertions.py"
    shown = editor.client.shown_documents[-1]
    assert shown.uri == module.as_uri() and shown.take_focus is False and shown.selection is not None
    assert source.splitlines()[shown.selection.start.line].startswith("def assert_at_most_12_words(")
    diagnostics = await editor.diagnostics_where(uri, lambda d: "checked by" in _line(d, 2).message, "the new coverage")
    assert _line(diagnostics, 2).message == "Length or count: introduced in v2; checked by assert_at_most_12_words"
    tokens = [token for token, reports in editor.client.progress_reports.items() if reports]
    reports = editor.client.progress_reports[tokens[-1]]
    assert isinstance(reports[0], types.WorkDoneProgressBegin) and reports[0].title == "Add assertions"
    assert isinstance(reports[-1], types.WorkDoneProgressEnd) and reports[-1].message == "done"
    await editor.wait_for(lambda: editor.refreshes > 0, "a code-lens refresh")

    # the source action adds the rest and keeps what is there; the module is open, so its buffer is edited
    sidecar_uri = await editor.open(module, language="python")
    sources = await editor.code_actions(uri, count.range, only=["source.spade.addAssertions"])
    everything = sources[0]
    assert everything.title == "Add assertions for all uncovered instructions (2)" and everything.command is not None
    result = await editor.command(everything.command.command, *(everything.command.arguments or []))
    assert "assert_excludes_cheap" in result["added"] and "assert_at_most_12_words" not in result["added"]
    change = editor.applied[-1].edit.document_changes
    assert change is not None and len(change) == 1 and isinstance(change[0], types.TextDocumentEdit)
    assert change[0].text_document.version == 1  # the open buffer's version
    source = module.read_text(encoding="utf-8")
    editor.change(sidecar_uri, source)  # what the editor's buffer now holds
    names = [n.name for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)]
    assert names[0] == "assert_at_most_12_words" and "assert_excludes_cheap" in names
    await editor.diagnostics_where(
        uri, lambda d: all(x.severity == HINT and "checked by" in x.message for x in d), "every instruction covered"
    )

    # evaluate, then select: the sidecar's lenses and diagnostics show the figures
    evaluated = await editor.command("spade.evaluate", uri)
    assert evaluated["examples"] == 4 and set(evaluated["assertions"]) == set(names)
    words_line = next(i for i, line in enumerate(source.splitlines()) if line.startswith("def assert_at_most_12_words"))

    async def lens_title() -> str | None:
        lenses = {lens.range.start.line: lens.command for lens in await editor.code_lenses(sidecar_uri)}
        command = lenses.get(words_line)
        return command.title if command is not None else None

    assert await lens_title() == "pass 75% on 4 examples · no selection yet"
    selected = await editor.command("spade.select", uri)
    assert selected["status"] in ("optimal", "feasible") and selected["selected"]
    # the checks that need a model (none is configured) are left out of selection, not dropped by it: every other
    # check is kept here, so nothing is dropped, and no "dropped" diagnostic blames the two that wait for a model
    waiting = set(evaluated["needs_model"])
    assert waiting and not waiting & set(selected["selected"]), (waiting, selected)
    assert set(selected["selected"]) == set(names) - waiting
    assert any(note.startswith(f"left out {len(waiting)} assertion(s) that need a model") for note in selected["notes"])
    for _ in range(100):
        if await lens_title() == "pass 75% on 4 examples · selected":
            break
        await asyncio.sleep(0.1)
    assert await lens_title() == "pass 75% on 4 examples · selected"
    await editor.diagnostics_where(sidecar_uri, lambda d: True, "the sidecar's diagnostics")
    assert not [d for d in editor.diagnostics(sidecar_uri) if d.code == "spade/dropped-assertion"]

    report = await editor.command("spade.report", uri)
    report_file = root / ".spade" / "reports" / "blurb.md"
    # never sampled: no HTML report
    assert report == {"prompt": str(prompt), "path": str(report_file), "html": None, "shown": True}
    markdown = report_file.read_text(encoding="utf-8")
    assert markdown.startswith("# spade report: blurb.prompt\n")
    assert f"| v3 | 2024-01-04 10:00:00 | git | {shas[2][:10]} | Warmer tone; never say cheap |" in markdown
    assert "| `assert_at_most_12_words` | “Keep it not exceeding 12 words.” | 75% | 0.50 | 0.00 |" in markdown
    assert (
        f"Run {evaluated['run_id']}, finished " in markdown and "4 examples (2 good, 2 bad, 0 unlabelled)" in markdown
    )
    assert "(sub, tau 0.25, alpha 0.6)" in markdown
    reports = [d.uri for d in editor.client.shown_documents if d.uri.endswith(".md")]  # the sidecar was shown too
    assert reports[-2:] == [history_file.as_uri(), report_file.as_uri()]
    shown_before = len(editor.client.shown_documents)
    quiet = await editor.command("spade.report", module.as_uri(), {"show": False})  # the extension's report view
    assert quiet == {"prompt": str(prompt), "path": str(report_file), "html": None, "shown": False}
    assert len(editor.client.shown_documents) == shown_before

    # a full synthesis keeps what is there and applies to the open buffer
    synthesized = await editor.command("spade.synthesize", uri)
    assert synthesized["applied"] is True and "assert_at_most_12_words" in synthesized["unchanged"]
    assert ast.parse(module.read_text(encoding="utf-8"))

    with pytest.raises(JsonRpcException) as refused:
        await editor.command("spade.sample", uri)
    assert refused.value.code == types.LSPErrorCodes.RequestFailed
    # the editor's next step is its setting, never a CLI flag
    assert "no model is configured" in refused.value.message and "spade.model setting" in refused.value.message
    assert "--" not in refused.value.message


SLOW = """
@assertion(category="Content/Count", sentence="Keep it not exceeding 12 words.")
def assert_slow(example: dict, prompt: str, response: str) -> bool:
    n = 0
    while n < 10_000_000:
        n += 1
    return True
"""


async def test_cancelling_a_job_reaches_the_daemon(editor_factory: Any, workspace_dir: Path) -> None:
    prompt = workspace_dir / "blurb.prompt"
    prompt.write_text(V3, encoding="utf-8")
    examples = write_examples(prompt)
    examples.write_text(examples.read_text() * 2, encoding="utf-8")  # eight examples (the ids repeat: renamed)
    rows = [json.loads(line) for line in examples.read_text().splitlines()]
    examples.write_text("".join(json.dumps({**r, "id": f"e{i}"}) + "\n" for i, r in enumerate(rows)))
    (workspace_dir / "blurb_assertions.py").write_text("from spade_lsp.assertions import assertion\n" + SLOW)
    editor = await editor_factory(workspace_dir)
    uri = await editor.open(prompt)
    first = asyncio.ensure_future(editor.command("spade.evaluate", uri))
    await editor.wait_for(lambda: len(editor.client.progress_reports) == 1, "the first job's progress")
    second = asyncio.ensure_future(editor.command("spade.evaluate", uri))  # queued behind the first
    await editor.wait_for(lambda: len(editor.client.progress_reports) == 2, "the second job's progress")
    token = list(editor.client.progress_reports)[-1]
    editor.client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    with pytest.raises(JsonRpcException) as cancelled:
        await asyncio.wait_for(second, 30)
    assert cancelled.value.code == types.LSPErrorCodes.RequestCancelled
    assert cancelled.value.message == (
        "Evaluate assertions: cancelled; nothing was written; the earlier results stay as they were"
    )
    end = editor.client.progress_reports[token][-1]
    assert isinstance(end, types.WorkDoneProgressEnd) and end.message == "cancelled"
    done = await asyncio.wait_for(first, 60)
    assert done["examples"] == 8 and done["assertions"] == ["assert_slow"]


async def test_job_status_reaches_a_client_that_asks_for_it(editor_factory: Any, workspace_dir: Path) -> None:
    """The VS Code extension's status-bar item: ``spade/jobStatus`` lists the running jobs as they start,
    progress and end; a client without ``experimental.spadeJobStatus`` never receives it."""
    prompt = workspace_dir / "blurb.prompt"
    prompt.write_text(V3, encoding="utf-8")
    write_examples(prompt)
    (workspace_dir / "blurb_assertions.py").write_text("from spade_lsp.assertions import assertion\n" + SLOW)
    editor = await editor_factory(workspace_dir, experimental={"spadeJobStatus": True})
    statuses: list[list[dict[str, Any]]] = []

    @editor.client.feature("spade/jobStatus")
    def job_status(params: Any) -> None:
        statuses.append([job._asdict() for job in params.jobs])  # pygls hands unknown params over as namedtuples

    uri = await editor.open(prompt)
    done = await editor.command("spade.evaluate", uri)
    assert done["assertions"] == ["assert_slow"]
    await editor.wait_for(lambda: statuses and statuses[-1] == [], "the job's end")
    first = statuses[0]
    assert len(first) == 1 and first[0]["title"] == "Evaluate assertions" and first[0]["prompt"] == "blurb.prompt"
    assert first[0]["message"] == "queued" and first[0]["percentage"] is None
    reported = [jobs[0] for jobs in statuses if jobs]
    assert any(job["message"] == "running the assertions in the sandbox" for job in reported)
    assert len({job["id"] for job in reported}) == 1

    silent = await editor_factory(workspace_dir)
    heard: list[Any] = []

    @silent.client.feature("spade/jobStatus")
    def unexpected(params: Any) -> None:
        heard.append(params)

    await silent.command("spade.evaluate", await silent.open(prompt))
    assert heard == []


async def test_the_extension_cancels_a_long_job_by_its_status_id(editor_factory: Any, workspace_dir: Path) -> None:
    """The extension's long-job notification has a Cancel button: ``spade.cancelJob`` with the id that
    ``spade/jobStatus`` gave the job cancels it in the daemon; an unknown id cancels nothing."""
    prompt = workspace_dir / "blurb.prompt"
    prompt.write_text(V3, encoding="utf-8")
    examples = write_examples(prompt)
    rows = [json.loads(line) for line in examples.read_text().splitlines()] * 3
    examples.write_text("".join(json.dumps({**r, "id": f"e{i}"}) + "\n" for i, r in enumerate(rows)))
    (workspace_dir / "blurb_assertions.py").write_text("from spade_lsp.assertions import assertion\n" + SLOW)
    editor = await editor_factory(workspace_dir, experimental={"spadeJobStatus": True})
    statuses: list[list[dict[str, Any]]] = []

    @editor.client.feature("spade/jobStatus")
    def job_status(params: Any) -> None:
        statuses.append([job._asdict() for job in params.jobs])

    uri = await editor.open(prompt)
    assert await editor.command("spade.cancelJob", "no-such-job") == {"cancelled": False}
    running = asyncio.ensure_future(editor.command("spade.evaluate", uri))
    await editor.wait_for(lambda: statuses and statuses[-1], "the job's status")
    job_id = statuses[-1][0]["id"]
    assert await editor.command("spade.cancelJob", job_id) == {"cancelled": True}
    with pytest.raises(JsonRpcException) as cancelled:
        await asyncio.wait_for(running, 60)
    assert cancelled.value.code == types.LSPErrorCodes.RequestCancelled

    # the Test Explorer's run names its job itself, so it can cancel it before any status has arrived
    ahead = asyncio.ensure_future(editor.command("spade.evaluate", uri))
    await editor.wait_for(lambda: statuses and statuses[-1], "the second job's status")
    chosen = asyncio.ensure_future(editor.command("spade.evaluate", uri, {"job_key": "test-run-1"}))
    await editor.wait_for(lambda: "test-run-1" in [job["id"] for job in statuses[-1]], "the named job's status")
    assert await editor.command("spade.cancelJob", "test-run-1") == {"cancelled": True}
    with pytest.raises(JsonRpcException) as cancelled:
        await asyncio.wait_for(chosen, 60)
    assert cancelled.value.code == types.LSPErrorCodes.RequestCancelled
    assert (await asyncio.wait_for(ahead, 60))["examples"] == 12


async def test_a_dead_daemon_is_reported_once_and_restarted(editor_factory: Any, workspace_dir: Path) -> None:
    prompt = workspace_dir / "blurb.prompt"
    prompt.write_text(V3, encoding="utf-8")
    editor = await editor_factory(workspace_dir)
    uri = await editor.open(prompt)
    editor.save(uri)
    await editor.diagnostics_where(
        uri, lambda d: d and all("introduced in v1" in x.message for x in d), "the first version", 30
    )
    first_pid = _daemon_pid(workspace_dir)
    assert first_pid is not None
    os.kill(first_pid, signal.SIGKILL)

    def stopped() -> list[str]:
        return [m.message for m in editor.client.messages if "daemon" in m.message and "stopped" in m.message]

    await editor.wait_for(stopped, "the server to notice")
    assert stopped()[0].startswith("spade: the workspace daemon for ") and "restarted when next needed" in stopped()[0]
    text = V3 + "Always include the price.\n"
    prompt.write_text(text, encoding="utf-8")
    editor.change(uri, text)
    editor.save(uri)
    diagnostics = await editor.diagnostics_where(
        uri, lambda d: any("introduced in v2" in x.message for x in d), "a new daemon to record v2", 30
    )
    assert _line(diagnostics, 4).message == (
        "Must include: introduced in v2; "
        "needs a model: no check can be written for it offline (configure an assistant model)"
    )
    second_pid = _daemon_pid(workspace_dir)
    assert second_pid is not None and second_pid != first_pid
    assert len(stopped()) == 1


async def test_without_a_daemon_commands_fail_clearly(editor_factory: Any, workspace_dir: Path) -> None:
    prompt = workspace_dir / "blurb.prompt"
    prompt.write_text(V3, encoding="utf-8")
    editor = await editor_factory(workspace_dir, settings={"daemon_autostart": False})
    uri = await editor.open(prompt)
    await editor.diagnostics_where(uri, lambda d: len(d) == 3, "diagnostics")
    with pytest.raises(JsonRpcException) as refused:
        await editor.command("spade.evaluate", uri)
    assert refused.value.code == types.LSPErrorCodes.RequestFailed
    assert refused.value.message.startswith("Evaluate assertions: no spade daemon runs for ")
    # the next step is the editor's setting, not a command line
    assert "daemon_autostart is false; turn on the spade.daemonAutostart setting" in refused.value.message
    assert "`spade daemon" not in refused.value.message and "--" not in refused.value.message
    assert not (workspace_dir / ".spade" / "daemon.json").exists()
    editor.save(uri)
    editor.save(uri)
    await editor.wait_for(lambda: editor.client.messages, "a message")
    assert len([m for m in editor.client.messages if "no spade daemon runs" in m.message]) == 1


async def test_open_examples_creates_a_starter_file(editor_factory: Any, workspace_dir: Path) -> None:
    prompt = workspace_dir / "mail.prompt.md"
    prompt.write_text("Write to {customer} about {topic}.\nKeep it under 100 words.\n", encoding="utf-8")
    editor = await editor_factory(workspace_dir, settings={"daemon_autostart": False})
    uri = await editor.open(prompt, language="markdown")
    await editor.diagnostics_where(uri, lambda d: len(d) == 2, "diagnostics")
    result = await editor.command("spade.openExamples", uri)
    examples = workspace_dir / "mail.examples.jsonl"
    assert result == {"path": str(examples), "created": True, "shown": True}
    assert json.loads(examples.read_text()) == {
        "id": "example-1",
        "inputs": {"customer": "", "topic": ""},
        "output": "",
        "label": "good",  # the field selection needs, shown so the user sees it exists
    }
    assert editor.client.shown_documents[-1].uri == examples.as_uri()
    again = await editor.command("spade.openExamples", {"uri": uri})
    assert again["created"] is False and examples.read_text().count("\n") == 1


async def test_open_examples_never_creates_or_shows_a_file_through_a_link_out_of_the_workspace(
    editor_factory: Any, workspace_dir: Path, tmp_path: Path
) -> None:
    """A repository's dangling link named like the examples file: the starter file is not created at the link's
    target, nothing is shown, and the command says why in one line."""
    prompt = workspace_dir / "mail.prompt.md"
    prompt.write_text("Write to {customer} about {topic}.\n", encoding="utf-8")
    target = tmp_path / "outside" / "planted.jsonl"
    target.parent.mkdir()
    (workspace_dir / "mail.examples.jsonl").symlink_to(target)
    editor = await editor_factory(workspace_dir, settings={"daemon_autostart": False})
    uri = await editor.open(prompt, language="markdown")
    with pytest.raises(JsonRpcException, match="outside the workspace"):
        await editor.command("spade.openExamples", uri)
    assert not target.exists() and not editor.applied and not editor.client.shown_documents


async def test_an_unsaved_sentence_asks_for_a_save(editor_factory: Any, workspace_dir: Path) -> None:
    prompt = workspace_dir / "blurb.prompt"
    prompt.write_text(V3, encoding="utf-8")
    editor = await editor_factory(workspace_dir)
    uri = await editor.open(prompt)
    editor.change(uri, V3 + 'Always include the word "price".\n')
    diagnostics = await editor.diagnostics_where(uri, lambda d: len(d) == 4, "the unsaved sentence")
    new = _line(diagnostics, 4)
    actions = await editor.code_actions(uri, new.range, diagnostics=[new], only=["quickfix"])
    assert actions[0].command is not None
    with pytest.raises(JsonRpcException) as refused:
        await editor.command(actions[0].command.command, *(actions[0].command.arguments or []))
    assert refused.value.code == types.LSPErrorCodes.RequestFailed
    assert "none of the given sentences is in the newest version" in refused.value.message
    assert refused.value.message.endswith("(the prompt has unsaved changes: save it first)")
    assert not (workspace_dir / "blurb_assertions.py").exists()


async def test_sampling_from_the_editor_shows_reliability(editor_factory: Any, workspace_dir: Path) -> None:
    from tests.support.openai_stub import OpenAIStub, chat_reply, user_text

    def model(request: dict[str, Any]) -> Any:  # "cheap" for the mug, always: that input always fails
        return chat_reply("A cheap mug." if "Mug" in user_text(request) else "A lovely thing for you.")

    with OpenAIStub(model) as stub:
        (workspace_dir / "spade.toml").write_text(
            f'model = "openai/stub"\napi_base = "{stub.api_base}"\nclassifier = "offline"\n', encoding="utf-8"
        )
        prompt = workspace_dir / "blurb.prompt"
        prompt.write_text(V3, encoding="utf-8")
        write_examples(prompt)
        (workspace_dir / "blurb_assertions.py").write_text(SAMPLING_SIDECAR, encoding="utf-8")
        editor = await editor_factory(workspace_dir)
        uri = await editor.open(prompt)
        result = await editor.command("spade.sample", uri, {"samples": 4})
        assert len(stub.requests) == 16 and result["calls"] == 16
        verdicts = {v["name"]: v["verdict"] for v in result["validators"]}
        assert verdicts["assert_short"] == "pass"
        # the Test Explorer's Sample profile: each check's state and the figures it rests on
        checks = {c["name"]: c for c in result["checks"]}
        assert set(checks) == set(verdicts)
        short = next(v for v in result["validators"] if v["name"] == "assert_short")
        assert checks["assert_short"]["state"] == "passed"
        assert checks["assert_short"]["message"] == (
            f"16/16 passed (100.0%); 95% CI {100 * short['ci_low']:.1f}–100.0% lies above the minimum "
            f"{100 * short['minimum']:.1f}%"
        )
        expected = {"pass": "passed", "fail": "failed", "inconclusive": "skipped"}
        assert all(checks[name]["state"] == expected[verdict] for name, verdict in verdicts.items())
        assert result["p_pass"]["measured"]["rate"] == 0.75  # three inputs of four always pass

        async def summary() -> str:
            lenses = await editor.code_lenses(uri)
            top = next(lens for lens in lenses if lens.range.start.line == 0 and lens.command is not None)
            assert top.command is not None
            return top.command.title

        for _ in range(100):
            title = await summary()
            if "all checks pass" in title:
                break
            await asyncio.sleep(0.1)
        low, high = (round(100 * result["p_pass"]["measured"][k]) for k in ("ci_low", "ci_high"))
        assert f"all checks pass 75% ({low}%–{high}%, v1)" in title

        report = await editor.command("spade.report", uri)
        html = Path(report["html"])
        assert html == workspace_dir / ".spade" / "reports" / "blurb.reliability.html"
        page = html.read_text(encoding="utf-8")
        assert "assert_no_cheap" in page and "<svg" in page


async def test_comparing_two_models_from_the_editor_gives_a_verdict_in_words(
    editor_factory: Any, workspace_dir: Path
) -> None:
    """``spade.compare`` with two models (the palette's "Compare models…"): both are sampled on the same inputs
    in the daemon, and the answer is a verdict in words and the lens line, the detail left to the report."""
    from tests.support.openai_stub import OpenAIStub, chat_reply

    def model(request: dict[str, Any]) -> Any:  # the candidate says "cheap": assert_no_cheap fails all its answers
        return chat_reply("A cheap thing." if request["model"] == "bad" else "A lovely thing for you.")

    with OpenAIStub(model) as stub:
        (workspace_dir / "spade.toml").write_text(f'api_base = "{stub.api_base}"\nclassifier = "offline"\n')
        prompt = sampling_workspace(workspace_dir)
        editor = await editor_factory(workspace_dir)
        uri = await editor.open(prompt)
        result = await editor.command("spade.compare", uri, {"models": ["openai/good", "openai/bad"], "samples": 2})
        assert {r["model"] for r in stub.requests} == {"good", "bad"} and len(stub.requests) == 16
    assert result["kind"] == "models" and result["variants"] == ["openai/good", "openai/bad"]
    assert result["lens"] == "openai/bad vs openai/good: worse on 1 check, better on 0"
    assert result["verdict"] == (
        "openai/bad is worse on 1 check (no_cheap 100% -> 0%) than openai/good (4 inputs, 2 samples each; pass "
        "rates shown)"
    )
    reports = [r for r in editor.client.progress_reports.values() if r]
    begin = reports[-1][0]
    assert isinstance(begin, types.WorkDoneProgressBegin) and begin.title == "Compare models" and begin.cancellable


async def test_an_api_key_variable_from_the_editors_settings_never_picks_the_key_sent(
    editor_factory: Any, workspace_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A repository's ``.vscode/settings.json`` can hold ``spade.apiKeyEnv`` (undeclared, so VS Code's restricted
    mode lets it through): it must not choose which of the user's secrets goes to the endpoint. The effect: the
    secret never arrives at the server; the editor says the setting was ignored and where it belongs."""
    from tests.support.openai_stub import OpenAIStub, chat_reply

    monkeypatch.setenv("SPADE_TEST_CANARY_TOKEN", "canary-3f9a1c")
    with OpenAIStub(lambda request: chat_reply("A lovely thing for you.")) as stub:
        (workspace_dir / "spade.toml").write_text('classifier = "offline"\n', encoding="utf-8")
        prompt = sampling_workspace(workspace_dir)
        settings = {"model": "openai/m", "apiBase": stub.api_base, "apiKeyEnv": "SPADE_TEST_CANARY_TOKEN"}
        editor = await editor_factory(workspace_dir, settings=settings)
        uri = await editor.open(prompt)
        result = await editor.command("spade.sample", uri, {"samples": 1})
        assert result["calls"] == 4
        assert stub.headers and not any("canary-3f9a1c" in json.dumps(h) for h in stub.headers)
    said = [m.message for m in editor.client.messages if "spade.apiKeyEnv is ignored" in m.message]
    assert said and "~/.config/spade/config.toml" in said[0]


async def test_the_editors_model_and_api_base_reach_the_daemons_jobs(editor_factory: Any, workspace_dir: Path) -> None:
    """No model in the workspace's files: the editor's ``spade.model`` and ``spade.apiBase`` (camelCase, as VS
    Code sends them) travel with the job, so the daemon samples that model; once the editor unsets them, the
    files decide again and the job says no model is configured."""
    from tests.support.openai_stub import OpenAIStub, chat_reply

    with OpenAIStub(lambda request: chat_reply("A lovely thing for you.")) as stub:
        (workspace_dir / "spade.toml").write_text('classifier = "offline"\n', encoding="utf-8")
        prompt = sampling_workspace(workspace_dir)
        editor = await editor_factory(
            workspace_dir, settings={"model": "openai/from-the-editor", "apiBase": stub.api_base}
        )
        uri = await editor.open(prompt)
        result = await editor.command("spade.sample", uri, {"samples": 2})
        assert result["model"] == "openai/from-the-editor" and result["calls"] == 8
        assert {r["model"] for r in stub.requests} == {"from-the-editor"}
        # the status bar's picker: the prompt's models, and the ones sampled before to choose from
        models = await editor.command("spade.models", uri)
        assert models == {
            "model": "openai/from-the-editor",
            "assistant_model": None,
            "recent": ["local", "openai/from-the-editor"],
        }
        assert (await editor.command("spade.models"))["model"] == "openai/from-the-editor"  # no prompt: the folder's

        editor.client.set_configuration({"model": "", "apiBase": ""}, section="spade")  # cleared in the UI
        editor.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
        await asyncio.sleep(0.5)
        assert (await editor.command("spade.models", uri))["model"] is None
        with pytest.raises(JsonRpcException, match="no model is configured") as refused:
            await editor.command("spade.sample", uri, {"samples": 3})
        assert "spade.model" in refused.value.message
        assert len(stub.requests) == 8


@pytest.mark.parametrize("where", ["files", "editor"])
async def test_after_a_save_the_lens_compares_the_new_version_with_the_one_before(
    editor_factory: Any, workspace_dir: Path, where: str
) -> None:
    """``auto_sample`` on and a model configured, in the workspace's files or only in the editor's settings
    (a save carries them to the daemon): saving v2 makes the daemon sample v1 and v2 on the same inputs and
    compare them; the prompt's top lens then reads the comparison, regressions first."""
    prompt = sampling_workspace(workspace_dir)
    with OpenAIStub(TwoModels()) as stub:
        if where == "files":
            (workspace_dir / "spade.toml").write_text(
                f'model = "openai/good"\napi_base = "{stub.api_base}"\nclassifier = "offline"\n'
                "auto_sample = true\nsamples_per_input = 4\n",
                encoding="utf-8",
            )
            editor = await editor_factory(workspace_dir)
        else:
            (workspace_dir / "spade.toml").write_text('classifier = "offline"\n', encoding="utf-8")
            settings = {"model": "openai/good", "apiBase": stub.api_base, "autoSample": True, "samplesPerInput": 4}
            editor = await editor_factory(workspace_dir, settings=settings)
        uri = await editor.open(prompt)
        editor.save(uri)
        await editor.diagnostics_where(uri, lambda d: d and all("introduced in v1" in x.message for x in d), "v1", 30)
        assert not stub.requests  # one version: nothing to compare

        text = V3 + PRICE_SENTENCE + "\n"
        prompt.write_text(text, encoding="utf-8")
        editor.change(uri, text)
        editor.save(uri)

        async def comparison() -> str | None:
            titles = [lens.command.title for lens in await editor.code_lenses(uri) if lens.command is not None]
            return next((title for title in titles if title.startswith("v2 vs v1: ")), None)

        title = None
        for _ in range(300):
            title = await comparison()
            if title is not None:
                break
            await asyncio.sleep(0.1)
        assert title == "v2 vs v1: worse on 1 check, better on 0"  # the detail is in the report
        assert len(stub.requests) == 32  # four inputs x four samples, each version

    report = await editor.command("spade.report", uri, {"show": False})
    html = Path(report["html"]).read_text(encoding="utf-8")
    assert "<h2>Comparison</h2>" in html and "<h3>v2 vs v1</h3>" in html and 'class="worse"' in html


async def test_the_editors_assistant_model_falls_back_and_the_editor_says_why(
    editor_factory: Any, workspace_dir: Path
) -> None:
    """``spade.assistantModel`` set only in the editor reaches the synthesis job; the model answers criteria in
    prose, so the instructions are synthesized offline, and the editor shows what fell back and why."""
    from tests.support.openai_stub import chat_reply

    with OpenAIStub(lambda request: chat_reply("I would check that it is short and friendly.")) as stub:
        (workspace_dir / "spade.toml").write_text('classifier = "offline"\nstructured_reasks = 0\n', encoding="utf-8")
        prompt = sampling_workspace(workspace_dir)
        settings = {"assistantModel": "openai/prose", "assistantApiBase": stub.api_base}
        editor = await editor_factory(workspace_dir, settings=settings)
        uri = await editor.open(prompt)
        result = await editor.command("spade.synthesize", uri)
        assert result["added"]  # offline candidates, written all the same
        assert stub.requests and {r["model"] for r in stub.requests} == {"prose"}
        shown = await editor.wait_for(
            lambda: [m.message for m in editor.client.messages if "fallbacks" in m.message], "the fallback message"
        )
        assert "assertion criteria: synthesized offline instead, because" in shown[0]
        assert "not valid JSON" in shown[0]


async def test_a_new_version_turns_the_previous_ones_instructions_into_hints(
    editor_factory: Any, workspace_dir: Path
) -> None:
    """Only the newest version's unchecked instructions are underlined: after a save records v2, v1's line
    becomes a Hint (its diagnostic is not reused from before the save) and v2's new line is Information."""
    prompt = workspace_dir / "blurb.prompt"
    first = "Write a product blurb for {product}.\nKeep it not exceeding 12 words.\n"
    prompt.write_text(first, encoding="utf-8")
    editor = await editor_factory(workspace_dir)
    uri = await editor.open(prompt)
    editor.save(uri)
    before = await editor.diagnostics_where(
        uri, lambda d: "introduced in v1" in _line(d, 1).message, "v1 to be recorded", 30
    )
    assert _line(before, 1).severity == INFO
    second = first + 'Never use the word "cheap".\n'
    prompt.write_text(second, encoding="utf-8")
    editor.change(uri, second)
    editor.save(uri)
    after = await editor.diagnostics_where(
        uri, lambda d: len(d) == 2 and "introduced in v2" in _line(d, 2).message, "v2 to be recorded", 30
    )
    assert _line(after, 1).severity == HINT and "introduced in v1" in _line(after, 1).message
    assert _line(after, 2).severity == INFO
