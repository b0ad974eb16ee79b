"""Scoring a taxonomy classifier against gold labels, and reading the ``spade taxonomy`` input contract.

Scores are over (delta, category) pairs: each delta contributes one true/false positive/negative per
category, so micro-F1 weights categories by how often they occur and macro-F1 weights them equally.
Nothing here reads files.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from spade_lsp.errors import InputError
from spade_lsp.taxonomy import CATEGORY_IDS

__all__ = ["CategoryScore", "Report", "evaluate", "texts_from_line"]


def _f1(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


@dataclass(frozen=True, slots=True)
class CategoryScore:
    """One category's counts and scores; ``support`` is the number of deltas whose gold labels hold it."""

    category: str
    tp: int
    fp: int
    fn: int
    precision: float
    recall: float
    f1: float
    support: int


@dataclass(frozen=True, slots=True)
class Report:
    """Micro and macro scores over (delta, category) pairs, with per-category detail."""

    n_deltas: int
    micro_precision: float
    micro_recall: float
    micro_f1: float
    macro_f1: float
    per_category: tuple[CategoryScore, ...]

    def table(self) -> str:
        """A plain-text table of the per-category scores and the totals."""
        lines = [f"{'category':36} {'P':>5} {'R':>5} {'F1':>5} {'sup':>4} {'tp':>3} {'fp':>3} {'fn':>3}"]
        for s in self.per_category:
            lines.append(
                f"{s.category:36} {s.precision:5.2f} {s.recall:5.2f} {s.f1:5.2f} {s.support:4d} "
                f"{s.tp:3d} {s.fp:3d} {s.fn:3d}"
            )
        lines.append(
            f"micro P={self.micro_precision:.3f} R={self.micro_recall:.3f} F1={self.micro_f1:.3f}  "
            f"macro F1={self.macro_f1:.3f}  deltas={self.n_deltas}"
        )
        return "\n".join(lines)


def evaluate(
    rows: Iterable[tuple[Iterable[str], Iterable[str]]],
    categories: Iterable[str] | None = None,
) -> Report:
    """Score ``rows`` of (predicted labels, gold labels), one row per delta.

    ``categories`` defaults to the taxonomy's ids followed by any other label that occurs; macro-F1
    averages over the categories that occur in the gold or the predictions (a category nobody uses
    would add an arbitrary 0 or 1).
    """
    pairs = [(frozenset(pred), frozenset(gold)) for pred, gold in rows]
    cats = list(categories) if categories is not None else list(CATEGORY_IDS)
    seen = set(cats)
    for pred, gold in pairs:
        for label in sorted(pred | gold):
            if label not in seen:
                cats.append(label)
                seen.add(label)
    scores: list[CategoryScore] = []
    total_tp = total_fp = total_fn = 0
    for cat in cats:
        tp = sum(1 for pred, gold in pairs if cat in pred and cat in gold)
        fp = sum(1 for pred, gold in pairs if cat in pred and cat not in gold)
        fn = sum(1 for pred, gold in pairs if cat not in pred and cat in gold)
        precision, recall, f1 = _f1(tp, fp, fn)
        scores.append(CategoryScore(cat, tp, fp, fn, precision, recall, f1, tp + fn))
        total_tp, total_fp, total_fn = total_tp + tp, total_fp + fp, total_fn + fn
    micro_p, micro_r, micro_f1 = _f1(total_tp, total_fp, total_fn)
    used = [s for s in scores if s.tp + s.fp + s.fn]
    macro = sum(s.f1 for s in used) / len(used) if used else 0.0
    return Report(len(pairs), micro_p, micro_r, micro_f1, macro, tuple(scores))


_DIFF_PREFIXES = ("  ", "+ ", "- ")


def texts_from_line(obj: Mapping[str, Any]) -> tuple[str, str]:
    """(before, after) texts of one contract line: ``{"diff": ...}`` or ``{"before": ..., "after": ...}``.

    In a diff every line starts with two characters: ``"  "`` (both versions), ``"- "`` (before only)
    or ``"+ "`` (after only). A line of just ``"+"``/``"-"``/``" "`` (trailing space trimmed) is an
    empty line. ``"? "`` hint lines from :mod:`difflib` are skipped.
    """
    if not isinstance(obj, Mapping):
        raise InputError(f"expected a JSON object with 'diff' or 'before' and 'after', got {type(obj).__name__}")
    if "diff" in obj:
        diff = obj["diff"]
        if not isinstance(diff, str):
            raise InputError(f"'diff' must be a string, got {type(diff).__name__}")
        before: list[str] = []
        after: list[str] = []
        for number, line in enumerate(diff.split("\n"), start=1):
            prefix, body = line[:2], line[2:]
            if prefix in _DIFF_PREFIXES or (len(line) == 1 and line in "+- "):
                tag = prefix[:1] or " "
            elif prefix == "? ":
                continue
            elif line == "":
                tag = " "
            else:
                raise InputError(f"diff line {number} must start with '  ', '+ ' or '- ', got {line[:20]!r}")
            if tag in " -":
                before.append(body)
            if tag in " +":
                after.append(body)
        return "\n".join(before), "\n".join(after)
    if "before" in obj and "after" in obj:
        b, a = obj["before"], obj["after"]
        if not isinstance(b, str) or not isinstance(a, str):
            raise InputError("'before' and 'after' must both be strings")
        return b, a
    keys = ", ".join(sorted(map(str, obj))) or "none"
    raise InputError(f"a taxonomy line needs 'diff', or both 'before' and 'after' (keys present: {keys})")
