"""Prompt-aware sentence splitting.

Prompts are not prose: they mix markdown headings, label lines (``Instructions:``), bullet and numbered
lists, code fences, quoted examples and ``{placeholders}``. Each of those becomes one unit here, and only
runs of ordinary text go through a real sentence-boundary detector (pysbd, rule-based, no downloads), so
abbreviations, decimals, versions and e-mail addresses are handled by a maintained library rather than by
regexes of our own.

The rules, kept few so a user can predict them:

- a blank line always ends a unit; code fences (``` / ~~~) and triple-quoted blocks are one unit each even
  across blank lines (an unclosed one is ordinary text), and so is a run of ``>`` lines;
- a list item (``-``, ``*``, ``+``, ``•``, ``1.``, ``1)``, ``a)``, ``(i)``) is one unit with its continuation
  lines, never split further, so editing one item changes exactly one unit;
- ``# heading``, a label line standing alone (``Instructions:``, ``TOOLS:``, ``**Key Points:**``), a
  horizontal rule, and a short line right above a list are headings; a line holding only ``{x}`` is a unit;
- otherwise a line break ends a unit unless the next line starts in lower case (but not a key and a colon under
  another such line: "flags: ..." then "summary: max 20 words") or the line ends with a comma (hard-wrapped
  prose), and pysbd finds the sentence boundaries inside each such run.

Speed matters because the history view re-splits every recorded version: results are cached per paragraph
(consecutive versions share almost all paragraphs) and per whole text, and a run of text that cannot contain
a sentence boundary never reaches pysbd. ``unit_spans`` exposes the cheap offset-only layout so the delta code
can diff without building ``Sentence`` objects for units that did not change.
"""

from __future__ import annotations

import bisect
import re
from functools import lru_cache
from typing import NamedTuple

import pysbd

from spade_lsp._types import Position, Range, Sentence, UnitKind

__all__ = ["Layout", "Locator", "UnitSpan", "layout", "split_sentences", "unit_spans"]


class UnitSpan(NamedTuple):
    """A unit before it gets LSP coordinates: offsets into the text, its kind and its (trimmed) text."""

    start: int
    end: int
    kind: UnitKind
    text: str


# --- line structure -------------------------------------------------------------------------------------

_BREAK = re.compile(r"\r\n|\r|\n")
# One or more blank (whitespace-only) lines, including the line break that ends the previous line.
# ("\r(?!\n)": a "\r\n" must never count as two line breaks when the regex backtracks)
_BLANK_LINES = re.compile(r"(?:\r\n|\r(?!\n)|\n)(?:[^\S\r\n]*(?:\r\n|\r(?!\n)|\n))+")
_BLANK_SPLIT = re.compile("(" + _BLANK_LINES.pattern + ")")
_BLANK_SPLIT_LF = re.compile(r"(\n(?:[^\S\n]*\n)+)")  # same for "\n"-only text; the literal start makes it ~7x faster
_FENCE_LINE = re.compile(r"(?:\A|(?<=[\r\n]))[^\S\r\n]*(`{3,}|~{3,})[^\r\n]*")
_TRIPLE_QUOTE = re.compile(r'"""|' + r"'''")
_NON_BMP = re.compile("[\U00010000-\U0010ffff]")

_ATX_HEADING = re.compile(r"#{1,6}(?:\s|$)")
_RULE = re.compile(r"([-*_=~])(?:\s*\1){2,}")
_BULLET = re.compile(
    r"(?:[-*+]\s+"  # "- item", "* item", "+ item"
    r"|-(?=[^\s\-])"  # "-item" (common in hand-written prompts; "--x" and "---" are not bullets)
    r"|•\s*"
    r"|\d{1,3}[.)]\s+"  # "1. item", "1) item"
    r"|[A-Za-z][)]\s+"  # "a) item"
    r"|\(\w{1,3}\)\s+"  # "(a) item", "(1) item", "(iv) item"
    r"|\[[ xX]?\]\s+)"  # a checklist's box: "[ ] item", "[x] item"
)
_PLACEHOLDER_LINE = re.compile(r"(?:\{\{[^{}]*\}\}|\{[^{}]*\}|\[[^\[\]]*\])[:.]?")
_SMALL_WORDS = frozenset({"a", "an", "and", "as", "at", "by", "for", "in", "of", "on", "or", "the", "to", "vs"})

# --- masking before pysbd: same-length substitutions, so offsets in the masked text are original offsets.
_MASK = re.compile(
    r"\{\{.*?\}\}|\{[^{}\r\n]*\}|\[[^\[\]\r\n]*\]"  # placeholders and [x]
    r"|(?:https?://|ftp://|www\.)[^\s<>\"'`]*[^\s<>\"'`.,;:!?)\]}]"  # URLs, minus trailing punctuation
)
_ELLIPSIS = re.compile(r"\.{3,}|…")
_MAYBE_BOUNDARY = re.compile(r"[.!?][\"'”’)\]*_]*\s+\S")


def _mask_fill(m: re.Match[str]) -> str:
    return "x" * len(m.group())


def _ellipsis_fill(m: re.Match[str]) -> str:
    return "," * len(m.group())


def _pysbd_segments(text: str) -> list[str]:
    """pysbd's sentences for ``text``, without its own char-span pass.

    ``Segmenter.segment`` maps sentences back with one freshly compiled regex per sentence, which thrashes
    the ``re`` cache and costs more than the segmentation itself; we locate segments ourselves anyway.
    A new Segmenter per call is cheap and keeps this thread-safe.
    """
    segmenter = pysbd.Segmenter(language="en", clean=False)
    processor = getattr(segmenter, "processor", None)
    if processor is None:  # pragma: no cover - other pysbd versions
        return [str(s) for s in segmenter.segment(text)]
    return [str(s) for s in processor(text).process()]


@lru_cache(maxsize=65536)
def _sentence_spans(run: str) -> tuple[tuple[int, int], ...]:
    """Sentence spans inside one run of ordinary text (offsets relative to the run, whitespace trimmed).

    Placeholders, URLs and ellipses are masked first so pysbd never splits inside them, and line breaks become
    spaces (the caller already decided which lines belong together). pysbd's segments are located in the
    masked text ourselves instead of trusting them, so a mangled segment cannot shift offsets.
    """
    masked = _ELLIPSIS.sub(_ellipsis_fill, _MASK.sub(_mask_fill, run)).replace("\r", " ").replace("\n", " ")
    lead = len(masked) - len(masked.lstrip())
    whole = ((lead, len(masked.rstrip())),)
    if _MAYBE_BOUNDARY.search(masked) is None:
        return whole
    spans: list[tuple[int, int]] = []
    cursor = 0
    for segment in _pysbd_segments(masked):
        piece = str(segment).strip()
        if not piece:
            continue
        at = masked.find(piece, cursor)
        if at < 0:  # pysbd rewrote something: fall back to one unit rather than guess offsets
            return whole
        spans.append((at, at + len(piece)))
        cursor = at + len(piece)
    return tuple(spans) if spans else whole


def _is_label(stripped: str) -> bool:
    """``Instructions:``, ``TOOLS:``, ``**Key Points:**``, ``Glossary of Important Terms:`` standing alone."""
    bold = False
    for mark in ("**", "__"):
        if len(stripped) > 4 and stripped.startswith(mark) and stripped.endswith(mark):
            stripped, bold = stripped[2:-2].strip(), True
            break
    if not stripped.endswith(":"):
        # a short bold line with no sentence punctuation is a heading too ("**Summary**")
        return bold and len(stripped.split()) <= 6 and stripped[-1:] not in ".!?"
    words = stripped[:-1].split()
    if not words or len(words) > 6:
        return False
    if bold or len(words) <= 2:
        return True
    letters = "".join(w for w in words if w.isalpha())
    if letters and letters.isupper():
        return True
    return all(not w[0].isalpha() or w[0].isupper() or w in _SMALL_WORDS for w in words)


_TEXT, _BULLET_LINE, _HEADING_LINE, _QUOTE_LINE, _ALONE_LINE = range(5)


def _classify(stripped: str) -> int:
    first = stripped[0]
    if first == ">":
        return _QUOTE_LINE
    if first == "#" and _ATX_HEADING.match(stripped):
        return _HEADING_LINE
    if first in "-*_=~" and _RULE.fullmatch(stripped):
        return _HEADING_LINE
    if _BULLET.match(stripped):
        return _BULLET_LINE
    if first in "{[" and _PLACEHOLDER_LINE.fullmatch(stripped):
        return _ALONE_LINE
    if stripped[-1] in ":*_" and _is_label(stripped):
        return _HEADING_LINE
    return _TEXT


#: A line that opens with a key and a colon ("summary: max 20 words", "secondary_intent (optional): ..."): under
#: another such line it starts its own unit even in lower case, one field of a schema, not wrapped prose.
_KEY_LINE = re.compile(r"[a-z][\w-]*(?: [a-z][\w-]*){0,2}(?: ?\([^()\n]{0,40}\))?:\s")


def _joins(previous: str, line: str) -> bool:
    """Whether ``line`` continues the sentence of the line before it (hard-wrapped prose).

    Prompts usually put one instruction per line without a final full stop, so a line break ends a unit
    unless the next line starts in lower case or the previous one ends with a comma.
    """
    if _KEY_LINE.match(line) and _KEY_LINE.match(previous):
        return False  # one field of a schema after another ("flags: ..." then "summary: max 20 words")
    return line[0].islower() or previous.endswith(",")


@lru_cache(maxsize=65536)
def _paragraph_units(par: str) -> tuple[UnitSpan, ...]:
    """Units of one paragraph (no blank line, fence or triple-quoted block inside); offsets relative."""
    lines: list[tuple[int, int, str, int]] = []  # (start, end) of the stripped line, its text, its class
    indents: list[int] = []
    pos = 0
    for m in (*_BREAK.finditer(par), None):
        end = m.start() if m is not None else len(par)
        raw = par[pos:end]
        stripped = raw.strip()
        if stripped:
            s = pos + len(raw) - len(raw.lstrip())
            lines.append((s, s + len(stripped), stripped, _classify(stripped)))
            indents.append(s - pos)
        if m is not None:
            pos = m.end()

    units: list[UnitSpan] = []

    def add(start: int, end: int, kind: UnitKind) -> None:
        units.append(UnitSpan(start, end, kind, par[start:end]))

    i, n = 0, len(lines)
    while i < n:
        start, end, stripped, cls = lines[i]
        j = i + 1
        if cls == _QUOTE_LINE:
            while j < n and lines[j][3] == _QUOTE_LINE:
                j += 1
            add(start, lines[j - 1][1], UnitKind.QUOTE)
        elif cls == _HEADING_LINE:
            add(start, end, UnitKind.HEADING)
        elif cls == _ALONE_LINE:
            add(start, end, UnitKind.SENTENCE)
        elif cls == _BULLET_LINE:
            while j < n and lines[j][3] == _TEXT and (indents[j] > indents[i] or _joins(lines[j - 1][2], lines[j][2])):
                j += 1
            add(start, lines[j - 1][1], UnitKind.BULLET)
        elif j < n and lines[j][3] == _BULLET_LINE and len(stripped.split()) <= 4 and stripped[-1] not in ".!?,;":
            add(start, end, UnitKind.HEADING)  # "Input format" right above a list
        else:
            while j < n and lines[j][3] == _TEXT and _joins(lines[j - 1][2], lines[j][2]):
                j += 1
            run_end = lines[j - 1][1]
            for a, b in _sentence_spans(par[start:run_end]):
                add(start + a, start + b, UnitKind.SENTENCE)
        i = j
    return tuple(units)


def _blocks(text: str) -> list[tuple[int, int, UnitKind | None]]:
    """Cut the text into code fences / triple-quoted blocks (kind set) and the ordinary stretches between.

    An unclosed fence or quote is treated as ordinary text, so typing an opening fence in the editor does not
    turn the rest of the prompt into one unit.
    """
    special: list[tuple[int, int, UnitKind]] = []
    fences = list(_FENCE_LINE.finditer(text)) if ("`" in text or "~" in text) else []
    k = 0
    while k < len(fences):
        opener = fences[k]
        marker = opener.group(1)
        for c in range(k + 1, len(fences)):
            close = fences[c].group(1)
            if close[0] == marker[0] and len(close) >= len(marker) and not fences[c].group().strip()[len(close) :]:
                start = opener.start() + len(opener.group()) - len(opener.group().lstrip())
                special.append((start, fences[c].start() + len(fences[c].group().rstrip()), UnitKind.CODE))
                k = c + 1
                break
        else:
            k += 1
    if '"""' in text or "'''" in text:
        quotes = [m for m in _TRIPLE_QUOTE.finditer(text) if not any(a <= m.start() < b for a, b, _ in special)]
        k = 0
        while k + 1 < len(quotes):
            qa, qb = quotes[k], quotes[k + 1]
            if qa.group() == qb.group() and _BREAK.search(text, qa.end(), qb.start()) is not None:
                special.append((qa.start(), qb.end(), UnitKind.QUOTE))
                k += 2
            else:
                k += 1
        special.sort()

    out: list[tuple[int, int, UnitKind | None]] = []
    pos = 0
    for a, b, kind in special:
        if a < pos:  # overlapping (a quote opened inside a fence line): keep the earlier block
            continue
        if a > pos:
            out.append((pos, a, None))
        out.append((a, b, kind))
        pos = b
    if pos < len(text):
        out.append((pos, len(text), None))
    return out


@lru_cache(maxsize=65536)
def _group(source: str, kind: UnitKind | None) -> tuple[tuple[UnitSpan, ...], tuple[str, ...]]:
    """Units of a paragraph (``kind`` None) or of a whole fence/quote block, plus their texts.

    Cached on the source text: consecutive versions share almost every paragraph, so a new version costs a
    lookup per paragraph, and equal units come back as the very same ``str`` objects (cheap to compare).
    """
    units = _paragraph_units(source) if kind is None else (UnitSpan(0, len(source), kind, source),)
    return units, tuple(u.text for u in units)


class Locator:
    """Offset -> LSP Position for one text.

    Lines are counted with ``str.count`` (C speed) from the previous query, so ascending queries cost
    O(text) in total and a few scattered queries (the diff's changed units) cost nothing up front. UTF-16
    columns only look for astral characters when the line is not ASCII.
    """

    __slots__ = ("_cr", "_line", "_offset", "_text")

    def __init__(self, text: str) -> None:
        self._text = text
        self._cr = "\r" in text
        self._offset = 0  # last offset asked for, and its line
        self._line = 0

    def line_and_column(self, offset: int) -> tuple[int, int]:
        text = self._text
        if offset < self._offset:
            self._offset, self._line = 0, 0
        a = self._offset
        line = self._line + text.count("\n", a, offset)
        if self._cr:
            line += text.count("\r", a, offset) - text.count("\r\n", a, offset)
            if 0 < a < offset and text[a - 1] == "\r" and text[a] == "\n":
                line -= 1  # the "\n" of a "\r\n" split by the previous query was already counted with its "\r"
            start = max(text.rfind("\n", 0, offset), text.rfind("\r", 0, offset)) + 1
        else:
            start = text.rfind("\n", 0, offset) + 1
        self._offset, self._line = offset, line
        character = offset - start
        if not text.isascii():
            prefix = text[start:offset]
            if not prefix.isascii():
                character += len(_NON_BMP.findall(prefix))  # each astral char is two UTF-16 code units
        return line, character

    def position(self, offset: int) -> Position:
        return Position(*self.line_and_column(offset))

    def sentence(self, unit: UnitSpan) -> Sentence:
        start, end = self.position(unit.start), self.position(unit.end)
        return Sentence(unit.text, unit.start, unit.end, Range(start, end), unit.kind)


@lru_cache(maxsize=65536)
def _relative_positions(source: str, kind: UnitKind | None) -> tuple[tuple[int, int, int, int], ...]:
    """(start line, start column, end line, end column) of each unit of a group, relative to its start."""
    locator = Locator(source)
    out: list[tuple[int, int, int, int]] = []
    for unit in _group(source, kind)[0]:
        out.append((*locator.line_and_column(unit.start), *locator.line_and_column(unit.end)))
    return tuple(out)


@lru_cache(maxsize=8192)
def _group_ranges(source: str, kind: UnitKind | None, line: int, column: int) -> tuple[Range, ...]:
    """LSP ranges of a group's units when the group starts at (line, UTF-16 column).

    Cached apart from offsets: an edit that keeps the line count shifts later groups' offsets but not their
    ranges, so those come back from here.
    """
    return tuple(
        Range(
            Position(line + sl, sc + column if sl == 0 else sc),
            Position(line + el, ec + column if el == 0 else ec),
        )
        for sl, sc, el, ec in _relative_positions(source, kind)
    )


@lru_cache(maxsize=8192)
def _group_sentences(source: str, kind: UnitKind | None, base: int, line: int, column: int) -> tuple[Sentence, ...]:
    """The Sentences of a group placed at ``base`` (line, UTF-16 column); reused while the group stays put."""
    units = _group(source, kind)[0]
    ranges = _group_ranges(source, kind, line, column)
    return tuple(Sentence(t, s + base, e + base, r, k) for (s, e, k, t), r in zip(units, ranges, strict=True))


class Layout:
    """The units of one text, kept per group (a paragraph, or a whole fence / quoted block) with relative
    offsets, so building it for a new version is a cache lookup per paragraph rather than work per unit.
    ``texts`` lists every unit's text in order."""

    __slots__ = ("_bases", "_firsts", "_groups", "_text", "texts")

    def __init__(self, text: str) -> None:
        self._text = text
        self.texts: list[str] = []
        self._firsts: list[int] = []  # index of each group's first unit
        self._bases: list[int] = []  # offset of each group in the text
        self._groups: list[tuple[str, UnitKind | None]] = []  # the _group() key
        for a, b, kind in _blocks(text):
            if kind is not None:
                self._add(a, text[a:b], kind)
                continue
            # split() with a capturing group alternates paragraph, separator, paragraph, ... (all in C)
            splitter = _BLANK_SPLIT if "\r" in text else _BLANK_SPLIT_LF
            parts = splitter.split(text[a:b]) if a or b < len(text) else splitter.split(text)
            pos = a
            for k in range(0, len(parts), 2):
                par = parts[k]
                if par:
                    self._add(pos, par, None)
                pos += len(par) + (len(parts[k + 1]) if k + 1 < len(parts) else 0)

    def _add(self, base: int, source: str, kind: UnitKind | None) -> None:
        texts = _group(source, kind)[1]
        if texts:
            self._firsts.append(len(self.texts))
            self._bases.append(base)
            self._groups.append((source, kind))
            self.texts.extend(texts)

    def __len__(self) -> int:
        return len(self.texts)

    def span(self, index: int) -> UnitSpan:
        """The ``index``-th unit with offsets into the whole text."""
        g = bisect.bisect_right(self._firsts, index) - 1
        base = self._bases[g]
        s, e, kind, t = _group(*self._groups[g])[0][index - self._firsts[g]]
        return UnitSpan(s + base, e + base, kind, t)

    def spans(self) -> tuple[UnitSpan, ...]:
        return tuple(
            UnitSpan(s + base, e + base, kind, t)
            for base, key in zip(self._bases, self._groups, strict=True)
            for s, e, kind, t in _group(*key)[0]
        )

    def sentences(self) -> tuple[Sentence, ...]:
        locator = Locator(self._text)
        out: list[Sentence] = []
        for base, (source, kind) in zip(self._bases, self._groups, strict=True):
            out.extend(_group_sentences(source, kind, base, *locator.line_and_column(base)))
        return tuple(out)


@lru_cache(maxsize=16)
def layout(text: str) -> Layout:
    """The (cached) layout of ``text``; the history benchmark asks for each version twice."""
    return Layout(text)


def unit_spans(text: str) -> tuple[UnitSpan, ...]:
    """Every unit of ``text`` in order, as offsets only (no LSP coordinates)."""
    return layout(text).spans()


@lru_cache(maxsize=16)
def _split_cached(text: str) -> tuple[Sentence, ...]:
    return layout(text).sentences()


def split_sentences(text: str) -> list[Sentence]:
    """Split a prompt into units (sentences, list items, headings, whole code fences and quoted examples).

    ``text[s.start:s.end] == s.text`` for every unit; ranges are LSP positions (UTF-16 columns).
    """
    return list(_split_cached(text))
