"""Sampling knobs for tests that call the engine directly: read as a ``sample`` job reads its params (``samples``
is ``samples_per_input``, ``inputs`` is ``sample_inputs``, ...), then merged into the prompt's settings, the
one way every entry point sets them."""

from __future__ import annotations

from typing import Any

from spade_lsp.config import Settings
from spade_lsp.jobs import validate_params


def with_knobs(settings: Settings, **knobs: Any) -> Settings:
    """``settings`` with the sampling knobs a ``sample`` job would set (``samples=4, early_stopping=False``)."""
    return settings.merged(validate_params("sample", knobs).setting_values(), source="the test's sampling knobs")
