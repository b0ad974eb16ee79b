"""Running the ``spade`` command in-process, as the CLI tests do."""

from __future__ import annotations

import pytest

from spade_lsp.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``spade ARGV...``: its exit code, standard output and standard error."""
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err
