"""The suite's own rules about what it needs from outside the checkout."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_the_shared_benchmark_data_skips_alone_and_fails_under_ci(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tests.conftest as conftest

    monkeypatch.setattr(conftest, "SHARED_BENCH", tmp_path / "absent")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="benchmark data not found"):
        conftest.require_shared_bench()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="must sit beside the checkout"):
        conftest.require_shared_bench()
    monkeypatch.setattr(conftest, "SHARED_BENCH", tmp_path)
    assert conftest.require_shared_bench() == tmp_path
