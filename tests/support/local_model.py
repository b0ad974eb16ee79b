"""The real embedded model for end-to-end tests: one SmolLM2 server per test module, in a private state
directory (never the developer's own server), stopped afterwards.

Without the ``local`` extra these tests skip with the command that installs it; under CI (``CI`` set, as
``.ci/run`` does after ``make local-model``) its absence fails them instead, so CI can never pass by skipping.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

NOT_INSTALLED = "the local model is not installed: run `make local-model`"


def require_local_model() -> None:
    from spade_lsp.local_model import is_installed

    if is_installed():
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI runs the local model's tests, but {NOT_INSTALLED}", pytrace=False)
    pytest.skip(NOT_INSTALLED)


@pytest.fixture(scope="module")
def local_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A module's private server: its state directory, set for the module's tests; the server is stopped after."""
    require_local_model()
    from spade_lsp.local_model import stop_server

    directory = tmp_path_factory.mktemp("local-model")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SPADE_LOCAL_MODEL_DIR", str(directory))
        try:
            yield directory
        finally:
            stop_server()
