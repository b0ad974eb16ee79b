"""spade-lsp's language server (LSP glue only) and its daemon process.

This ``__init__`` stays import-free: the daemon (``spade_lsp_server.daemon``) and ``spade lsp`` both start here,
and only the language server needs pygls.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Serve LSP on stdio until the client exits (``spade lsp``, ``python -m spade_lsp_server``)."""
    from spade_lsp_server._main import main as run

    return run(argv)
