"""Code lenses. On a prompt: a summary at the top (versions, instructions, assertions, selected), the newest
paired comparison of this version with the one before (after the daemon sampled both), the next steps that
apply ("Add assertions for N uncovered instructions", "Open examples", "Run evaluation", "Select assertions"),
and "Add assertion" above each instruction no assertion covers that spade can write a check for (offline, or
with an assistant model). On the sidecar module: above each assertion, its pass rate on the examples and
whether the latest selection keeps it (or what subsumes it)."""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from spade_lsp import Position, Range
from spade_lsp.overview import PromptOverview
from spade_lsp_server._documents import DocumentRef, uri_of
from spade_lsp_server.server import SpadeLanguageServer

ADD_ASSERTIONS = "spade.addAssertions"
SHOW_HISTORY = "spade.showHistory"
REPORT = "spade.report"
EVALUATE = "spade.evaluate"


SELECT = "spade.select"
OPEN_EXAMPLES = "spade.openExamples"
#: The extension's own command that shows the history rendered (a client that says it has it).
SHOW_HISTORY_CLIENT = "spade-lsp.showHistory"


def _client_commands(server: SpadeLanguageServer) -> bool:
    """The client runs spade's client-side commands (the VS Code extension says so in its capabilities)."""
    experimental = server.client_capabilities.experimental
    return isinstance(experimental, dict) and bool(experimental.get("spadeClientCommands"))


def next_steps(
    server: SpadeLanguageServer, ref: DocumentRef, overview: PromptOverview
) -> list[tuple[str, str, list[Any]]]:
    """The workflow's next steps where they apply, as (title, command, arguments): add the checks spade can
    write, open (or start) the examples, evaluate, select. The same steps are quick fixes (Ctrl+.)."""
    from spade_lsp import examples_path

    uri = ref.uri
    steps: list[tuple[str, str, list[Any]]] = []
    writable = overview.uncovered if server.has_assistant(ref) else overview.writable
    if len(writable) > 1:
        steps.append(
            (
                f"Add assertions for {len(writable)} uncovered instructions",
                ADD_ASSERTIONS,
                [uri, [instruction.text for instruction in writable]],
            )
        )
    has_examples = ref.path is not None and examples_path(ref.path).exists()
    steps.append(("Open examples", OPEN_EXAMPLES, [uri]))  # made with a starter line when missing
    if overview.sidecar.assertions and has_examples:
        steps.append(("Run evaluation", EVALUATE, [uri]))
    if overview.eval_run is not None:
        steps.append(("Select assertions", SELECT, [uri]))
    return steps


def register(server: SpadeLanguageServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    def code_lens(params: types.CodeLensParams) -> list[types.CodeLens] | None:
        from spade_lsp_server import _render

        uri = params.text_document.uri
        found = server.view_of(uri)
        if found is None:
            return None
        ref, document, overview = found
        columns = server.columns(document.source)
        top = columns.range(Range(Position(0, 0), Position(0, 0)))
        lenses: list[types.CodeLens] = []
        if ref.kind == "prompt":
            if overview.problem is not None:
                return [types.CodeLens(range=top, command=types.Command(title="spade: not analysed", command=""))]
            pending = uri in server.history_pending
            history = SHOW_HISTORY_CLIENT if _client_commands(server) else SHOW_HISTORY
            lenses.append(
                types.CodeLens(
                    range=top,
                    command=types.Command(
                        title=_render.summary_title(overview, pending=pending), command=history, arguments=[uri]
                    ),
                )
            )
            if overview.comparison is not None:  # "v7 vs v6: format 92% -> 97% (+5, 95% CI +1..+9); ..."
                lenses.append(
                    types.CodeLens(
                        range=top, command=types.Command(title=overview.comparison, command=REPORT, arguments=[uri])
                    )
                )
            lenses += [
                types.CodeLens(range=top, command=types.Command(title=title, command=command, arguments=arguments))
                for title, command, arguments in next_steps(server, ref, overview)
            ]
            writable = overview.writable if not server.has_assistant(ref) else overview.uncovered
            for instruction in writable:
                start = instruction.range.start
                lenses.append(
                    types.CodeLens(
                        range=columns.range(Range(start, start)),
                        command=types.Command(
                            title="Add assertion", command=ADD_ASSERTIONS, arguments=[uri, [instruction.text]]
                        ),
                    )
                )
            return lenses
        target = uri_of(ref.prompt) if ref.prompt is not None else uri
        for view in overview.sidecar.assertions:
            start = Position(view.name_range.start.line, 0)
            title = _render.assertion_lens_title(view)
            command = EVALUATE if view.stats is None else REPORT
            lenses.append(
                types.CodeLens(
                    range=columns.range(Range(start, start)),
                    command=types.Command(title=title, command=command, arguments=[target]),
                )
            )
        return lenses
