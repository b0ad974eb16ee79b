"""spade-lsp's engine: prompt history, sentence deltas, the SPADE taxonomy, and (later) assertions.

The engine knows nothing about LSP: it never imports pygls or lsprotocol.
"""

from __future__ import annotations

__version__ = "0.1.0"
