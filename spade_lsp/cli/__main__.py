"""``python -m spade_lsp.cli``: the ``spade`` command."""

from spade_lsp.cli import run

if __name__ == "__main__":
    run()
