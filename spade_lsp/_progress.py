"""How long work reports how far it got, below the jobs that run it: the CLI prints it, a daemon job stores it.

``progress(message, percentage)`` is called between phases; a job's callback raises
:class:`~spade_lsp.errors.JobCancelled` once cancellation was requested, which stops the work there.
"""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[str, float | None], None]


def no_progress(message: str, percentage: float | None) -> None:
    """A :data:`Progress` that reports nowhere (work run with no one watching)."""
