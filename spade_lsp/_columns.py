"""Compact columns for runs that hold a value per example. A million example ids as Python strings cost about
70 MB (an object and a pointer each); a :class:`StringColumn` holds their UTF-8 bytes and an offset each. A
million rows of verdicts that repeat a handful of patterns cost a pointer each in a list; an
:class:`IndexedColumn` holds each distinct value once and a 4-byte index per row."""

from __future__ import annotations

import json
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Final, Protocol, TextIO, TypeVar, overload

T = TypeVar("T")

_JSON_BATCH: Final = 10_000
_PIECE_CHARS: Final = 65_536
_MAX_NARROW: Final = 2**32 - 1
_MAX_KEYS: Final = 65_536


class _Writes(Protocol):
    def write(self, text: str, /) -> int: ...


class _Column(Sequence[T]):
    """A read-only sequence read one item at a time (:meth:`_at`), compared by value with any sequence."""

    __slots__ = ()

    def _at(self, index: int) -> T:
        raise NotImplementedError

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> list[T]: ...

    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            return [self._at(i) for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"{type(self).__name__} index out of range")
        return self._at(index)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # compared by value, and appended to: not a dict key


class StringColumn(_Column[str]):
    """Strings kept in one UTF-8 buffer with their end offsets: read back one at a time (decoded on access),
    appended in order, never changed. Lone surrogates (which JSON allows in an id) survive the round trip."""

    __slots__ = ("_data", "_ends")

    def __init__(self, items: Iterable[str] = ()) -> None:
        self._data = bytearray()
        self._ends = array("I")  # widened to 8 bytes past 4 GB of text
        self.extend(items)

    def append(self, item: str) -> None:
        self._data += item.encode("utf-8", "surrogatepass")
        if len(self._data) > _MAX_NARROW and self._ends.typecode == "I":
            self._ends = array("Q", self._ends)
        self._ends.append(len(self._data))

    def extend(self, items: Iterable[str]) -> None:
        for item in items:
            self.append(item)

    def __len__(self) -> int:
        return len(self._ends)

    def _at(self, index: int) -> str:
        start = self._ends[index - 1] if index else 0
        return self._data[start : self._ends[index]].decode("utf-8", "surrogatepass")

    def __iter__(self) -> Iterator[str]:
        data, start = self._data, 0
        for end in self._ends:
            yield data[start:end].decode("utf-8", "surrogatepass")
            start = end

    def __repr__(self) -> str:
        return f"StringColumn({len(self)} strings)"


class IndexedColumn(_Column[T]):
    """A column of values that repeat: each distinct value kept once (:meth:`append` shares equal ones by a key the
    caller gives), each row a 4-byte index. Values are shared, so they are read, never changed in place."""

    __slots__ = ("_index", "_keys", "_values")

    def __init__(self) -> None:
        self._values: list[T] = []
        self._keys: dict[Any, int] = {}
        self._index = array("I")

    def append(self, key: Any, value: T) -> None:
        """A row holding ``value``; an earlier row's value with the same hashable ``key`` is used instead (among
        the first 65,536 distinct keys: values that hardly repeat are kept as they come, without their keys)."""
        at = self._keys.get(key)
        if at is None:
            at = len(self._values)
            self._values.append(value)
            if len(self._keys) < _MAX_KEYS:
                self._keys[key] = at
        self._index.append(at)

    def __len__(self) -> int:
        return len(self._index)

    def _at(self, index: int) -> T:
        return self._values[self._index[index]]

    def __iter__(self) -> Iterator[T]:
        values = self._values
        return (values[at] for at in self._index)

    def __repr__(self) -> str:
        return f"IndexedColumn({len(self)} rows, {len(self._values)} distinct)"

    def column(self, part: int) -> IndexedColumn[Any]:
        """The column of ``value[part]`` for each row (values that are tuples), sharing this one's index."""
        out: IndexedColumn[Any] = IndexedColumn()
        out._values = [value[part] for value in self._values]  # type: ignore[index]
        out._index = self._index
        return out


def json_pieces(items: Sequence[Any]) -> Iterator[bytes]:
    """``json.dumps(list(items)).encode()`` in pieces of ten thousand items: a long column is encoded, and
    written (:func:`~spade_lsp.store.insert_eval_run` streams it into its row), without its whole text in memory."""
    yield b"["
    for start in range(0, len(items), _JSON_BATCH):
        text = json.dumps(list(items[start : start + _JSON_BATCH]))[1:-1]
        yield (", " + text if start else text).encode("utf-8")
    yield b"]"


def dump_json(value: Any, out: TextIO, *, default: Callable[[Any], Any] | None = None) -> None:
    """``json.dump(value, out, ensure_ascii=False, indent=2, default=default)`` that writes a column (a sequence
    that is not a list, as the classes here are) as a list: one among the top dict's values a batch of items at
    a time, rather than made a list first. What it writes reaches ``out`` in pieces of about 64 KB (see
    :class:`_Pieces`)."""

    def encodable(item: Any) -> Any:
        if _is_column(item):
            return list(item)
        if default is None:
            raise TypeError(f"Object of type {type(item).__name__} is not JSON serializable")
        return default(item)

    pieces = _Pieces(out)
    if not (isinstance(value, dict) and any(_is_column(item) for item in value.values())):
        json.dump(value, pieces, ensure_ascii=False, indent=2, default=encodable)
    else:
        nested = _Indented(pieces)
        pieces.write("{")
        for number, (key, item) in enumerate(value.items()):
            pieces.write(("," if number else "") + "\n  " + json.dumps(str(key), ensure_ascii=False) + ": ")
            if _is_column(item):
                _dump_column(item, pieces, encodable)
            else:
                json.dump(item, nested, ensure_ascii=False, indent=2, default=encodable)
        pieces.write("\n}")
    pieces.flush()


class _Pieces:
    """A text stream that passes what it is given on to ``out`` about 64 KB at a time. ``json.dump`` writes every
    token on its own, and on an unbuffered stream (``PYTHONUNBUFFERED``, or ``python -u``) each write is a
    system call: a 2,000-output sampling document took 70 ms to print that way here, 24 ms in pieces."""

    def __init__(self, out: _Writes) -> None:
        self._out = out
        self._held: list[str] = []
        self._size = 0

    def write(self, text: str) -> int:
        self._held.append(text)
        self._size += len(text)
        if self._size >= _PIECE_CHARS:
            self.flush()
        return len(text)

    def flush(self) -> None:
        if self._held:
            self._out.write("".join(self._held))
            self._held.clear()
            self._size = 0


def _is_column(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, list | tuple | str | bytes)


def _dump_column(column: Sequence[Any], out: _Writes, default: Callable[[Any], Any]) -> None:
    if not column:
        out.write("[]")
        return
    for start in range(0, len(column), _JSON_BATCH):
        batch = column[start : start + _JSON_BATCH]
        items = ",".join(
            "\n    " + json.dumps(item, ensure_ascii=False, indent=2, default=default).replace("\n", "\n    ")
            for item in batch
        )
        out.write(("[" if start == 0 else ",") + items)
    out.write("\n  ]")


class _Indented:
    """A text stream that indents every line after the first by two spaces: a value nested one level down."""

    def __init__(self, out: _Writes) -> None:
        self._out = out

    def write(self, text: str) -> int:
        return self._out.write(text.replace("\n", "\n  "))
