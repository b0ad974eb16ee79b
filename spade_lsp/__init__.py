"""spade-lsp's engine: prompt history, sentence deltas, the SPADE taxonomy, assertions, selection and reliability.

The engine knows nothing about LSP: it never imports pygls or lsprotocol.

Public API for the language server and the daemon client (the engine's own modules import its private modules
directly)::

    Position, Range                                   # the engine's text coordinates
    PROMPT_SUFFIXES, prompt_stem, examples_path, sidecar_path, atomic_write_text, make_private_dir
    read_limited, read_limited_text, MAX_PROMPT_READ_BYTES, MAX_SIDECAR_BYTES    # size-capped reads
    confine(root, path, what)                         # a path, if it resolves inside the workspace
    PromptKind, prompt_kind, prompt_settings_block    # a prompt file's kind and its own settings
    load_user_json, read_example_row                  # one line of an examples file, read as the engine reads it
    iter_examples(path)                               # an examples file's lines, read one at a time
    Fallback                                          # a step that fell back, and why
    UnreviewedFunction, unreviewed_functions, UNREVIEWED_DIAGNOSTIC_CODE   # LLM-written code nobody accepted
    accepted_functions                                # the (name, sha) pairs an acceptance names, checked

Names load on first use: importing the package itself loads nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spade_lsp._lazy import lazy_exports

if TYPE_CHECKING:  # the names below load on first use
    from spade_lsp._cpus import usable_cpus
    from spade_lsp._examples import Example, iter_examples
    from spade_lsp._examples import read_row as read_example_row
    from spade_lsp._fallbacks import Fallback
    from spade_lsp._files import (
        MAX_EXAMPLES_BYTES,
        MAX_PROMPT_READ_BYTES,
        MAX_SIDECAR_BYTES,
        PROMPT_SUFFIXES,
        atomic_write_text,
        confine,
        examples_path,
        make_private_dir,
        prompt_stem,
        read_limited,
        read_limited_text,
        sidecar_path,
    )
    from spade_lsp._inputs import loads as load_user_json
    from spade_lsp._prompts import PromptKind, prompt_kind
    from spade_lsp._prompts import settings_block as prompt_settings_block
    from spade_lsp._review import DIAGNOSTIC_CODE as UNREVIEWED_DIAGNOSTIC_CODE
    from spade_lsp._review import Unreviewed as UnreviewedFunction
    from spade_lsp._review import accepted_items as accepted_functions
    from spade_lsp._review import unreviewed as unreviewed_functions
    from spade_lsp._types import Position, Range

__version__ = "0.1.0"


__all__ = [
    "MAX_EXAMPLES_BYTES",
    "MAX_PROMPT_READ_BYTES",
    "MAX_SIDECAR_BYTES",
    "PROMPT_SUFFIXES",
    "UNREVIEWED_DIAGNOSTIC_CODE",
    "Example",
    "Fallback",
    "Position",
    "PromptKind",
    "Range",
    "UnreviewedFunction",
    "__version__",
    "accepted_functions",
    "atomic_write_text",
    "confine",
    "examples_path",
    "iter_examples",
    "load_user_json",
    "make_private_dir",
    "prompt_kind",
    "prompt_settings_block",
    "prompt_stem",
    "read_example_row",
    "read_limited",
    "read_limited_text",
    "sidecar_path",
    "unreviewed_functions",
    "usable_cpus",
]


__getattr__ = lazy_exports(__name__, globals())
