"""A Ray cluster on this machine for the Ray executor's tests and benchmarks: one per test module, shut down after
(no raylet outlives the module).

Without the ``ray`` extra these tests skip with the command that installs it; under CI (``CI`` set, as ``.ci/run``
does after ``make ray``) its absence fails them instead, so CI can never pass by skipping.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from typing import Any

import pytest

NOT_INSTALLED = "Ray is not installed: run `make ray`"


def require_ray() -> None:
    if importlib.util.find_spec("ray") is not None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI runs the Ray executor's tests, but {NOT_INSTALLED}", pytrace=False)
    pytest.skip(NOT_INSTALLED)


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[Any]:
    """A local cluster (all this machine's cores), started as the executor starts it; shut down after the module."""
    require_ray()
    from spade_lsp import _ray

    ray = _ray.start(None)
    try:
        yield ray
    finally:
        ray.shutdown()
