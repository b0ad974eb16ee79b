"""Commands (``workspace/executeCommand``): the daemon's jobs with work-done progress and cancellation, the
sidecar edits that synthesis produces, reports and the examples file.

Every command takes the prompt as its first argument: a ``file:`` URI, a path, or ``{"uri": ...}``; a sidecar
module's URI stands for its prompt. Jobs run in the daemon (``job/submit``): its ``job/progress`` becomes
``$/progress`` on a server-created token, and ``window/workDoneProgress/cancel`` on that token becomes
``job/cancel``. Synthesis runs with ``write: false`` and the server applies the new module text with
``workspace/applyEdit`` (a CreateFile when the module is missing, then one whole-text edit).

A client that sets ``experimental.spadeJobStatus`` in its capabilities (the VS Code extension, for its
status-bar item) also receives ``spade/jobStatus`` whenever a job starts, reports progress or ends:
``{"jobs": [{"id", "title", "prompt", "message", "percentage"}]}``, every running job of this server.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from spade_lsp import (
    MAX_PROMPT_READ_BYTES,
    MAX_SIDECAR_BYTES,
    Fallback,
    Position,
    Range,
    atomic_write_text,
    confine,
    examples_path,
    read_limited_text,
    sidecar_path,
)
from spade_lsp.config import PYTHON_ONLY_WARNING
from spade_lsp.errors import DaemonError, DaemonUnavailableError, InputError, SpadeError
from spade_lsp_server import _documents, _report
from spade_lsp_server._convert import end_of
from spade_lsp_server._documents import DocumentRef
from spade_lsp_server._state import WorkspaceState
from spade_lsp_server._words import for_editor
from spade_lsp_server.server import SpadeLanguageServer

log = logging.getLogger(__name__)

REQUEST_FAILED: Final = int(types.LSPErrorCodes.RequestFailed)
REQUEST_CANCELLED: Final = int(types.LSPErrorCodes.RequestCancelled)
JOB_STATUS: Final = "spade/jobStatus"
COMMANDS: Final = (
    "spade.synthesize",
    "spade.evaluate",
    "spade.select",
    "spade.sample",
    "spade.report",
    "spade.showHistory",
    "spade.addAssertions",
    "spade.openExamples",
    "spade.acceptReviewed",
    "spade.cancelJob",
    "spade.trustWorkspace",
    "spade.checks",
    "spade.models",
)


class CommandError(JsonRpcException):
    """A command that cannot do what was asked; the message is for the user, one line."""

    expected = True  # not a fault of the server: logged without a traceback

    def __init__(self, message: str, code: int = REQUEST_FAILED) -> None:
        super().__init__(message=for_editor(message), code=code)


# -- arguments -------------------------------------------------------------------------------------------


def _target(server: SpadeLanguageServer, command: str, args: Sequence[Any]) -> DocumentRef:
    """The prompt a command is about (a sidecar module's or examples file's URI means its prompt)."""
    value = args[0] if args else None
    if isinstance(value, Mapping):
        value = value.get("uri") or value.get("path")
    if not isinstance(value, str) or not value:
        raise CommandError(f"{command}: pass the prompt's URI as the first argument")
    uri = value if "://" in value or value.startswith("untitled:") else _documents.uri_of(Path(value).resolve())
    ref = server.classify(uri)
    if ref is None:
        raise CommandError(f"{command}: {value} is not a prompt (see the prompt_globs setting) or its sidecar module")
    if ref.kind == "prompt" and ref.path is None:
        raise CommandError(f"{command}: this buffer has no file yet; save it as a prompt file first")
    assert ref.prompt is not None
    if ref.kind != "prompt":  # a sidecar module or an examples file stands for its prompt
        prompt_uri = server.open_uri_of(ref.prompt) or _documents.uri_of(ref.prompt)
        ref = DocumentRef(prompt_uri, "prompt", ref.prompt, ref.root, ref.prompt)
    return ref


def _options(args: Sequence[Any]) -> Mapping[str, Any]:
    """The command's second argument, its options; none when it is not an object."""
    return args[1] if len(args) > 1 and isinstance(args[1], Mapping) else {}


def _job_key(args: Sequence[Any]) -> str | None:
    """The id the client chose for the job (``{"job_key": ...}``), to cancel it by when its own request is
    cancelled: pygls does not cancel a running command's task on ``$/cancelRequest``."""
    key = _options(args).get("job_key")
    return key if isinstance(key, str) and key else None


def _sentences(args: Sequence[Any]) -> list[str] | None:
    if len(args) < 2 or args[1] is None:
        return None
    value = args[1]
    if isinstance(value, Mapping):
        value = value.get("sentences")
    if isinstance(value, str):
        return [value]
    if isinstance(value, Sequence) and all(isinstance(v, str) for v in value):
        return list(value)
    raise CommandError("spade.addAssertions: the second argument must be a list of sentences")


# -- progress and jobs ------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Running:
    state: WorkspaceState
    title: str = ""
    prompt: str = ""
    job_id: int | None = None
    cancelled: bool = False
    message: str | None = "queued"
    percentage: float | None = None


class _Progress:
    """A server-created work-done progress (when the client supports it), cancellable."""

    def __init__(self, server: SpadeLanguageServer, token: str | None) -> None:
        self.server = server
        self.token = token

    @classmethod
    async def start(cls, server: SpadeLanguageServer, title: str) -> _Progress:
        if not server.client_supports("window.work_done_progress"):
            return cls(server, None)
        token = f"spade-{uuid.uuid4().hex}"
        try:
            await asyncio.wait_for(server.work_done_progress.create_async(token), 10)
        except Exception as error:
            log.info("window/workDoneProgress/create failed: %s", error)
            return cls(server, None)
        server.work_done_progress.begin(
            token, types.WorkDoneProgressBegin(title=title, cancellable=True, message="queued", percentage=0)
        )
        return cls(server, token)

    def report(self, message: str | None, percentage: Any) -> None:
        if self.token is None:
            return
        value = types.WorkDoneProgressReport(message=message or None)
        if isinstance(percentage, int | float) and not isinstance(percentage, bool):
            value.percentage = max(0, min(100, int(percentage)))
        self.server.work_done_progress.report(self.token, value)

    def end(self, message: str) -> None:
        if self.token is None:
            return
        self.server.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
        self.server.work_done_progress.tokens.pop(self.token, None)


#: What ``spade.sample`` answers (the full document, tensor included, stays in the store and the report).
_COMPARE_KEYS: Final = ("versions", "models", "temperatures", "inputs", "samples", "seed")
_SAMPLE_SUMMARY_KEYS = (
    "run_id",
    "version",
    "model",
    "validators",
    "p_pass",
    "confidence",
    "expected_attempts",
    "attempts_for_99",
    "calls",
    "calls_saved",
    "cost",
    "warnings",
    "fallbacks",
)


class Jobs:
    """Running jobs: by progress token, so a cancel from the client reaches the daemon, and all of them for
    the ``spade/jobStatus`` notification."""

    def __init__(self, server: SpadeLanguageServer) -> None:
        self.server = server
        self.by_token: dict[str, _Running] = {}
        self.running: dict[str, _Running] = {}

    def started(self, running: _Running, key: str | None = None) -> str:
        """The job's id for ``spade.cancelJob``: the client's own ``key`` when it chose one (so it can cancel the
        job it asked for before any status arrives), else a fresh one."""
        if key is None or key in self.running:
            key = uuid.uuid4().hex
        self.running[key] = running
        self.changed()
        return key

    def ended(self, key: str) -> None:
        self.running.pop(key, None)
        self.changed()

    def changed(self) -> None:
        experimental = self.server.client_capabilities.experimental
        if not (isinstance(experimental, Mapping) and experimental.get("spadeJobStatus")):
            return
        jobs = [
            {"id": key, "title": r.title, "prompt": r.prompt, "message": r.message, "percentage": r.percentage}
            for key, r in self.running.items()
        ]
        self.server.protocol.notify_json(JOB_STATUS, {"jobs": jobs})


def _with_editor_settings(params: Mapping[str, Any], editor: Mapping[str, Any]) -> dict[str, Any]:
    """A job's params with this editor's spade settings (model, api base, tau, ...), which beat the workspace's
    files and front matter in the daemon as they do here; files alone decide when the editor sets nothing. A
    setting the command itself was given (``params["settings"]``) beats the editor's."""
    out = dict(params)
    chosen = {**editor, **dict(params.get("settings") or {})}
    if chosen:
        out["settings"] = chosen
    return out


async def run_job(
    server: SpadeLanguageServer,
    jobs: Jobs,
    ref: DocumentRef,
    kind: str,
    params: Mapping[str, Any],
    title: str,
    *,
    job_key: str | None = None,
) -> dict[str, Any]:
    """Submit a job to the daemon, mirror its progress, wait for it; its result, or a :class:`CommandError`.
    ``job_key`` is the id the client will cancel it by (``spade.cancelJob``)."""
    assert ref.path is not None
    state = server.workspace_state(ref.root)
    settings, _ = state.settings_for(server.open_text_of(ref.path), ref.path)
    try:
        client = await state.daemon.client(start=settings.daemon_autostart)
    except DaemonUnavailableError as error:
        raise CommandError(f"{title}: {error}") from error
    progress = await _Progress.start(server, title)
    running = _Running(state, title, ref.path.name)
    if progress.token is not None:
        jobs.by_token[progress.token] = running
    key = jobs.started(running, job_key)

    def on_progress(update: Mapping[str, Any]) -> None:
        message, percentage = update.get("message"), update.get("percentage")
        progress.report(message, percentage)
        running.message = message if isinstance(message, str) else None
        running.percentage = percentage if isinstance(percentage, int | float) else None
        jobs.changed()

    outcome = "failed"
    try:
        job = await client.submit_job(kind, str(ref.path), _with_editor_settings(params, state.client_values))
        running.job_id = int(job["id"])
        if running.cancelled:
            await _cancel(running)
        finished = await client.wait_job(running.job_id, on_progress=on_progress, timeout_s=None)
        outcome = str(finished.get("status"))
    except DaemonUnavailableError as error:
        raise CommandError(
            f"{title}: the daemon stopped while running the job ({error}); it resumes when the daemon restarts"
        ) from error
    except DaemonError as error:
        raise CommandError(f"{title}: {error}") from error
    finally:
        progress.end({"done": "done", "cancelled": "cancelled"}.get(outcome, "failed"))
        if progress.token is not None:
            jobs.by_token.pop(progress.token, None)
        jobs.ended(key)
    if outcome == "done":
        server.schedule_refresh(ref.root)
        result = finished.get("result")
        if isinstance(result, dict):
            _tell_fallbacks(server, title, result.get("fallbacks"))
            _tell_unconfined(server, title, result.get("warnings"))
            return result
        return {"result": result}
    if outcome == "cancelled":
        kept = _KEPT_WHEN_CANCELLED.get(kind, "nothing was written; the earlier results stay as they were")
        raise CommandError(f"{title}: cancelled; {kept}", REQUEST_CANCELLED)
    raise CommandError(f"{title}: {finished.get('error') or 'the job failed'}")


#: What a cancelled job leaves behind, in the words the cancelling user reads.
_KEPT_WHEN_CANCELLED: Final = {
    "sample": "the outputs of the rounds that finished are kept: sample again to continue, and the answers already "
    "received cost nothing (they come from the cache)",
}


def _tell_fallbacks(server: SpadeLanguageServer, title: str, fallbacks: Any) -> None:
    """A side call that failed did not stop the job: say what was done instead, and why."""
    if not isinstance(fallbacks, list) or not fallbacks:
        return
    messages = [Fallback(**item).message() for item in fallbacks[:3] if isinstance(item, Mapping)]
    more = f" (and {len(fallbacks) - 3} more)" if len(fallbacks) > 3 else ""
    server.tell(f"spade: {title} finished with fallbacks: {'; '.join(messages)}{more}", True)


def _tell_unconfined(server: SpadeLanguageServer, title: str, warnings: Any) -> None:
    """``sandbox = "python-only"``: generated code ran without kernel confinement; say so every time."""
    if isinstance(warnings, list) and PYTHON_ONLY_WARNING in warnings:
        server.tell(f"spade: {title}: {PYTHON_ONLY_WARNING}", True)


async def _cancel(running: _Running) -> None:
    if running.job_id is None:
        return
    try:
        await running.state.daemon.request("job/cancel", {"id": running.job_id}, start=False, timeout_s=10)
    except (TimeoutError, DaemonError, OSError) as error:
        log.info("job/cancel %s failed: %s", running.job_id, error)


# -- edits ------------------------------------------------------------------------------------------------


def _disk_text(path: Path, limit: int) -> str | None:
    """The file's text, or None when there is no such file; one that cannot be read as text within ``limit``
    (not a regular file, too large, not UTF-8) is a :class:`CommandError` saying so in one line."""
    if not os.path.lexists(path):
        return None
    try:
        return read_limited_text(path, limit=limit, what="an edited file")
    except InputError as error:
        raise CommandError(str(error)) from error


def _can_edit_with_create(server: SpadeLanguageServer) -> bool:
    operations = server.client_capabilities.workspace
    edit = operations.workspace_edit if operations is not None else None
    kinds = {str(getattr(k, "value", k)) for k in (edit.resource_operations or [])} if edit is not None else set()
    return (
        server.client_supports("workspace.apply_edit")
        and server.client_supports("workspace.workspace_edit.document_changes")
        and types.ResourceOperationKind.Create.value in kinds
    )


async def apply_text(server: SpadeLanguageServer, path: Path, new_text: str, label: str) -> bool:
    """Make ``path``'s buffer hold ``new_text`` through ``workspace/applyEdit``: a CreateFile when it does not
    exist, then one edit over the whole text (the open buffer's, else the file's). True when applied; a client
    without ``documentChanges`` gets a plain ``changes`` edit (it can then only edit an existing file)."""
    old = buffer_or_disk_text(server, path, MAX_SIDECAR_BYTES)
    if old == new_text:
        return True
    whole = Range(Position(0, 0), end_of(old or ""))
    return await apply_edit(server, path, old, whole, new_text, label)


def buffer_or_disk_text(server: SpadeLanguageServer, path: Path, limit: int) -> str | None:
    """What the editor shows of ``path``: its open buffer, else the file (None when there is none)."""
    document = server.open_document(server.open_uri_of(path) or _documents.uri_of(path))
    return document.source if document is not None else _disk_text(path, limit)


async def apply_edit(
    server: SpadeLanguageServer, path: Path, old: str | None, at: Range, new_text: str, label: str
) -> bool:
    """Replace ``at`` (code points) of ``path``'s text ``old`` (None: the file does not exist, so create it) with
    ``new_text`` through ``workspace/applyEdit``, against the open buffer's version; the editor's undo undoes
    it. A :class:`CommandError` when the editor refuses."""
    uri = server.open_uri_of(path) or _documents.uri_of(path)
    document = server.open_document(uri)
    create = old is None
    edit = types.TextEdit(range=server.columns(old or "").range(at), new_text=new_text)
    if server.client_supports("workspace.workspace_edit.document_changes"):
        version = document.version if document is not None else None
        changes: list[types.TextDocumentEdit | types.CreateFile] = []
        if create:
            changes.append(types.CreateFile(uri=uri, options=types.CreateFileOptions(ignore_if_exists=True)))
        changes.append(
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version), edits=[edit]
            )
        )
        workspace_edit = types.WorkspaceEdit(document_changes=changes)
    elif create:
        raise CommandError(f"{label}: this editor cannot create {path.name} through an edit")
    else:
        workspace_edit = types.WorkspaceEdit(changes={uri: [edit]})
    result = await server.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(edit=workspace_edit, label=label))
    if not result.applied:
        raise CommandError(f"{label}: the editor did not apply the edit ({result.failure_reason or 'no reason given'})")
    return True


async def add_assertions(
    server: SpadeLanguageServer,
    jobs: Jobs,
    ref: DocumentRef,
    sentences: list[str] | None,
    title: str,
    *,
    include_held_back: bool = False,
) -> dict[str, Any]:
    """Synthesize in the daemon without writing, then apply the module text as a WorkspaceEdit (or, for a
    client that cannot create files through edits, let the daemon write it)."""
    assert ref.path is not None
    module = sidecar_path(ref.path)
    through_editor = _can_edit_with_create(server) or (
        server.client_supports("workspace.apply_edit") and module.exists()
    )
    params: dict[str, Any] = {"synthesizer": "auto", "write": not through_editor}
    if include_held_back:
        params["include_held_back"] = True
    if sentences is not None:
        params["sentences"] = sentences
    buffer = server.open_text_of(module)
    if buffer is not None:
        params["sidecar_text"] = buffer
    unsaved = _unsaved(server, ref.path)
    try:
        result = await run_job(server, jobs, ref, "synthesize", params, title)
    except CommandError as error:
        if unsaved and error.code == REQUEST_FAILED:
            raise CommandError(f"{error.message} (the prompt has unsaved changes: save it first)") from error
        raise
    text = result.get("text")
    applied = False
    if through_editor and isinstance(text, str):
        applied = await apply_text(server, module, text, f"spade: {title.lower()}")
    added = list(result.get("added") or [])
    for warning in result.get("warnings") or []:
        if isinstance(warning, str) and warning.startswith("LLM-written, not reviewed"):
            server.tell(f"spade: {module.name}: {warning}", True)  # the sidecar's diagnostics show where
    held = [v for v in result.get("held_back") or [] if isinstance(v, Mapping) and not include_held_back]
    if held:
        reasons = "; ".join(f"{v.get('name')} {v.get('held_back')}" for v in held[:3])
        server.tell(
            f"spade: held back {len(held)} check(s) the labelled examples speak against: {reasons} "
            "(Ctrl+. on the instruction: Add assertion anyway)",
            True,
        )
    elif not added and not result.get("updated"):
        server.tell(f"spade: no new assertion for {ref.path.name}: {_why_none(server, ref, sentences, unsaved)}", True)
    written = added or list(result.get("updated") or [])
    if written and (applied or not through_editor):
        more = f" and {len(written) - 3} more" if len(written) > 3 else ""
        verb = "added" if added else "updated"
        server.tell(f"spade: {verb} {', '.join(written[:3])}{more} in {module.name}", done=True)
        await show(server, module, take_focus=False, line=_def_line(module, written[0], text))
    server.schedule_refresh(ref.root)
    return {
        "sidecar": str(module),
        "added": added,
        "updated": list(result.get("updated") or []),
        "unchanged": list(result.get("unchanged") or []),
        "kept_edited": list(result.get("kept_edited") or []),
        "warnings": list(result.get("warnings") or []),
        "held_back": list(result.get("held_back") or []),
        "applied": applied,
        "written": not through_editor,
    }


def _why_none(server: SpadeLanguageServer, ref: DocumentRef, sentences: list[str] | None, unsaved: bool) -> str:
    """Why synthesis added nothing, in the prompt writer's words, with the next step."""
    if unsaved:
        return "the prompt has unsaved changes; save it so spade reads the new sentences"
    overview = server.overview_of(ref)
    wanted = [i for i in overview.instructions if sentences is None or i.text in sentences]
    if wanted and all(i.covered_by for i in wanted if i.checkable) and any(i.checkable for i in wanted):
        return "every instruction asked for is already checked by an assertion in the sidecar module"
    if wanted and all(i.needs_model for i in wanted if i.checkable) and any(i.checkable for i in wanted):
        if server.has_assistant(ref):  # it was asked, and wrote nothing usable: its failure was said on its own
            return (
                "the assistant model wrote no usable check for it (see the message about its answer); try again, "
                "or set a stronger model in the spade.assistantModel setting"
            )
        return (
            "no check can be written for this without a model: it needs judgement, not a measurement; "
            "configure an assistant model (the spade.assistantModel setting)"
        )
    if wanted and not any(i.checkable for i in wanted):
        reason = next((i.reason for i in wanted if i.reason), None) or "it asks nothing of the answer"
        return reason
    return "the checks it can write are already in the sidecar module"


def _unsaved(server: SpadeLanguageServer, prompt: Path) -> bool:
    """The prompt's buffer differs from the file: the daemon synthesizes from the saved version."""
    buffer = server.open_text_of(prompt)
    if buffer is None:
        return False
    try:
        return buffer != _disk_text(prompt, MAX_PROMPT_READ_BYTES)
    except CommandError:  # the daemon's job says what is wrong with the file
        return True


def _def_line(module: Path, name: str, text: str | None) -> int | None:
    """The line of ``def name(`` in the module's new text (or the file), to reveal what was written."""
    if text is None:
        try:
            text = _disk_text(module, MAX_PROMPT_READ_BYTES)
        except CommandError:
            return None
    lines = (text or "").splitlines()
    return next((n for n, line in enumerate(lines) if line.startswith(f"def {name}(")), None)


async def show(server: SpadeLanguageServer, path: Path, *, take_focus: bool = True, line: int | None = None) -> bool:
    """Open ``path`` in the editor (at ``line``, when given); False when the client cannot or did not."""
    if not server.client_supports("window.show_document.support"):
        return False
    at = None if line is None else types.Range(types.Position(line, 0), types.Position(line, 0))
    params = types.ShowDocumentParams(uri=_documents.uri_of(path), take_focus=take_focus, selection=at)
    try:
        result = await asyncio.wait_for(server.window_show_document_async(params), 10)
    except Exception as error:
        log.info("window/showDocument failed: %s", error)
        return False
    return bool(result.success)


def examples_file(command: str, ref: DocumentRef) -> Path:
    """The prompt's examples file, when it resolves inside the workspace: a repository's symlink never makes a
    command read, create, show or write a file elsewhere."""
    assert ref.path is not None
    try:
        return confine(ref.root, examples_path(ref.path), "an examples file")
    except InputError as error:
        raise CommandError(f"{command}: {error}") from error


async def open_examples(server: SpadeLanguageServer, ref: DocumentRef) -> dict[str, Any]:
    """Show ``NAME.examples.jsonl``, creating a starter line (the prompt's placeholders as empty inputs)."""
    path = examples_file("spade.openExamples", ref)
    created = False
    if not path.exists() and server.open_text_of(path) is None:
        overview = server.overview_of(ref)
        starter = {
            "id": "example-1",
            "inputs": {name: "" for name in overview.placeholders},
            "output": "",
            "label": "good",
        }
        text = json.dumps(starter, ensure_ascii=False) + "\n"
        if _can_edit_with_create(server):
            await apply_text(server, path, text, "spade: create examples")
        else:
            atomic_write_text(path, text)
        created = True
    shown = await show(server, path)
    return {"path": str(path), "created": created, "shown": shown}


def _review_items(server: SpadeLanguageServer, ref: DocumentRef, args: Sequence[Any]) -> list[dict[str, str]]:
    """``spade.acceptReviewed``'s second argument: ``[{"name", "sha"}]``, the exact texts the user accepts (what
    the code actions pass); missing or null: every unreviewed function of the sidecar as the editor holds it."""
    from spade_lsp import accepted_functions
    from spade_lsp.errors import InputError as ReviewInputError
    from spade_lsp_server.features.diagnostics import unreviewed_of

    value = args[1] if len(args) > 1 else None
    if value is None:
        overview = server.overview_of(ref)
        text = overview.sidecar.text or ""
        value = [{"name": item.name, "sha": item.sha} for item in unreviewed_of(server, ref, overview, text)]
        if not value:
            raise CommandError("spade.acceptReviewed: no unreviewed LLM-written function in the sidecar module")
    try:
        return [{"name": name, "sha": sha} for name, sha in accepted_functions(value)]
    except ReviewInputError as error:
        raise CommandError(f"spade.acceptReviewed: {error}") from error


def _sampled_checks(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each sampled check as a test of the pipeline (the Test Explorer's Sample profile): its state and why, in
    the words a ``pytest --spade`` failure uses."""
    from spade_lsp.reliability import validator_outcome

    confidence = float(document["confidence"])
    checks = []
    for validator in document.get("validators") or []:
        state, message = validator_outcome(validator, confidence)
        checks.append({"name": validator["name"], "state": state, "message": message})
    return checks


def _checks_of(server: SpadeLanguageServer, ref: DocumentRef) -> dict[str, Any]:
    """The prompt's checks as tests (``spade.checks``)."""
    from spade_lsp.overview import check_outcome

    overview = server.overview_of(ref)
    state = server.workspace_state(ref.root)
    try:
        tau = state.settings_for(server.open_text_of(ref.path) if ref.path else None, ref.path)[0].tau
    except SpadeError as error:
        raise CommandError(f"spade.checks: {error}") from error
    run = overview.eval_run
    sidecar = overview.sidecar
    tests = []
    for view in sidecar.assertions:
        outcome = check_outcome(view.stats, tau)
        tests.append(
            {
                "name": view.name,
                "line": view.name_range.start.line,
                "outcome": None if outcome is None else {"state": outcome.state, "message": outcome.message},
            }
        )
    return {
        "prompt": str(ref.path),
        "sidecar": str(sidecar.path) if sidecar.path is not None else None,
        "sidecar_exists": sidecar.exists,
        "syntax_error": sidecar.syntax_error.message if sidecar.syntax_error else None,
        "tau": tau,
        "run_id": run.id if run is not None else None,
        "stale": bool(run is not None and run.module_changed),  # the sidecar changed since that evaluation
        "checks": tests,
    }


def _models_of(server: SpadeLanguageServer, args: Sequence[Any]) -> dict[str, Any]:
    """The models a prompt (or, without one, the first folder) would use, and the ones its workspace sampled
    before: what the status bar shows and its picker offers (``spade.models``)."""
    from spade_lsp.local_model import LOCAL_MODEL_NAME
    from spade_lsp.store import models_sampled

    if args and args[0]:
        ref = _target(server, "spade.models", args)
        state = server.workspace_state(ref.root)
        settings = state.settings_for(server.open_text_of(ref.path) if ref.path else None, ref.path)[0]
    else:
        state = server.workspace_state(server.default_root())
        settings = state.settings
    store = state.store()
    sampled = models_sampled(store) if store is not None else []
    return {
        "model": settings.model,
        "assistant_model": settings.assistant_model,
        "recent": list(dict.fromkeys([LOCAL_MODEL_NAME, *sampled])),
    }


# -- registration -------------------------------------------------------------------------------------------


def register(server: SpadeLanguageServer) -> None:
    jobs = Jobs(server)

    @server.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    def cancel_progress(params: types.WorkDoneProgressCancelParams) -> None:
        running = jobs.by_token.get(str(params.token))
        if running is None:
            return
        running.cancelled = True
        server.spawn(_cancel(running))

    @server.command("spade.addAssertions")
    async def add(*args: Any) -> dict[str, Any]:
        ref = _target(server, "spade.addAssertions", args)
        anyway = _options(args).get("include_held_back") is True
        return await add_assertions(server, jobs, ref, _sentences(args), "Add assertions", include_held_back=anyway)

    @server.command("spade.synthesize")
    async def synthesize(*args: Any) -> dict[str, Any]:
        ref = _target(server, "spade.synthesize", args)
        return await add_assertions(server, jobs, ref, None, "Synthesize assertions")

    @server.command("spade.evaluate")
    async def evaluate(*args: Any) -> dict[str, Any]:
        ref = _target(server, "spade.evaluate", args)
        return await run_job(server, jobs, ref, "evaluate", {}, "Evaluate assertions", job_key=_job_key(args))

    @server.command("spade.select")
    async def select(*args: Any) -> dict[str, Any]:
        # tau and alpha are settings, as the CLI's --tau and --model are: given here, they go with the job's
        # settings over the editor's; not given, the job resolves them once (the workspace's files, the prompt's
        # front matter, then this editor's settings)
        ref = _target(server, "spade.select", args)
        options = _options(args)
        params: dict[str, Any] = {k: v for k, v in options.items() if k == "method"}
        chosen = {k: v for k, v in options.items() if k in ("tau", "alpha")}
        if chosen:
            params["settings"] = chosen
        return await run_job(server, jobs, ref, "select", params, "Select assertions")

    @server.command("spade.sample")
    async def sample(*args: Any) -> dict[str, Any]:
        # samples and inputs not given here are the job's to resolve (samples_per_input, sample_inputs)
        ref = _target(server, "spade.sample", args)
        wanted = ("inputs", "samples", "seed", "temperature")
        params = {k: v for k, v in _options(args).items() if k in wanted}
        document = await run_job(server, jobs, ref, "sample", params, "Sample reliability", job_key=_job_key(args))
        return {**{key: document.get(key) for key in _SAMPLE_SUMMARY_KEYS}, "checks": _sampled_checks(document)}

    @server.command("spade.compare")
    async def compare(*args: Any) -> dict[str, Any]:
        """A paired comparison on the same inputs: ``{"versions": [candidate, baseline]}``, ``{"models": [baseline,
        candidate]}`` or ``{"temperatures": [...]}``; its verdict in words, the lens line, and the document."""
        ref = _target(server, "spade.compare", args)
        given = _options(args)
        params = {k: v for k, v in given.items() if k in _COMPARE_KEYS}
        kind = next((k for k in ("versions", "models", "temperatures") if k in params), "versions")
        document = await run_job(server, jobs, ref, "compare", params, f"Compare {kind}")
        from spade_lsp.reliability import lens_title, verdict_text

        return {
            "kind": document.get("kind"),
            "verdict": verdict_text(document),
            "lens": lens_title(document),
            "variants": [v.get("label") for v in document.get("variants") or []],
            "warnings": list(document.get("warnings") or []),
        }

    @server.command("spade.report")
    async def report(*args: Any) -> dict[str, Any]:
        ref = _target(server, "spade.report", args)
        assert ref.path is not None
        overview = server.overview_of(ref)
        path = _report.write_report(ref.root, ref.path, _report.report_markdown(overview))
        state = server.workspace_state(ref.root)
        html = _report.write_reliability_report(ref.root, ref.path, state.store(), overview.key)
        # {"show": false}: only write the files (the VS Code extension shows them in its report view)
        wanted = _options(args).get("show") is not False
        shown = wanted and await show(server, path)
        return {"prompt": str(ref.path), "path": str(path), "html": str(html) if html else None, "shown": shown}

    @server.command("spade.showHistory")
    async def show_history(*args: Any) -> dict[str, Any]:
        ref = _target(server, "spade.showHistory", args)
        assert ref.path is not None
        overview = server.overview_of(ref)
        path = _report.write_report(ref.root, ref.path, _report.history_markdown(overview), suffix=".history")
        # {"show": false}: only write the file (the VS Code extension shows it rendered, as a Markdown preview)
        wanted = _options(args).get("show") is not False
        return {
            "versions": _report.versions_json(overview.versions),
            "path": str(path),
            "shown": wanted and await show(server, path),
        }

    @server.command("spade.trustWorkspace")
    async def trust_workspace(*args: Any) -> dict[str, Any]:
        """The user trusts the workspace of the prompt (or of the first folder): its own files may then choose
        models, endpoints, key variables and the sandbox. Recorded in the user's config, as `spade trust` does."""
        from spade_lsp import trust

        root = _target(server, "spade.trustWorkspace", args).root if args and args[0] else server.default_root()
        record = trust.trust(root, by="editor")
        server.schedule_refresh(root)
        return {"path": record.path, "trusted_at": record.trusted_at}

    @server.command("spade.acceptReviewed")
    async def accept_reviewed(*args: Any) -> dict[str, Any]:
        ref = _target(server, "spade.acceptReviewed", args)
        params = {"accept": _review_items(server, ref, args), "by": "editor"}
        return await run_job(server, jobs, ref, "review", params, "Accept reviewed code")

    @server.command("spade.cancelJob")
    async def cancel_job(*args: Any) -> dict[str, Any]:
        """Cancel a running job by the id ``spade/jobStatus`` gave it (the extension's notification's Cancel)."""
        key = args[0] if args else None
        running = jobs.running.get(key) if isinstance(key, str) else None
        if running is None:
            return {"cancelled": False}
        running.cancelled = True
        await _cancel(running)
        return {"cancelled": True}

    @server.command("spade.checks")
    async def checks(*args: Any) -> dict[str, Any]:
        """The prompt's checks as tests, for the editor's test explorer: each with where it is in the sidecar
        and how it did in the latest evaluation at the prompt's tau (``outcome`` None: not evaluated)."""
        return _checks_of(server, _target(server, "spade.checks", args))

    @server.command("spade.models")
    async def models(*args: Any) -> dict[str, Any]:
        return _models_of(server, args)

    @server.command("spade.openExamples")
    async def examples(*args: Any) -> dict[str, Any]:
        return await open_examples(server, _target(server, "spade.openExamples", args))

    assert set(COMMANDS) <= set(server.protocol.fm.commands)
