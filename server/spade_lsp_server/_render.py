"""Markdown and short labels for what the overview holds: hovers, lens titles, and the prompt's report."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from spade_lsp.overview import (
    NO_OFFLINE_CHECK,
    AssertionStats,
    AssertionView,
    InstructionView,
    PromptOverview,
    ReliabilityView,
    SentenceEvent,
    VersionInfo,
)
from spade_lsp.taxonomy import EXPLANATIONS, PLAIN_NAMES

if TYPE_CHECKING:
    from spade_lsp_server._examples import ExampleLine


def pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.0f}%"


def ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def quote(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return f"“{flat if len(flat) <= limit else flat[: limit - 1] + '…'}”"


def md_escape(text: str) -> str:
    return "".join(f"\\{c}" if c in "\\`*_{}[]<>#|" else c for c in text)


def version_label(version: VersionInfo) -> str:
    """``v3 (2024-05-01, commit `1a2b3c4d5e` “Add a word limit”)``, as Markdown."""
    parts = [version.written_at[:10]] if version.written_at else []
    if version.short_sha:
        subject = f" {md_escape(quote(version.subject, 72))}" if version.subject else ""
        parts.append(f"commit `{version.short_sha}`{subject}")
    else:
        parts.append(version.origin)
    return f"v{version.number} ({', '.join(parts)})"


def event_line(event: SentenceEvent, current: str) -> str:
    """One history entry of a sentence whose current wording is ``current``."""
    if event.kind == "modified" and event.previous_text is not None:
        what = f"reworded from {md_escape(quote(event.previous_text))}"
    elif event.kind == "moved":
        what = "moved"
    elif event.text == current:
        what = "added"
    else:
        what = f"added as {md_escape(quote(event.text))}"
    return f"- {version_label(event.version)}: {what}"


def stats_text(stats: AssertionStats | None) -> str:
    """``pass 75% (3/4) · coverage 0.50 · FFR 0.00`` or why there is no figure."""
    if stats is None:
        return "not evaluated yet"
    if stats.examples == 0 and stats.needs_model:
        return "needs a model (ask_llm was not evaluated)"
    if stats.examples == 0 and stats.not_applicable:
        return f"not applicable to any of the {stats.not_applicable} examples (an input it reads is missing)"
    text = (
        f"pass {pct(stats.pass_rate)} ({stats.passed}/{stats.examples}) · coverage {ratio(stats.coverage)} · "
        f"FFR {ratio(stats.ffr)}"
    )
    if stats.errors:
        text += f" · {stats.errors} error(s)"
    if stats.not_applicable:
        text += f" · not applicable to {stats.not_applicable} (an input it reads is missing)"
    return text


def selection_text(view: AssertionView) -> str:
    if view.selected is None:
        return "no selection yet" if view.stats is None else "not in the latest selection"
    if view.selected:
        return "selected"
    return f"dropped: {view.drop_reason}" if view.drop_reason else "not selected"


def category_lines(categories: Sequence[str]) -> list[str]:
    """Each category in plain words with its one-line explanation; the SPADE id only in the diagnostic code."""
    return [
        f"- **{PLAIN_NAMES.get(category, category)}**: {md_escape(EXPLANATIONS.get(category, ''))}"
        for category in categories
    ]


def instruction_hover(
    instruction: InstructionView,
    overview: PromptOverview,
    history: Sequence[SentenceEvent],
    *,
    pending: bool = False,
    has_assistant: bool = False,
) -> str:
    names = instruction.plain_names
    lines: list[str] = []
    if instruction.checkable and names:
        lines.append(f"**{names[0]}**" + (f" · {', '.join(names[1:])}" if len(names) > 1 else ""))
        lines.append("")
        lines += category_lines(instruction.categories)
    else:
        lines.append("**Not an instruction to check**")
        lines.append("")
        lines.append(md_escape(instruction.reason or "it asks nothing of the answer"))
        if names:
            lines.append("")
            lines += category_lines(instruction.categories)
    if instruction.message is not None:  # a chat prompt: which message holds the sentence
        lines.append("")
        lines.append(f"In the **{md_escape(instruction.message)}** message")
    lines.append("")
    lines.append("**History**")
    if history:
        lines += [event_line(event, instruction.text) for event in history]
    elif instruction.introduced_in is not None and overview.versions:
        lines.append(f"- {version_label(overview.versions[instruction.introduced_in - 1])}: introduced")
    elif overview.prompt is None:
        lines.append("- unsaved buffer: no history")
    elif pending and not overview.versions:
        lines.append("- reading the history (git commits and saved versions)…")
    elif not overview.store_available or not overview.versions:
        lines.append("- no history yet: versions are recorded when you save")
    else:
        lines.append("- not recorded yet: save the prompt to record this sentence")
    if not instruction.checkable:
        return "\n".join(lines)
    lines.append("")
    lines.append("**Assertions**")
    if instruction.covered_by:
        for name in instruction.covered_by:
            view = overview.assertion(name)
            detail = f": {stats_text(view.stats)} · {selection_text(view)}" if view is not None else ""
            lines.append(f"- `{name}`{detail}")
    elif instruction.all_held_back:
        lines.append("- none yet: the labelled examples speak against the check spade can write offline")
        lines += [f"- `{name}` is held back: {md_escape(why)}" for name, why in instruction.held_back]
        lines.append("- *Add assertion anyway* (Ctrl+.) writes it all the same")
    elif instruction.checks:
        lines.append(
            "- none yet: the quick fix *Add assertion for this instruction* (Ctrl+.) writes "
            + ", ".join(f"`{name}`" for name in instruction.checks)
        )
        held = dict(instruction.held_back)
        lines += [f"- `{name}` on the labelled examples: {md_escape(text)}" for name, text in instruction.verdicts]
        lines += [f"- `{name}` is held back: {md_escape(why)}" for name, why in held.items()]
    elif has_assistant:
        lines.append("- none yet: the quick fix *Add assertion for this instruction* asks the assistant model")
    else:
        lines.append(f"- none: {md_escape(instruction.reason or NO_OFFLINE_CHECK)}")
        lines.append(
            "- next step: set an assistant model (the `spade.assistantModel` setting, "
            "or `assistant_model` in spade.toml)"
        )
    return "\n".join(lines)


def assertion_hover(view: AssertionView, overview: PromptOverview) -> str:
    category = PLAIN_NAMES.get(view.category or "", view.category or "no category")
    lines = [f"**{view.name}** · {category}"]
    if view.description:
        lines += ["", md_escape(view.description)]
    lines.append("")
    if view.sentence:
        origin = f" (v{view.version})" if view.version is not None else ""
        state = " — **stale**: no longer in the prompt" if view.stale else ""
        if view.removed_in is not None and view.instruction is None:  # not back in the prompt since
            state = f" — removed or reworded in v{view.removed_in} (a removed limit may be a relaxed one)"
        lines.append(f"From {md_escape(quote(view.sentence))}{origin}{state}")
    else:
        lines.append("Written by hand (no `@assertion` source sentence)")
    run = overview.eval_run
    lines.append("")
    label = f"Evaluation run {run.id}" if run is not None else "Evaluation"
    lines.append(f"{label}: {stats_text(view.stats)}")
    if view.stats is not None:
        for message in view.stats.error_messages:
            lines.append(f"- {md_escape(message)}")
    lines.append(f"Selection: {selection_text(view)}")
    return "\n".join(lines)


def summary_title(overview: PromptOverview, *, pending: bool = False) -> str:
    """The lens at the top of a prompt: versions, instructions (as many as there are instruction diagnostics),
    assertions, selected, and the newest sampling run's share of outputs passing every check, with its interval
    (nothing before the prompt was first sampled)."""
    summary = overview.summary
    parts = []
    if overview.prompt is None:
        parts.append("unsaved (no history)")
    elif pending and not summary.versions:
        parts.append("reading history…")
    elif not summary.versions:
        parts.append("no versions recorded yet")
    else:
        parts.append(f"{summary.versions} version{'s' if summary.versions != 1 else ''}")
    parts.append(f"{summary.instructions} instruction{'s' if summary.instructions != 1 else ''}")
    parts.append(f"{summary.assertions} assertion{'s' if summary.assertions != 1 else ''}")
    if summary.selected is not None:
        parts.append(f"{summary.selected} selected")
    if summary.reliability is not None:
        parts.append(reliability_text(summary.reliability))
    return "spade: " + " · ".join(parts)


def reliability_text(view: ReliabilityView) -> str:
    """ "all checks pass 82% (74–88%, v3)": the share of sampled outputs that passed every check, its interval
    and version (plain words where the report says P_pass), and the checks whose interval lies below their
    minimum."""
    if view.p_pass is None or view.ci_low is None:
        figure = f"all checks pass {pct(view.p_pass)} (v{view.version})"
    else:
        figure = f"all checks pass {pct(view.p_pass)} ({pct(view.ci_low)}–{pct(view.ci_high)}, v{view.version})"
    if view.failing:
        figure += f", {len(view.failing)} check{'s' if len(view.failing) != 1 else ''} below minimum"
    return figure


def assertion_lens_title(view: AssertionView) -> str:
    stats = view.stats
    if stats is None:
        figure = "not evaluated yet"
    elif stats.examples == 0 and stats.needs_model:
        figure = "needs a model"
    elif stats.examples == 0 and stats.not_applicable:
        figure = "not applicable to any example"
    else:
        figure = f"pass {pct(stats.pass_rate)} on {stats.examples} example{'s' if stats.examples != 1 else ''}"
        if stats.errors:
            figure += f" ({stats.errors} error{'s' if stats.errors != 1 else ''})"
        if stats.not_applicable:
            figure += f" ({stats.not_applicable} not applicable)"
    if view.selected is True:
        choice = "selected"
    elif view.selected is False:
        choice = f"subsumed by {', '.join(view.subsumed_by)}" if view.subsumed_by else "not selected"
    else:
        choice = "no selection yet"
    return f"{figure} · {choice}"


def _judged_value(row: Mapping[str, Any]) -> str:
    if row.get("problem"):
        return f"no answer ({md_escape(str(row['problem']))})"
    value = row.get("value")
    if value is None:
        return "no answer"
    if isinstance(value, bool):
        return "**yes**" if value else "**no**"
    return f"**{md_escape(str(value))}**"


def _run_line(row: Mapping[str, Any]) -> str:
    """``run 7 · 2025-05-01 12:30 UTC · `openai/gpt-4o-mini` · v3``"""
    parts = [f"run {row.get('run_id')}"]
    finished = row.get("finished_at")
    if isinstance(finished, str) and finished:
        parts.append(f"{finished[:16].replace('T', ' ')} UTC")
    if row.get("model"):
        parts.append(f"`{str(row['model']).replace('`', '')}`")
    if row.get("version") is not None:
        parts.append(f"v{row['version']}")
    return "- " + " · ".join(parts)


def example_hover(example: ExampleLine, history: Sequence[Mapping[str, Any]] | None, prompt_name: str) -> str:
    """An example's id, label and grading note, and the note's judgements (newest run first, one line per
    judge: with and without the note, so the note's effect on the judge shows)."""
    label = "unlabelled" if example.label is None else ("good" if example.label else "bad")
    lines = [f"**Example {md_escape(str(example.id))}** · label: {label}", ""]
    if example.note is None:
        lines.append('No grading note: add `"grading_note": "..."` (what a good answer must contain) to judge it')
        return "\n".join(lines)
    lines.append(f"**Grading note:** {md_escape(quote(example.note, 300))}")
    if not example.has_output:
        lines.append("")
        lines.append("No `output` to judge yet.")
    lines += ["", "**Judgements** (newest first)"]
    if history is None:
        lines.append("- the store cannot be read yet: judgements show once the workspace daemon has recorded them")
        return "\n".join(lines)
    if not history:
        lines.append("- not judged yet: judging the notes needs a model (set the `spade.model` setting)")
        return "\n".join(lines)
    current: Any = object()
    for row in history:
        if row.get("run_id") != current:
            current = row.get("run_id")
            lines.append(_run_line(row))
        judge = md_escape(str(row.get("judge") or "judge").replace("_", " "))
        explanation = row.get("explanation")
        why = f": {md_escape(quote(explanation, 200))}" if isinstance(explanation, str) and explanation.strip() else ""
        lines.append(f"  - {judge}: {_judged_value(row)}{why}")
        note = row.get("note")
        if isinstance(note, str) and note and " ".join(note.split()) != " ".join(example.note.split()):
            lines.append(f"    (judged against an earlier note: {md_escape(quote(note, 200))})")
    return "\n".join(lines)
