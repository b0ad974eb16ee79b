"""Code actions.

On a prompt: the quick fix "Add assertion for this instruction" and the source action "Add assertions for all
uncovered instructions" (both run the ``spade.addAssertions`` command: synthesis happens in the daemon, and
the server then applies the sidecar's new text as a WorkspaceEdit), and "Open examples".
On the sidecar module: "Remove assertions the selection drops", a direct edit computed from the module's syntax
tree, "Accept reviewed code" on an LLM-written function nobody accepted and "Accept all in this file" (both run
``spade.acceptReviewed`` with the exact texts shown: the daemon records the acceptance), and "Open examples".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from lsprotocol import types

from spade_lsp.overview import PromptOverview
from spade_lsp_server._documents import DocumentRef
from spade_lsp_server._words import ASSISTANT_SETTING
from spade_lsp_server.features.code_lens import EVALUATE, SELECT, _client_commands, next_steps
from spade_lsp_server.server import SpadeLanguageServer

ADD_ASSERTIONS: Final = "spade.addAssertions"
OPEN_EXAMPLES: Final = "spade.openExamples"
KIND_ADD_ALL: Final = "source.spade.addAssertions"
KIND_REMOVE_DROPPED: Final = "source.spade.removeDropped"
KIND_OPEN_EXAMPLES: Final = "source.spade.openExamples"
KIND_ACCEPT_REVIEWED: Final = "source.spade.acceptReviewed"
ACCEPT_REVIEWED: Final = "spade.acceptReviewed"
KINDS: Final = [
    types.CodeActionKind.QuickFix,
    types.CodeActionKind.Source,
    KIND_ADD_ALL,
    KIND_REMOVE_DROPPED,
    KIND_OPEN_EXAMPLES,
    KIND_ACCEPT_REVIEWED,
    "source.spade.evaluate",
    "source.spade.select",
]
DROPPED_CODE: Final = "spade/dropped-assertion"


def _wanted(kind: str, only: Sequence[str] | None) -> bool:
    """LSP's ``only`` filter: a kind matches when it equals or refines one of the requested kinds."""
    if not only:
        return True
    return any(kind == wanted or kind.startswith(f"{wanted}.") for wanted in only)


def _overlaps(a: types.Range, b: types.Range) -> bool:
    return (a.start.line, a.start.character) <= (b.end.line, b.end.character) and (
        b.start.line,
        b.start.character,
    ) <= (a.end.line, a.end.character)


def removal_edits(overview: PromptOverview, names: set[str]) -> list[types.TextEdit]:
    """Delete the named assertions: each from its ``# spade: generated`` marker (or first decorator) to the
    end of its body, with the blank lines after it, so the module keeps its spacing."""
    text = overview.sidecar.text or ""
    lines = text.splitlines()
    spans: list[tuple[int, int]] = []
    for view in overview.sidecar.assertions:
        if view.name not in names:
            continue
        end = view.end_line + 1
        while end < len(lines) and not lines[end].strip():
            end += 1
        spans.append((view.chunk_start_line, end))
    spans.sort()
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return [
        types.TextEdit(
            range=types.Range(start=types.Position(line=start, character=0), end=types.Position(line=end, character=0)),
            new_text="",
        )
        for start, end in reversed(merged)
    ]


def _remove_dropped(
    server: SpadeLanguageServer, ref: DocumentRef, overview: PromptOverview, params: types.CodeActionParams
) -> types.CodeAction | None:
    if overview.sidecar.syntax_error is not None:
        return None  # a tree with holes is no basis for deleting code
    dropped = {a.name for a in overview.sidecar.assertions if a.selected is False and a.drop_reason}
    if not dropped:
        return None
    related = [d for d in params.context.diagnostics if d.code == DROPPED_CODE and d.source == "spade"]
    kind = types.CodeActionKind.QuickFix if related else KIND_REMOVE_DROPPED
    if not _wanted(kind, params.context.only):
        return None
    edits = removal_edits(overview, dropped)
    document = server.open_document(ref.uri)
    version = document.version if document is not None else None
    if server.client_supports("workspace.workspace_edit.document_changes"):
        edit = types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(uri=ref.uri, version=version),
                    edits=list(edits),
                )
            ]
        )
    else:
        edit = types.WorkspaceEdit(changes={ref.uri: list(edits)})
    count = len(dropped)
    return types.CodeAction(
        title=f"Remove assertions the selection drops ({count}: {', '.join(sorted(dropped))})",
        kind=kind,
        diagnostics=related or None,
        edit=edit,
    )


def _accept_actions(
    server: SpadeLanguageServer,
    ref: DocumentRef,
    text: str,
    overview: PromptOverview,
    params: types.CodeActionParams,
    only: Sequence[str] | None,
) -> list[types.CodeAction]:
    """ "Accept reviewed code" for each unreviewed LLM-written function whose ``def`` line the range touches, and
    "Accept all in this file" (a quick fix there, a source action elsewhere). Each passes the digest of the text
    the user sees, so an acceptance never covers a text they did not see."""
    from spade_lsp_server.features.diagnostics import CODE_UNREVIEWED, unreviewed_of

    items = unreviewed_of(server, ref, overview, text)
    if not items:
        return []
    related = [d for d in params.context.diagnostics if d.source == "spade" and d.code == CODE_UNREVIEWED]
    here = [item for item in items if params.range.start.line <= item.line <= params.range.end.line]
    actions: list[types.CodeAction] = []
    if _wanted(types.CodeActionKind.QuickFix, only):
        for item in here:
            mine = [d for d in related if d.range.start.line == item.line]
            actions.append(
                types.CodeAction(
                    title=f"Accept reviewed code: {item.name}",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=mine or None,
                    is_preferred=True,
                    command=types.Command(
                        title="Accept reviewed code",
                        command=ACCEPT_REVIEWED,
                        arguments=[ref.uri, [{"name": item.name, "sha": item.sha}]],
                    ),
                )
            )
    kind = types.CodeActionKind.QuickFix if here else KIND_ACCEPT_REVIEWED
    if _wanted(kind, only):
        actions.append(
            types.CodeAction(
                title=f"Accept all in this file ({len(items)} unreviewed LLM-written function(s))",
                kind=kind,
                diagnostics=related or None,
                command=types.Command(
                    title="Accept all in this file",
                    command=ACCEPT_REVIEWED,
                    arguments=[ref.uri, [{"name": item.name, "sha": item.sha} for item in items]],
                ),
            )
        )
    return actions


OPEN_SETTINGS: Final = "workbench.action.openSettings"  # VS Code's own command (the extension's client runs it)
AUTOMATIC: Final = types.CodeActionTriggerKind.Automatic


def _step_names(server: SpadeLanguageServer, ref: DocumentRef, overview: PromptOverview) -> list[str]:
    """The code action kind suffix of each of :func:`next_steps`."""
    names = {ADD_ASSERTIONS: "addAssertions", OPEN_EXAMPLES: "openExamples", EVALUATE: "evaluate", SELECT: "select"}
    return [names[command] for _, command, _ in next_steps(server, ref, overview)]


def register(server: SpadeLanguageServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=KINDS))
    def code_action(params: types.CodeActionParams) -> list[types.CodeAction] | None:
        uri = params.text_document.uri
        found = server.view_of(uri)
        if found is None:
            return None
        ref, document, overview = found
        only = [str(kind) for kind in params.context.only] if params.context.only else None
        actions: list[types.CodeAction] = []
        if ref.kind == "prompt":
            if overview.problem is not None:
                return None
            columns = server.columns(document.source)
            assistant = server.has_assistant(ref)
            if _wanted(types.CodeActionKind.QuickFix, only):
                for instruction in overview.uncovered:
                    where = columns.range(instruction.range)
                    if not _overlaps(where, params.range):
                        continue
                    related = [
                        d
                        for d in params.context.diagnostics
                        if d.source == "spade" and _overlaps(d.range, where) and d.code in instruction.categories
                    ]
                    if instruction.all_held_back and not assistant:  # the examples speak against it: on request
                        title = "Add assertion anyway (the labelled examples speak against it)"
                        actions.append(
                            types.CodeAction(
                                title=title,
                                kind=types.CodeActionKind.QuickFix,
                                diagnostics=related or None,
                                command=types.Command(
                                    title=title,
                                    command=ADD_ASSERTIONS,
                                    arguments=[uri, {"sentences": [instruction.text], "include_held_back": True}],
                                ),
                            )
                        )
                    elif instruction.checks or assistant:
                        actions.append(
                            types.CodeAction(
                                title="Add assertion for this instruction",
                                kind=types.CodeActionKind.QuickFix,
                                diagnostics=related or None,
                                is_preferred=True,
                                command=types.Command(
                                    title="Add assertion for this instruction",
                                    command=ADD_ASSERTIONS,
                                    arguments=[uri, [instruction.text]],
                                ),
                            )
                        )
                    elif _client_commands(server):  # only a model can check it: the setting that configures one
                        actions.append(
                            types.CodeAction(
                                title="Configure an assistant model (it can check this instruction)",
                                kind=types.CodeActionKind.QuickFix,
                                diagnostics=related or None,
                                command=types.Command(
                                    title="Configure an assistant model",
                                    command=OPEN_SETTINGS,
                                    arguments=[ASSISTANT_SETTING],
                                ),
                            )
                        )
            # the workflow's next steps: quick fixes anywhere in the prompt (Ctrl+. lists them), and source actions
            writable = overview.uncovered if assistant else overview.writable
            steps = [
                (title, command, arguments, name)
                for (title, command, arguments), name in zip(
                    next_steps(server, ref, overview), _step_names(server, ref, overview), strict=True
                )
            ]
            for title, command, arguments, name in steps:
                if name == "addAssertions":
                    title = f"Add assertions for all uncovered instructions ({len(writable)})"
                for kind in (f"quickfix.spade.{name}", f"source.spade.{name}"):
                    if kind.startswith("quickfix.") and only is None and params.context.trigger_kind == AUTOMATIC:
                        continue  # the light bulb of every line would offer them
                    if (only is None and kind.startswith("source.")) or not _wanted(kind, only):
                        continue
                    actions.append(
                        types.CodeAction(
                            title=title,
                            kind=kind,
                            command=types.Command(title=title, command=command, arguments=arguments),
                        )
                    )
            return actions
        else:
            action = _remove_dropped(server, ref, overview, params)
            if action is not None:
                actions.append(action)
            if ref.kind == "sidecar":
                actions += _accept_actions(server, ref, document.source, overview, params, only)
        if ref.prompt is not None and _wanted(KIND_OPEN_EXAMPLES, only):
            actions.append(
                types.CodeAction(
                    title="Open examples",
                    kind=KIND_OPEN_EXAMPLES,
                    command=types.Command(title="Open examples", command=OPEN_EXAMPLES, arguments=[uri]),
                )
            )
        return actions
