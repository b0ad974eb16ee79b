"""Sentence-level deltas between two versions of a prompt.

Units are aligned with difflib on their texts (identical units are the common case and compare cheaply),
then inside each replaced stretch removed and added units are paired by fuzzy similarity (rapidfuzz, one to
one, greedy by best score) into MODIFIED changes. A unit that only moved is reported as MODIFIED with
similarity 1.0 (its text is unchanged), so callers can tell a move from a rewrite. Whitespace-only edits are
never changes.

``diff_texts`` works on the splitter's offset-only layout and builds ``Sentence`` objects (with LSP ranges)
only for the changed units, which keeps a 2,000-unit history step to a few milliseconds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from difflib import SequenceMatcher

from rapidfuzz import fuzz
from rapidfuzz.process import cdist

from spade_lsp._sentences import Locator, layout
from spade_lsp._types import ChangeKind, Sentence, SentenceChange

__all__ = ["PAIRING_THRESHOLD", "diff_sentences", "diff_texts", "normalise"]

PAIRING_THRESHOLD = 0.6
"""Removed and added units at least this similar (0..1) are one MODIFIED unit rather than a remove + add."""


def normalise(text: str) -> str:
    """Collapse whitespace so indentation, trailing spaces and re-wrapping are not changes."""
    return " ".join(text.split())


def _similarity_matrix(old: list[str], new: list[str]) -> list[list[float]]:
    """Similarity 0..1 of every old/new pair: the better of plain and token-sorted ratio (reordered words)."""
    if len(old) * len(new) <= 4:
        return [[max(fuzz.ratio(a, b), fuzz.token_sort_ratio(a, b)) / 100.0 for b in new] for a in old]
    plain = cdist(old, new, scorer=fuzz.ratio, dtype="float32")
    tokens = cdist(old, new, scorer=fuzz.token_sort_ratio, dtype="float32")
    return [
        [max(float(p), float(t)) / 100.0 for p, t in zip(prow, trow, strict=True)]
        for prow, trow in zip(plain, tokens, strict=True)
    ]


def _pair(old: list[str], new: list[str]) -> list[tuple[int, int, float]]:
    """One-to-one pairs (old index, new index, similarity) above the threshold, best first, then nearest."""
    if not old or not new:
        return []
    matrix = _similarity_matrix(old, new)
    candidates = [
        (-score, abs(i / len(old) - j / len(new)), i, j)
        for i, row in enumerate(matrix)
        for j, score in enumerate(row)
        if score >= PAIRING_THRESHOLD
    ]
    candidates.sort()
    used_old: set[int] = set()
    used_new: set[int] = set()
    pairs: list[tuple[int, int, float]] = []
    for neg, _, i, j in candidates:
        if i not in used_old and j not in used_new:
            used_old.add(i)
            used_new.add(j)
            pairs.append((i, j, -neg))
    return pairs


def _diff(
    old_texts: Sequence[str],
    new_texts: Sequence[str],
    old_make: Callable[[int], Sentence],
    new_make: Callable[[int], Sentence],
) -> tuple[SentenceChange, ...]:
    """Shared core on unit texts; ``*_make`` build an index's Sentence, so only changed units get built."""
    # Trim the common head and tail first: it is C-speed and usually leaves difflib very little to do.
    lo, hi_old, hi_new = 0, len(old_texts), len(new_texts)
    while lo < hi_old and lo < hi_new and old_texts[lo] == new_texts[lo]:
        lo += 1
    while hi_old > lo and hi_new > lo and old_texts[hi_old - 1] == new_texts[hi_new - 1]:
        hi_old -= 1
        hi_new -= 1
    if lo == hi_old and lo == hi_new:
        return ()

    matcher = SequenceMatcher(None, old_texts[lo:hi_old], new_texts[lo:hi_new], autojunk=False)
    # Each change gets a sort key in new-text order; removed units sit between their new-text neighbours.
    keyed: list[tuple[float, int, SentenceChange]] = []
    removed: list[tuple[float, int]] = []  # (anchor, old index) not yet reported
    added: list[int] = []  # new indexes not yet reported
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        i1, i2, j1, j2 = i1 + lo, i2 + lo, j1 + lo, j2 + lo
        if tag == "equal":
            continue
        olds = [i for i in range(i1, i2)]
        news = [j for j in range(j1, j2)]
        if olds and news:
            # whitespace-only edits first: same normalised text is no change at all
            by_norm: dict[str, list[int]] = {}
            for j in news:
                by_norm.setdefault(normalise(new_texts[j]), []).append(j)
            still_old: list[int] = []
            for i in olds:
                bucket = by_norm.get(normalise(old_texts[i]))
                if bucket:
                    news.remove(bucket.pop(0))
                else:
                    still_old.append(i)
            olds = still_old
            paired_new: dict[int, int] = {}
            for a, b, score in _pair([normalise(old_texts[i]) for i in olds], [normalise(new_texts[j]) for j in news]):
                i, j = olds[a], news[b]
                paired_new[i] = j
                keyed.append((float(j), i, SentenceChange(ChangeKind.MODIFIED, old_make(i), new_make(j), score)))
            anchor = j1 - 0.5
            for i in olds:
                if i in paired_new:
                    anchor = paired_new[i] + 0.5
                else:
                    removed.append((anchor, i))
            used = set(paired_new.values())
            added.extend(j for j in news if j not in used)
        else:
            removed.extend((j1 - 0.5, i) for i in olds)
            added.extend(news)

    # Units deleted in one place and inserted unchanged elsewhere moved: report them once, as MODIFIED 1.0.
    if removed and added:
        waiting: dict[str, list[int]] = {}
        for j in added:
            waiting.setdefault(normalise(new_texts[j]), []).append(j)
        moved_new: set[int] = set()
        still_removed: list[tuple[float, int]] = []
        for anchor, i in removed:
            bucket = waiting.get(normalise(old_texts[i]))
            if bucket:
                j = bucket.pop(0)
                moved_new.add(j)
                keyed.append((float(j), i, SentenceChange(ChangeKind.MODIFIED, old_make(i), new_make(j))))
            else:
                still_removed.append((anchor, i))
        removed = still_removed
        added = [j for j in added if j not in moved_new]

    keyed.extend((anchor, i, SentenceChange(ChangeKind.REMOVED, old_make(i), None)) for anchor, i in removed)
    keyed.extend((float(j), -1, SentenceChange(ChangeKind.ADDED, None, new_make(j))) for j in added)
    keyed.sort(key=lambda item: (item[0], item[1]))
    return tuple(change for _, _, change in keyed)


def diff_sentences(old: Sequence[Sentence], new: Sequence[Sentence]) -> tuple[SentenceChange, ...]:
    """Added, removed and modified units; ranges of added/modified units are in ``new``'s text.

    Ordered by position in the new text; a removed unit is placed where it used to be.
    """
    return _diff([s.text for s in old], [s.text for s in new], old.__getitem__, new.__getitem__)


def diff_texts(before: str, after: str) -> tuple[SentenceChange, ...]:
    """Split both texts and diff their units (Sentence objects are built only for changed units)."""
    old_layout, new_layout = layout(before), layout(after)
    locators: dict[bool, Locator] = {}

    def old_make(index: int) -> Sentence:
        return locators.setdefault(False, Locator(before)).sentence(old_layout.span(index))

    def new_make(index: int) -> Sentence:
        return locators.setdefault(True, Locator(after)).sentence(new_layout.span(index))

    return _diff(old_layout.texts, new_layout.texts, old_make, new_make)
