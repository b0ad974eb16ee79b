"""What promptfoo's ``python`` assertions call (the adapter module ``spade export promptfoo`` writes):
:func:`check` runs one sidecar assertion on one promptfoo output in spade's sandbox and answers with promptfoo's
GradingResult. Kept small: promptfoo starts a Python process per assertion call."""

from __future__ import annotations

from spade_lsp._promptfoo_interop import check

__all__ = ["check"]
