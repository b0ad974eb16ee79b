"""Diagnostics, and the document events that drive them.

On a prompt: one diagnostic per instruction that carries a checkable category (source "spade", code = its first
category id, message starting with its category in plain words, then in a chat prompt the message that holds it:
"Length or count (system message): ..."). Information (a squiggle, a row in Problems) only for what the user has
just written and nothing checks yet: an instruction of the newest version, or edited since; every other instruction
is a Hint, so an old prompt is not painted on every line. A message list that does not parse (half-typed JSON) shows
only its note, never sentences of its syntax. On a sidecar module: syntax errors, assertions that errored in the
latest evaluation run, stale assertions (their sentence left the prompt) and assertions the latest selection drops.
It also flags each LLM-written function whose current text nobody accepted (a Warning on its ``def`` line, code
``spade/unreviewed-code``; see :func:`spade_lsp.unreviewed_functions`), which the quick fix "Accept reviewed code"
clears.
On an examples file: only the lines the engine cannot read (invalid JSON, no ``inputs``, a bad label, a
repeated id), since one such line stops every command that reads the file; a readable file gets nothing.

didSave publishes at once from the buffer and asks the daemon to record the version in the background; the
daemon's ``prompt/changed`` then refreshes the view with the stored history.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import OrderedDict
from pathlib import Path
from typing import Any, Final

from lsprotocol import types
from pygls.workspace import TextDocument

from spade_lsp import UNREVIEWED_DIAGNOSTIC_CODE, UnreviewedFunction, unreviewed_functions
from spade_lsp.errors import DaemonError, DaemonUnavailableError, StoreError
from spade_lsp.overview import AssertionView, InstructionView, PromptOverview
from spade_lsp_server._convert import UTF16, Columns, code_units
from spade_lsp_server._documents import DocumentRef, path_of
from spade_lsp_server.server import CONFIG_WAIT_S, SpadeLanguageServer

log = logging.getLogger(__name__)

SOURCE: Final = "spade"
INFORMATION: Final = int(types.DiagnosticSeverity.Information)
HINT: Final = int(types.DiagnosticSeverity.Hint)
WARNING: Final = int(types.DiagnosticSeverity.Warning)
ERROR: Final = int(types.DiagnosticSeverity.Error)
UNNECESSARY: Final = int(types.DiagnosticTag.Unnecessary)

CODE_TOO_LARGE: Final = "spade/unreadable-prompt"
CODE_NOTE: Final = "spade/prompt-note"
CODE_SYNTAX: Final = "spade/syntax-error"
CODE_ERRORED: Final = "spade/assertion-error"
CODE_STALE: Final = "spade/stale-assertion"
CODE_DROPPED: Final = "spade/dropped-assertion"
CODE_INTERNAL: Final = "spade/internal-error"
CODE_EXAMPLE: Final = "spade/invalid-example"
CODE_UNREVIEWED: Final = UNREVIEWED_DIAGNOSTIC_CODE  # "spade/unreviewed-code": LLM-written, not accepted yet

#: Prompts whose last published diagnostics are kept with their JSON.
_CACHED_PROMPTS: Final = 32
_ZERO: Final = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}


def _diagnostic(
    range_: dict[str, Any], severity: int, code: str, message: str, *, data: Any = None, tags: list[int] | None = None
) -> dict[str, Any]:
    item: dict[str, Any] = {"range": range_, "severity": severity, "source": SOURCE, "code": code, "message": message}
    if data is not None:
        item["data"] = data
    if tags:
        item["tags"] = tags
    return item


def internal_error_json() -> dict[str, Any]:
    return _diagnostic(_ZERO, WARNING, CODE_INTERNAL, "spade could not analyse this file (see the server log)")


def origin_text(instruction: InstructionView, overview: PromptOverview, *, pending: bool = False) -> str | None:
    """Where the instruction comes from in the history, in words; None while the history is being read (nothing
    is said about history before it is known)."""
    if instruction.introduced_in is not None:
        return f"introduced in v{instruction.introduced_in}"
    if overview.prompt is None:
        return "unsaved buffer, no history"
    if pending and not overview.versions:
        return None
    if not overview.store_available or not overview.versions:
        return "no history yet (save to record the first version)"
    return "not recorded yet (save to record it)"


def coverage_text(instruction: InstructionView, *, has_assistant: bool = False) -> str:
    """Its hint: the assertions that check it, else the check spade can write (the "Add assertion" quick fix),
    else why none can be written without a model."""
    names = instruction.covered_by
    if names:
        more = f" and {len(names) - 1} more" if len(names) > 1 else ""
        return f"checked by {names[0]}{more}"
    if instruction.all_held_back:
        name, why = instruction.held_back[0]
        return f"not checked yet; the offline check {name} is held back: it {why} (Add assertion anyway writes it)"
    if instruction.checks:
        more = f" and {len(instruction.checks) - 1} more" if len(instruction.checks) > 1 else ""
        return f"not checked yet; Add assertion writes {instruction.checks[0]}{more}"
    if instruction.needs_model:
        if has_assistant:
            return "not checked yet; Add assertion asks the assistant model to write a check"
        return "needs a model: no check can be written for it offline (configure an assistant model)"
    return "no assertion checks it yet"


def instruction_message(
    instruction: InstructionView, overview: PromptOverview, *, pending: bool = False, has_assistant: bool = False
) -> str:
    """Leads with what the rule is about in plain words (SPADE's names for it are in the hover), then the message
    that holds it in a chat prompt, its origin and what to do: ``Length or count (system message): introduced in
    v2; ...``. The Problems view shows the start of a row: the plain words are what a reader scans for."""
    where = f" ({instruction.message} message)" if instruction.message is not None else ""
    origin = origin_text(instruction, overview, pending=pending)
    hint = coverage_text(instruction, has_assistant=has_assistant)
    return f"{', '.join(instruction.plain_names)}{where}: " + (f"{origin}; {hint}" if origin else hint)


class _Cache:
    """Diagnostics of unchanged instructions are reused as they are, with their JSON text: a 2,000-sentence
    prompt re-publishes after a save without rebuilding or re-encoding 2,000 objects.

    Each prompt keeps what its last publish used and nothing more: every recorded save changes every key of its
    prompt (the newest version is part of each), and a cache that only emptied when full held up to 100,000
    items of versions no editor showed any more."""

    def __init__(self, prompts: int = _CACHED_PROMPTS) -> None:
        self.prompts = prompts
        self.by_prompt: OrderedDict[Path | None, dict[tuple[Any, ...], dict[str, Any]]] = OrderedDict()
        self.json: dict[int, str] = {}  # id of a cached item (alive as long as it is cached) -> its JSON

    def last_used(self, prompt: Path | None) -> dict[tuple[Any, ...], dict[str, Any]]:
        return self.by_prompt.get(prompt, {})

    def keep(self, prompt: Path | None, used: dict[tuple[Any, ...], dict[str, Any]]) -> None:
        """``used`` becomes the prompt's cache: items its previous publish had and this one did not go."""
        kept = {id(item) for item in used.values()}
        for item in self.by_prompt.pop(prompt, {}).values():
            if id(item) not in kept:
                self.json.pop(id(item), None)
        for item in used.values():
            if id(item) not in self.json:
                self.json[id(item)] = json.dumps(item)
        self.by_prompt[prompt] = used
        while len(self.by_prompt) > self.prompts:  # the prompt published longest ago
            _, dropped = self.by_prompt.popitem(last=False)
            for item in dropped.values():
                self.json.pop(id(item), None)


_CACHE = _Cache()


def encode(items: list[dict[str, Any]]) -> str:
    """The diagnostics as a JSON array, reusing the cached items' text."""
    cached = _CACHE.json
    return "[" + ",".join(cached.get(id(item)) or json.dumps(item) for item in items) + "]"


def prompt_diagnostics(
    overview: PromptOverview, columns: Columns, *, pending: bool = False, has_assistant: bool = False
) -> list[dict[str, Any]]:
    """One diagnostic per instruction (a unit a check can be written for), with its hint; the units that are not
    instructions say why in their hover."""
    if overview.problem is not None:
        return [_diagnostic(_ZERO, WARNING, CODE_TOO_LARGE, f"spade: {overview.problem}")]
    out = [_diagnostic(_ZERO, WARNING, CODE_NOTE, f"spade: {note}") for note in overview.notes]
    newest = max((version.number for version in overview.versions), default=None)
    context = (
        overview.prompt is None,
        overview.store_available,
        newest,  # a new version turns the previous one's instructions from Information into Hints
        columns.encoding,
        pending,
        has_assistant,
    )
    previous = _CACHE.last_used(overview.prompt) if columns.identity else {}
    used: dict[tuple[Any, ...], dict[str, Any]] = {}
    for instruction in overview.instructions:
        if not instruction.checkable:
            continue
        key = (
            instruction.text,
            instruction.range,
            instruction.categories,
            instruction.introduced_in,
            instruction.covered_by,
            instruction.message,
            instruction.checks,
            instruction.needs_model,
            instruction.held_back,
            context,
        )
        item = previous.get(key)
        if item is None:
            item = _diagnostic(
                columns.range_json(instruction.range),
                INFORMATION if _needs_attention(instruction, newest) else HINT,
                instruction.categories[0],
                instruction_message(instruction, overview, pending=pending, has_assistant=has_assistant),
                data={
                    "checks": list(instruction.checks),
                    "needsModel": instruction.needs_model,
                    "heldBack": [name for name, _ in instruction.held_back],
                },
            )
        used[key] = item
        out.append(item)
    if columns.identity:
        _CACHE.keep(overview.prompt, used)
    return out


def _needs_attention(instruction: InstructionView, newest: int | None) -> bool:
    """Not checked, and new: in the newest recorded version's edit, or not recorded yet (typed since the save)."""
    if instruction.covered_by:
        return False
    return instruction.introduced_in is None or instruction.introduced_in == newest


def _assertion_items(view: AssertionView, overview: PromptOverview, columns: Columns) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    where = columns.range_json(view.name_range)
    prompt_name = overview.prompt.name if overview.prompt is not None else "the prompt"
    stats = view.stats
    if stats is not None and stats.errors:
        detail = f": {stats.error_messages[0]}" if stats.error_messages else ""
        out.append(
            _diagnostic(
                where,
                WARNING,
                CODE_ERRORED,
                f"{view.name} raised an error on {stats.errors} of {stats.examples} example(s) in evaluation run "
                f"{stats.run_id}{detail}",
                data={"assertion": view.name, "messages": list(stats.error_messages)},
            )
        )
    if view.stale:
        out.append(
            _diagnostic(
                where,
                WARNING,
                CODE_STALE,
                f"{view.name} is stale: its source sentence is no longer in {prompt_name}: “{view.sentence}”",
                data={"assertion": view.name, "sentence": view.sentence},
            )
        )
    selection = overview.selection
    feasible = selection is None or selection.status != "infeasible"  # an infeasible one drops nothing itself
    waiting = stats is not None and stats.examples == 0 and stats.needs_model > 0  # left out: needs a model
    if view.selected is False and view.drop_reason is not None and feasible and not waiting:
        how = f" ({selection.method}, tau {selection.tau:g})" if selection is not None else ""
        out.append(
            _diagnostic(
                where,
                INFORMATION,
                CODE_DROPPED,
                f"{view.name} is dropped by the latest selection{how}: {view.drop_reason}",
                data={"assertion": view.name, "reason": view.drop_reason, "subsumedBy": list(view.subsumed_by)},
                tags=[UNNECESSARY],
            )
        )
    return out


def sidecar_diagnostics(overview: PromptOverview, columns: Columns) -> list[dict[str, Any]]:
    sidecar = overview.sidecar
    out: list[dict[str, Any]] = []
    if sidecar.syntax_error is not None:
        problem = sidecar.syntax_error
        lines = (sidecar.text or "").splitlines()
        line_text = lines[problem.line] if problem.line < len(lines) else ""
        end = columns.to_client(problem.line, len(line_text.encode("utf-16-le", "surrogatepass")) // 2)
        start = columns.to_client(problem.line, problem.character)
        name = sidecar.path.name if sidecar.path is not None else "the sidecar module"
        out.append(
            _diagnostic(
                {
                    "start": {"line": problem.line, "character": min(start, end)},
                    "end": {"line": problem.line, "character": max(end, start + 1)},
                },
                ERROR,
                CODE_SYNTAX,
                f"{name}:{problem.line + 1}: {problem.message}",
            )
        )
    for view in sidecar.assertions:
        out += _assertion_items(view, overview, columns)
    return out


_REVIEW_CACHE: dict[str, tuple[tuple[Any, ...], list[UnreviewedFunction]]] = {}


def unreviewed_of(
    server: SpadeLanguageServer, ref: DocumentRef, overview: PromptOverview, text: str
) -> list[UnreviewedFunction]:
    """The LLM-written functions of a sidecar's text that nobody accepted, per the store (read-only here; without
    one, per their decorators), cached on the text and the store's data version."""
    state = server.workspace_state(ref.root)
    store = state.store()
    version = state.store_version() if store is not None else None
    db = store if version is not None else None
    key = overview.key or ""
    stamp = (key, text, id(db), version)
    cached = _REVIEW_CACHE.get(ref.uri)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    try:
        items = unreviewed_functions(db, key, text)
    except StoreError as error:  # a store mid-replacement: the decorators still tell
        log.info("reading the review records failed: %s", error)
        items = unreviewed_functions(None, key, text)
    if len(_REVIEW_CACHE) > 256:
        _REVIEW_CACHE.clear()
    _REVIEW_CACHE[ref.uri] = (stamp, items)
    return items


def unreviewed_diagnostics(
    items: list[UnreviewedFunction], overview: PromptOverview, columns: Columns, text: str
) -> list[dict[str, Any]]:
    """A Warning on the ``def`` line of each unreviewed LLM-written function (its name, as other sidecar
    diagnostics mark it), with what accepting it needs in ``data``."""
    views = {view.name: view for view in overview.sidecar.assertions}
    lines = text.splitlines()
    out = []
    for item in items:
        view = views.get(item.name)
        if view is not None and view.name_range.start.line == item.line:
            where = columns.range_json(view.name_range)
        else:  # the overview saw another text (a race): the whole def line
            width = code_units(lines[item.line], UTF16) if item.line < len(lines) else 0
            where = {
                "start": {"line": item.line, "character": 0},
                "end": {"line": item.line, "character": columns.to_client(item.line, width)},
            }
        data = {"assertion": item.name, "sha": item.sha, "state": item.state}
        out.append(_diagnostic(where, WARNING, CODE_UNREVIEWED, item.message, data=data))
    return out


def examples_diagnostics(source: str, columns: Columns) -> list[dict[str, Any]]:
    """An Error on each line of the examples file the engine skips, a Warning on each line it reads with a
    change (null ``inputs`` as none, an unknown label as unlabelled): the lines eval and sampling report."""
    from spade_lsp_server._examples import lines_of, read_lines

    flagged = [example for example in read_lines(source) if example.problem is not None or example.warnings]
    if not flagged:
        return []
    lines = lines_of(source)
    out = []
    for example in flagged:
        width = len(lines[example.line].encode("utf-16-le", "surrogatepass")) // 2
        where = {
            "start": {"line": example.line, "character": 0},
            "end": {"line": example.line, "character": columns.to_client(example.line, width)},
        }
        prefix = f"example on line {example.line + 1}"
        if example.problem is not None:
            out.append(_diagnostic(where, ERROR, CODE_EXAMPLE, f"{prefix}: {example.problem}"))
        out += [_diagnostic(where, WARNING, CODE_EXAMPLE, f"{prefix}: {warning}") for warning in example.warnings]
    return out


def diagnostics_json(server: SpadeLanguageServer, ref: DocumentRef, document: TextDocument) -> list[dict[str, Any]]:
    columns = server.columns(document.source)
    if ref.kind == "examples":
        return examples_diagnostics(document.source, columns)
    overview = server.overview_of(ref)
    if ref.kind == "prompt":
        return prompt_diagnostics(
            overview, columns, pending=ref.uri in server.history_pending, has_assistant=server.has_assistant(ref)
        )
    items = unreviewed_of(server, ref, overview, document.source)
    return sidecar_diagnostics(overview, columns) + unreviewed_diagnostics(items, overview, columns, document.source)


async def record_version(server: SpadeLanguageServer, ref: DocumentRef, text: str | None) -> None:
    """Ask the daemon to record the saved text (never awaited by the didSave handler)."""
    if ref.path is None:
        return
    state = server.workspace_state(ref.root)
    settings, _ = state.settings_for(text, ref.path)
    params: dict[str, Any] = {"path": str(ref.path)}
    if state.client_values:  # the editor's settings (an assistant model, say) decide the background relabelling
        params["settings"] = state.client_values
    if text is not None:
        if (
            len(text) * 4 > settings.max_prompt_bytes
            and len(text.encode("utf-8", "replace")) > settings.max_prompt_bytes
        ):
            return  # the daemon would refuse it too; the diagnostic already says why
        if text.isascii() or _encodable(text):
            params["text"] = text
    try:
        result = await state.daemon.request("prompt/record", params, start=settings.daemon_autostart, timeout_s=60)
    except DaemonUnavailableError:
        return  # the link has told the user; the next save tries again
    except (TimeoutError, DaemonError, OSError) as error:
        server.tell(f"spade: {ref.path.name} was not recorded: {error}", False)
        return
    if isinstance(result, dict):
        for warning in result.get("warnings") or []:
            server.tell(f"spade: {warning}", False)
    # recorded now, or already (by the daemon's file watcher, before this connection heard of it): either way
    # the store may hold a newer version than the views show
    server.schedule_refresh(ref.root)


async def _record_after_open(server: SpadeLanguageServer, ref: DocumentRef) -> None:
    """An opened prompt's history is a need: the daemon (started when none runs, per ``daemon_autostart``)
    imports its git commits and records the file as it is on disk, then the views refresh. Recording what
    is already there changes nothing, so this is cheap on every open."""
    try:
        await asyncio.sleep(OPEN_GRACE_S)
        await record_version(server, ref, None)
    finally:
        server.history_pending.discard(ref.uri)
        server.schedule_refresh(ref.root, 0)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: let the daemon read the saved file instead
        return False
    return True


#: How long after didOpen the daemon is contacted: the first requests after opening have the loop to themselves.
OPEN_GRACE_S: Final = 0.3


def register(server: SpadeLanguageServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(params: types.DidOpenTextDocumentParams) -> None:
        uri = params.text_document.uri
        path = path_of(uri)
        state = server.workspace_state(server.root_for(path) if path is not None else server.default_root())
        ref = server.classify(uri, refresh=True)
        if not state.config_ready.is_set():
            try:
                await asyncio.wait_for(state.config_ready.wait(), CONFIG_WAIT_S)
            except TimeoutError:
                log.info("no workspace/configuration answer yet; using the workspace settings")
            ref = server.classify(uri, refresh=True)
        if ref is None:
            return
        reads_history = ref.kind == "prompt" and ref.path is not None and ref.path.is_file()
        if reads_history:
            server.history_pending.add(uri)  # until the daemon has read the git history, say nothing about it
        server.publish(uri)
        for other in server.related_uris(ref):
            server.schedule_publish(other, 0)
        if reads_history:
            server.spawn(_record_after_open(server, ref))
        elif ref.path is not None:
            server.spawn(server.workspace_state(ref.root).daemon.attach(after_s=OPEN_GRACE_S))

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        ref = server.classify(uri)
        if ref is None:
            return
        server.schedule_publish(uri)
        for other in server.related_uris(ref):
            server.schedule_publish(other)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        ref = server.classify(uri)
        if ref is None:
            return
        server.publish(uri)
        for other in server.related_uris(ref):
            server.schedule_publish(other, 0)
        if ref.kind == "prompt" and ref.path is not None:
            document = server.open_document(uri)
            text = params.text if params.text is not None else (document.source if document is not None else None)
            server.spawn(record_version(server, ref, text))

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ref = server.classify(uri)
        shown = server.shows_diagnostics(uri)
        server.forget(uri)
        server.history_pending.discard(uri)
        if ref is None:
            return
        if ref.kind != "examples" or shown:  # an examples file that showed nothing needs no clearing
            server.clear(uri)
        for other in server.related_uris(ref):
            server.schedule_publish(other, 0)
