"""Paired comparison: the statistics against hand-computed values, then `spade compare` and
`spade check --baseline` end to end against the local OpenAI-compatible stub, with variants of known rates."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from spade_lsp import cli
from spade_lsp.config import resolve_file
from spade_lsp.errors import InputError
from spade_lsp.reliability import (
    CompareOptions,
    compare_prompt,
    lens_title,
    render_comparison,
    render_comparison_html,
    verdict_text,
)
from spade_lsp.reliability._paired import mcnemar_exact, paired_difference
from spade_lsp.workspace import Workspace
from tests.support.blurb import PRICE_SENTENCE, V3, TwoModels, record, sampling_workspace
from tests.support.openai_stub import OpenAIStub
from tests.support.sampling import with_knobs

# Four inputs, five samples each. Per-input differences (candidate - baseline): 0, 0.4, 0.4, 0.
BASELINE = [[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [1, 0, 0, 0, 0], [1, 1, 1, 0, 0]]
CANDIDATE = [[1, 1, 1, 1, 1], [1, 1, 1, 1, 0], [1, 1, 1, 0, 0], [0, 1, 1, 1, 0]]


def test_the_paired_difference_by_hand() -> None:
    diff = paired_difference(BASELINE, CANDIDATE, confidence=0.95)
    # rates 11/20 and 15/20; mean difference (0 + .4 + .4 + 0) / 4 = .2
    assert (diff.baseline_rate, diff.candidate_rate) == (0.55, 0.75)
    assert diff.difference == pytest.approx(0.2)
    # sd of the differences sqrt(4 * .2^2 / 3) = .230940; SE = sd / sqrt(4) = .115470; t(.975, 3) = 3.182446
    assert diff.standard_error == pytest.approx(0.115470, abs=1e-6)
    assert diff.low == pytest.approx(0.2 - 3.182446 * 0.115470, abs=1e-5)  # -0.167474
    assert diff.high == pytest.approx(0.2 + 3.182446 * 0.115470, abs=1e-5)  # 0.567474
    # discordant pairs: 2 + 2 + 1 where only the candidate passed, 1 where only the baseline did
    assert (diff.candidate_only, diff.baseline_only) == (5, 1)
    assert diff.mcnemar_p == pytest.approx(14 / 64)  # 2 * P(X <= 1), X ~ Bin(6, 1/2) = 2 * 7/64
    assert diff.test == "mcnemar-exact" and diff.verdict == "no detectable difference"
    # (z.975 + z.80) * SE = 2.801585 * .115470; inputs for 10 points: (2.801585 * sd / .1)^2
    assert diff.mde == pytest.approx(0.323497, abs=1e-5)
    assert diff.inputs_needed_paired == 42  # (2.801585 * .230940 / .1)^2 = 41.86
    # unpaired: sd = sqrt(var(1, .4, .2, .6) + var(1, .8, .6, .6)) = sqrt(.116667 + .036667) = .391578
    assert diff.inputs_needed_unpaired == 121  # (2.801585 * .391578 / .1)^2 = 120.35
    assert (diff.inputs, diff.pairs) == (4, 20)


def test_unmeasured_cells_drop_out_of_their_pair() -> None:
    baseline = np.array(BASELINE, dtype=float)
    candidate = np.array(CANDIDATE, dtype=float)
    baseline[1, 4] = np.nan  # an assertion error: input 2 keeps four pairs
    candidate[0, :] = np.nan  # the candidate never measured input 1: it leaves the comparison
    diff = paired_difference(baseline, candidate, confidence=0.95)
    assert (diff.inputs, diff.pairs) == (3, 14)
    # per-input differences .5 (2/4 -> 4/4), .4, 0 weighted by pairs 4, 5, 5: (2 + 2 + 0) / 14
    assert diff.difference == pytest.approx(4 / 14)
    assert diff.baseline_rate == pytest.approx((2 + 1 + 3) / 14)


def test_many_discordant_pairs_use_the_interval() -> None:
    rng = np.random.default_rng(7)
    difficulty = rng.uniform(0.3, 0.9, size=60)
    baseline = (rng.uniform(size=(60, 5)) < difficulty[:, None]).astype(float)
    candidate = (rng.uniform(size=(60, 5)) < (difficulty[:, None] - 0.25)).astype(float)
    diff = paired_difference(baseline, candidate, confidence=0.95)
    assert diff.test == "interval" and diff.candidate_only + diff.baseline_only >= 25
    assert diff.high is not None and diff.high < 0 and diff.verdict == "worse"
    assert diff.difference == pytest.approx(candidate.mean() - baseline.mean())
    same = paired_difference(baseline, baseline, confidence=0.95)
    assert same.difference == 0 and same.verdict == "no detectable difference" and same.mcnemar_p == 1.0


def test_mcnemar_exact_matches_the_binomial() -> None:
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(0, 12) == pytest.approx(2 * 0.5**12)
    assert mcnemar_exact(3, 9) == pytest.approx(2 * sum(math.comb(12, k) for k in range(4)) / 2**12)
    with pytest.raises(ValueError, match="same inputs-by-samples shape"):
        paired_difference([[1, 0]], [[1], [0]], confidence=0.95)


def test_options_compare_one_thing_at_a_time() -> None:
    with pytest.raises(InputError, match="compare one thing at a time"):
        CompareOptions(versions=(1, 2), models=("a", "b"))
    with pytest.raises(InputError, match="two different version numbers"):
        CompareOptions(versions=(2, 2))
    with pytest.raises(InputError, match="two or more different values"):
        CompareOptions(models=("a",))


@pytest.fixture
def stub() -> Any:
    with OpenAIStub(TwoModels()) as server:
        yield server


def _configure(root: Path, stub: OpenAIStub) -> None:
    (root / "spade.toml").write_text(
        f'model = "openai/good"\napi_base = "{stub.api_base}"\nclassifier = "offline"\n', encoding="utf-8"
    )


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = cli.main(list(argv))
    return code, capsys.readouterr().out


def test_spade_compare_models_against_the_stub(
    workspace_dir: Path, stub: OpenAIStub, capsys: pytest.CaptureFixture[str]
) -> None:
    prompt = sampling_workspace(workspace_dir)
    _configure(workspace_dir, stub)
    code, text = _run(
        capsys, "compare", str(prompt), "--models", "openai/good", "openai/bad", "--samples", "4", "--json",
        "--workspace", str(workspace_dir),
    )  # fmt: skip
    assert code == 0
    document = json.loads(text)
    assert document["kind"] == "models" and document["inputs"] == ["g1", "g2", "b1", "b2"]
    good, bad = document["variants"]
    assert (good["label"], good["model"], good["calls"]) == ("openai/good", "openai/good", 16)
    assert (bad["label"], bad["calls"], bad["p_pass"]) == ("openai/bad", 16, 0.25)
    comparison = document["comparisons"][0]
    first, second = comparison["checks"]
    assert first["name"] == "assert_no_cheap"  # the regression comes first
    # per-input differences -.5, -.5, -1, -1: mean -.75; sd .288675, SE .144338, t(.975, 3) 3.182446
    assert (first["baseline"], first["candidate"], first["difference"]) == (1.0, 0.25, -0.75)
    assert first["standard_error"] == pytest.approx(0.144338, abs=1e-6)
    assert first["low"] == -1.0  # -.75 - .459347 clipped at -1
    assert first["high"] == pytest.approx(-0.75 + 3.182446 * 0.144338, abs=1e-5)
    assert first["discordant"] == {"candidate_only": 0, "baseline_only": 12}
    assert first["mcnemar_p"] == pytest.approx(2 * 0.5**12, rel=1e-4)
    assert first["test"] == "mcnemar-exact" and first["verdict"] == "worse"
    assert (second["name"], second["difference"], second["verdict"]) == (
        "assert_short", 0.0, "no detectable difference",
    )  # fmt: skip
    assert comparison["worse"] == ["assert_no_cheap"] and comparison["overall"]["verdict"] == "worse"
    assert comparison["overall"]["candidate"] == 0.25
    # both variants' runs are ordinary sampling runs, and the comparison is stored
    with Workspace(workspace_dir) as workspace:
        stored = workspace.store.db.execute("SELECT kind, document FROM comparisons").fetchall()
        runs = workspace.store.db.execute("SELECT model FROM sample_runs ORDER BY id").fetchall()
    assert [row[0] for row in stored] == ["models"] and json.loads(stored[0][1])["comparisons"] == [comparison]
    assert [row[0] for row in runs] == ["openai/good", "openai/bad"]
    assert {r["model"] for r in stub.requests} == {"good", "bad"}

    table = render_comparison(document)
    assert "openai/bad vs openai/good (candidate minus baseline):" in table and "WORSE" in table
    assert table.index("assert_no_cheap") < table.index("assert_short")
    assert "16 calls (0 cached)" in table
    assert "\nin words: openai/bad is worse on 1 check (no_cheap " in table
    html = render_comparison_html(document)
    assert html.count("<circle") == 3 and "<svg" in html and 'class="worse"' in html
    assert "<b>In words:</b> openai/bad is worse on 1 check" in html and "minimum detectable effect" in html


def test_compare_versions_defaults_to_the_previous_one_and_check_baseline_gates(
    workspace_dir: Path, stub: OpenAIStub, capsys: pytest.CaptureFixture[str]
) -> None:
    """v1 of the prompt is answered by the good model's text, v2 by the bad one's (the stub tells them apart by
    the sentence only v2 has)."""
    prompt = sampling_workspace(workspace_dir)
    v2 = V3 + PRICE_SENTENCE + "\n"
    record(workspace_dir, prompt, V3, v2)
    _configure(workspace_dir, stub)
    code, text = _run(capsys, "compare", str(prompt), "--samples", "4", "--json", "--workspace", str(workspace_dir))
    assert code == 0
    document = json.loads(text)
    assert [v["label"] for v in document["variants"]] == ["v1", "v2"]
    assert [v["version"] for v in document["variants"]] == [1, 2]
    assert lens_title(document) == "v2 vs v1: worse on 1 check, better on 0"  # the detail is in the report
    assert verdict_text(document) == (
        "v2 is worse on 1 check (no_cheap 100% -> 25%) than v1 (4 inputs, 4 samples each; pass rates shown)"
    )
    same = {**document, "comparisons": [{**document["comparisons"][0], "worse": [], "better": []}]}
    assert lens_title(same) == "v2 vs v1: no detectable difference on 2 checks"
    assert verdict_text(same) == (
        "no detectable difference between v2 and v1 on the 2 checks (4 inputs, 4 samples each); a difference too "
        "small for these samples may remain: the report has the intervals"
    )

    where = ["--workspace", str(workspace_dir)]
    code, text = _run(capsys, "check", str(prompt), "--baseline", "1", "--samples", "4", *where)
    assert code == 1
    assert "FAILED: assert_no_cheap, all checks detectably worse than v1" in text
    assert stub.requests and len(stub.requests) == 32  # the second run came from the cache

    code, text = _run(capsys, "check", str(prompt), "--baseline", "2", "--workspace", str(workspace_dir))
    assert code == 2 and text == ""


def test_compare_needs_two_versions(workspace_dir: Path, stub: OpenAIStub) -> None:
    prompt = sampling_workspace(workspace_dir)
    _configure(workspace_dir, stub)
    with Workspace(workspace_dir) as workspace, pytest.raises(InputError, match="only one version is recorded"):
        compare_prompt(workspace, prompt, settings=resolve_file(workspace_dir, prompt))
    with Workspace(workspace_dir) as workspace, pytest.raises(InputError, match="no version 7"):
        compare_prompt(workspace, prompt, CompareOptions(versions=(7, 1)), settings=resolve_file(workspace_dir, prompt))


def test_compare_temperatures_sends_each_and_finds_no_difference_where_there_is_none(
    workspace_dir: Path, stub: OpenAIStub
) -> None:
    prompt = sampling_workspace(workspace_dir)
    _configure(workspace_dir, stub)
    with Workspace(workspace_dir) as workspace:
        options = CompareOptions(temperatures=(1.0, 0.2))
        settings = with_knobs(resolve_file(workspace_dir, prompt), samples=2, inputs=3)
        document = compare_prompt(workspace, prompt, options, settings=settings)
    assert [v["label"] for v in document["variants"]] == ["T=1", "T=0.2"]
    assert [v["temperature"] for v in document["variants"]] == [1.0, 0.2]
    assert sorted(r["temperature"] for r in stub.requests) == [0.2] * 6 + [1.0] * 6
    comparison = document["comparisons"][0]
    assert {row["verdict"] for row in comparison["checks"]} == {"no detectable difference"}
    assert comparison["overall"]["difference"] == 0.0 and comparison["worse"] == []
    assert len(document["inputs"]) == 3 and document["samples"] == 2
