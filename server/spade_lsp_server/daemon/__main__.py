"""``python -m spade_lsp_server.daemon --root ROOT [--idle-timeout S] [--foreground]``."""

from __future__ import annotations

import sys

from spade_lsp_server.daemon import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
