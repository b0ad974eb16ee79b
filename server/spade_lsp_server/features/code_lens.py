"""Code lenses. On a prompt: a summary at the top (versions, instructions, assertions, selected), the newest
paired comparison of this version with the one before (after the daemon sampled both), and "Add assertion"
above each checkable instruction no assertion covers. On the sidecar module: above each
assertion, its pass rate on the examples and whether the latest selection keeps it (or what subsumes it)."""

from __future__ import annotations

from lsprotocol import types

from spade_lsp._types import Position, Range
from spade_lsp_server._documents import uri_of
from spade_lsp_server.server import SpadeLanguageServer

ADD_ASSERTIONS = "spade.addAssertions"
SHOW_HISTORY = "spade.showHistory"
REPORT = "spade.report"
EVALUATE = "spade.evaluate"


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
            lenses.append(
                types.CodeLens(
                    range=top,
                    command=types.Command(title=_render.summary_title(overview), command=SHOW_HISTORY, arguments=[uri]),
                )
            )
            if overview.comparison is not None:  # "v7 vs v6: format 92% -> 97% (+5, 95% CI +1..+9); ..."
                lenses.append(
                    types.CodeLens(
                        range=top, command=types.Command(title=overview.comparison, command=REPORT, arguments=[uri])
                    )
                )
            uncovered = overview.uncovered
            if len(uncovered) > 1:
                lenses.append(
                    types.CodeLens(
                        range=top,
                        command=types.Command(
                            title=f"Add assertions for {len(uncovered)} uncovered instructions",
                            command=ADD_ASSERTIONS,
                            arguments=[uri, [instruction.text for instruction in uncovered]],
                        ),
                    )
                )
            for instruction in uncovered:
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
