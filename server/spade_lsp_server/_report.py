"""The Markdown report of a prompt (``spade.report``) and its version list (``spade.showHistory``), written
under ``.spade/reports/`` and shown with ``window/showDocument``."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from spade_lsp import atomic_write_text, make_private_dir, prompt_stem
from spade_lsp.overview import PromptOverview, VersionInfo
from spade_lsp_server._render import pct, quote, ratio, reliability_text, selection_text, stats_text

if TYPE_CHECKING:
    from spade_lsp.store import Store  # sqlite-utils imports numpy: the server only reads through store.open_readonly

REPORTS_DIR: Final = Path(".spade") / "reports"
_GITIGNORE: Final = "# spade-lsp's local state; never committed\n*\n"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def reports_dir(root: Path) -> Path:
    """``.spade/reports`` (with the ``.spade/.gitignore`` the store would write, if the store is not there yet)."""
    make_private_dir(root / ".spade")
    directory = root / REPORTS_DIR
    directory.mkdir(parents=True, exist_ok=True)
    gitignore = root / ".spade" / ".gitignore"
    if not gitignore.exists():
        gitignore.write_text(_GITIGNORE, encoding="utf-8")
    return directory


def versions_json(versions: tuple[VersionInfo, ...]) -> list[dict[str, Any]]:
    return [
        {
            "number": v.number,
            "created_at": v.created_at,
            "written_at": v.written_at,
            "origin": v.origin,
            "commit": v.commit_sha,
            "message": v.commit_message,
            "author": v.author,
        }
        for v in versions
    ]


def _history_lines(overview: PromptOverview) -> list[str]:
    if not overview.versions:
        return ["No version recorded yet: versions are recorded when the prompt is saved (or from its git history)."]
    lines = ["| version | date | origin | commit | message |", "| --- | --- | --- | --- | --- |"]
    for v in overview.versions:
        lines.append(
            f"| v{v.number} | {v.written_at[:19].replace('T', ' ')} | {v.origin} | {v.short_sha or ''} | "
            f"{_cell(v.subject or '')} |"
        )
    return lines


def history_markdown(overview: PromptOverview) -> str:
    name = overview.prompt.name if overview.prompt is not None else "unsaved prompt"
    return "\n".join([f"# History of {name}", "", *_history_lines(overview), ""])


def report_markdown(overview: PromptOverview, *, now: datetime | None = None) -> str:
    name = overview.prompt.name if overview.prompt is not None else "unsaved prompt"
    moment = (now or datetime.now(UTC)).isoformat(timespec="seconds")
    summary = overview.summary
    out = [
        f"# spade report: {name}",
        "",
        f"Generated {moment}.",
        "",
        f"- versions: {summary.versions}",
        f"- instructions: {summary.instructions} ({summary.covered} covered, {summary.uncovered} uncovered)",
        f"- assertions: {summary.assertions}"
        + (f" ({summary.selected} selected)" if summary.selected is not None else ""),
        "- reliability: "
        + (reliability_text(summary.reliability) if summary.reliability is not None else "not sampled yet"),
        "",
        "## History",
        "",
        *_history_lines(overview),
        "",
        "## Instructions",
        "",
    ]
    checkable = [i for i in overview.instructions if i.checkable]
    if checkable:
        out += ["| line | instruction | categories | introduced | assertions |", "| --- | --- | --- | --- | --- |"]
        for i in checkable:
            introduced = f"v{i.introduced_in}" if i.introduced_in is not None else "not recorded"
            out.append(
                f"| {i.range.start.line + 1} | {_cell(quote(i.text, 90))} | {', '.join(i.plain_names)} | "
                f"{introduced} | {', '.join(i.covered_by) or '**none**'} |"
            )
    else:
        out.append("No instruction with a checkable category.")
    out += ["", "## Assertions", ""]
    if overview.sidecar.assertions:
        out += ["| assertion | source | pass | coverage | FFR | selection |", "| --- | --- | --- | --- | --- | --- |"]
        for a in overview.sidecar.assertions:
            source = quote(a.sentence, 60) if a.sentence else "hand-written"
            if a.stale:
                source += " (stale)"
            stats = a.stats
            figures = (
                (pct(stats.pass_rate), ratio(stats.coverage), ratio(stats.ffr))
                if stats is not None and stats.examples
                else (stats_text(stats), "", "")
            )
            out.append(f"| `{a.name}` | {_cell(source)} | {' | '.join(figures)} | {_cell(selection_text(a))} |")
    else:
        out.append("No sidecar module yet (run *Add assertions* or `spade synthesize`).")
    out += ["", "## Latest evaluation", ""]
    run = overview.eval_run
    if run is None:
        out.append("No evaluation run yet.")
    else:
        out.append(
            f"Run {run.id}, finished {run.finished_at or 'n/a'}: {run.examples} examples ({run.good} good, "
            f"{run.bad} bad, {run.unlabelled} unlabelled), {run.error_cells} error cell(s), "
            f"{run.needs_model_cells} cell(s) needing a model, {run.not_applicable_cells} not applicable (an input "
            "the check reads is missing from the example)."
        )
        if run.module_changed:
            out.append("")
            out.append("The sidecar module changed since this run; evaluate again for current figures.")
    out += ["", "## Latest selection", ""]
    selection = overview.selection
    if selection is None:
        out.append("No selection yet.")
    else:
        out.append(
            f"Selection {selection.id} ({selection.method}, tau {selection.tau:g}, alpha {selection.alpha:g}): "
            f"{selection.status}, {len(selection.selected)} selected, coverage {ratio(selection.coverage)}, "
            f"FFR {ratio(selection.ffr)}."
        )
        if selection.selected:
            out += ["", "Selected: " + ", ".join(f"`{n}`" for n in selection.selected)]
        if selection.reasons:
            out += ["", "Dropped:"]
            out += [f"- `{n}`: {reason}" for n, reason in sorted(selection.reasons.items())]
    out.append("")
    return "\n".join(out)


def write_report(root: Path, prompt: Path, text: str, *, suffix: str = "", extension: str = ".md") -> Path:
    path = reports_dir(root) / f"{prompt_stem(prompt)}{suffix}{extension}"
    atomic_write_text(path, text)
    return path


def write_reliability_report(root: Path, prompt: Path, store: Store | None, key: str | None) -> Path | None:
    """The newest sampling run as the self-contained HTML report (what the editor's report view shows), with
    the newest comparison of versions, models or temperatures first when there is one."""
    if store is None or key is None:
        return None
    from spade_lsp.reliability import render_comparison_html, render_html
    from spade_lsp.store import DatabaseError, stored_comparison, stored_document

    try:
        document = stored_document(store, key)
        comparison = stored_comparison(store, key)
    except DatabaseError:
        return None  # a store from before sampling (or comparisons) existed
    if document is None:
        return None
    lead = render_comparison_html(comparison) if comparison is not None else ""
    return write_report(root, prompt, render_html(document, lead=lead), suffix=".reliability", extension=".html")
