"""Engine positions (UTF-16 columns) to and from the client's negotiated position encoding.

The engine counts columns in UTF-16 code units, LSP's default. A client may negotiate UTF-8 or UTF-32
(``general.positionEncodings``); then columns are converted through the line's text. For UTF-16 nothing is
converted, so the common case costs nothing.
"""

from __future__ import annotations

import re
from typing import Any, Final

from lsprotocol import types

from spade_lsp import Position, Range

UTF16: Final = types.PositionEncodingKind.Utf16
_LINE_BREAK: Final = re.compile(r"\r\n|\r|\n")


def code_units(text: str, encoding: str) -> int:
    if encoding == types.PositionEncodingKind.Utf8:
        return len(text.encode("utf-8", "surrogatepass"))
    if encoding == types.PositionEncodingKind.Utf32:
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _index_for_units(line: str, units: int, encoding: str) -> int:
    """The str index in ``line`` at ``units`` code units of ``encoding`` (clamped to the line)."""
    count = 0
    for index, char in enumerate(line):
        if count >= units:
            return index
        count += code_units(char, encoding)
    return len(line)


class Columns:
    """Converts columns of one text between the engine (UTF-16) and the client's encoding."""

    def __init__(self, text: str | None, encoding: str | None) -> None:
        self.encoding = str(encoding or UTF16)
        self.identity = self.encoding == UTF16 or text is None or text.isascii()
        self._text = text or ""
        self._lines: list[str] | None = None

    def _line(self, number: int) -> str:
        if self._lines is None:
            self._lines = _LINE_BREAK.split(self._text)
        return self._lines[number] if 0 <= number < len(self._lines) else ""

    def to_client(self, line: int, character: int) -> int:
        if self.identity:
            return character
        text = self._line(line)
        index = _index_for_units(text, character, UTF16)
        return code_units(text[:index], self.encoding)

    def from_client(self, line: int, character: int) -> int:
        if self.identity:
            return character
        text = self._line(line)
        index = _index_for_units(text, character, self.encoding)
        return code_units(text[:index], UTF16)

    def position(self, position: Position) -> types.Position:
        return types.Position(line=position.line, character=self.to_client(position.line, position.character))

    def range(self, value: Range) -> types.Range:
        return types.Range(start=self.position(value.start), end=self.position(value.end))

    def range_json(self, value: Range) -> dict[str, Any]:
        """The range as LSP JSON (for notifications sent without the attrs round trip)."""
        start, end = value.start, value.end
        return {
            "start": {"line": start.line, "character": self.to_client(start.line, start.character)},
            "end": {"line": end.line, "character": self.to_client(end.line, end.character)},
        }

    def engine_position(self, position: types.Position) -> Position:
        """A client position as the engine counts it (UTF-16 columns)."""
        return Position(position.line, self.from_client(position.line, position.character))


def line_range(start_line: int, end_line: int) -> Range:
    """Whole lines ``start_line`` .. ``end_line`` (inclusive), ending at the start of the next line."""
    return Range(Position(start_line, 0), Position(end_line + 1, 0))


def end_of(text: str) -> Position:
    """The position just after the last character of ``text`` (UTF-16 columns)."""
    lines = _LINE_BREAK.split(text)
    last = lines[-1]
    return Position(len(lines) - 1, len(last.encode("utf-16-le", "surrogatepass")) // 2)
