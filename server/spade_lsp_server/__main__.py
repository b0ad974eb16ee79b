"""``python -m spade_lsp_server``: the language server on stdio."""

from __future__ import annotations

import sys

from spade_lsp_server import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
