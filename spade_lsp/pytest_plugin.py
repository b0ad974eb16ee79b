"""``pytest --spade``: a repository's own test suite gates its prompts (docs/pytest.md; the hooks are in
:mod:`spade_lsp._pytest_hooks`).

pytest loads this module (entry point ``pytest11``) in every run of an environment where spade-lsp is installed,
whatever pytest that environment has. The plugin needs pytest 8 (``pytest.StashKey``, ``hookimpl(wrapper=True)``,
``Config.ArgsSource``): with an older pytest this module registers no item, fixture or other option, only a
one-line warning, so the suite still starts; ``pytest --spade`` is then a usage error saying why.
"""

from __future__ import annotations

import sys
from typing import Final

import pytest

#: The oldest pytest the plugin runs on.
MIN_PYTEST: Final = (8, 0)


def _pytest_version() -> tuple[int, ...]:
    """pytest's version as numbers (``version_tuple`` is pytest 7's; an older one reads as ``()``)."""
    numbers: list[int] = []
    for part in getattr(pytest, "version_tuple", ())[:2]:
        if not isinstance(part, int):
            break
        numbers.append(part)
    return tuple(numbers)


SUPPORTED: Final = _pytest_version() >= MIN_PYTEST

if SUPPORTED:
    from spade_lsp._pytest_hooks import (
        SpadeCheckItem,
        SpadePromptFile,
        pytest_addoption,
        pytest_collect_file,
        pytest_collection,
        pytest_configure,
        pytest_runtest_makereport,
        pytest_terminal_summary,
        pytest_unconfigure,
        spade_check,
    )

    __all__ = [
        "SpadeCheckItem",
        "SpadePromptFile",
        "pytest_addoption",
        "pytest_collect_file",
        "pytest_collection",
        "pytest_configure",
        "pytest_runtest_makereport",
        "pytest_terminal_summary",
        "pytest_unconfigure",
        "spade_check",
    ]
else:
    TOO_OLD: Final = (
        f"spade-lsp's pytest plugin (pytest --spade) needs pytest {'.'.join(map(str, MIN_PYTEST))} or newer; this is "
        f"pytest {getattr(pytest, '__version__', '?')}, so it is not loaded (pip install -U pytest)"
    )

    def pytest_addoption(parser: pytest.Parser) -> None:
        """Only ``--spade`` itself, so that asking for it says why it cannot run rather than "unrecognized"."""
        parser.getgroup("spade", "spade-lsp: gate prompts on their selected checks").addoption(
            "--spade", action="store_true", default=False, help=f"not available: {TOO_OLD}"
        )

    def pytest_configure(config: pytest.Config) -> None:
        """``--spade`` is a usage error saying why; any other run gets a one-line warning."""
        if config.getoption("spade", False):
            raise pytest.UsageError(TOO_OLD)
        try:
            config.issue_config_time_warning(pytest.PytestConfigWarning(TOO_OLD), stacklevel=2)
        except Exception:  # warnings as errors (-W error), or no such method: loaded unasked, it breaks nothing
            sys.stderr.write(f"warning: {TOO_OLD}\n")

    __all__ = ["pytest_addoption", "pytest_configure"]
