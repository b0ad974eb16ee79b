"""Readable tables for the CLI (JSON output is built from the same dataclasses)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from tabulate import tabulate

from spade_lsp._history import ChangeInfo, DeltaInfo
from spade_lsp._types import VersionInfo
from spade_lsp.overview import assertion_stats, check_outcome, verdict_text
from spade_lsp.taxonomy import PLAIN_NAMES

_MARK = {"added": "+", "removed": "-", "modified": "~"}


def _clip(text: str | None, width: int = 90) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _when(iso: str) -> str:
    """``2026-11-27 10:00``, with the offset when it is not UTC (a commit's author date keeps its author's)."""
    offset = iso[-6:] if len(iso) > 19 and iso[-6] in "+-" and iso[-6:] != "+00:00" else ""
    return f"{iso[:16].replace('T', ' ')} {offset}".rstrip()


def render_history(prompt: str, versions: Sequence[VersionInfo]) -> str:
    rows = [
        [
            f"v{v.number}",
            _when(v.written_at),
            v.origin,
            (v.commit_sha or "")[:10],
            _clip((v.commit_message or "").splitlines()[0] if v.commit_message else "", 50),
            v.content_hash[:10],
        ]
        for v in versions
    ]
    table = tabulate(rows, headers=["version", "written", "origin", "commit", "message", "content"])
    return f"{prompt}: {len(versions)} version(s)\n{table}\n"


def _change_line(change: ChangeInfo) -> str:
    where = f"L{change.range.start.line + 1}" if change.range else "   "
    labels = ", ".join(PLAIN_NAMES.get(label, label) for label in change.labels) or "-"
    message = f"({change.message}) " if change.message else ""
    line = f"  {_MARK[change.kind]} {where:>5}  {message}{_clip(change.new_text or change.old_text)}  [{labels}]"
    if change.kind == "modified":
        line += f"\n           was: {_clip(change.old_text)}  (similarity {change.similarity:.2f})"
    return line


def render_deltas(prompt: str, deltas: Sequence[DeltaInfo]) -> str:
    parts = [f"{prompt}: {len(deltas)} delta(s)"]
    for delta in deltas:
        span = f"v{delta.from_number} -> v{delta.to_number}" if delta.from_number else f"v{delta.to_number} (first)"
        counts = {kind: sum(c.kind == kind for c in delta.changes) for kind in _MARK}
        labels = ", ".join(delta.labels) or "no categories"
        parts.append(f"\n{span}: +{counts['added']} -{counts['removed']} ~{counts['modified']}  {labels}")
        parts.extend(_change_line(change) for change in delta.changes)
    return "\n".join(parts) + "\n"


def delta_as_json(delta: DeltaInfo) -> dict[str, Any]:
    return asdict(delta)


def render_sentences(prompt: str, sentences: Sequence[Any]) -> str:
    """The newest version's units with their categories and the version that introduced them."""
    rows = [
        [
            f"{s.range.start.line + 1}:{s.range.start.character + 1}",
            f"v{s.introduced_in}" if s.introduced_in else "",
            _clip(s.text, 70),
            ", ".join(PLAIN_NAMES.get(c, c) for c in s.categories),
        ]
        for s in sentences
    ]
    table = tabulate(rows, headers=["line:col", "since", "sentence", "categories"])
    return f"{prompt}: {len(sentences)} sentence(s) in the newest version\n{table}\n"


def render_candidates(candidates: Sequence[Any], verdicts: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """Synthesized candidates: name, category, version, what it checks, and how it did on the labelled
    examples when they were checked first."""
    verdicts = verdicts or {}
    rows = []
    for c in candidates:
        row = [
            c.name,
            PLAIN_NAMES.get(c.category, c.category),
            f"v{c.version}" if c.version else "",
            ("asks a model: " if c.asks_llm else "") + _clip(c.description, 60),
        ]
        if verdicts:
            verdict = verdicts.get(c.name)
            row.append("" if verdict is None else verdict_text(verdict))
        rows.append(row)
    headers = ["assertion", "category", "from", "checks"] + (["on the labelled examples"] if verdicts else [])
    return str(tabulate(rows, headers=headers)) + "\n"


def render_held_back(held_back: Sequence[Mapping[str, Any]], *, checked: int = 0) -> str:
    """The candidates not written because the labelled examples speak against them, each with the reason
    (``checked``: how many candidates the examples judged, to say that none was held back)."""
    if not held_back:
        return f"checked {checked} candidate(s) on the labelled examples: none held back\n" if checked else ""
    lines = [f"held back {len(held_back)} candidate(s) that the labelled examples speak against:"]
    lines += [f"  {v['name']}: {v['held_back']}" for v in held_back]
    lines.append("  (write them anyway with --include-held-back)")
    return "\n".join(lines) + "\n"


def _rate(numerator: int, denominator: int) -> str:
    return f"{numerator / denominator:.2f} ({numerator}/{denominator})" if denominator else "-"


def render_eval(run: Any, tau: float) -> str:
    """Per assertion: its verdict as a test of itself at ``tau`` (the editor's test explorer shows the same),
    failures on bad examples (coverage), false failures on good ones (FFR), errors; then why each check that did
    not pass did not."""
    stats = assertion_stats(
        run.run_id, [str(a["name"]) for a in run.assertions], run.examples, run.y, run.m, run.errors
    )
    rows = []
    notes: list[str] = []
    skipped: dict[str, list[str]] = {}  # one line per reason
    for assertion in run.assertions:
        name = str(assertion["name"])
        figures = stats[name]
        outcome = check_outcome(figures, tau)
        state = outcome.state if outcome is not None else ""
        if outcome is not None and state in ("failed", "errored"):
            notes.append(f"  {name} {state}: {outcome.message}")
        elif outcome is not None and state == "skipped":
            skipped.setdefault(outcome.message, []).append(name)
        rows.append(
            [
                name + (" [LLM-written, unreviewed]" if assertion.get("unreviewed") else ""),
                state,
                _rate(figures.caught, figures.bad),
                _rate(figures.flagged, figures.good),
                figures.errors or "",
                figures.not_applicable or "",
            ]
        )
    headers = [
        "assertion",
        f"verdict (tau {tau:g})",
        "catches bad (coverage)",
        "flags good (FFR)",
        "errors",
        "not applicable",
    ]
    table = tabulate(rows, headers=headers)
    kinds: dict[str, int] = {}
    for error in run.errors:
        kinds[error["kind"]] = kinds.get(error["kind"], 0) + 1
    summary = ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items())) or "none"
    notes += [
        f"  {len(names)} skipped, {reason.removeprefix('not judged: ')}: {', '.join(names)}"
        for reason, names in skipped.items()
    ]
    return (
        f"{len(run.assertions)} assertion(s) on {len(run.examples)} example(s) in {run.seconds:.2f} s "
        f"(run {run.run_id}); cell errors: {summary}\n{table}\n" + "".join(f"{note}\n" for note in notes)
    )
