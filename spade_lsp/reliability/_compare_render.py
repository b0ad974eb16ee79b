"""A comparison document as a terminal table (``spade compare``) and as HTML with a chart (the report view).

Regressions come first; each row reads baseline rate -> candidate rate, the difference in points with its paired
interval, the exact test's p-value, the verdict, and the sample size the design would need to detect the chosen
effect (paired, and unpaired for contrast). Light: no numpy, so the language server can render stored documents.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

__all__ = ["lens_title", "render_comparison", "render_comparison_html", "short_name"]


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _pts(value: float | None, digits: int = 1) -> str:
    """A difference in percentage points, signed."""
    return "n/a" if value is None else f"{100 * value:+.{digits}f}"


def _interval(row: Mapping[str, Any]) -> str:
    return "n/a" if row["low"] is None else f"{_pts(row['low'])}..{_pts(row['high'])}"


def _cost(variant: Mapping[str, Any]) -> str:
    cost = "unknown cost" if variant.get("cost") is None else f"${variant['cost']:.4f}"
    return f"{variant['calls']} calls ({variant['calls_cached']} cached), {cost}"


def _needed(row: Mapping[str, Any]) -> str:
    needed = row["inputs_needed"]
    if needed["paired"] is None:
        return "n/a"
    return f"{needed['paired']} / {needed['unpaired']}"


def _rows(comparison: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [*comparison["checks"], comparison["overall"]]


def render_comparison(document: Mapping[str, Any]) -> str:
    from tabulate import tabulate

    level = f"{100 * document['confidence']:g}% CI"
    lines = [
        f"{document['prompt']}: {len(document['inputs'])} input(s) x {document['samples']} sample(s) per variant, "
        f"paired by input and sample index",
        "",
    ]
    for variant in document["variants"]:
        what = f"v{variant['version']} on {variant['model']} at T={variant['temperature']:g}"
        lines.append(f"  {variant['label']}: {what}, run {variant['run_id']}; {_cost(variant)}")
    effect = f"{100 * document['effect']:g}"
    for comparison in document["comparisons"]:
        rows = [
            [
                row["name"],
                _pct(row["baseline"]),
                _pct(row["candidate"]),
                _pts(row["difference"]),
                _interval(row),
                "n/a" if row["mcnemar_p"] is None else f"{row['mcnemar_p']:.3g}",
                row["verdict"].upper() if row["verdict"] == "worse" else row["verdict"],
                "n/a" if row["mde"] is None else f"{100 * row['mde']:.1f}",
                _needed(row),
            ]
            for row in _rows(comparison)
        ]
        headers = [
            "check", comparison["baseline"], comparison["candidate"], "diff (pts)", level, "exact p", "verdict",
            "MDE (pts)", f"inputs for {effect} pts (paired / unpaired)",
        ]  # fmt: skip
        lines += [
            "",
            f"{comparison['candidate']} vs {comparison['baseline']} (candidate minus baseline):",
            tabulate(rows, headers=headers, disable_numparse=True),
        ]
        if comparison["worse"]:
            lines.append(f"worse: {', '.join(comparison['worse'])}")
    lines.append(
        "\nverdicts: the paired interval (clustered by input) excludes 0, or with few discordant pairs McNemar's "
        f"exact test; MDE and inputs needed at {100 * document['power']:g}% power"
    )
    lines.append(f"\nin words: {verdict_text(document)}")
    return "\n".join(lines) + "\n"


def _chart(rows: Sequence[Mapping[str, Any]]) -> str:
    """Differences in points with their intervals, one line per check, zero marked."""
    width, label_w, row_h = 640, 200, 26
    plot_w = width - label_w - 20
    bound = max([0.05] + [abs(v) for r in rows for v in (r["low"], r["high"], r["difference"]) if v is not None])

    def x(value: float) -> float:
        return float(label_w + plot_w * (value + bound) / (2 * bound))

    height = row_h * len(rows) + 30
    parts = [
        f'<svg class="compare-chart" width="{width}" height="{height}" role="img" '
        f'aria-label="differences with their intervals">',
        f'<line x1="{x(0):.1f}" y1="0" x2="{x(0):.1f}" y2="{height - 20}" stroke="#888" stroke-dasharray="3,3"/>',
        f'<text x="{x(-bound):.1f}" y="{height - 5}" font-size="11">{100 * -bound:+.0f}</text>',
        f'<text x="{x(0) - 4:.1f}" y="{height - 5}" font-size="11">0</text>',
        f'<text x="{x(bound) - 24:.1f}" y="{height - 5}" font-size="11">{100 * bound:+.0f} pts</text>',
    ]
    colours = {"worse": "#c0392b", "better": "#1e8449", "no detectable difference": "#555"}
    for index, row in enumerate(rows):
        y = row_h * index + row_h / 2
        parts.append(f'<text x="0" y="{y + 4:.1f}" font-size="12">{escape(row["name"])}</text>')
        if row["difference"] is None:
            continue
        colour = colours[row["verdict"]]
        if row["low"] is not None:
            parts.append(
                f'<line x1="{x(row["low"]):.1f}" y1="{y:.1f}" x2="{x(row["high"]):.1f}" y2="{y:.1f}" '
                f'stroke="{colour}" stroke-width="2"/>'
            )
        parts.append(f'<circle cx="{x(row["difference"]):.1f}" cy="{y:.1f}" r="4" fill="{colour}"/>')
    parts.append("</svg>")
    return "".join(parts)


def render_comparison_html(document: Mapping[str, Any]) -> str:
    """A section for the report: per comparison, the chart and the table, regressions first."""
    level = f"{100 * document['confidence']:g}% CI"
    out = ['<section class="comparison"><h2>Comparison</h2>']
    out.append("<ul>")
    for variant in document["variants"]:
        out.append(
            f"<li><b>{escape(variant['label'])}</b>: v{variant['version']} on {escape(str(variant['model']))} at "
            f"T={variant['temperature']:g}, run {variant['run_id']}; {escape(_cost(variant))}</li>"
        )
    out.append("</ul>")
    for comparison in document["comparisons"]:
        rows = _rows(comparison)
        out.append(f"<h3>{escape(comparison['candidate'])} vs {escape(comparison['baseline'])}</h3>")
        out.append(_chart(rows))
        out.append(
            f"<table><tr><th>check</th><th>{escape(comparison['baseline'])}</th>"
            f"<th>{escape(comparison['candidate'])}</th><th>difference (pts)</th><th>{level}</th><th>exact p</th>"
            "<th>verdict</th><th>MDE (pts)</th><th>inputs needed (paired / unpaired)</th></tr>"
        )
        for row in rows:
            verdict = escape(row["verdict"])
            mde = "n/a" if row["mde"] is None else f"{100 * row['mde']:.1f}"
            css = verdict.replace(" ", "-")
            out.append(
                f'<tr class="{css}"><td>{escape(row["name"])}</td><td>{_pct(row["baseline"])}</td>'
                f"<td>{_pct(row['candidate'])}</td><td>{_pts(row['difference'])}</td><td>{_interval(row)}</td>"
                f"<td>{row['mcnemar_p']:.3g}</td><td>{verdict}</td><td>{mde}</td><td>{_needed(row)}</td></tr>"
            )
        out.append("</table>")
    out.append(f"<p><b>In words:</b> {escape(verdict_text(document))}.</p>")
    out.append(
        f'<p class="legend">A verdict is <i>worse</i> or <i>better</i> when the {level} of the paired difference '
        "(clustered by input) leaves out 0, or, with few pairs that disagree, when McNemar's exact test on them "
        "(<i>exact p</i>) says so. <i>MDE</i>, the minimum detectable effect, is the smallest difference these "
        f"samples would likely have shown ({100 * document['power']:g}% power): a <i>no detectable difference</i> "
        "rules out only changes larger than it. <i>Inputs needed</i> is how many inputs would detect a "
        f"{100 * document['effect']:g}-point change, paired (the same inputs) and unpaired.</p>"
    )
    out.append("</section>")
    return "".join(out)


def short_name(name: str) -> str:
    """``assert_word_limit`` -> ``word_limit``: the lens has little room."""
    return name.removeprefix("assert_")


def lens_title(document: Mapping[str, Any]) -> str:
    """The editor's short line (a lens above the prompt, whose click opens the report with the detail):
    "v7 vs v6: worse on 1 check, better on 0" or "v7 vs v6: no detectable difference on 3 checks"."""
    comparison = document["comparisons"][0]
    worse, better = comparison["worse"], comparison["better"]
    head = f"{comparison['candidate']} vs {comparison['baseline']}: "
    if not worse and not better:
        return head + f"no detectable difference on {_count(len(comparison['checks']), 'check')}"
    return head + f"worse on {_count(len(worse), 'check')}, better on {len(better)}"


def verdict_text(document: Mapping[str, Any]) -> str:
    """The comparison's verdict in words, for a notification: which checks got detectably worse or better (with
    their pass rates), and what a "no difference" rests on."""
    comparison = document["comparisons"][0]
    candidate, baseline = comparison["candidate"], comparison["baseline"]
    rows = {row["name"]: row for row in comparison["checks"]}
    basis = f"{_count(len(document['inputs']), 'input')}, {_count(int(document['samples']), 'sample')} each"

    def named(names: Sequence[str]) -> str:
        shown = [
            f"{short_name(name)} {100 * rows[name]['baseline']:.0f}% -> {100 * rows[name]['candidate']:.0f}%"
            for name in names[:3]
        ]
        return ", ".join(shown) + (f" and {len(names) - 3} more" if len(names) > 3 else "")

    worse, better = comparison["worse"], comparison["better"]
    if not worse and not better:
        return (
            f"no detectable difference between {candidate} and {baseline} on the {_count(len(rows), 'check')} "
            f"({basis}); a difference too small for these samples may remain: the report has the intervals"
        )
    parts = [f"worse on {_count(len(worse), 'check')} ({named(worse)})"] if worse else []
    parts += [f"better on {_count(len(better), 'check')} ({named(better)})"] if better else []
    return f"{candidate} is {' and '.join(parts)} than {baseline} ({basis}; pass rates shown)"


def _count(n: int, one: str) -> str:
    return f"{n} {one}{'' if n == 1 else 's'}"
