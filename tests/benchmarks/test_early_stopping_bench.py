"""Benchmark: early stopping in ``spade sample`` that stops (issue 4).

Floors: >= 30% fewer calls for checks whose true rate is >= 0.98 or <= 0.8, the decision unchanged from the
full fixed-sample run's in >= 95% of simulated runs, and the sequential test's wrong decisions (any decision at
the minimum itself) in at most 1 - confidence of them.

The simulation (``tests/spade_lsp/reliability/sequential_simulation.py``) follows the sampler on the five shared
pipelines' shapes: as many inputs as each one's ``examples.jsonl`` holds, the default samples per input, minimum
and confidence (``Settings``), rounds of ceil(2 x llm_concurrency / inputs) samples per input, and after each
round the sampler's own test (``sequential_decisions``) on the samples pooled over the inputs with their design
effect. One validator per run, 2,000 seeded runs per cell (seed = 10,000 x icc index + 100 x pipeline index + rate
index), inputs alike (icc 0) or differing (each input's own rate Beta-distributed, intra-class correlation 0.2).
The "decision" of a run is the test's where it stopped early, else the verdict on the full data; "agreement" is
how often that equals the full run's verdict (the clustered Wilson interval against the minimum).

The end-to-end check runs ``spade sample`` through the CLI on a loopback OpenAI-compatible stub, once with early
stopping and once with ``--no-early-stop``, and counts the requests the stub received.

Run with ``make bench`` or ``.venv/bin/python -m pytest -q -s -p no:cacheprovider
tests/benchmarks/test_early_stopping_bench.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from spade_lsp import cli
from spade_lsp.config import Settings
from tests.spade_lsp.reliability.sequential_simulation import Simulated, simulate
from tests.support.blurb import SAMPLING_SIDECAR, V3
from tests.support.floors import at_least, at_most, figure
from tests.support.openai_stub import OpenAIStub, Reply, chat_reply, user_text

pytestmark = pytest.mark.benchmark

PIPELINES = ("codereviews", "emails", "finance", "lecturesummaries", "sportroutine")
RATES = (0.5, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98, 0.99, 1.0)
ICCS = (0.0, 0.2)
RUNS = 2000
SAVED_FLOOR = 0.30
AGREEMENT_FLOOR = 0.95


def _clear(rate: float) -> bool:
    """The rates the calls-saved floor applies to."""
    return rate >= 0.98 or rate <= 0.8


def _shapes(shared_bench: Path) -> dict[str, int]:
    shapes = {}
    for name in PIPELINES:
        lines = (shared_bench / "spade" / name / "examples.jsonl").read_text(encoding="utf-8").splitlines()
        shapes[name] = sum(1 for line in lines if line.strip())
    return shapes


def test_simulated_early_stopping_on_the_shared_pipelines_shapes(shared_bench: Path) -> None:
    defaults = Settings()
    samples, minimum, confidence = defaults.samples_per_input, defaults.min_success, defaults.confidence
    shapes = _shapes(shared_bench)
    print(
        f"\nearly stopping: {samples} samples per input, minimum {minimum}, confidence {confidence}, "
        f"{RUNS} runs per cell; saved = 1 - calls / full run's calls (previous rule in brackets)"
    )
    print(f"{'pipeline':>16} {'inputs':>6} {'icc':>4} {'rate':>5} {'saved':>13} {'agree':>6} {'reported':>8} "
          f"{'wrong':>6} {'full wrong':>10}")  # fmt: skip
    results: dict[tuple[str, float, float], Simulated] = {}
    for icc_index, icc in enumerate(ICCS):
        for pipeline_index, (name, inputs) in enumerate(shapes.items()):
            for rate_index, rate in enumerate(RATES):
                seed = 10_000 * icc_index + 100 * pipeline_index + rate_index
                run = simulate(
                    inputs,
                    samples,
                    rate,
                    runs=RUNS,
                    seed=seed,
                    icc=icc,
                    minimum=minimum,
                    confidence=confidence,
                    concurrency=defaults.llm_concurrency,
                )
                results[(name, icc, rate)] = run
                print(
                    f"{name:>16} {inputs:>6} {icc:>4} {rate:>5} {run.calls_saved:>6.1%} ({run.old_calls_saved:>4.1%}) "
                    f"{run.agreement:>6.3f} {run.reported_agreement:>8.3f} {run.error_rate:>6.4f} "
                    f"{run.full_error_rate:>10.4f}"
                )
    for name, inputs in shapes.items():
        cells = [run for (pipeline, _, _), run in results.items() if pipeline == name]
        clear = [run for run in cells if _clear(run.rate)]
        at_least(f"{name}_{inputs}x{samples}_min_calls_saved_clear", min(r.calls_saved for r in clear), SAVED_FLOOR,
                 "", strict=True)  # fmt: skip
        at_least(f"{name}_{inputs}x{samples}_min_agreement", min(r.agreement for r in cells), AGREEMENT_FLOOR, "",
                 strict=True)  # fmt: skip
        at_most(f"{name}_{inputs}x{samples}_max_wrong_decisions", max(r.error_rate for r in cells), 1 - confidence,
                "", strict=True)  # fmt: skip
        figure(f"{name}_{inputs}x{samples}_previous_rule_min_calls_saved_clear",
               min(r.old_calls_saved for r in clear), "")  # fmt: skip
    everything = list(results.values())
    clear = [run for run in everything if _clear(run.rate)]
    figure("mean_calls_saved_clear", sum(r.calls_saved for r in clear) / len(clear), "")
    figure("mean_calls_saved_all_rates", sum(r.calls_saved for r in everything) / len(everything), "")
    boundary = [run for run in everything if run.rate == minimum]
    at_most("wrong_decisions_at_the_minimum", max(r.error_rate for r in boundary), 1 - confidence, "", strict=True)


# -- end to end: `spade sample` on a loopback stub ---------------------------------------------------------


class _Blurbs:
    """Always passes ``assert_short``; says "cheap" in ``cheap_in`` of every ten answers for a product, starting at
    an offset of its own, so each round of one sample per product breaks ``assert_no_cheap`` in about that share
    whatever order concurrent requests arrive in."""

    def __init__(self, cheap_in: int) -> None:
        self.cheap_in = cheap_in
        self.counts: dict[str, int] = {}

    def __call__(self, request: dict[str, Any]) -> Reply:
        product = user_text(request).split("for ", 1)[1].split(".", 1)[0]
        count = self.counts.get(product, 0)  # the stub serves one request at a time
        self.counts[product] = count + 1
        cheap = (count + int(product.removeprefix("product "))) % 10 < self.cheap_in
        return chat_reply(f"A cheap {product}." if cheap else f"A lovely {product} for you.")


def _workspace(root: Path, inputs: int) -> Path:
    root.mkdir()
    (root / "spade.toml").write_text("", encoding="utf-8")
    prompt = root / "blurb.prompt"
    prompt.write_text(V3, encoding="utf-8")
    examples = [{"id": f"p{i}", "inputs": {"product": f"product {i}"}} for i in range(inputs)]
    (root / "blurb.examples.jsonl").write_text("".join(json.dumps(e) + "\n" for e in examples), encoding="utf-8")
    (root / "blurb_assertions.py").write_text(SAMPLING_SIDECAR, encoding="utf-8")
    return prompt


def _sample(prompt: Path, stub: OpenAIStub, capsys: pytest.CaptureFixture[str], *flags: str) -> dict[str, Any]:
    model = ["--model", "openai/stub", "--api-base", stub.api_base, "--classifier", "offline"]
    code = cli.main(["sample", str(prompt), "--json", *model, *flags])
    assert code == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


@pytest.mark.parametrize(("cheap_in", "expected"), [(0, "pass"), (3, "fail")])
def test_spade_sample_with_early_stopping_makes_fewer_calls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cheap_in: int, expected: str
) -> None:
    # 50 inputs (the two smallest shared pipelines) at the default 5 samples; assert_no_cheap at its 0.9 minimum
    # passes every sample (cheap_in 0) or 70% of them (cheap_in 3).
    calls = {}
    verdicts = {}
    for mode, flags in (("full", ["--no-early-stop"]), ("early", [])):
        with OpenAIStub(_Blurbs(cheap_in)) as stub:
            document = _sample(_workspace(tmp_path / mode, 50), stub, capsys, *flags)
            calls[mode] = len(stub.requests)
        verdicts[mode] = {v["name"]: v["verdict"] for v in document["validators"]}
        assert document["calls"] == calls[mode]
        if mode == "early":
            assert document["calls_saved"] == document["calls_planned"] - calls[mode]
            print(f"\nsequential decisions: {document['sequential']}")
    assert calls["full"] == 250
    assert verdicts["early"] == verdicts["full"] and verdicts["full"]["assert_no_cheap"] == expected
    saved = 1 - calls["early"] / calls["full"]
    label = "always_passing" if cheap_in == 0 else "passing_70pct"
    at_least(f"e2e_spade_sample_calls_saved_{label}", saved, SAVED_FLOOR, "", strict=True)
