"""Hover: on a prompt sentence, its categories, the versions that added or reworded it (with commits), and
the assertions derived from it with their latest figures; on a sidecar assertion, its source and results."""

from __future__ import annotations

from lsprotocol import types

from spade_lsp.overview import sentence_history
from spade_lsp_server.server import SpadeLanguageServer


def register(server: SpadeLanguageServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(params: types.HoverParams) -> types.Hover | None:
        from spade_lsp_server import _render

        uri = params.text_document.uri
        found = server.view_of(uri)
        if found is None:
            return None
        ref, document, overview = found
        columns = server.columns(document.source)
        point = columns.engine_position(params.position)
        if ref.kind == "prompt":
            instruction = overview.instruction_at(point.line, point.character)
            if instruction is None:
                return None
            state = server.workspace_state(ref.root)
            history = (
                sentence_history(state.store(), ref.root, ref.path, instruction.text) if ref.path is not None else ()
            )
            value = _render.instruction_hover(instruction, overview, history)
            where = instruction.range
        else:
            view = next(
                (a for a in overview.sidecar.assertions if a.range.start.line <= point.line <= a.range.end.line), None
            )
            if view is None:
                return None
            value = _render.assertion_hover(view, overview)
            where = view.name_range
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=value), range=columns.range(where)
        )
