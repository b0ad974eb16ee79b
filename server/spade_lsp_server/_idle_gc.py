"""Full garbage collections at a pause in the conversation, not in the middle of a reply.

The server's heap holds tens of thousands of long-lived objects once a large prompt is open (its sentences, their
plans, the views). CPython's automatic full collection walks all of them, 40-110 ms on a 2,000-sentence prompt,
and starts whenever enough allocations have piled up: in the middle of the didSave that happened to cross the
threshold. The young generations stay automatic (they are quick and collect most garbage); the full pass runs
when the client has sent nothing for :data:`IDLE_S`, and during a long burst of messages at least every
:data:`MAX_DELAY_S` once one is due, so memory stays bounded whatever the client does.
"""

from __future__ import annotations

import asyncio
import gc
import time
from typing import Final

#: How long the client must have been quiet before a due full collection runs.
IDLE_S: Final = 0.25
#: The longest a due full collection waits for a pause.
MAX_DELAY_S: Final = 30.0


class IdleCollector:
    """Call :meth:`activity` on every message from the client; full collections then run between messages."""

    def __init__(self, loop: asyncio.AbstractEventLoop, *, idle_s: float = IDLE_S, max_delay_s: float = MAX_DELAY_S):
        self._loop = loop
        self._idle_s = idle_s
        self._max_delay_s = max_delay_s
        young, middle, self._full_every = gc.get_threshold()
        gc.set_threshold(young, middle, 2**31 - 1)  # no automatic full pass: this class runs them
        self._middle_at_last_full = self._middle_collections()
        self._last_full = time.monotonic()
        self._timer: asyncio.TimerHandle | None = None

    @staticmethod
    def _middle_collections() -> int:
        return int(gc.get_stats()[1]["collections"])

    def due(self) -> bool:
        """As CPython decides it: a full pass after ``threshold2`` collections of the middle generation."""
        return self._middle_collections() - self._middle_at_last_full >= self._full_every

    def activity(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self.due() and time.monotonic() - self._last_full >= self._max_delay_s:
            self.collect()  # a burst that never pauses still gets its full pass
            return
        self._timer = self._loop.call_later(self._idle_s, self._when_idle)

    def _when_idle(self) -> None:
        self._timer = None
        if self.due():
            self.collect()

    def collect(self) -> None:
        gc.collect()
        self._middle_at_last_full = self._middle_collections()
        self._last_full = time.monotonic()

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        gc.set_threshold(*gc.get_threshold()[:2], self._full_every)
