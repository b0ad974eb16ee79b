"""Wilson intervals and stratified folds."""

from __future__ import annotations

import numpy as np
import pytest

from spade_lsp.selection import stratified_folds, wilson_interval


def test_wilson_interval_known_values() -> None:
    low, high = wilson_interval(0, 10, confidence=0.95) or (None, None)
    assert low == 0.0
    assert high == pytest.approx(0.2775, abs=1e-4)
    low, high = wilson_interval(5, 10, confidence=0.95) or (None, None)
    assert (low, high) == (pytest.approx(0.2366, abs=1e-4), pytest.approx(0.7634, abs=1e-4))
    assert wilson_interval(0, 0, confidence=0.95) is None


def test_folds_are_disjoint_cover_every_labelled_row_and_keep_the_mix() -> None:
    labels = np.array([0] * 10 + [1] * 20 + [-1] * 3, dtype=np.int8)
    folds = stratified_folds(labels, 5, seed=1)
    joined = np.concatenate(folds)
    assert sorted(joined.tolist()) == list(range(30))
    for fold in folds:
        assert (labels[fold] == 0).sum() == 2
        assert (labels[fold] == 1).sum() == 4
