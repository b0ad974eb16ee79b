"""Engine messages in the editor's words: no CLI subcommand or flag survives, and each names its next step."""

from __future__ import annotations

import re

import pytest

from spade_lsp._roles import HOW_TO_CONFIGURE_ASSISTANT, HOW_TO_CONFIGURE_PIPELINE
from spade_lsp_server._words import for_editor

#: What the engine says to a terminal user, as its modules word it (see the f-strings they come from).
ENGINE = [
    ("support_reply.prompt: no examples; import some with `spade import support_reply.prompt --examples FILE`",
     '"Open examples"'),
    ("blurb_assertions.py: no sidecar module; run `spade synthesize blurb.prompt` first", '"Add assertion"'),
    ("blurb.prompt: no finished evaluation run to select from; run `spade eval` first", '"SPADE: Run evaluation"'),
    ("blurb.prompt: not in the store; record it and run `spade eval` first", '"SPADE: Run evaluation"'),
    ("blurb.prompt: no finished sampling run; run `spade sample blurb.prompt` first", '"SPADE: Sample reliability"'),
    (f"Sample reliability: {HOW_TO_CONFIGURE_PIPELINE}", "spade.model setting"),
    (f"--synthesizer llm needs a model; {HOW_TO_CONFIGURE_ASSISTANT}", "spade.assistantModel setting"),
    ("2 LLM-written function(s) not reviewed (`spade review blurb.prompt`)", '"Accept reviewed code"'),
    ("no spade daemon runs for /w and daemon_autostart is false; start one with `spade daemon --workspace /w` (x)",
     "spade.daemonAutostart setting"),
    ("blurb.prompt: no version 9; it has v1..v3 (see `spade history`)", "the prompt's history"),
    ("the prompt is larger than the limit; pass --max-prompt-bytes", "max_prompt_bytes setting"),
]  # fmt: skip


@pytest.mark.parametrize(("engine", "next_step"), ENGINE)
def test_no_cli_command_or_flag_reaches_the_editor(engine: str, next_step: str) -> None:
    said = for_editor(engine)
    assert not re.search(r"(?<![\w-])--[a-z]", said), said
    assert "`spade " not in said, said
    assert next_step in said, said


def test_plain_messages_pass_unchanged() -> None:
    message = "blurb.prompt: 3 version(s); the newest is v3 (2024-01-04)"
    assert for_editor(message) == message
