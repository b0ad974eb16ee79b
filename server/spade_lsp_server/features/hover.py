"""Hover: on a prompt sentence, its categories, the message that holds it (in a chat prompt), the versions that
added or reworded it (with commits), and the assertions derived from it with their latest figures; on a sidecar
assertion, its source and results; on a line of the examples file, the example's grading note and that note's
judgement history."""

from __future__ import annotations

from lsprotocol import types

from spade_lsp.overview import sentence_history
from spade_lsp_server._documents import DocumentRef
from spade_lsp_server.server import SpadeLanguageServer


def examples_hover(
    server: SpadeLanguageServer, ref: DocumentRef, source: str, position: types.Position
) -> types.Hover | None:
    """The example on the hovered line; None on a blank line or one the engine cannot read (its diagnostic
    says why)."""
    from spade_lsp_server import _examples, _render

    lines = _examples.lines_of(source)
    if not 0 <= position.line < len(lines) or ref.prompt is None:
        return None
    text = lines[position.line]
    example = _examples.read_line(text, position.line)
    if example is None or example.problem is not None or example.id is None:
        return None
    history = None
    if example.note is not None:
        store = server.workspace_state(ref.root).store()
        history = _examples.note_history(store, ref.root, ref.prompt, example.id)
    value = _render.example_hover(example, history, ref.prompt.name)
    columns = server.columns(source)
    end = columns.to_client(position.line, len(text.encode("utf-16-le", "surrogatepass")) // 2)
    where = types.Range(
        start=types.Position(line=position.line, character=0), end=types.Position(line=position.line, character=end)
    )
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=value), range=where)


def register(server: SpadeLanguageServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(params: types.HoverParams) -> types.Hover | None:
        from spade_lsp_server import _render

        uri = params.text_document.uri
        ref = server.classify(uri)
        if ref is not None and ref.kind == "examples":
            document = server.open_document(uri)
            return examples_hover(server, ref, document.source, params.position) if document is not None else None
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
            value = _render.instruction_hover(
                instruction,
                overview,
                history,
                pending=ref.uri in server.history_pending,
                has_assistant=server.has_assistant(ref),
            )
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
