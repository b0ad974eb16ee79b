"""Reliability: how often a prompt's pipeline meets its checks, with honest statistics (docs/reliability.md).

Public API::

    Validator, ValidatorSpec                      # (name, message, predicate, minimum)
    sample_prompt(workspace, prompt, SampleOptions(...)) -> document       # the binomial experiments
    analyse(tensor, validators, inputs, ...) -> statistics of R[input][sample][validator]
    binomial_interval, clustered_rate, sequential_decision, expected_attempts, attempts_for
    retry_until_valid, retry_until_verified, llm_generator, Verdict, Verifier   # production retry
    render_html(document) -> str                  # the self-contained report

Names load on first use: the statistics pull in numpy and scipy, which the language server never imports.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "Validator": "_validators",
    "ValidatorSpec": "_validators",
    "DEFAULT_MINIMUM": "_validators",
    "SampleOptions": "_sampling",
    "sample_prompt": "_sampling",
    "latest_document": "_sampling",
    "Rate": "_stats",
    "analyse": "_stats",
    "attempts_for": "_stats",
    "binomial_interval": "_stats",
    "clustered_rate": "_stats",
    "expected_attempts": "_stats",
    "rate": "_stats",
    "sequential_decision": "_stats",
    "Attempt": "_retry",
    "RetryResult": "_retry",
    "Verdict": "_retry",
    "Verifier": "_retry",
    "llm_generator": "_retry",
    "retry_until_valid": "_retry",
    "retry_until_verified": "_retry",
    "render_html": "_html",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
