"""The document outline of a prompt (``textDocument/documentSymbol``).

A chat prompt (role sections as Prompty writes them, a list of messages) shows one symbol per message, named as
hovers name it (``system``, ``user 2``), spanning its section from its role line (or list entry) to the end of its
wording, with the instructions it holds (sentences that carry a SPADE category) as children. A one-message prompt
shows its instructions. Sidecar modules and examples files have none from spade: their language's own outline
serves them.

Built from the cached overview, so an outline costs what one walk over the instructions costs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from lsprotocol import types

from spade_lsp import Range
from spade_lsp.overview import InstructionView, MessageView, PromptOverview
from spade_lsp_server._convert import Columns
from spade_lsp_server.server import SpadeLanguageServer

MESSAGE_KIND: Final = types.SymbolKind.Namespace
INSTRUCTION_KIND: Final = types.SymbolKind.String
NAME_LENGTH: Final = 60
DETAIL_LENGTH: Final = 40


def _short(text: str, limit: int) -> str:
    """One line of at most ``limit`` characters (an outline's names and details are single lines)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' if count != 1 else ''}"


def instruction_symbol(
    instruction: InstructionView, columns: Columns, within: Range | None = None
) -> types.DocumentSymbol:
    """An instruction, its range cut to ``within`` (its message's range): an outline's children lie inside
    their parent, even for a unit the splitter ran on past its message's end."""
    span = instruction.range
    if within is not None:
        span = Range(max(span.start, within.start), min(span.end, within.end))
        if span.end < span.start:
            span = Range(span.start, span.start)
    where = columns.range(span)
    return types.DocumentSymbol(
        name=_short(instruction.text, NAME_LENGTH) or instruction.kind,
        detail=", ".join(instruction.plain_names),
        kind=INSTRUCTION_KIND,
        range=where,
        selection_range=where,
    )


def message_symbol(message: MessageView, units: Sequence[InstructionView], columns: Columns) -> types.DocumentSymbol:
    """A message, its detail the number of instructions it holds (or its first words when it holds none)."""
    instructions = [unit for unit in units if unit.categories]
    if instructions:
        detail = _plural(len(instructions), "instruction")
    elif units:
        detail = _short(units[0].text, DETAIL_LENGTH)
    else:
        detail = "empty"
    return types.DocumentSymbol(
        name=message.label,
        detail=detail,
        kind=MESSAGE_KIND,
        range=columns.range(message.range),
        selection_range=columns.range(message.heading),
        children=[instruction_symbol(unit, columns, message.range) for unit in instructions],
    )


def prompt_symbols(overview: PromptOverview, columns: Columns) -> list[types.DocumentSymbol]:
    """The outline: the messages of a chat prompt with their instructions, or a plain prompt's instructions;
    nothing for a text spade cannot read."""
    if overview.problem is not None:
        return []
    if not overview.messages:
        return [instruction_symbol(unit, columns) for unit in overview.instructions if unit.categories]
    units: dict[str, list[InstructionView]] = {message.label: [] for message in overview.messages}
    outside: list[InstructionView] = []
    for unit in overview.instructions:
        held = units.get(unit.message) if unit.message is not None else None
        if held is not None:
            held.append(unit)
        elif unit.categories:  # not in any message's wording: listed at the top level, never lost
            outside.append(unit)
    out = [message_symbol(message, units[message.label], columns) for message in overview.messages]
    out += [instruction_symbol(unit, columns) for unit in outside]
    out.sort(key=lambda symbol: (symbol.range.start.line, symbol.range.start.character))
    return out


def flatten(symbols: Sequence[types.DocumentSymbol], uri: str) -> list[types.SymbolInformation]:
    """The outline for a client without hierarchical symbols: each symbol with its container's name."""
    out: list[types.SymbolInformation] = []

    def walk(items: Sequence[types.DocumentSymbol], container: str | None) -> None:
        for symbol in items:
            out.append(
                types.SymbolInformation(
                    name=symbol.name,
                    kind=symbol.kind,
                    location=types.Location(uri=uri, range=symbol.range),
                    container_name=container,
                )
            )
            walk(symbol.children or [], symbol.name)

    walk(symbols, None)
    return out


def register(server: SpadeLanguageServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def document_symbol(
        params: types.DocumentSymbolParams,
    ) -> list[types.DocumentSymbol] | list[types.SymbolInformation] | None:
        uri = params.text_document.uri
        ref = server.classify(uri)
        if ref is None or ref.kind != "prompt":
            return None
        found = server.view_of(uri)
        if found is None:
            return None
        _, document, overview = found
        symbols = prompt_symbols(overview, server.columns(document.source))
        if server.client_supports("text_document.document_symbol.hierarchical_document_symbol_support"):
            return symbols
        return flatten(symbols, uri)
