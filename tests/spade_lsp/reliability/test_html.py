"""The HTML reliability report: self-contained, escaped, complete, and fast on large documents."""

from __future__ import annotations

import math
import random
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from spade_lsp.reliability._html import CELL_BUDGET, render_html

_VOID = {"meta", "br", "hr", "img", "input", "link", "area", "base", "col", "embed", "source", "track", "wbr"}
_SVG_LEAVES = {"rect", "line", "circle", "path"}


class _Collector(HTMLParser):
    """Every start tag with its attributes and its ancestors' attributes, plus the text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str], list[dict[str, str]]]] = []
        self.stack: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {k: v or "" for k, v in attrs}
        self.tags.append((tag, attributes, [a for _, a in self.stack]))
        if tag not in _VOID:
            self.stack.append((tag, attributes))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {k: v or "" for k, v in attrs}
        self.tags.append((tag, attributes, [a for _, a in self.stack]))

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID:
            return
        if not self.stack or self.stack[-1][0] != tag:
            self.errors.append(f"unbalanced </{tag}> with {[t for t, _ in self.stack[-3:]]}")
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    @property
    def all_text(self) -> str:
        return " ".join(" ".join(self.text).split())


def _parse(page: str) -> _Collector:
    collector = _Collector()
    collector.feed(page)
    collector.close()
    assert not collector.errors, collector.errors[:5]
    assert not collector.stack, [t for t, _ in collector.stack]
    return collector


# ----------------------------------------------------------------------------------------------------------------------
# Documents that follow docs/reliability.md, built from a tensor.


_NO_TRIALS: dict[str, Any] = {"successes": 0, "trials": 0, "rate": None, "ci_low": None, "ci_high": None}


def _wilson(successes: int, trials: int, z: float = 1.959964) -> dict[str, Any]:
    if trials == 0:
        return dict(_NO_TRIALS)
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return {
        "successes": successes,
        "trials": trials,
        "rate": round(p, 6),
        "ci_low": round(max(0.0, centre - half), 6),
        "ci_high": round(min(1.0, centre + half), 6),
    }


def _document(
    inputs: list[str],
    samples: int,
    validators: list[tuple[str, str, float]],
    *,
    seed: int = 0,
    pass_rates: list[float] | None = None,
    warnings: list[str] | None = None,
) -> dict[str, Any]:
    """A complete document with every key of the contract's example, its figures computed from a random tensor."""
    rng = random.Random(seed)
    n_inputs = len(inputs)
    rates = pass_rates or [0.95 - 0.1 * (k % 4) for k in range(len(validators))]

    def draw(v: int) -> int | None:
        if rng.random() < 0.02:  # a failed call or an erroring assertion
            return None
        return 1 if rng.random() < rates[v] else 0

    tensor = [[[draw(v) for v in range(len(validators))] for _ in range(samples)] for _ in inputs]
    flat = [
        (i, s, v, tensor[i][s][v]) for i in range(len(inputs)) for s in range(samples) for v in range(len(validators))
    ]

    def rate_of(cells: list[int | None]) -> dict[str, Any]:
        observed = [c for c in cells if c is not None]
        return _wilson(sum(observed), len(observed))

    validator_entries = []
    for v, (name, message, minimum) in enumerate(validators):
        rate = rate_of([c for _, _, w, c in flat if w == v])
        if rate["rate"] is None:
            verdict = "inconclusive"
        elif rate["ci_low"] >= minimum:
            verdict = "pass"
        elif rate["ci_high"] < minimum:
            verdict = "fail"
        else:
            verdict = "inconclusive"
        errors = sum(c is None for _, _, w, c in flat if w == v)
        validator_entries.append(
            {"name": name, "message": message, **rate, "minimum": minimum, "verdict": verdict, "errors": errors}
        )
    outputs = []
    for i, input_id in enumerate(inputs):
        for s in range(samples):
            observed = [c for c in tensor[i][s] if c is not None]
            passed, evaluated = sum(observed), len(observed)
            outputs.append(
                {
                    "input": input_id,
                    "sample": s,
                    "passed": passed,
                    "evaluated": evaluated,
                    "rate": round(passed / evaluated, 6) if evaluated else None,
                    "passed_all": evaluated == len(validators) and passed == evaluated,
                }
            )
    measured = _wilson(sum(o["passed_all"] for o in outputs), len(outputs))
    predicted_rate = math.prod(v["rate"] or 0.0 for v in validator_entries)
    p = measured["rate"] or 0.0

    def attempts_99(p_pass: float) -> int | None:
        if p_pass <= 0:
            return None
        return 1 if p_pass >= 1 else math.ceil(math.log(0.01) / math.log(1 - p_pass))

    per_input = []
    for input_id in inputs:
        p_input = _wilson(sum(o["passed_all"] for o in outputs if o["input"] == input_id), samples)
        r = p_input["rate"] or 0.0
        per_input.append(
            {
                "input": input_id,
                "p_pass": p_input,
                "expected_attempts": round(1 / r, 6) if r else None,
                "attempts_for_99": attempts_99(r),
            }
        )
    mean = sum(v["rate"] or 0.0 for v in validator_entries) / max(1, len(validator_entries))
    mean_entry = {"rate": round(mean, 6), "ci_low": round(mean * 0.9, 6), "ci_high": round(min(1.0, mean * 1.05), 6)}
    mean_entry["trials"] = len(outputs)
    weakest = min(validator_entries, key=lambda v: v["rate"] if v["rate"] is not None else 2.0)
    return {
        "prompt": "blurb.prompt",
        "version": 3,
        "run_id": 7,
        "model": "openai/gpt-4o-mini",
        "started_at": "2025-11-22T07:00:00Z",
        "finished_at": "2025-11-22T07:03:12Z",
        "seed": 0,
        "temperature": 1.0,
        "inputs": inputs,
        "samples": samples,
        "shape": "all" if len(inputs) > 1 and samples > 1 else "rows" if samples == 1 else "columns",
        "method": "wilson",
        "confidence": 0.95,
        "validators": validator_entries,
        "p_pass": {
            "measured": measured,
            "predicted": {"rate": round(predicted_rate, 6), "ci_low": round(predicted_rate * 0.8, 6), "ci_high": 1.0},
            "agree": True,
            "warning": None,
        },
        "expected_attempts": {
            "value": round(1 / p, 6) if p else None,
            "ci_low": round(1 / measured["ci_high"], 6) if measured["ci_high"] else None,
            "ci_high": round(1 / measured["ci_low"], 6) if measured["ci_low"] else None,
        },
        "attempts_for_99": attempts_99(p),
        "inputs_differ": True,
        "heterogeneity_p": 0.003,
        "per_input": per_input,
        "profiles": {
            "input": [
                {"input": input_id, **rate_of([c for j, _, _, c in flat if j == i])}
                for i, input_id in enumerate(inputs)
            ],
            "output": outputs,
            "validator": [
                {"name": v["name"], **{k: v[k] for k in ("successes", "trials", "rate", "ci_low", "ci_high")}}
                for v in validator_entries
            ],
        },
        "aggregate": {
            "mean": mean_entry,
            "weighted_mean": dict(mean_entry),
            "min": {"name": weakest["name"], **{k: weakest[k] for k in ("rate", "ci_low", "ci_high", "trials")}},
        },
        "sequential": [
            {"validator": validators[0][0], "decision": "above", "at_sample": min(4, samples), "trials": 4 * n_inputs},
            {"validator": validators[-1][0], "decision": "below", "at_sample": min(3, samples), "trials": 3 * n_inputs},
        ],
        "tensor": tensor,
        "calls": len(inputs) * samples - 2,
        "calls_cached": 2,
        "calls_planned": len(inputs) * samples,
        "calls_saved": 0,
        "calls_failed": 0,
        "tokens": {"prompt": 1800, "completion": 900},
        "cost": 0.0012,
        "warnings": warnings or [],
    }


_EVIL = "<script>alert(1)</script> \"quoted\" and 'single'"
_VALIDATORS = [
    ("assert_under_100_words", "Length or count: at most 100 words", 0.9),
    ("assert_no_markdown", _EVIL, 0.95),
    ("assert_mentions_product", "Inclusion: names the product", 0.8),
    ("assert_formal_tone", "Qualitative: a formal tone", 0.99),
]


def _small() -> dict[str, Any]:
    return _document(
        ["ex-1", 'ex-"2"<b>', "ex-3"],
        6,
        _VALIDATORS,
        pass_rates=[1.0, 0.3, 0.97, 0.5],
        warnings=["2 calls failed; their cells are not observed"],
    )


def test_page_parses_and_is_self_contained() -> None:
    page = render_html(_small())
    parsed = _parse(page)
    tags = {tag for tag, _, _ in parsed.tags}
    assert {"html", "head", "body", "svg", "table", "style"} <= tags
    assert not tags & {"script", "link", "iframe", "img", "object", "embed"}
    for tag, attributes, _ in parsed.tags:
        for name in ("src", "href", "xlink:href", "action"):
            value = attributes.get(name, "").strip().lower()
            assert not value.startswith(("http:", "https:", "//", "data:", "javascript:")), (tag, name, value)
        assert not any(name.startswith("on") for name in attributes), (tag, attributes)
    lowered = page.lower()
    assert "@import" not in lowered
    assert "http://" not in lowered and "https://" not in lowered
    assert "url(" not in lowered
    assert "<script" not in lowered


def test_document_strings_are_escaped() -> None:
    document = _small()
    document["prompt"] = "<img src=x onerror=alert(1)>.prompt"
    page = render_html(document)
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&quot;quoted&quot;" in page and "&#x27;single&#x27;" in page
    assert "<img" not in page and "<b>" not in page
    parsed = _parse(page)
    # the message comes back intact as text, and the input id with quotes stays inside its attribute
    assert _EVIL in parsed.all_text
    assert any(a.get("data-validator") == "assert_no_markdown" for _, a, _ in parsed.tags)
    assert 'ex-"2"<b>' in parsed.all_text


def test_header_shows_the_run() -> None:
    text = _parse(render_html(_small())).all_text
    expected_facts = ("blurb.prompt", "v3", "openai/gpt-4o-mini", "#7", "3 × 6", "$0.0012", "1,800 prompt")
    for expected in (*expected_facts, "900 completion"):
        assert expected in text, expected
    assert "2 calls failed" in text


def test_early_stopping_lists_each_validators_pooled_decision() -> None:
    page = render_html(_small())
    section = page[page.index('id="sequential"') :]
    section = section[: section.index("</section>")]
    text = _parse(section).all_text
    assert "Samples per input" in text and "Pooled samples" in text
    assert _VALIDATORS[0][0] in text and "above" in text and "12" in text  # 4 samples x 3 inputs
    assert _VALIDATORS[-1][0] in text and "below" in text and "9" in text


def test_heatmap_has_inputs_times_samples_cells_per_validator() -> None:
    document = _small()
    document["tensor"][1] = document["tensor"][1][:2]  # an input whose sampling stopped early: padded, not dropped
    parsed = _parse(render_html(document))
    cells: dict[str, int] = {}
    kinds: dict[str, int] = {}
    for tag, attributes, ancestors in parsed.tags:
        classes = attributes.get("class", "").split()
        if tag == "rect" and "cell" in classes:
            owner = next(a["data-validator"] for a in reversed(ancestors) if "data-validator" in a)
            cells[owner] = cells.get(owner, 0) + 1
            kind = next(c for c in classes if c != "cell")
            kinds[kind] = kinds.get(kind, 0) + 1
    assert cells == {name: 3 * 6 for name, _, _ in _VALIDATORS}
    assert set(kinds) <= {"p", "f", "n"} and kinds["n"] >= 4 * 4
    # the inputs x validators grid: one rate cell per pair
    rate_cells = [a for tag, a, _ in parsed.tags if tag == "rect" and "rate" in a.get("class", "").split()]
    assert len(rate_cells) == 3 * len(_VALIDATORS)


def test_failing_validators_come_first() -> None:
    document = _small()
    verdicts = {v["name"]: v["verdict"] for v in document["validators"]}
    assert "fail" in verdicts.values() and "pass" in verdicts.values()
    parsed = _parse(render_html(document))
    rows = [a["data-verdict"] for tag, a, _ in parsed.tags if tag == "tr" and "data-verdict" in a]
    assert len(rows) == len(_VALIDATORS)
    order = {"fail": 0, "inconclusive": 1, "pass": 2}
    assert rows == sorted(rows, key=order.__getitem__)
    assert rows[0] == "fail" and rows[-1] == "pass"


def test_null_rates_and_missing_optional_keys() -> None:
    document = _small()
    empty = document["validators"][3]
    empty.update({**_NO_TRIALS, "verdict": "inconclusive"})
    document["profiles"]["validator"][3].update(_NO_TRIALS)
    document["p_pass"]["measured"] = dict(_NO_TRIALS)
    document["expected_attempts"] = {"value": None, "ci_low": None, "ci_high": None}
    document["attempts_for_99"] = None
    document["cost"] = None
    document["per_input"] = []
    del document["sequential"]
    page = render_html(document)
    parsed = _parse(page)
    row = next(
        i for i, (tag, a, _) in enumerate(parsed.tags) if tag == "tr" and a.get("data-name") == "assert_formal_tone"
    )
    assert row >= 0
    assert "n/a" in parsed.all_text
    assert "unknown cost" in parsed.all_text
    assert 'id="sequential"' not in page
    summary = page.split('data-name="assert_formal_tone"', 1)[1].split("</tr>", 1)[0]
    assert "n/a" in summary


def test_minimal_document_renders() -> None:
    page = render_html({"prompt": "bare.prompt"})
    text = _parse(page).all_text
    assert "bare.prompt" in text and "unknown cost" in text


def test_warnings_are_prominent() -> None:
    document = _small()
    document["p_pass"].update(
        {"agree": False, "warning": "measured and predicted P_pass disagree: validators are correlated"}
    )
    page = render_html(document)
    assert page.index('id="warnings"') < page.index('id="summary"')
    text = _parse(page).all_text
    assert "2 warnings" in text and "validators are correlated" in text and "trust the measured figure" in text


def test_per_input_attempts_only_when_inputs_differ() -> None:
    document = _small()
    assert 'id="per-input"' in render_html(document)
    document["inputs_differ"] = False
    assert 'id="per-input"' not in render_html(document)


def test_large_document_says_how_many_inputs_were_left_out() -> None:
    inputs = [f"case-{i:03d}" for i in range(300)]
    document = _document(inputs, 20, [(f"assert_{k}", f"check {k}", 0.9) for k in range(10)], seed=3)
    assert CELL_BUDGET < 300 * 20 * 10
    page = render_html(document)
    parsed = _parse(page)
    shown = CELL_BUDGET // (20 * 10)
    assert f"{300 - shown} inputs left out" in parsed.all_text
    assert any(a.get("data-left-out") == str(300 - shown) for _, a, _ in parsed.tags)
    cells = sum(1 for tag, a, _ in parsed.tags if tag == "rect" and "cell" in a.get("class", "").split())
    assert cells == shown * 20 * 10


def large_document() -> dict[str, Any]:
    """200 inputs x 20 samples x 10 checks: exactly the cell budget (the benchmark's input too)."""
    inputs = [f"case-{i:03d}" for i in range(200)]
    return _document(inputs, 20, [(f"assert_{k}", f"check {k}", 0.9) for k in range(10)], seed=4)


def test_200_by_20_by_10_renders_every_cell() -> None:
    """Its speed (under 2 s) is measured by tests/benchmarks/test_report_bench.py."""
    page = render_html(large_document())
    assert "left out" not in page  # exactly at the budget: everything drawn
    assert page.count('class="cell ') == 200 * 20 * 10


@pytest.mark.parametrize(("inputs", "samples"), [(40, 1), (1, 30)])
def test_rows_and_columns_shapes(inputs: int, samples: int) -> None:
    document = _document([f"in-{i}" for i in range(inputs)], samples, _VALIDATORS[:2], seed=5)
    document["sequential"] = []
    page = render_html(document)
    _parse(page)
    assert page.count('class="cell ') == inputs * samples * 2
    assert 'id="sequential"' not in page


def test_writes_an_example(tmp_path: Path) -> None:
    """One rendered example, written to the test's own directory (to look at, run with ``--basetemp``): a
    self-contained page that shows the document's warnings and every check."""
    document = _document(
        [f"example-{i}" for i in range(12)],
        8,
        [*_VALIDATORS, ("assert_cites_sources", "Inclusion: cites at least one source", 0.7)],
        seed=1,
        pass_rates=[0.99, 0.55, 0.93, 0.8, 0.75],
        warnings=["3 calls failed; their cells are not observed"],
    )
    document["p_pass"].update({"agree": False, "warning": "measured and predicted P_pass disagree"})
    page = render_html(document)
    _parse(page)
    (tmp_path / "report-example.html").write_text(page, encoding="utf-8")
    # what the document says is on the page, and nothing is fetched from elsewhere
    for said in ("measured and predicted P_pass disagree", "3 calls failed", "assert_cites_sources"):
        assert said in page
    assert 'src="http' not in page and 'href="http' not in page
