"""The reliability report as one self-contained HTML page (``spade report PROMPT --html FILE``).

Inline CSS and SVG only, no script and nothing fetched, so the same page opens offline in a browser and in a VS Code
webview under a strict Content-Security-Policy. Every string from the document is HTML-escaped here, in ``_e``.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

CELL_BUDGET: Final = 40_000
"""Most tensor cells (inputs x samples x validators) drawn; past it only the first inputs are shown."""
ROW_LIMIT: Final = 500
"""Most rows in a per-input table or chart, and in the sequential decisions table."""

_VERDICT_ORDER: Final = {"fail": 0, "inconclusive": 1, "pass": 2}
_VERDICT_MARK: Final = {"pass": "✓", "fail": "✗", "inconclusive": "?"}
_CELL_CLASS: Final = {1: "p", 0: "f"}
# The inputs x validators grid: the per-input rate on a diverging orange (0%) - grey - blue (100%) scale.
_LOW_RGB: Final = (0xD5, 0x5E, 0x00)
_MID_RGB: Final = (0xC8, 0xC8, 0xC8)
_HIGH_RGB: Final = (0x00, 0x72, 0xB2)


# ----------------------------------------------------------------------------------------------------------------------
# Reading the document defensively: optional keys may be missing or null.


def _e(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _map(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else []


def _num(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return None if math.isnan(value) else float(value)


def _int(value: object) -> int | None:
    number = _num(value)
    return None if number is None or math.isinf(number) else int(number)


def _clip(text: object, width: int) -> str:
    flat = " ".join(str(text if text is not None else "").split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _pct(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value * 100:.{digits}f}%"


def _rate_text(rate: Mapping[str, Any]) -> str:
    """``92.0% (85.1–96.0)``; ``n/a`` when the rate is null (no trials)."""
    value, low, high = _num(rate.get("rate")), _num(rate.get("ci_low")), _num(rate.get("ci_high"))
    if value is None:
        return "n/a"
    if low is None or high is None:
        return _pct(value)
    return f"{_pct(value)} ({low * 100:.1f}–{high * 100:.1f})"


def _count_text(rate: Mapping[str, Any]) -> str:
    successes, trials = _int(rate.get("successes")), _int(rate.get("trials"))
    return "" if successes is None or trials is None else f"{successes}/{trials}"


def _attempts_text(value: float | None, low: float | None = None, high: float | None = None) -> str:
    if value is None:
        return "n/a"
    text = f"{value:.2f}"
    if low is not None and high is not None:
        text += f" ({low:.2f}–{high:.2f})"
    return text


def _verdict(value: object) -> str:
    return value if isinstance(value, str) and value in _VERDICT_ORDER else "unknown"


def _badge(verdict: str) -> str:
    mark = _VERDICT_MARK.get(verdict, "–")
    return f'<span class="badge {_e(verdict)}"><span aria-hidden="true">{mark}</span> {_e(verdict)}</span>'


def _table(headers: Sequence[str], rows: Sequence[str], css_class: str = "") -> str:
    head = "".join(f"<th>{h}</th>" for h in headers)
    return f'<table class="{css_class}"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _section(anchor: str, title: str, body: str, intro: str = "") -> str:
    note = f'<p class="intro">{intro}</p>' if intro else ""
    return f'<section id="{anchor}"><h2>{title}</h2>{note}{body}</section>'


def _left_out(shown: int, total: int, what: str = "inputs") -> str:
    if shown >= total:
        return ""
    return (
        f'<p class="left-out" data-left-out="{total - shown}">Showing the first {shown} of {total} {what}; '
        f"<strong>{total - shown} {what} left out</strong> to keep this page usable. "
        "The JSON document (<code>spade report --json</code>) has them all.</p>"
    )


def _svg(width: float, height: float, body: str, css_class: str, label: str) -> str:
    return (
        f'<svg class="chart {css_class}" role="img" aria-label="{_e(label)}" width="{width:.0f}" '
        f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}">{body}</svg>'
    )


# ----------------------------------------------------------------------------------------------------------------------
# The tensor, padded to inputs x samples x validators.


@dataclass(frozen=True, slots=True)
class _Shape:
    inputs: list[str]
    samples: int
    validators: list[Mapping[str, Any]]
    shown: int  # the first inputs drawn in the heatmaps

    @property
    def names(self) -> list[str]:
        return [str(v.get("name", f"validator {i + 1}")) for i, v in enumerate(self.validators)]


def _shape(document: Mapping[str, Any]) -> _Shape:
    tensor = _list(document.get("tensor"))
    inputs = [str(i) for i in _list(document.get("inputs"))]
    inputs += [f"input {i + 1}" for i in range(len(inputs), len(tensor))]
    samples = max([_int(document.get("samples")) or 0, *(len(_list(row)) for row in tensor)])
    validators = [_map(v) for v in _list(document.get("validators"))]
    per_input = samples * len(validators)
    shown = (
        len(inputs) if per_input == 0 or len(inputs) * per_input <= CELL_BUDGET else max(1, CELL_BUDGET // per_input)
    )
    return _Shape(inputs, samples, validators, shown)


def _cell(tensor: list[Any], i: int, s: int, v: int) -> int | None:
    """1 pass, 0 fail, None not observed (also for any position the tensor does not reach)."""
    try:
        value = tensor[i][s][v]
    except (IndexError, TypeError, KeyError):
        return None
    return 1 if value is True or value == 1 else 0 if value is False or value == 0 else None


# ----------------------------------------------------------------------------------------------------------------------
# Sections.


def _header(document: Mapping[str, Any], shape: _Shape) -> str:
    prompt = document.get("prompt") or "prompt"
    version = document.get("version")
    cost = _num(document.get("cost"))
    tokens = _map(document.get("tokens"))
    started, finished = document.get("started_at"), document.get("finished_at")
    when = " – ".join(_e(t) for t in (started, finished) if t) or "unknown"
    calls = _int(document.get("calls"))
    call_parts = [
        f"{_e(_int(document.get(key)))} {label}"
        for key, label in (("calls_cached", "cached"), ("calls_saved", "saved"), ("calls_failed", "failed"))
        if _int(document.get(key)) is not None
    ]
    planned = _int(document.get("calls_planned"))
    if planned is not None:
        call_parts.append(f"{planned} planned")
    token_text = " + ".join(
        f"{_int(tokens.get(key)):,} {key}" for key in ("prompt", "completion") if _int(tokens.get(key)) is not None
    )
    cost_text = "unknown cost" if cost is None else f"${cost:.2f}" if cost >= 1 else f"${cost:.4f}"
    method, confidence = document.get("method"), _num(document.get("confidence"))
    facts = [
        ("Model", _e(document.get("model") or "unknown")),
        ("Run", f"#{_e(document.get('run_id'))}" if document.get("run_id") is not None else "n/a"),
        ("When", when),
        ("Shape", _e(document.get("shape") or "n/a")),
        (
            "Inputs × samples",
            f"{len(shape.inputs)} × {shape.samples} ({len(shape.validators)} validators)",
        ),
        (
            "Calls",
            f"{_e(calls if calls is not None else 'n/a')}" + (f" ({', '.join(call_parts)})" if call_parts else ""),
        ),
        ("Tokens", token_text or "n/a"),
        ("Cost", cost_text),
        (
            "Intervals",
            f"{_e(method or 'n/a')}, {_pct(confidence, 0) if confidence is not None else 'n/a'} confidence",
        ),
        ("Sampling", f"seed {_e(document.get('seed', 'n/a'))}, temperature {_e(document.get('temperature', 'n/a'))}"),
    ]
    items = "".join(f"<div><dt>{k}</dt><dd>{v}</dd></div>" for k, v in facts)
    version_text = f' <span class="version">v{_e(version)}</span>' if version is not None else ""
    return (
        f'<header><p class="kicker">Reliability report</p><h1>{_e(prompt)}{version_text}</h1>'
        f'<dl class="facts">{items}</dl></header>'
    )


def _nav() -> str:
    links = [
        ("summary", "Summary"),
        ("p-pass", "P_pass"),
        ("intervals", "Intervals"),
        ("heatmap", "Heatmap"),
        ("profiles", "Profiles"),
        ("aggregate", "Aggregate"),
        ("sequential", "Early stopping"),
    ]
    return '<nav aria-label="sections">' + " · ".join(f'<a href="#{a}">{t}</a>' for a, t in links) + "</nav>"


def _warnings(document: Mapping[str, Any]) -> str:
    messages = [str(w) for w in _list(document.get("warnings")) if w]
    p_pass_warning = _map(document.get("p_pass")).get("warning")
    if p_pass_warning and str(p_pass_warning) not in messages:
        messages.append(str(p_pass_warning))
    if not messages:
        return ""
    items = "".join(f"<li>{_e(m)}</li>" for m in messages)
    return (
        '<section id="warnings" class="warnings" role="alert"><h2><span aria-hidden="true">⚠</span> '
        f"{len(messages)} warning{'s' if len(messages) != 1 else ''}</h2><ul>{items}</ul></section>"
    )


def _order(shape: _Shape) -> list[int]:
    """Validator indices, failing first, then inconclusive, then passing; the document's order within each."""
    verdicts = [_VERDICT_ORDER.get(_verdict(v.get("verdict")), 1) for v in shape.validators]
    return sorted(range(len(verdicts)), key=verdicts.__getitem__)


def _ordered_validators(shape: _Shape) -> list[Mapping[str, Any]]:
    return [shape.validators[v] for v in _order(shape)]


def _summary(shape: _Shape) -> str:
    if not shape.validators:
        return _section("summary", "Validators", "<p>No validators were measured.</p>")
    counts = {k: sum(_verdict(v.get("verdict")) == k for v in shape.validators) for k in _VERDICT_ORDER}
    line = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
    rows = []
    for v in _ordered_validators(shape):
        verdict = _verdict(v.get("verdict"))
        minimum = _num(v.get("minimum"))
        errors = _int(v.get("errors"))
        rows.append(
            f'<tr class="validator" data-verdict="{_e(verdict)}" data-name="{_e(v.get("name"))}">'
            f'<td class="name"><code>{_e(v.get("name"))}</code></td><td class="message">{_e(v.get("message"))}</td>'
            f'<td class="num">{_e(_rate_text(v))}</td><td class="num muted">{_e(_count_text(v))}</td>'
            f'<td class="num">{_pct(minimum, 1)}</td><td>{_badge(verdict)}</td>'
            f'<td class="num">{errors or ""}</td></tr>'
        )
    headers = ["Validator", "Message", "Rate (interval)", "Passed", "Minimum", "Verdict", "Errors"]
    return _section("summary", "Validators", _table(headers, rows, "summary"), f"{len(shape.validators)}: {line}.")


def _p_pass(document: Mapping[str, Any]) -> str:
    p_pass = _map(document.get("p_pass"))
    measured, predicted = _map(p_pass.get("measured")), _map(p_pass.get("predicted"))
    attempts = _map(document.get("expected_attempts"))
    for99 = _int(document.get("attempts_for_99"))
    agree = p_pass.get("agree")
    if agree is True:
        agreement = "The measured and predicted intervals overlap: the validators look independent."
    elif agree is False:
        agreement = (
            "<strong>The intervals do not overlap:</strong> the validators fail together (they are correlated); "
            "trust the measured figure."
        )
    else:
        agreement = ""
    differ = document.get("inputs_differ")
    het = _num(document.get("heterogeneity_p"))
    het_text = f" (homogeneity test p = {het:.3g})" if het is not None else ""
    if differ is True:
        differ_text = f"<strong>Inputs differ</strong>{het_text}: the worst input decides how many retries are needed."
    elif differ is False:
        differ_text = f"No evidence that inputs differ{het_text}."
    else:
        differ_text = ""
    figures = [
        ("Measured P_pass", _rate_text(measured), "share of outputs passing every validator"),
        ("Predicted P_pass", _rate_text(predicted), "product of the validator rates (assumes independence)"),
        (
            "Expected attempts",
            _attempts_text(_num(attempts.get("value")), _num(attempts.get("ci_low")), _num(attempts.get("ci_high"))),
            "1 / P_pass",
        ),
        ("Attempts for 99%", "n/a" if for99 is None else str(for99), "retries to succeed with 99% confidence"),
    ]
    cards = "".join(
        f'<div class="figure"><div class="label">{_e(label)}</div><div class="value">{_e(value)}</div>'
        f'<div class="muted">{_e(note)}</div></div>'
        for label, value, note in figures
    )
    rows = [
        _Row("measured", _num(measured.get("rate")), _num(measured.get("ci_low")), _num(measured.get("ci_high"))),
        _Row("predicted", _num(predicted.get("rate")), _num(predicted.get("ci_low")), _num(predicted.get("ci_high"))),
    ]
    chart = _interval_chart(rows, "P_pass measured and predicted", label_width=110)
    notes = "".join(f"<p>{t}</p>" for t in (agreement, differ_text) if t)
    return _section("p-pass", "P_pass: every validator at once", f'<div class="figures">{cards}</div>{chart}{notes}')


def _per_input(document: Mapping[str, Any]) -> str:
    if document.get("inputs_differ") is not True:
        return ""
    entries = [_map(e) for e in _list(document.get("per_input"))]
    if not entries:
        return ""

    def key(entry: Mapping[str, Any]) -> tuple[int, float]:
        rate = _num(_map(entry.get("p_pass")).get("rate"))
        return (1, 0.0) if rate is None else (0, rate)

    ordered = sorted(entries, key=key)
    rows = []
    for rank, entry in enumerate(ordered[:ROW_LIMIT]):
        p = _map(entry.get("p_pass"))
        for99 = _int(entry.get("attempts_for_99"))
        worst = ' class="worst"' if rank == 0 else ""
        rows.append(
            f"<tr{worst}><td><code>{_e(entry.get('input'))}</code>{' (worst)' if rank == 0 else ''}</td>"
            f'<td class="num">{_e(_rate_text(p))}</td><td class="num muted">{_e(_count_text(p))}</td>'
            f'<td class="num">{_attempts_text(_num(entry.get("expected_attempts")))}</td>'
            f'<td class="num">{"n/a" if for99 is None else for99}</td></tr>'
        )
    table = _table(["Input", "P_pass (interval)", "Passed", "Expected attempts", "Attempts for 99%"], rows)
    return _section(
        "per-input",
        "Attempts per input",
        table + _left_out(min(len(ordered), ROW_LIMIT), len(ordered)),
        "Inputs differ, so attempts are given per input, worst first.",
    )


# ----------------------------------------------------------------------------------------------------------------------
# Interval charts: one row per item, a marker at the rate, a line for the interval, a tick at the minimum.


@dataclass(frozen=True, slots=True)
class _Row:
    label: str
    rate: float | None
    low: float | None
    high: float | None
    minimum: float | None = None
    verdict: str = "neutral"
    detail: str = ""

    @property
    def rate_text(self) -> str:
        return _rate_text({"rate": self.rate, "ci_low": self.low, "ci_high": self.high})


def _marker(x: float, y: float, verdict: str) -> str:
    if verdict == "fail":  # a diamond
        return f'<path class="mark fail" d="M{x:.1f} {y - 6:.1f}l6 6l-6 6l-6 -6z"/>'
    if verdict == "inconclusive":  # a hollow square
        return f'<rect class="mark inconclusive" x="{x - 4.5:.1f}" y="{y - 4.5:.1f}" width="9" height="9"/>'
    return f'<circle class="mark {_e(verdict)}" cx="{x:.1f}" cy="{y:.1f}" r="5"/>'


def _axis(left: float, width: float, top: float, bottom: float) -> str:
    parts = []
    for tick in (0, 25, 50, 75, 100):
        x = left + width * tick / 100
        parts.append(f'<line class="grid" x1="{x:.1f}" y1="{top:.1f}" x2="{x:.1f}" y2="{bottom:.1f}"/>')
        parts.append(f'<text class="tick" x="{x:.1f}" y="{bottom + 14:.1f}" text-anchor="middle">{tick}%</text>')
    return "".join(parts)


def _interval_chart(rows: Sequence[_Row], label: str, label_width: int = 230, plot_width: int = 520) -> str:
    row_height, top = 24, 8
    height = top + row_height * len(rows) + 24
    width = label_width + plot_width + 70
    left = label_width + 10
    parts = [_axis(left, plot_width, top, top + row_height * len(rows))]
    for index, row in enumerate(rows):
        y = top + row_height * index + row_height / 2
        title = f"{row.label}: {row.rate_text}"
        if row.minimum is not None:
            title += f", minimum {_pct(row.minimum)}"
        if row.verdict not in ("neutral", "unknown"):
            title += f", {row.verdict}"
        if row.detail:
            title += f" ({row.detail})"
        item = [
            f"<title>{_e(title)}</title>",
            f'<text class="label" x="{label_width:.0f}" y="{y + 4:.1f}" text-anchor="end">'
            f"{_e(_clip(row.label, 34))}</text>",
        ]
        if index % 2 == 0:
            item.insert(
                1, f'<rect class="band" x="0" y="{y - row_height / 2:.1f}" width="{width}" height="{row_height}"/>'
            )
        if row.low is not None and row.high is not None:
            x1, x2 = left + plot_width * row.low, left + plot_width * row.high
            item.append(f'<line class="ci {_e(row.verdict)}" x1="{x1:.1f}" y1="{y:.1f}" x2="{x2:.1f}" y2="{y:.1f}"/>')
        if row.minimum is not None:
            xm = left + plot_width * row.minimum
            item.append(f'<line class="minimum" x1="{xm:.1f}" y1="{y - 8:.1f}" x2="{xm:.1f}" y2="{y + 8:.1f}"/>')
        if row.rate is None:
            item.append(f'<text class="na" x="{left + 4:.1f}" y="{y + 4:.1f}">n/a (no trials)</text>')
        else:
            item.append(_marker(left + plot_width * row.rate, y, row.verdict))
            item.append(f'<text class="value" x="{left + plot_width + 8:.1f}" y="{y + 4:.1f}">{_pct(row.rate)}</text>')
        parts.append(f'<g class="row">{"".join(item)}</g>')
    return _svg(width, height, "".join(parts), "intervals", label)


def _column_chart(rows: Sequence[_Row], label: str) -> str:
    """Many items (inputs): one thin column each, sorted from the weakest, a bar to the rate and a whisker."""
    ordered = sorted(rows, key=lambda r: (r.rate is None, r.rate if r.rate is not None else 0.0))
    step = max(3.0, min(14.0, 900 / max(1, len(ordered))))
    left, top, plot_height = 40, 8, 160
    width = left + step * len(ordered) + 10
    parts = []
    for tick in (0, 50, 100):
        y = top + plot_height * (1 - tick / 100)
        parts.append(f'<line class="grid" x1="{left}" y1="{y:.1f}" x2="{width - 10:.1f}" y2="{y:.1f}"/>')
        parts.append(f'<text class="tick" x="{left - 4}" y="{y + 4:.1f}" text-anchor="end">{tick}%</text>')
    for index, row in enumerate(ordered):
        x = left + step * index
        title = f"<title>{_e(row.label)}: {_e(row.rate_text)}</title>"
        if row.rate is None:
            na = f'<rect class="bar-na" x="{x:.1f}" y="{top}" width="{step * 0.8:.1f}" height="{plot_height}"/>'
            parts.append(f"<g>{title}{na}</g>")
            continue
        y = top + plot_height * (1 - row.rate)
        bar = (
            f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{step * 0.8:.1f}" height="{top + plot_height - y:.1f}"/>'
        )
        whisker = ""
        if row.low is not None and row.high is not None:
            cx = x + step * 0.4
            y1, y2 = top + plot_height * (1 - row.high), top + plot_height * (1 - row.low)
            whisker = f'<line class="ci neutral" x1="{cx:.1f}" y1="{y1:.1f}" x2="{cx:.1f}" y2="{y2:.1f}"/>'
        parts.append(f"<g>{title}{bar}{whisker}</g>")
    parts.append(
        f'<text class="tick" x="{left}" y="{top + plot_height + 16}">inputs, weakest first (hover for names)</text>'
    )
    return _svg(width, top + plot_height + 24, "".join(parts), "columns", label)


def _validator_rows(shape: _Shape) -> list[_Row]:
    return [
        _Row(
            str(v.get("name", "")),
            _num(v.get("rate")),
            _num(v.get("ci_low")),
            _num(v.get("ci_high")),
            _num(v.get("minimum")),
            _verdict(v.get("verdict")),
            _count_text(v),
        )
        for v in _ordered_validators(shape)
    ]


def _legend(*items: tuple[str, str, str]) -> str:
    """Items of (swatch class, symbol, text): a symbol in every swatch, so colour is never the only cue."""
    keys = "".join(
        f'<span class="key"><span class="swatch {c}" aria-hidden="true">{s}</span> {t}</span>' for c, s, t in items
    )
    return f'<div class="legend">{keys}</div>'


def _forest(shape: _Shape) -> str:
    if not shape.validators:
        return ""
    legend = _legend(
        ("pass", "●", "pass: interval at or above the minimum"),
        ("fail", "◆", "fail: interval below the minimum"),
        ("inconclusive", "■", "inconclusive"),
        ("minimum", "|", "minimum"),
    )
    chart = _interval_chart(_validator_rows(shape), "validator success rates with intervals")
    return _section("intervals", "Success rate per validator", legend + f'<div class="scroll">{chart}</div>')


# ----------------------------------------------------------------------------------------------------------------------
# The tensor as heatmaps.


def _validator_grid(tensor: list[Any], shape: _Shape, v: int) -> str:
    name = shape.names[v]
    verdict = _verdict(shape.validators[v].get("verdict"))
    cell_w = max(3, min(14, 240 // max(1, shape.samples)))
    cell_h = max(3, min(14, 480 // max(1, shape.shown)))
    gap = 1 if min(cell_w, cell_h) >= 5 else 0
    width, height = shape.samples * cell_w, shape.shown * cell_h
    rows = []
    for i in range(shape.shown):
        y = i * cell_h
        cells = []
        counts = [0, 0, 0]  # pass, fail, not observed
        for s in range(shape.samples):
            value = _cell(tensor, i, s, v)
            kind = _CELL_CLASS.get(value, "n") if value is not None else "n"
            counts["pfn".index(kind)] += 1
            cells.append(
                f'<rect class="cell {kind}" x="{s * cell_w}" y="{y}" width="{cell_w - gap}" height="{cell_h - gap}"/>'
            )
        title = f"{shape.inputs[i]}: {counts[0]} pass, {counts[1]} fail, {counts[2]} not observed"
        rows.append(f"<g><title>{_e(title)}</title>{''.join(cells)}</g>")
    svg = (
        f'<svg class="heat" role="img" aria-label="{_e(name)}: inputs by samples" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}"><g class="cells" data-validator="{_e(name)}">{"".join(rows)}</g></svg>'
    )
    return (
        f'<figure class="grid" data-validator="{_e(name)}"><figcaption title="{_e(name)}">'
        f'<span class="badge-dot {_e(verdict)}" aria-hidden="true">{_VERDICT_MARK.get(verdict, "–")}</span> '
        f"<code>{_e(_clip(name, 28))}</code></figcaption>{svg}</figure>"
    )


def _blend(rate: float) -> str:
    """A colour on the diverging orange - grey - blue scale."""
    low, high, t = (_LOW_RGB, _MID_RGB, rate * 2) if rate < 0.5 else (_MID_RGB, _HIGH_RGB, rate * 2 - 1)
    return "#" + "".join(f"{round(a + (b - a) * t):02x}" for a, b in zip(low, high, strict=True))


def _input_validator_grid(tensor: list[Any], shape: _Shape) -> str:
    names = shape.names
    order = _order(shape)
    cell_w = 34
    cell_h = max(4, min(20, 720 // max(1, shape.shown)))
    labelled = cell_h >= 10
    label_w = 190 if labelled else 10
    head = 150
    width = label_w + cell_w * len(names) + 130
    height = head + cell_h * shape.shown + 4
    parts = []
    for column, v in enumerate(order):
        x = label_w + column * cell_w + cell_w / 2
        parts.append(
            f'<text class="label" x="{x:.1f}" y="{head - 6}" transform="rotate(-55 {x:.1f} {head - 6})">'
            f"<title>{_e(names[v])}</title>{_e(_clip(names[v], 22))}</text>"
        )
    for i in range(shape.shown):
        y = head + i * cell_h
        if labelled:
            parts.append(
                f'<text class="label" x="{label_w - 6}" y="{y + cell_h / 2 + 4:.1f}" text-anchor="end">'
                f"<title>{_e(shape.inputs[i])}</title>{_e(_clip(shape.inputs[i], 28))}</text>"
            )
        for column, v in enumerate(order):
            name = names[v]
            passed = observed = 0
            for s in range(shape.samples):
                value = _cell(tensor, i, s, v)
                if value is not None:
                    observed += 1
                    passed += value
            x = label_w + column * cell_w
            if observed:
                rate = passed / observed
                fill = f'class="rate" fill="{_blend(rate)}"'
                text = f"{_pct(rate)} ({passed}/{observed})"
            else:
                fill, text = 'class="rate n"', "not observed"
            parts.append(
                f'<rect {fill} x="{x}" y="{y}" width="{cell_w - 1}" height="{cell_h - 1}">'
                f"<title>{_e(shape.inputs[i])} · {_e(name)}: {text}</title></rect>"
            )
    return _svg(width, height, "".join(parts), "by-input", "per-input rate of each validator")


def _heatmaps(document: Mapping[str, Any], shape: _Shape) -> str:
    tensor = _list(document.get("tensor"))
    if not shape.validators or not shape.inputs or not shape.samples:
        return _section("heatmap", "The tensor", "<p>No outputs were observed.</p>")
    legend = _legend(
        ("p", "✓", "pass"), ("f", "✗", "fail"), ("n", "·", "not observed (call failed, error, stopped early)")
    )
    grids = "".join(_validator_grid(tensor, shape, v) for v in _order(shape))
    scale = (
        '<div class="legend"><span class="key">per-input rate: 0% <span class="scale" aria-hidden="true"></span> 100%'
        '</span><span class="key"><span class="swatch n" aria-hidden="true">·</span> not observed</span></div>'
    )
    left_out = _left_out(shape.shown, len(shape.inputs))
    body = (
        f"{left_out}<h3>Each validator: inputs (rows) × samples (columns)</h3>{legend}"
        f'<div class="grids">{grids}</div>'
        f"<h3>Inputs × validators: the share of an input's samples that pass</h3>{scale}"
        f'<div class="scroll">{_input_validator_grid(tensor, shape)}</div>'
    )
    return _section("heatmap", "The tensor", body)


# ----------------------------------------------------------------------------------------------------------------------
# Profiles, aggregate, early stopping.


def _output_histogram(outputs: Sequence[Mapping[str, Any]]) -> str:
    labels = [f"{10 * b}–{10 * b + 10}%" for b in range(10)] + ["100%", "none"]
    counts = [0] * 12
    for output in outputs:
        rate = _num(output.get("rate"))
        evaluated = _int(output.get("evaluated"))
        if rate is None or evaluated == 0:
            counts[11] += 1
        elif rate >= 1.0:
            counts[10] += 1
        else:
            counts[min(9, max(0, int(rate * 10)))] += 1
    if not counts[11]:
        labels, counts = labels[:11], counts[:11]
    top, plot_height, bar_w, left = 18, 140, 60, 10
    peak = max(1, *counts)
    parts = []
    for b, (label, count) in enumerate(zip(labels, counts, strict=True)):
        x = left + b * bar_w
        h = plot_height * count / peak
        kind = "p" if b == 10 else "n" if b == 11 else "f"
        parts.append(
            f"<g><title>{count} output{'s' if count != 1 else ''} passed {label} of the validators</title>"
            f'<rect class="hist {kind}" x="{x}" y="{top + plot_height - h:.1f}" width="{bar_w - 6}" height="{h:.1f}"/>'
            f'<text class="tick" x="{x + (bar_w - 6) / 2:.1f}" y="{top + plot_height - h - 4:.1f}" '
            f'text-anchor="middle">{count}</text>'
            f'<text class="tick" x="{x + (bar_w - 6) / 2:.1f}" y="{top + plot_height + 14}" '
            f'text-anchor="middle">{label}</text></g>'
        )
    width = left + bar_w * len(counts) + 10
    return _svg(width, top + plot_height + 22, "".join(parts), "histogram", "outputs by share of validators passed")


def _profiles(document: Mapping[str, Any], shape: _Shape) -> str:
    profiles = _map(document.get("profiles"))
    inputs = [_map(p) for p in _list(profiles.get("input"))]
    outputs = [_map(p) for p in _list(profiles.get("output"))]
    validators = [_map(p) for p in _list(profiles.get("validator"))]
    parts = []

    input_rows = [
        _Row(str(p.get("input", "")), _num(p.get("rate")), _num(p.get("ci_low")), _num(p.get("ci_high")))
        for p in inputs[:ROW_LIMIT]
    ]
    if input_rows:
        chart = (
            _interval_chart(input_rows, "input profile")
            if len(input_rows) <= 40
            else _column_chart(input_rows, "input profile")
        )
        parts.append(
            '<h3>Input profile</h3><p class="intro">Per input: the share of its samples × validators that pass.</p>'
            f'<div class="scroll">{chart}</div>{_left_out(len(input_rows), len(inputs))}'
        )

    if validators:
        minimum = {str(v.get("name")): _num(v.get("minimum")) for v in shape.validators}
        verdict = {str(v.get("name")): _verdict(v.get("verdict")) for v in shape.validators}
        rows = [
            _Row(
                str(p.get("name", "")),
                _num(p.get("rate")),
                _num(p.get("ci_low")),
                _num(p.get("ci_high")),
                minimum.get(str(p.get("name"))),
                verdict.get(str(p.get("name")), "neutral"),
                _count_text(p),
            )
            for p in validators
        ]
        rows.sort(key=lambda r: _VERDICT_ORDER.get(r.verdict, 1))
        parts.append(
            '<h3>Validator profile</h3><p class="intro">Per validator: the share of every output that passes, '
            f'clustered by input.</p><div class="scroll">{_interval_chart(rows, "validator profile")}</div>'
        )

    if outputs:
        passed_all = sum(o.get("passed_all") is True for o in outputs)
        parts.append(
            "<h3>Output profile</h3>"
            f'<p class="intro">Per output: the share of validators it passes. <strong>{passed_all} of {len(outputs)}'
            "</strong> outputs passed every validator.</p>"
            + _legend(
                ("p", "✓", "passed every validator"), ("f", "✗", "failed at least one"), ("n", "·", "none evaluated")
            )
            + f'<div class="scroll">{_output_histogram(outputs)}</div>'
        )
    if not parts:
        parts.append("<p>No profiles in this document.</p>")
    return _section("profiles", "Profiles", "".join(parts))


def _aggregate(document: Mapping[str, Any]) -> str:
    aggregate = _map(document.get("aggregate"))
    if not aggregate:
        return ""
    rows = []
    for key, label, note in (
        ("mean", "Mean", "each validator counts once"),
        ("weighted_mean", "Weighted mean", "weighted by observed trials"),
        ("min", "Minimum", "the weakest validator"),
    ):
        entry = _map(aggregate.get(key))
        if not entry:
            continue
        name = f" (<code>{_e(entry.get('name'))}</code>)" if entry.get("name") else ""
        trials = _int(entry.get("trials"))
        rows.append(
            f'<tr><td>{label}{name}</td><td class="num">{_e(_rate_text(entry))}</td>'
            f'<td class="num">{"" if trials is None else trials}</td><td class="muted">{note}</td></tr>'
        )
    table = _table(["Aggregate", "Rate (interval)", "Trials", ""], rows)
    return _section("aggregate", "Aggregate of the validator profile", table)


def _sequential(document: Mapping[str, Any]) -> str:
    decisions = [_map(d) for d in _list(document.get("sequential"))]
    if not decisions:
        return ""
    rows = []
    for d in decisions[:ROW_LIMIT]:
        decision = str(d.get("decision", ""))
        kind = {"above": "pass", "below": "fail"}.get(decision, "inconclusive")
        mark = {"above": "▲", "below": "▼"}.get(decision, "–")
        at = _int(d.get("at_sample"))
        trials = _int(d.get("trials"))
        rows.append(
            f"<tr><td><code>{_e(d.get('validator'))}</code></td>"
            f'<td><span class="badge {kind}"><span aria-hidden="true">{mark}</span> {_e(decision)}</span></td>'
            f'<td class="num">{"n/a" if at is None else at}</td>'
            f'<td class="num">{"n/a" if trials is None else trials}</td></tr>'
        )
    table = _table(["Validator", "Decision (vs minimum)", "Samples per input", "Pooled samples"], rows)
    return _section(
        "sequential",
        "Early stopping",
        table + _left_out(len(rows), len(decisions), "decisions"),
        "Anytime-valid tests per validator on its samples pooled over the inputs: sampling stops once every "
        "validator is decided.",
    )


# ----------------------------------------------------------------------------------------------------------------------
# The page.

_CSS: Final = """
:root{color-scheme:light dark;--bg:#ffffff;--fg:#1f2328;--muted:#59636e;--border:#d0d7de;--band:#f6f8fa;
--pass:#0072b2;--fail:#d55e00;--inc:#6e6e6e;--na:#e4e4e4;--neutral:#4b5563;--min:#1f2328;--warn-bg:#fff4e0;
--warn-border:#d55e00}
@media (prefers-color-scheme:dark){:root{--bg:#1e1e1e;--fg:#e6e6e6;--muted:#a0a0a0;--border:#444;--band:#262626;
--pass:#56b4e9;--fail:#e69f00;--inc:#a8a8a8;--na:#3a3a3a;--neutral:#c0c0c0;--min:#f0f0f0;--warn-bg:#3a2a10;
--warn-border:#e69f00}}
body.vscode-light{--bg:#ffffff;--fg:#1f2328;--muted:#59636e;--border:#d0d7de;--band:#f6f8fa;--pass:#0072b2;
--fail:#d55e00;--inc:#6e6e6e;--na:#e4e4e4;--neutral:#4b5563;--min:#1f2328;--warn-bg:#fff4e0;--warn-border:#d55e00}
body.vscode-dark,body.vscode-high-contrast{--bg:#1e1e1e;--fg:#e6e6e6;--muted:#a0a0a0;--border:#444;--band:#262626;
--pass:#56b4e9;--fail:#e69f00;--inc:#a8a8a8;--na:#3a3a3a;--neutral:#c0c0c0;--min:#f0f0f0;--warn-bg:#3a2a10;
--warn-border:#e69f00}
body{margin:0;padding:24px 32px;background:var(--vscode-editor-background,var(--bg));
color:var(--vscode-editor-foreground,var(--fg));font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif}
main{max-width:1200px}
h1{margin:0 0 12px;font-size:24px;word-break:break-word}h2{margin:0 0 10px;font-size:19px}
h3{margin:18px 0 6px;font-size:15px}
.kicker{margin:0;color:var(--muted);text-transform:uppercase;letter-spacing:.06em;font-size:12px}
.version{color:var(--muted);font-weight:400}
.facts{display:grid;grid-template-columns:repeat(auto-fill,minmax(220px,1fr));gap:6px 18px;margin:0}
.facts div{border-left:3px solid var(--border);padding-left:8px}
.facts dt{color:var(--muted);font-size:12px}.facts dd{margin:0;word-break:break-word}
nav{margin:14px 0 4px;color:var(--muted)}nav a{color:inherit}
section{margin:22px 0;padding-top:6px;border-top:1px solid var(--border)}
.intro,.muted{color:var(--muted)}
.warnings{border:2px solid var(--warn-border);background:var(--warn-bg);border-radius:6px;padding:10px 16px}
.warnings h2{font-size:17px}.warnings ul{margin:0;padding-left:20px}
.left-out{border-left:4px solid var(--warn-border);background:var(--warn-bg);padding:6px 10px}
table{border-collapse:collapse;margin:6px 0}th,td{padding:5px 10px;text-align:left;vertical-align:top;
border-bottom:1px solid var(--border)}th{font-size:12px;color:var(--muted);font-weight:600}
td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
td.message{max-width:420px;word-break:break-word}td.name code{word-break:break-all}
tr.worst td{font-weight:600}
code{font:12.5px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600;white-space:nowrap;
border:1.5px solid currentColor}
.badge.pass{color:var(--pass)}.badge.fail{color:var(--bg);background:var(--fail);border-color:var(--fail)}
.badge.inconclusive{color:var(--inc);border-style:dashed}.badge.unknown{color:var(--muted)}
.badge-dot{font-weight:700}.badge-dot.pass{color:var(--pass)}.badge-dot.fail{color:var(--fail)}
.badge-dot.inconclusive{color:var(--inc)}
.figures{display:flex;flex-wrap:wrap;gap:12px;margin:6px 0 10px}
.figure{border:1px solid var(--border);border-radius:6px;padding:8px 12px;min-width:180px}
.figure .label{font-size:12px;color:var(--muted)}.figure .value{font-size:18px;font-weight:600}
.figure .muted{font-size:12px}
.legend{display:flex;flex-wrap:wrap;gap:6px 16px;margin:4px 0 8px;font-size:12.5px}
.key{display:inline-flex;align-items:center;gap:5px}
.swatch{display:inline-block;width:16px;height:16px;line-height:16px;text-align:center;font-size:11px;
font-weight:700;border-radius:3px;color:#fff}
.swatch.p,.swatch.pass{background:var(--pass)}.swatch.f,.swatch.fail{background:var(--fail)}
.swatch.n{background:var(--na);color:var(--fg)}.swatch.inconclusive{background:none;color:var(--inc);
border:1.5px solid var(--inc)}.swatch.minimum{background:none;color:var(--min);font-size:15px}
.scale{display:inline-block;width:120px;height:12px;border-radius:2px;
background:linear-gradient(90deg,#d55e00,#c8c8c8,#0072b2)}
.scroll{overflow-x:auto;max-width:100%}
.grids{display:flex;flex-wrap:wrap;gap:14px 18px;align-items:flex-start}
figure.grid{margin:0}figure.grid figcaption{font-size:12px;margin-bottom:3px;max-width:260px;white-space:nowrap;
overflow:hidden;text-overflow:ellipsis}
svg{display:block;overflow:visible}
svg text{fill:var(--vscode-editor-foreground,var(--fg));font-size:12px}svg text.tick{fill:var(--muted);font-size:11px}
svg text.na{fill:var(--muted);font-style:italic}
svg .grid{stroke:var(--border);stroke-width:1}svg .band{fill:var(--band)}
svg .ci{stroke-width:3;stroke-linecap:round}svg .ci.pass{stroke:var(--pass)}svg .ci.fail{stroke:var(--fail)}
svg .ci.inconclusive{stroke:var(--inc)}svg .ci.neutral,svg .ci.unknown{stroke:var(--neutral)}
svg .mark{stroke:var(--bg);stroke-width:1.5}svg .mark.pass{fill:var(--pass)}svg .mark.fail{fill:var(--fail)}
svg .mark.inconclusive{fill:var(--bg);stroke:var(--inc);stroke-width:2.5}
svg .mark.neutral,svg .mark.unknown{fill:var(--neutral)}
svg .minimum{stroke:var(--min);stroke-width:2}
svg .cell.p,svg .hist.p{fill:var(--pass)}svg .cell.f,svg .hist.f{fill:var(--fail)}
svg .cell.n,svg .hist.n,svg .rate.n,svg .bar-na{fill:var(--na)}
svg .bar{fill:var(--neutral);opacity:.55}
"""


def render_html(document: Mapping[str, Any], *, lead: str = "") -> str:
    """The report for one reliability document (the ``spade sample --json`` contract) as a standalone HTML page;
    ``lead`` is HTML placed before the run's sections (the editor's report puts a comparison there)."""
    shape = _shape(document)
    prompt = document.get("prompt") or "prompt"
    body = "".join(
        [
            _header(document, shape),
            _nav(),
            _warnings(document),
            _summary(shape),
            _p_pass(document),
            _per_input(document),
            _forest(shape),
            _heatmaps(document, shape),
            _profiles(document, shape),
            _aggregate(document),
            _sequential(document),
        ]
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Reliability: {_e(prompt)}</title><style>{_CSS}</style></head>"
        f"<body><main>{lead}{body}</main></body></html>\n"
    )
