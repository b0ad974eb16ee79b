"""Every error the engine raises on purpose, in one place.

Callers catch :class:`SpadeError`; the CLI maps :class:`InputError` (and its subclasses) to exit code 2
and prints ``str(error)`` as a one-line message. Nothing here knows about LSP.
"""

from __future__ import annotations

import errno

__all__ = [
    "ConfigError",
    "DaemonError",
    "DaemonUnavailableError",
    "DiskFullError",
    "FrontMatterError",
    "GitHistoryError",
    "InputError",
    "JobCancelled",
    "LLMError",
    "LocalModelError",
    "LocalModelUnavailableError",
    "MeasurementError",
    "ModelNotConfiguredError",
    "NotApplicable",
    "PromptFileError",
    "SandboxError",
    "SelectionError",
    "SpadeError",
    "StoreError",
    "StoreLockedError",
]


class SpadeError(Exception):
    """Base class: a problem the user can act on, with a one-line message."""


class InputError(SpadeError):
    """The user's input (a file, a flag, a JSON line) cannot be used as given."""


class PromptFileError(InputError):
    """A prompt file is missing, binary, not UTF-8, or too large."""


class ConfigError(InputError):
    """Settings in pyproject.toml, spade.toml or front matter are invalid."""


class FrontMatterError(ConfigError):
    """A prompt's front matter does not parse (invalid YAML, or not a mapping): no setting in it can be read."""


class DiskFullError(SpadeError, OSError):
    """A write failed because the disk (or a quota, or the process's file size limit) is full; nothing was
    written. Also an ``OSError`` (``errno`` ENOSPC), so code that handles failed writes keeps handling it."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.errno = errno.ENOSPC
        self.strerror = message

    def __str__(self) -> str:
        return str(self.args[0])


class GitHistoryError(SpadeError):
    """A git history could not be read (the file itself may still be usable)."""


class StoreError(SpadeError):
    """The SQLite store is corrupt, unreadable or from a newer version."""


class StoreLockedError(StoreError):
    """Another process holds the store's write lock for longer than the busy timeout."""


class LLMError(SpadeError):
    """An LLM call failed after its retries, or answered something unusable."""


class ModelNotConfiguredError(LLMError):
    """A feature needs a model and none is configured."""


class LocalModelError(LLMError):
    """The embedded local model's server (``model = "local"``) could not be started or stopped; the message quotes
    the last lines of its log."""


class LocalModelUnavailableError(LocalModelError, ModelNotConfiguredError):
    """``local`` is configured but its extra is not installed: a configuration problem, and the message says the
    install command (``make local-model``)."""


class SelectionError(SpadeError):
    """The selection solver failed, ran out of time without a solution, or returned an unusable answer."""


class SandboxError(SpadeError):
    """The assertion sandbox could not run at all (a worker failed to start); assertion failures are not this."""


class JobCancelled(SpadeError):
    """Raised by a job's progress callback once cancellation was requested; the job ends ``cancelled``."""


class DaemonError(SpadeError):
    """The workspace daemon answered a request with an error; ``code`` is its JSON-RPC error code."""

    def __init__(self, message: str, *, code: int = -32000, data: object = None) -> None:
        super().__init__(message)
        self.code = code
        self.data = data


class DaemonUnavailableError(DaemonError):
    """No daemon answers on the workspace's socket and none could be started (or the connection was lost)."""


class NotApplicable(SpadeError, KeyError):
    """A check does not apply to this example: it reads an input the example lacks ("in {language}" with no
    ``language``). The cell counts neither for nor against the check: an evaluation reports it as
    ``not_applicable``, left out of its rates, and selection treats it as not flagging the example. Also a
    ``KeyError``, so code written for a plain dict (``example["language"]``) still catches it."""

    def __str__(self) -> str:  # KeyError quotes its argument; this message is a sentence
        return str(self.args[0]) if self.args else "not applicable"


class MeasurementError(SpadeError, ValueError):
    """A check in :mod:`spade_lsp.checks` could not measure a response: there is nothing to score (reading ease of
    a text without words) or a measurement library failed to load its data. Raised instead of the library's own
    exception, so an evaluation reports the cell as an error named ``MeasurementError``, never as a pass or a
    fail. Also a ``ValueError``."""
