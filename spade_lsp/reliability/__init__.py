"""Reliability: how often a prompt's pipeline meets its checks, with honest statistics (docs/reliability.md).

Public API::

    Validator, ValidatorSpec                      # (name, message, predicate, minimum)
    sample_prompt(workspace, prompt, SampleOptions(...), settings=...) -> document   # the binomial experiments
    analyse(tensor, validators, inputs, ...) -> statistics of R[input][sample][validator]
    binomial_interval, clustered_rate, sequential_decision, expected_attempts, attempts_for
    retry_until_valid, retry_until_verified, llm_generator, Verdict, Verifier   # production retry
    render_html(document) -> str                  # the self-contained report

Names load on first use: the statistics pull in numpy and scipy, which the language server never imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spade_lsp._lazy import lazy_exports
from spade_lsp.reliability._names import METHODS, Method

if TYPE_CHECKING:  # the names below load on first use
    from spade_lsp.reliability._check_words import validator_figures, validator_outcome
    from spade_lsp.reliability._compare import CompareOptions, compare_prompt
    from spade_lsp.reliability._compare_render import (
        lens_title,
        render_comparison,
        render_comparison_html,
        verdict_text,
    )
    from spade_lsp.reliability._html import render_html
    from spade_lsp.reliability._retry import (
        Attempt,
        RetryResult,
        Verdict,
        Verifier,
        llm_generator,
        retry_until_valid,
        retry_until_verified,
    )
    from spade_lsp.reliability._sampling import (
        VERIFIER_COLUMN,
        SampleOptions,
        latest_document,
        sample_prompt,
        selected_assertions,
    )
    from spade_lsp.reliability._stats import (
        Rate,
        analyse,
        attempts_for,
        binomial_interval,
        clustered_rate,
        expected_attempts,
        normal_quantile,
        rate,
        sequential_decision,
    )
    from spade_lsp.reliability._validators import DEFAULT_MINIMUM, Validator, ValidatorSpec


__all__ = [
    "DEFAULT_MINIMUM",
    "METHODS",
    "VERIFIER_COLUMN",
    "Attempt",
    "CompareOptions",
    "Method",
    "Rate",
    "RetryResult",
    "SampleOptions",
    "Validator",
    "ValidatorSpec",
    "Verdict",
    "Verifier",
    "analyse",
    "attempts_for",
    "binomial_interval",
    "clustered_rate",
    "compare_prompt",
    "expected_attempts",
    "latest_document",
    "lens_title",
    "llm_generator",
    "normal_quantile",
    "rate",
    "render_comparison",
    "render_comparison_html",
    "render_html",
    "retry_until_valid",
    "retry_until_verified",
    "sample_prompt",
    "selected_assertions",
    "sequential_decision",
    "validator_figures",
    "validator_outcome",
    "verdict_text",
]


__getattr__ = lazy_exports(__name__, globals())
