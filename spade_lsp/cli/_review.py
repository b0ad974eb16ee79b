"""``spade review PROMPT [--accept NAME ...] [--all]``: the user's reading of LLM-written functions."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from spade_lsp._files import read_sidecar_text, sidecar_path
from spade_lsp._review import Unreviewed, accept, function_texts, unreviewed
from spade_lsp.errors import InputError


def add_review_parser(commands: Any, common: Callable[[argparse.ArgumentParser], None]) -> None:
    review = commands.add_parser(
        "review",
        help="list the sidecar's LLM-written functions nobody reviewed yet, or accept them after reading them",
        description="Without options: list the LLM-written functions of PROMPT's sidecar module whose current "
        "text was not accepted (exit 1 when there are any). An acceptance holds for the exact text accepted: "
        "editing a function is not accepting it.",
    )
    review.add_argument("prompt", type=Path)
    group = review.add_mutually_exclusive_group()
    group.add_argument("--accept", action="append", metavar="NAME", help="accept this function as it is now (repeat)")
    group.add_argument("--all", action="store_true", help="accept every unreviewed function as it is now")
    common(review)


def run_review(
    args: argparse.Namespace,
    out: TextIO,
    open_workspace: Callable[[argparse.Namespace, Path], Any],
    in_daemon: Callable[[argparse.Namespace, dict[str, Any]], dict[str, Any] | None],
) -> int:
    """``spade review``: 0 when nothing is left unreviewed (or acceptances were recorded), 1 when listing finds
    unreviewed functions; acceptances go through the daemon when one runs (the store's one writer)."""
    from spade_lsp.workspace import sync_prompt

    module = sidecar_path(args.prompt)
    text = read_sidecar_text(module)
    if text is None:
        raise InputError(f"{module}: no sidecar module; run `spade synthesize {args.prompt}` first")
    with open_workspace(args, args.prompt) as workspace:
        key = workspace.history.prompt_key(args.prompt)
        pending = unreviewed(workspace.store, key, text)
        chosen: list[Unreviewed] = []
        if args.all:
            chosen = list(pending)
        elif args.accept:
            by_name = {item.name: item for item in pending}
            present = {function.name for function in function_texts(text)}
            for name in dict.fromkeys(args.accept):
                if name in by_name:
                    chosen.append(by_name[name])
                elif name in present:
                    print(f"spade: {name} needs no review (already accepted, or not LLM-written)", file=sys.stderr)
                else:
                    raise InputError(f"{module}: no function {name}")
        accepted: list[str] = []
        if chosen:
            params = {"accept": [{"name": item.name, "sha": item.sha} for item in chosen], "by": "cli"}
            result = in_daemon(args, params)
            if result is None:
                sync_prompt(workspace, args.prompt)
                accepted = accept(workspace.store, key, [(i.name, i.sha) for i in chosen], by="cli")
            else:
                accepted = list(result.get("accepted") or [])
            pending = unreviewed(workspace.store, key, text)
    if args.json:
        import json

        document = {"sidecar": str(module), "accepted": accepted, "unreviewed": [p.to_json() for p in pending]}
        out.write(json.dumps(document, ensure_ascii=False, indent=2) + "\n")
    else:
        for name in accepted:
            out.write(f"accepted {name}\n")
        for item in pending:
            out.write(f"{module}:{item.line + 1}: {item.name}: {item.message}\n")
        if not pending:
            out.write(f"{module}: no unreviewed LLM-written function\n")
        elif not accepted:
            out.write(f"read them, then: spade review {args.prompt} --accept NAME (or --all)\n")
    return 1 if pending and not (args.all or args.accept) else 0
