"""Grading notes (Databricks): an example's ``grading_note`` says what a good answer must contain; a judge
sees the user message, the context, the response and the note, and answers Yes, No or Unsure with a rationale
through structured output.

How far to trust it is measured, not assumed: its positive rate, and on labelled examples its alignment with
the human labels, Cohen's kappa and the confusion table, each with an interval. By default the same judge also
runs without the notes (the same prompt minus the note section) on every example, in the same batch, so the
report says what the notes add: the difference in alignment over the examples both judged, with a paired
interval and an exact McNemar test. Every judgement is stored (``note_history`` reads an example's back).
See docs/judges.md ("Grading notes") for the document.
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from spade_lsp._fallbacks import Fallbacks
from spade_lsp._progress import Progress
from spade_lsp.errors import InputError, StoreError
from spade_lsp.judges._agreement import agreement, positive_rate
from spade_lsp.judges._ask import PROBLEMS, Answer, Message, Question, ask_many
from spade_lsp.judges._items import JudgeItem, items_from_examples
from spade_lsp.judges._scales import Scale
from spade_lsp.llm import LLMClient
from spade_lsp.reliability import Method, normal_quantile, rate
from spade_lsp.store import Judgement, finish_judge_run, save_judgements, start_judge_run

if TYPE_CHECKING:
    from spade_lsp.config import Settings
    from spade_lsp.workspace import Workspace

__all__ = [
    "ARMS",
    "GRADING_SCALE",
    "Arm",
    "grade_with_notes",
    "grading_messages",
    "grading_report",
    "judgement_of",
    "mcnemar_exact",
    "render_grading_report",
]

Arm = Literal["with_notes", "without_notes"]
ARMS: Final[tuple[Arm, Arm]] = ("with_notes", "without_notes")
GRADING_SCALE: Final = Scale.discrete(["Yes", "No", "Unsure"], passing=["Yes"])
RUN_NAME: Final = "grading-notes"

_SYSTEM: Final = (
    "You grade an AI assistant's response to a user's message: is it a good answer, given the context? "
    "When a grading note is given, it says what a good answer must contain or do: judge the response against it. "
    'Give a short rationale first, then "Yes" (a good answer), "No" (not a good answer) or "Unsure" (you cannot '
    "tell from what you are given)."
)
_SAVE_EVERY: Final = 64
_PROGRESS_EVERY_S: Final = 0.5
_DECIMALS: Final = 6
_LABELS: Final = {1: "good", 0: "bad"}
_PAIRED_METHOD: Final = "paired normal interval on the per-item differences (sample variance, n - 1)"


def grading_messages(item: JudgeItem, *, with_note: bool) -> tuple[Message, ...]:
    """The judge's request; without the note it is the same request minus the note section."""
    context = json.dumps(dict(item.context), ensure_ascii=False, indent=2, default=str) if item.context else "(none)"
    sections = [f"## User message\n{item.input}", f"## Context\n{context}", f"## Response\n{item.output}"]
    if with_note:
        if item.note is None:
            raise ValueError(f"item {item.id} has no grading note")
        sections.append(f"## Grading note\n{item.note}")
    return ({"role": "system", "content": _SYSTEM}, {"role": "user", "content": "\n\n".join(sections)})


def judgement_of(answer: Answer) -> bool | None:
    """Yes passes, No fails; Unsure and no usable answer are undecided (None)."""
    if not answer.valid or answer.value == "Unsure":
        return None
    return GRADING_SCALE.passes(answer.value)


def grade_with_notes(
    workspace: Workspace,
    prompt: Path,
    *,
    settings: Settings,
    client: LLMClient | None = None,
    compare: bool = True,
    progress: Progress | None = None,
    retries: int = 2,
) -> dict[str, Any]:
    """Judge the prompt's examples against their grading notes (and, with ``compare``, every example without
    one), all questions in one batch; store the run and its judgements and return its document. ``settings``
    are the prompt's, resolved once by the caller: the judge (unless ``client`` is given) and the interval come
    from them."""
    source = items_from_examples(workspace, prompt)
    items = source.items
    if not any(item.note for item in items):
        raise InputError(
            f"{prompt}: no example with an output has a grading note; add "
            '"grading_note": "what a good answer must contain" to the examples\' lines'
        )
    judge = client if client is not None else workspace.judge_client(settings)
    report = progress or (lambda message, percentage: None)
    plan: list[tuple[int, Arm]] = [(i, "with_notes") for i, item in enumerate(items) if item.note]
    if compare:
        plan += [(i, "without_notes") for i in range(len(items))]
    questions = [
        Question(grading_messages(items[i], with_note=arm == "with_notes"), GRADING_SCALE, temperature=0.0)
        for i, arm in plan
    ]
    store = workspace.store
    run_id = start_judge_run(
        store,
        kind="grading",
        name=RUN_NAME,
        parameters={"compare": compare, "retries": retries, "items": len(items), "questions": len(questions)},
        prompt_id=source.prompt_id,
        version=source.version,
        model=judge.model,
    )
    started_at = datetime.now(UTC).isoformat()
    usage = getattr(judge, "usage", None)
    before = usage.copy() if usage is not None and hasattr(usage, "copy") else None
    caller = threading.get_ident()
    unsaved: list[Judgement] = []
    arrived = [0]
    last_report = [0.0]

    def on_answer(index: int, answer: Answer) -> None:
        i, arm = plan[index]
        unsaved.append(Judgement(items[i].id, arm, answer, note=items[i].note if arm == "with_notes" else None))
        if len(unsaved) >= _SAVE_EVERY and threading.get_ident() == caller:  # the store is the caller's
            save_judgements(store, run_id, unsaved)
            unsaved.clear()
        arrived[0] += 1
        now = time.monotonic()
        if now - last_report[0] >= _PROGRESS_EVERY_S:
            last_report[0] = now
            report(f"grading: {arrived[0]} of {len(plan)} answers", round(100 * arrived[0] / len(plan), 1))

    from spade_lsp.errors import JobCancelled

    try:
        report(f"grading {len(items)} example(s): {len(plan)} judge calls", 0.0)
        answers = ask_many(judge, questions, retries=retries, on_answer=on_answer)
        save_judgements(store, run_id, unsaved)
        unsaved.clear()
        by_arm: dict[Arm, dict[str, Answer]] = {arm: {} for arm in ARMS}
        for (i, arm), answer in zip(plan, answers, strict=True):
            by_arm[arm][items[i].id] = answer
        document = grading_report(
            items,
            by_arm["with_notes"],
            by_arm["without_notes"] if compare else None,
            method=settings.interval,
            confidence=settings.confidence,
        )
    except BaseException as error:
        status = "cancelled" if isinstance(error, JobCancelled | KeyboardInterrupt) else "failed"
        with contextlib.suppress(StoreError):  # the original error is the one to report
            finish_judge_run(
                store, run_id, status=status, error=str(error).splitlines()[0] if str(error) else repr(error)
            )
        raise
    spent = usage.minus(before) if usage is not None and before is not None else None
    document = {
        "run_id": run_id,
        "prompt": source.prompt_key,
        "version": source.version,
        "model": judge.model,
        "started_at": started_at,
        "finished_at": datetime.now(UTC).isoformat(),
        **document,
        "usage": spent.to_json() if spent is not None else None,
        "warnings": source.warnings + document["warnings"],
    }
    finish_judge_run(store, run_id, status="done", document=document)
    report("grading done", 100.0)
    return document


# -- the report -------------------------------------------------------------------------------------------


def grading_report(
    items: Sequence[JudgeItem],
    with_notes: Mapping[str, Answer],
    without_notes: Mapping[str, Answer] | None,
    *,
    method: Method = "wilson",
    confidence: float,
) -> dict[str, Any]:
    """The statistics of a grading run from its answers (by item id): both arms, the comparison, per-item rows
    and warnings. ``without_notes`` None means the comparison was not run."""
    warnings: list[str] = []
    arms: dict[Arm, dict[str, Any] | None] = {"with_notes": None, "without_notes": None}
    for arm, answers in zip(ARMS, (with_notes, without_notes), strict=True):
        if answers is None:
            continue
        judged = [item for item in items if item.id in answers]
        arms[arm] = _arm(judged, [answers[item.id] for item in judged], method, confidence)
        warnings += _arm_warnings(arm, arms[arm])
    unnoted = [item.id for item in items if not item.note]
    if unnoted:
        what = "only the judge without notes saw them" if without_notes is not None else "they were not judged"
        warnings.append(f"{len(unnoted)} example(s) have no grading note ({_few(unnoted)}): {what}")
    if not any(item.label is not None for item in items):
        warnings.append("no example has a human label: no alignment, kappa or confusion table")
    comparison = None
    if without_notes is not None:
        paired = [item for item in items if item.note and item.label is not None]
        comparison = _comparison(paired, with_notes, without_notes, method, confidence)
    rows = [
        {
            "id": item.id,
            "label": None if item.label is None else _LABELS[item.label],
            "note": item.note,
            "with_notes": _cell(with_notes.get(item.id)),
            "without_notes": _cell(without_notes.get(item.id)) if without_notes is not None else None,
        }
        for item in items
    ]
    return {
        "items": len(items),
        "noted": sum(1 for item in items if item.note),
        "labelled": sum(1 for item in items if item.label is not None),
        "compare": without_notes is not None,
        "method": method,
        "confidence": confidence,
        "with_notes": arms["with_notes"],
        "without_notes": arms["without_notes"],
        "comparison": comparison,
        "rows": rows,
        "warnings": warnings,
        "fallbacks": _fallbacks(arms).to_json(),
    }


def _fallbacks(arms: Mapping[Arm, dict[str, Any] | None]) -> Fallbacks:
    """Answers still unusable after the re-asks: counted as undecided, never fatal to the run."""
    fallbacks = Fallbacks()
    for arm, stats in arms.items():
        for kind, count in (stats or {}).get("problems", {}).items():
            fallbacks.add(f"judge ({arm.replace('_', ' ')})", kind, "counted as undecided", count)
    return fallbacks


def _arm(items: Sequence[JudgeItem], answers: Sequence[Answer], method: Method, confidence: float) -> dict[str, Any]:
    judgements = [judgement_of(answer) for answer in answers]
    labels = [item.label for item in items]
    undecided = sum(1 for j in judgements if j is None)
    counted = Counter(answer.value if answer.valid else None for answer in answers)
    problems = Counter(answer.problem for answer in answers if answer.problem is not None)
    labelled = [label for label in labels if label is not None]
    return {
        "items": len(items),
        "answers": {"Yes": counted["Yes"], "No": counted["No"], "Unsure": counted["Unsure"], "none": counted[None]},
        "positive_rate": positive_rate(judgements, method=method, confidence=confidence).to_json(),
        "unsure_rate": rate(undecided, len(items), method=method, confidence=confidence).to_json(),
        "problems": {kind: problems[kind] for kind in PROBLEMS if problems[kind]},
        "reasked": sum(1 for answer in answers if answer.attempts > 1),
        "alignment": (
            agreement(judgements, labels, method=method, confidence=confidence).to_json() if labelled else None
        ),
        "always_unsure": bool(items) and undecided == len(items),
    }


def _arm_warnings(arm: Arm, stats: dict[str, Any] | None) -> list[str]:
    if stats is None:
        return []
    name = arm.replace("_", " ")
    warnings = []
    if stats["always_unsure"]:
        warnings.append(
            f"the judge {name} answered Unsure (or nothing usable) on every one of its {stats['items']} "
            "example(s): its verdicts say nothing"
        )
    if stats["problems"]:
        kinds = ", ".join(f"{count} {kind}" for kind, count in stats["problems"].items())
        total = sum(stats["problems"].values())
        warnings.append(f"the judge {name} gave no usable answer on {total} example(s) ({kinds}): counted as Unsure")
    return warnings


def _aligned(answer: Answer, label: int) -> bool:
    """The judge gave the human's answer (an undecided judgement never does)."""
    judged = judgement_of(answer)
    return judged is not None and judged == (label == 1)


def _comparison(
    paired: Sequence[JudgeItem],
    with_notes: Mapping[str, Answer],
    without_notes: Mapping[str, Answer],
    method: Method,
    confidence: float,
) -> dict[str, Any]:
    """With notes minus without, on the examples labelled and judged both ways: each example's two aligned
    indicators are paired, so the interval is on the per-example differences and the test is McNemar's."""
    first = [_aligned(with_notes[item.id], item.label) for item in paired if item.label is not None]
    second = [_aligned(without_notes[item.id], item.label) for item in paired if item.label is not None]
    n = len(first)
    only_with = sum(1 for a, b in zip(first, second, strict=True) if a and not b)
    only_without = sum(1 for a, b in zip(first, second, strict=True) if b and not a)
    difference: dict[str, Any] = {"value": None, "se": None, "ci_low": None, "ci_high": None}
    if n:
        mean = (only_with - only_without) / n
        difference["value"] = _rounded(mean)
        if n >= 2:
            deltas = [int(a) - int(b) for a, b in zip(first, second, strict=True)]
            variance = math.fsum((d - mean) ** 2 for d in deltas) / (n - 1)
            se = math.sqrt(variance / n)
            z = normal_quantile(confidence)
            difference |= {
                "se": _rounded(se),
                "ci_low": _rounded(max(-1.0, mean - z * se)),
                "ci_high": _rounded(min(1.0, mean + z * se)),
            }
    return {
        "paired": n,
        "with_notes": rate(sum(first), n, method=method, confidence=confidence).to_json(),
        "without_notes": rate(sum(second), n, method=method, confidence=confidence).to_json(),
        "difference": {**difference, "method": _PAIRED_METHOD},
        "discordant": {"with_notes_only": only_with, "without_notes_only": only_without},
        "mcnemar_p": _rounded(mcnemar_exact(only_with, only_without)) if n else None,
    }


def mcnemar_exact(only_first: int, only_second: int) -> float:
    """The exact two-sided McNemar p-value: a binomial test of the discordant pairs against 1/2 (1 with none)."""
    discordant = only_first + only_second
    if discordant == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(only_first, discordant, 0.5).pvalue)


def _cell(answer: Answer | None) -> dict[str, Any] | None:
    if answer is None:
        return None
    return {
        "value": answer.value if answer.valid else None,
        "pass": judgement_of(answer),
        "rationale": answer.explanation,
        "problem": answer.problem,
        "detail": answer.detail,
        "attempts": answer.attempts,
    }


def _rounded(value: float) -> float:
    return round(value, _DECIMALS)


def _few(ids: Sequence[str], limit: int = 5) -> str:
    more = f", ... ({len(ids) - limit} more)" if len(ids) > limit else ""
    return ", ".join(ids[:limit]) + more


# -- the table --------------------------------------------------------------------------------------------


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _with_interval(rate_json: Mapping[str, Any] | None) -> str:
    if rate_json is None or rate_json.get("rate") is None:
        return "n/a"
    counts = f"{rate_json['successes']}/{rate_json['trials']}"
    return f"{_percent(rate_json['rate'])} {counts} ({100 * rate_json['ci_low']:.1f}–{100 * rate_json['ci_high']:.1f})"


def _kappa(alignment: Mapping[str, Any] | None) -> str:
    kappa = None if alignment is None else alignment["kappa"]
    if kappa is None or kappa["value"] is None:
        return "n/a"
    return f"{kappa['value']:.2f} ({kappa['ci_low']:.2f} to {kappa['ci_high']:.2f})"


def _confusion(alignment: Mapping[str, Any] | None) -> str:
    if alignment is None:
        return "n/a"
    table = alignment["confusion"]
    return "  ".join(f"{side} {table[side]['good']}/{table[side]['bad']}" for side in ("pass", "fail", "undecided"))


def _arm_column(stats: Mapping[str, Any] | None) -> list[str]:
    if stats is None:
        return ["not run"] + [""] * 8
    alignment = stats["alignment"]
    answers = stats["answers"]
    problems = ", ".join(f"{count} {kind}" for kind, count in stats["problems"].items()) or "none"
    return [
        str(stats["items"]),
        f"{answers['Yes']} / {answers['No']} / {answers['Unsure']} / {answers['none']}",
        _with_interval(stats["positive_rate"]),
        _with_interval(stats["unsure_rate"]),
        _with_interval(None if alignment is None else alignment["alignment"]),
        _with_interval(None if alignment is None else alignment["alignment_decided"]),
        _kappa(alignment),
        _confusion(alignment),
        problems + ("; ALWAYS UNSURE" if stats["always_unsure"] else ""),
    ]


def render_grading_report(document: Mapping[str, Any]) -> str:
    """The run as a readable table, both judges side by side, then the comparison and the disagreements."""
    from tabulate import tabulate

    level = f"{100 * document['confidence']:g}% CI"
    metrics = [
        "examples judged",
        "Yes / No / Unsure / none",
        f"positive rate ({level})",
        "unsure rate",
        "alignment",
        "alignment (decided)",
        "Cohen's kappa",
        "judge pass/fail/undecided: good/bad",
        "problems",
    ]
    columns = [_arm_column(document["with_notes"]), _arm_column(document["without_notes"])]
    rows = [[metric, a, b] for metric, a, b in zip(metrics, *columns, strict=True)]
    lines = [
        f"{document['prompt']} v{document['version']} judged by {document['model']}: {document['items']} example(s), "
        f"{document['noted']} with a grading note, {document['labelled']} labelled; run {document['run_id']}",
        "",
        tabulate(rows, headers=["", "with notes", "without notes"], disable_numparse=True),
        "",
    ]
    comparison = document.get("comparison")
    if comparison is not None and comparison["paired"]:
        difference = comparison["difference"]
        spread = (
            f" ({level} {100 * difference['ci_low']:+.1f} to {100 * difference['ci_high']:+.1f})"
            if difference["ci_low"] is not None
            else ""
        )
        discordant = comparison["discordant"]
        lines.append(
            f"notes change alignment by {100 * difference['value']:+.1f} points{spread} over {comparison['paired']} "
            f"labelled example(s) judged both ways;\n{discordant['with_notes_only']} aligned only with notes, "
            f"{discordant['without_notes_only']} only without (exact McNemar p = {comparison['mcnemar_p']:.3g})"
        )
    elif comparison is not None:
        lines.append("no labelled example with a grading note: nothing to compare")
    off = [row for row in document["rows"] if _off(row)]
    if off:
        lines += ["", "examples where a judge disagrees with the label or gave no usable answer:", ""]
        table = [
            [row["id"], row["label"] or "", _verdict(row["with_notes"]), _verdict(row["without_notes"])] for row in off
        ]
        lines.append(tabulate(table, headers=["example", "label", "with notes", "without notes"]))
    usage = document.get("usage")
    if usage is not None:
        cost = "unknown cost" if usage.get("cost") is None else f"${usage['cost']:.4f}"
        lines += ["", f"calls {usage['calls']} made, {usage['cached']} cached, {usage['failed']} failed; {cost}"]
    return "\n".join(lines) + "\n"


def _verdict(cell: Mapping[str, Any] | None) -> str:
    if cell is None:
        return ""
    return str(cell["value"]) if cell["problem"] is None else f"({cell['problem']})"


def _off(row: Mapping[str, Any]) -> bool:
    for arm in ARMS:
        cell = row[arm]
        if cell is None:
            continue
        if cell["problem"] is not None:
            return True
        if row["label"] is not None and cell["pass"] != (row["label"] == "good"):
            return True
    return False
