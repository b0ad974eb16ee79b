"""A sampled check's verdict in words, as the Test Explorer and ``pytest --spade`` say it."""

from __future__ import annotations

from typing import Any

from spade_lsp.reliability import validator_outcome


def _validator(**changes: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "successes": 4, "trials": 16, "rate": 0.25, "ci_low": 0.076, "ci_high": 0.573, "minimum": 0.9,
        "verdict": "fail", "errors": 0,
    }  # fmt: skip
    return {**row, **changes}


def test_each_verdict_reads_as_a_test_state_with_its_figures() -> None:
    assert validator_outcome(_validator(), 0.95) == (
        "failed",
        "4/16 passed (25.0%); 95% CI 7.6–57.3% lies below the minimum 90.0%",
    )
    passed = _validator(successes=16, rate=1.0, ci_low=0.806, ci_high=1.0, minimum=0.5, verdict="pass")
    assert validator_outcome(passed, 0.95) == (
        "passed",
        "16/16 passed (100.0%); 95% CI 80.6–100.0% lies above the minimum 50.0%",
    )
    unsure = _validator(successes=4, trials=4, rate=1.0, ci_low=0.51, ci_high=1.0, verdict="inconclusive")
    state, message = validator_outcome(unsure, 0.95)
    assert state == "skipped" and message.startswith("inconclusive: 4/4 passed (100.0%); 95% CI 51.0–100.0% straddles")
    assert message.endswith("sample more inputs or samples to decide")


def test_a_check_that_judged_no_output_says_why_instead_of_empty_figures() -> None:
    judged_none = _validator(successes=0, trials=0, rate=None, ci_low=None, ci_high=None, verdict="inconclusive")
    assert validator_outcome({**judged_none, "errors": 4}, 0.95) == (
        "skipped",
        "no output was judged: it raised on 4 output(s), not counted; see the run's warnings in the report",
    )
    assert validator_outcome(judged_none, 0.95)[1] == "no output was judged; see the run's warnings in the report"
