from __future__ import annotations

import io
import json
from collections.abc import Sequence
from typing import Any

import pytest

from spade_lsp._columns import StringColumn, dump_json, json_pieces


def test_a_string_column_reads_back_what_was_appended() -> None:
    items = ["ex-1", "", "é", "\ud800 lone surrogate", "日本"]
    column = StringColumn(items)
    assert len(column) == 5 and list(column) == items and column == items
    assert column[2] == "é" and column[-1] == "日本" and column[1:3] == ["", "é"]
    assert column.index("日本") == 4 and "ex-1" in column
    with pytest.raises(IndexError):
        column[5]
    column.append("more")
    assert column[5] == "more" and column != items


def json_array(items: Sequence[Any]) -> str:
    return b"".join(json_pieces(items)).decode()


def test_json_pieces_are_json_dumps_of_the_list(monkeypatch: pytest.MonkeyPatch) -> None:
    import spade_lsp._columns as columns

    monkeypatch.setattr(columns, "_JSON_BATCH", 3)  # several batches
    items = [f'id {n} "quoted" é' for n in range(8)]
    assert json_array(StringColumn(items)) == json.dumps(items)
    assert json_array(StringColumn()) == "[]" and json_array([[1, None], [0, 1]]) == json.dumps([[1, None], [0, 1]])


@pytest.mark.parametrize("ids", [[], ["a"], [f"é{n}" for n in range(7)]])
def test_dump_json_streams_a_column_as_json_dump_would_write_the_list(
    ids: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import spade_lsp._columns as columns

    monkeypatch.setattr(columns, "_JSON_BATCH", 3)
    value = {"assertions": [{"name": "x", "cost": 0.0}], "M": [[1, 0], [None, 1]], "examples": ids, "y": [], "e": {}}
    expected = json.dumps(value, ensure_ascii=False, indent=2)
    out = io.StringIO()
    dump_json({**value, "examples": StringColumn(ids)}, out)
    assert out.getvalue() == expected


def test_an_indexed_column_keeps_each_distinct_value_once() -> None:
    from spade_lsp._columns import IndexedColumn

    column: IndexedColumn[tuple[int | None, list[int | None]]] = IndexedColumn()
    for label, cells in [(1, (1, 0)), (0, (1, 0)), (1, (1, 0)), (None, (None, 1))]:
        column.append((label, cells), (label, list(cells)))
    assert len(column) == 4 and column[0] is column[2]  # one value for both rows
    assert list(column.column(0)) == [1, 0, 1, None] and column.column(1)[1:3] == [[1, 0], [1, 0]]
    assert column.column(1) == [[1, 0], [1, 0], [1, 0], [None, 1]]


def test_an_indexed_column_stops_sharing_past_its_key_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    import spade_lsp._columns as columns

    monkeypatch.setattr(columns, "_MAX_KEYS", 2)
    column: columns.IndexedColumn[str] = columns.IndexedColumn()
    for value in ["a", "b", "c", "c", "a"]:
        column.append(value, value)
    assert list(column) == ["a", "b", "c", "c", "a"]  # the values are right either way
    assert column[0] is column[4] and repr(column) == "IndexedColumn(5 rows, 4 distinct)"  # "c" not shared


def test_dump_json_streams_every_column_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    import spade_lsp._columns as columns

    monkeypatch.setattr(columns, "_JSON_BATCH", 2)
    rows: columns.IndexedColumn[list[int | None]] = columns.IndexedColumn()
    for cells in [(1, 0), (1, 0), (None, 1)]:
        rows.append(cells, list(cells))
    out = io.StringIO()
    dump_json({"M": rows, "nested": {"ids": StringColumn(["x"])}}, out)
    expected = {"M": [[1, 0], [1, 0], [None, 1]], "nested": {"ids": ["x"]}}
    assert out.getvalue() == json.dumps(expected, ensure_ascii=False, indent=2)
    assert json_array(rows) == json.dumps(expected["M"])


class _CountedWrites(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


@pytest.mark.parametrize("column", [False, True])
def test_dump_json_hands_its_stream_a_few_large_pieces_not_every_token(
    column: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On an unbuffered stdout every write is a system call: a document of thousands of tokens reaches the stream
    in pieces of about ``_PIECE_CHARS``, the same text as ``json.dumps`` gives."""
    import spade_lsp._columns as columns

    monkeypatch.setattr(columns, "_PIECE_CHARS", 4096)
    rows = [{"input": f"p{n}", "sample": n % 5, "passed": n % 3, "rate": n / 7} for n in range(2000)]
    value = {"profiles": {"output": rows}, "ids": [f"p{n}" for n in range(2000)], "calls": 2000}
    expected = json.dumps(value, ensure_ascii=False, indent=2)
    out = _CountedWrites()
    dump_json({**value, "ids": StringColumn(value["ids"])} if column else value, out)
    assert out.getvalue() == expected
    assert out.writes <= len(expected) // 4096 + 2  # json.dump alone made one write per token: tens of thousands
