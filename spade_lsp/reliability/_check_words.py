"""A sampled check's verdict in words: what the pytest plugin's failures and the editor's Test Explorer say.

One place, so a check reads the same wherever its sampling result is shown (the CLI's table, a pytest failure,
the Sample profile in VS Code): the count, the rate, the interval and how it stands against the check's minimum.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

#: How the interval stands against the minimum, by verdict.
_RELATION: Final = {"pass": "lies above the minimum", "fail": "lies below the minimum"}
_STRADDLES: Final = "straddles the minimum"
#: A Test Explorer state per verdict; an inconclusive check is neither a pass nor a failure yet.
_STATE: Final = {"pass": "passed", "fail": "failed"}


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def validator_figures(validator: Mapping[str, Any], confidence: float) -> str:
    """What a verdict rests on, e.g. ``25/40 passed (62.5%); 95% CI 47.0–75.8% lies below the minimum 90.0%``."""
    errors = f", {validator['errors']} error(s) not counted" if validator.get("errors") else ""
    figures = f"{validator['successes']}/{validator['trials']} passed ({_percent(validator['rate'])}{errors})"
    if validator["ci_low"] is None:
        return f"{figures}; no interval to compare with the minimum {_percent(validator['minimum'])}"
    relation = _RELATION.get(str(validator["verdict"]), _STRADDLES)
    level = f"{100 * confidence:g}% CI"
    interval = f"{100 * validator['ci_low']:.1f}–{_percent(validator['ci_high'])}"
    return f"{figures}; {level} {interval} {relation} {_percent(validator['minimum'])}"


def validator_outcome(validator: Mapping[str, Any], confidence: float) -> tuple[str, str]:
    """The check as a test of the pipeline: (``passed`` | ``failed`` | ``skipped``, one line saying why and what
    to do). Inconclusive is ``skipped``: the interval cannot yet tell, and more samples decide it."""
    verdict = str(validator["verdict"])
    figures = validator_figures(validator, confidence)
    if verdict in _STATE:
        return _STATE[verdict], figures
    if not validator["trials"]:
        errors = f": it raised on {validator['errors']} output(s), not counted" if validator.get("errors") else ""
        return "skipped", f"no output was judged{errors}; see the run's warnings in the report"
    return "skipped", f"inconclusive: {figures}; sample more inputs or samples to decide"
