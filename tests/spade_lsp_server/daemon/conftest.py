"""Fixtures for tests that run the real daemon (shared with tests/spade_lsp_server/daemon)."""

from __future__ import annotations

from tests.spade_lsp_client.daemons import daemons

__all__ = ["daemons"]
