"""``python -m spade_lsp.cli``: the ``spade`` command."""

from spade_lsp.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
