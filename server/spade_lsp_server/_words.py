"""Engine messages in the editor's words: the engine tells a terminal user which command or flag to run next; in
the editor the next step is a palette command, a setting, or a file to open, and these rewrite it so.

Every message the server shows (notifications and command errors) goes through :func:`for_editor`; a test
asserts that no rewritten message names a ``spade`` subcommand or a ``--flag``.
"""

from __future__ import annotations

import re
from typing import Final

#: (pattern, replacement), applied in order. The palette commands' titles are the extension's ("SPADE: ...").
_REWRITES: Final[tuple[tuple[re.Pattern[str], str], ...]] = tuple(
    (re.compile(pattern), replacement)
    for pattern, replacement in (
        # how to configure a model (the engine's HOW_TO_CONFIGURE_* lines)
        (
            r"no model is configured: set `model` under \[tool\.spade\].*?(?:also set api_base|$)",
            'no model is configured: set the spade.model setting (any litellm model name, or "local" for the '
            "embedded model), or `model` in spade.toml",
        ),
        (
            r"no assistant model is configured: set `assistant_model` under \[tool\.spade\].*?in the editor",
            "no assistant model is configured: set the spade.assistantModel setting (a litellm model name, "
            '"local" for the embedded model, or "same" for the pipeline\'s model)',
        ),
        (r"import some with `spade import [^`]*`", 'add labelled examples with "Open examples" (Ctrl+.)'),
        (r"or run `spade import [^`]*`", 'or use "Open examples" (Ctrl+.)'),
        (r"run `spade synthesize [^`]*` first", 'add assertions first ("Add assertion" on an instruction, Ctrl+.)'),
        (r"run `spade eval[^`]*` first", 'run "SPADE: Run evaluation" first'),
        (r"run `spade sample [^`]*` first", 'run "SPADE: Sample reliability" first'),
        (r"run `spade history [^`]*` first", "let the history load (it is read when the prompt opens)"),
        (r"record it and run `spade eval` first", 'save it, then run "SPADE: Run evaluation"'),
        (r"`spade review [^`]* --accept NAME`", 'the "Accept reviewed code" quick fix'),
        (r"`spade review [^`]*`", 'the "Accept reviewed code" quick fixes'),
        (r"run `spade judge [^`]*`", "judge the examples with a model (the CLI's judge command)"),
        (
            r"start one with `spade daemon --workspace [^`]*`",
            "turn on the spade.daemonAutostart setting (or daemon_autostart in spade.toml)",
        ),
        (r"\bpass --model\b", "set the spade.model setting"),
        (r"\bpass --assistant-model\b", "set the spade.assistantModel setting"),
        (r"--synthesizer llm needs a model", "a model-written assertion needs a model"),
        (r"\(see `spade history`\)", "(see the prompt's history)"),
    )
)
_LEFTOVER_FLAG: Final = re.compile(r"(?<![\w-])--([a-z][a-z-]+)")


def for_editor(message: str) -> str:
    """``message`` with CLI commands and flags replaced by what the editor offers; a flag no rule knows becomes
    the setting of the same name (``--max-prompt-bytes`` -> the ``max_prompt_bytes`` setting)."""
    for pattern, replacement in _REWRITES:
        message = pattern.sub(replacement, message)
    return _LEFTOVER_FLAG.sub(lambda match: f"the {match.group(1).replace('-', '_')} setting", message)


#: What the editor's "configure an assistant model" action opens (VS Code's settings editor, filtered).
ASSISTANT_SETTING: Final = "spade.assistantModel"
