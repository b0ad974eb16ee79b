"""The ``spade`` command line: the engine's jobs without an editor, for terminals and CI.

Exit codes: 0 success; 1 the command ran and found failures; 2 usage or input errors. Every command takes
``--json``; without it output is a readable table. Errors are one line on stderr.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import dataclasses
import json
import os
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from spade_lsp.errors import InputError, SpadeError

if TYPE_CHECKING:
    from spade_lsp._prompts import PromptText
    from spade_lsp.config import Settings

EXIT_OK, EXIT_FAILURES, EXIT_USAGE = 0, 1, 2  # EXIT_FAILURES: the command ran and found failures


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        """argparse's own usage errors: the usage line, one error line, exit 2."""
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _common(parser: argparse.ArgumentParser) -> None:
    from spade_lsp.config import setting_choices, setting_help

    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--workspace", type=Path, help="workspace root (default: found from the prompt's path)")
    parser.add_argument("--model", help=setting_help("model"))
    parser.add_argument("--api-base", metavar="URL", help=setting_help("api_base"))
    parser.add_argument("--assistant-model", metavar="MODEL", help=setting_help("assistant_model"))
    parser.add_argument("--assistant-api-base", metavar="URL", help=setting_help("assistant_api_base"))
    parser.add_argument("--classifier", choices=setting_choices("classifier"), help=setting_help("classifier"))


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="spade", description="Prompt deltas, taxonomy and assertions for LLM pipelines.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    history = commands.add_parser("history", help="a prompt's recorded versions")
    history.add_argument("prompt", type=Path)
    history.add_argument("--no-sync", action="store_true", help="show the store only; do not read the file")
    _common(history)

    deltas = commands.add_parser("deltas", help="the labelled sentence deltas between versions")
    deltas.add_argument("prompt", type=Path)
    deltas.add_argument("--from", dest="from_number", type=int, metavar="N", help="start after version N")
    deltas.add_argument("--to", dest="to_number", type=int, metavar="N", help="stop at version N")
    deltas.add_argument("--no-sync", action="store_true", help="show the store only; do not read the file")
    _common(deltas)

    taxonomy = commands.add_parser("taxonomy", help="label deltas given as JSON lines")
    taxonomy.add_argument("--jsonl", type=Path, required=True, metavar="FILE")
    taxonomy.add_argument("--score", action="store_true", help="compare with each line's `labels` and print F1 instead")
    _common(taxonomy)

    imports = commands.add_parser("import", help="record versions of a prompt and/or labelled examples")
    imports.add_argument("prompt", type=Path)
    imports.add_argument("--versions", type=Path, metavar="FILE.json", help="a JSON list of versions, oldest first")
    imports.add_argument(
        "--examples", type=Path, metavar="FILE", help="examples (.jsonl: ours or the SPADE benchmark's; .csv)"
    )
    imports.add_argument(
        "--promptfoo",
        type=Path,
        metavar="RESULTS.json",
        help="a promptfoo run's results (`promptfoo eval -o RESULTS.json`): outputs labelled by their grades "
        "(a human rating wins)",
    )
    imports.add_argument(
        "--strict",
        action="store_true",
        help="examples: all or nothing; any bad line (imported with a warning or skipped otherwise) is an error "
        "and nothing is written",
    )
    _common(imports)

    export = commands.add_parser("export", help="write the prompt, examples and selected checks for another tool")
    export.add_argument("tool", choices=["promptfoo"], help="promptfoo: a promptfooconfig.yaml for `promptfoo eval`")
    export.add_argument("prompt", type=Path)
    export.add_argument(
        "-o", "--output", type=Path, metavar="FILE", help="default: promptfooconfig.yaml beside the prompt"
    )
    export.add_argument("--force", action="store_true", help="overwrite files that spade did not write")
    export.add_argument("--provider", metavar="ID", help="promptfoo's provider id (default: mapped from `model`)")
    export.add_argument("--python", metavar="PATH", help="the Python that runs the checks (default: this one)")
    _common(export)

    synthesize = commands.add_parser("synthesize", help="write assertion candidates into the sidecar module")
    synthesize.add_argument("prompt", type=Path)
    synthesize.add_argument(
        "--include-held-back",
        action="store_true",
        help="also write candidates that fail more than tau of the good examples, or raise on some",
    )
    synthesize.add_argument(
        "--synthesizer", choices=["auto", "offline", "llm"], default="auto", help="default: llm when a model is set"
    )
    _common(synthesize)

    evaluate = commands.add_parser("eval", help="run the sidecar's assertions on the examples, in the sandbox")
    evaluate.add_argument("prompt", type=Path)
    evaluate.add_argument("--examples", type=Path, metavar="FILE.jsonl", help="default: NAME.examples.jsonl")
    evaluate.add_argument("--timeout", type=float, default=5.0, metavar="S", help="per assertion call (default 5)")
    evaluate.add_argument("--memory-mb", type=int, metavar="MB", help="memory cap per worker")
    evaluate.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="the most worker processes at once (default: CPU count, max 4); a second starts only for work the first "
        "would not finish quickly",
    )
    _common(evaluate)

    from spade_lsp.cli._review import add_review_parser

    add_review_parser(commands, _common)

    from spade_lsp.cli._selection import add_select_parser

    add_select_parser(commands, _common)

    from spade_lsp.cli._reliability import add_reliability_parsers

    add_reliability_parsers(commands, _common)

    from spade_lsp.cli._judges import add_judge_parsers

    add_judge_parsers(commands, _common)

    lsp = commands.add_parser("lsp", help="serve the Language Server Protocol on stdio (editors start this)")
    lsp.add_argument("--stdio", action="store_true", help="accepted for editors that pass it; stdio is the default")
    lsp.add_argument("--log-file", type=Path, metavar="FILE", help="also write the server's log here")

    daemon = commands.add_parser("daemon", help="run the workspace daemon (the language server starts one itself)")
    daemon.add_argument("--workspace", type=Path, help="workspace root (default: found from the current directory)")
    daemon.add_argument("--idle-timeout", type=float, metavar="S", help="exit after S idle seconds (default: settings)")
    daemon.add_argument("--foreground", action="store_true", help="log to stderr as well")

    local = commands.add_parser("local-model", help='the embedded local model\'s server (`model = "local"`)')
    local.add_argument("action", choices=["status", "start", "stop"], help="show, start or stop the server")
    local.add_argument("--json", action="store_true", help="print JSON instead of a line")

    doctor = commands.add_parser("doctor", help="check what this machine can do: the sandbox's confinement first")
    doctor.add_argument("--workspace", type=Path, help="workspace root (default: found from the current directory)")
    doctor.add_argument("--json", action="store_true", help="print JSON instead of lines")

    trust = commands.add_parser(
        "trust",
        help="trust a workspace's own files to choose models, endpoints, key variables and the sandbox",
        description="A cloned repository's spade.toml, pyproject.toml, front matter and editor settings cannot "
        "choose where requests and API keys go, nor loosen the sandbox, until you trust the workspace. Trust is "
        "recorded in your config directory ($XDG_CONFIG_HOME/spade/trusted.json) and covers the folders below.",
    )
    trust.add_argument(
        "directory", type=Path, nargs="?", help="the workspace (default: found from the current directory)"
    )
    action = trust.add_mutually_exclusive_group()
    action.add_argument("--list", action="store_true", help="list the trusted workspaces")
    action.add_argument("--revoke", action="store_true", help="stop trusting the workspace")
    action.add_argument("--status", action="store_true", help="say whether the workspace is trusted")

    demo = commands.add_parser("demo", help="run the pipeline offline on the bundled demo prompt")
    demo.add_argument("--dir", type=Path, help="where to write the demo workspace (default: a temporary one)")
    _common(demo)
    return parser


def run() -> None:
    """The ``spade`` command: :func:`main`, then an exit that skips the interpreter's teardown. Tearing down every
    imported module (litellm's thousand most of all) took about a second after a command had finished, and a
    finished command has nothing left to tear down; what must still happen at exit happens first: other threads
    finish, atexit handlers run (logging's flush among them), buffered output is written."""
    _start_helpers_early(sys.argv[1:])
    code = main()
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a reader that left, or a closed stream: nothing to write
            stream.flush()
    os._exit(code)


#: the commands that sample the pipeline (``check`` unless it reads the latest run)
_SAMPLING_COMMANDS = frozenset({"sample", "compare", "check"})


def _start_helpers_early(argv: Sequence[str]) -> None:
    """The LLM helpers started before anything else, for a command that will sample: their litellm import (about
    two seconds, before any call can go out) then overlaps even the command's own imports and argument parsing.
    Read from the raw arguments, as cheaply as that can be: a command this misses starts them a little later,
    when it knows it samples; helpers a command then does not use (it was handed to the workspace's daemon, or it
    stopped at a bad flag) are stopped with it."""
    words = [word for word in argv if not word.startswith("-")]
    if not words or words[0] not in _SAMPLING_COMMANDS or {"-h", "--help", "--latest"} & set(argv):
        return
    from spade_lsp._llm_helper import start_early

    start_early()


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler: Callable[[argparse.Namespace, TextIO], int] = _HANDLERS[args.command]
    try:
        _say_what_an_untrusted_workspace_cannot_set(args)
        return handler(args, sys.stdout)
    except SpadeError as error:  # bad input, an unusable store or model: the command could not run
        print(f"spade: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `spade ... --json | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except Exception as error:  # a store damaged past its header: one line and the fix, as for a bad header
        from spade_lsp.store import store_damage

        damage = store_damage(error, _root_of(args))
        if damage is None:
            raise
        print(f"spade: error: {damage}", file=sys.stderr)
        return EXIT_USAGE


def _root_of(args: argparse.Namespace) -> Path | None:
    """The workspace a command works in, when it names one or a prompt (for messages only)."""
    from spade_lsp.config import find_workspace_root

    if getattr(args, "workspace", None) is not None:
        return Path(args.workspace)
    prompt = getattr(args, "prompt", None)
    return find_workspace_root(prompt) if isinstance(prompt, Path) else None


def _say_what_an_untrusted_workspace_cannot_set(args: argparse.Namespace) -> None:
    """One line on stderr when the workspace's own files ask for settings only a trusted workspace may set."""
    prompt = getattr(args, "prompt", None)
    if not isinstance(prompt, Path):
        return
    from spade_lsp._files import confine_prompt
    from spade_lsp._prompts import prompt_kind, read_prompt_file
    from spade_lsp.config import find_workspace_root, untrusted_note

    root = args.workspace if getattr(args, "workspace", None) is not None else find_workspace_root(prompt)
    try:
        confine_prompt(root, prompt)
        text: str | None = read_prompt_file(prompt, max_bytes=1_000_000)
    except SpadeError:
        text = None  # the command reports it
    note = untrusted_note(root, text, kind=prompt_kind(prompt), source=str(prompt))
    if note is not None:
        print(f"spade: note: {note}", file=sys.stderr)


def _cmd_trust(args: argparse.Namespace, out: TextIO) -> int:
    from spade_lsp import trust
    from spade_lsp.config import find_workspace_root

    if args.list:
        for record in trust.trusted_roots():
            out.write(f"{record.path}  trusted {record.trusted_at} ({record.by})\n")
        return EXIT_OK
    root = args.directory if args.directory is not None else find_workspace_root(Path.cwd())
    if not root.is_dir():
        raise InputError(f"{root}: not a directory")
    if args.status:
        state = "trusted" if trust.is_trusted(root) else "not trusted"
        out.write(f"{root.resolve()}: {state} (records in {trust.config_dir() / trust.TRUST_FILE})\n")
        return EXIT_OK
    if args.revoke:
        done = trust.revoke(root)
        out.write(f"{root.resolve()}: {'no longer trusted' if done else 'was not trusted (nothing recorded for it)'}\n")
        return EXIT_OK
    record = trust.trust(root, by="cli")
    out.write(
        f"{record.path}: trusted; its own files may now choose models, endpoints, key variables and the sandbox "
        f"(`spade trust --revoke {record.path}` undoes it)\n"
    )
    return EXIT_OK


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The command line's settings (flags a command has that name a setting): every command's one reading of
    them, handed to ``resolve`` (or to the daemon's job, which resolves them) over the files and front matter."""
    return {
        key: value
        for key, value in {
            "model": args.model,
            "api_base": args.api_base,
            "assistant_model": args.assistant_model,
            "assistant_api_base": args.assistant_api_base,
            "classifier": args.classifier,
            "batch": getattr(args, "batch", None),
            "executor": getattr(args, "executor", None),
            "ray_address": getattr(args, "ray_address", None),
            "tau": getattr(args, "tau", None),
            "alpha": getattr(args, "alpha", None),
        }.items()
        if value is not None
    }


def _prompt_settings(args: argparse.Namespace, workspace: Any, prompt: Path | None) -> Settings:
    """The settings a command runs ``prompt`` with, resolved once: the workspace's files, the prompt's own
    settings (front matter), then the command line's options (the same a daemon job gets from them)."""
    from spade_lsp.config import resolve, resolve_file

    if prompt is None:
        return resolve(workspace.root, None, _overrides(args), overrides_source=_COMMAND_LINE)
    return resolve_file(workspace.root, prompt, _overrides(args), overrides_source=_COMMAND_LINE)


_COMMAND_LINE = "command line"


def _open_workspace(args: argparse.Namespace, anchor: Path) -> Any:
    """The workspace of ``anchor`` (a prompt, or a folder); a prompt or a file kept beside it that resolves
    outside the workspace is refused here, before anything is read or written."""
    from spade_lsp._files import confine_prompt
    from spade_lsp.config import find_workspace_root
    from spade_lsp.workspace import Workspace

    root = args.workspace if args.workspace is not None else find_workspace_root(anchor)
    if os.path.lexists(anchor) and not anchor.is_dir():
        confine_prompt(root, anchor)
    workspace = Workspace(root, overrides=_overrides(args))
    for run in workspace.settled:  # a run a killed command left behind: ended now, and said once
        what = "sampling" if run.table == "sample_runs" else "judge"
        print(
            f"spade: note: {what} run {run.run_id} was left running by a process that is gone (killed or crashed); "
            "it is now marked interrupted, and what it stored is reused by the next run",
            file=sys.stderr,
        )
    return workspace


def _daemon_root(args: argparse.Namespace, anchor: Path) -> Path | None:
    """The workspace root when its daemon runs: the daemon is the store's one writer, so the command hands it
    the job, with the command line's ``--model`` and ``--api-base`` as the job's settings. ``--classifier``
    runs here instead: it decides how the history is recorded, which the daemon does with its own."""
    if args.classifier is not None:
        return None
    from spade_lsp.config import find_workspace_root
    from spade_lsp_client import daemon_running

    root = (args.workspace if args.workspace is not None else find_workspace_root(anchor)).resolve()
    return root if daemon_running(root) else None


def _progress_to_stderr(progress: dict[str, Any]) -> None:
    if sys.stderr.isatty():
        print(f"spade: {progress.get('message', '')}", file=sys.stderr)


def _daemon_job(args: argparse.Namespace, root: Path, kind: str, params: dict[str, Any]) -> dict[str, Any]:
    """Run one job on ``args.prompt`` in the workspace's daemon and return its result; a job that did not finish
    is an error."""
    from spade_lsp._llm_helper import release_unused
    from spade_lsp_client import NotQueuedError, run_job

    # the daemon's own helpers send its calls: any this command started early would spend seconds loading litellm,
    # for nothing, on a core the daemon's own import needs
    release_unused()
    overrides = _overrides(args)
    if overrides:
        params = {**params, "settings": overrides}
    try:
        job = run_job(root, kind, args.prompt.resolve(), params, on_progress=_progress_to_stderr)
    except NotQueuedError as lost:  # the daemon went away before taking the job: do it here instead
        from spade_lsp._progress import no_progress
        from spade_lsp.jobs import run_here

        print(f"spade: note: {lost}; running it here instead", file=sys.stderr)
        with _open_workspace(args, args.prompt) as workspace:
            return run_here(workspace, kind, args.prompt, params, no_progress, overrides=overrides)
    if job["status"] != "done":
        raise SpadeError(f"the daemon's {kind} job {job['id']} {job['status']}: {job.get('error') or 'no reason'}")
    result: dict[str, Any] = job["result"]
    return result


def _daemon_record(root: Path, prompt: Path) -> list[str]:
    """``sync_prompt`` done by the daemon; returns its warnings."""
    import asyncio

    from spade_lsp_client import DaemonClient

    async def record() -> list[str]:
        async with await DaemonClient.connect(root, client_name="cli", start=False) as client:
            answer = await client.request("prompt/record", {"path": str(prompt.resolve())})
        return [str(warning) for warning in answer.get("warnings", [])]

    return asyncio.run(record())


def _sync(args: argparse.Namespace, workspace: Any) -> None:
    """Bring the store up to date with the prompt, through the daemon when one runs."""
    from spade_lsp.workspace import sync_prompt

    root = _daemon_root(args, args.prompt)
    _warn(_daemon_record(root, args.prompt) if root is not None else sync_prompt(workspace, args.prompt))


def _warn(warnings: Sequence[str]) -> None:
    for warning in warnings:
        print(f"spade: warning: {warning}", file=sys.stderr)


def _jsonable(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    return str(value)


def _emit_json(out: TextIO, value: Any) -> None:
    from spade_lsp._columns import dump_json

    dump_json(value, out, default=_jsonable)
    out.write("\n")


# -- history ---------------------------------------------------------------------------------------------


def _cmd_history(args: argparse.Namespace, out: TextIO) -> int:
    from spade_lsp._render import render_history

    with _open_workspace(args, args.prompt) as workspace:
        if not args.no_sync:
            _sync(args, workspace)
        versions = workspace.history.versions(args.prompt)
        if not versions:
            raise InputError(f"{args.prompt}: no versions recorded")
        if args.json:
            _emit_json(out, {"prompt": workspace.history.prompt_key(args.prompt), "versions": versions})
        else:
            out.write(render_history(workspace.history.prompt_key(args.prompt), versions))
    return EXIT_OK


def _cmd_deltas(args: argparse.Namespace, out: TextIO) -> int:
    from spade_lsp._render import delta_as_json, render_deltas

    with _open_workspace(args, args.prompt) as workspace:
        if not args.no_sync:
            _sync(args, workspace)
        deltas = workspace.history.deltas(args.prompt, from_number=args.from_number, to_number=args.to_number)
        if args.json:
            _emit_json(
                out,
                {
                    "prompt": workspace.history.prompt_key(args.prompt),
                    "deltas": [delta_as_json(d) for d in deltas],
                },
            )
        else:
            out.write(render_deltas(workspace.history.prompt_key(args.prompt), deltas))
    return EXIT_OK


def _cmd_import(args: argparse.Namespace, out: TextIO) -> int:
    if args.versions is None and args.examples is None and args.promptfoo is None:
        raise InputError("nothing to import: pass --versions FILE.json and/or --examples FILE (or --promptfoo FILE)")
    if args.examples is not None and args.promptfoo is not None:
        raise InputError("pass --examples FILE or --promptfoo FILE, not both")
    examples, template = None, None
    if args.examples is not None or args.promptfoo is not None:  # read and checked (a dry merge) before versions
        from spade_lsp._examples import merge_examples, parse_examples
        from spade_lsp._files import confine_prompt, examples_path
        from spade_lsp._promptfoo_interop import read_promptfoo_results
        from spade_lsp.config import find_workspace_root

        confine_prompt(args.workspace or find_workspace_root(args.prompt), args.prompt)  # the file merged into
        examples = parse_examples(args.examples) if args.promptfoo is None else read_promptfoo_results(args.promptfoo)
        template = _examples_template(args)
        merge_examples(examples_path(args.prompt), examples, strict=args.strict, template=template, write=False)
    if args.versions is not None:
        _import_versions(args, out)
    if examples is not None:
        result = merge_examples(examples_path(args.prompt), examples, strict=args.strict, template=template)
        _report_examples(args, out, result)
    return EXIT_OK


_WARNINGS_SHOWN = 50  # on stderr; --json lists them all


def _examples_template(args: argparse.Namespace) -> PromptText | None:
    """The prompt, to check the examples' inputs against its placeholders: the file, or the newest of the
    versions being imported; None when neither can be read or parsed."""
    from spade_lsp._inputs import read_versions_file
    from spade_lsp._prompts import parse_prompt, prompt_kind, read_prompt_file
    from spade_lsp.config import Settings

    try:
        if args.prompt.exists():
            text = read_prompt_file(args.prompt, max_bytes=Settings().max_prompt_bytes)
        elif args.versions is not None:
            text = read_versions_file(args.versions)[-1]
        else:
            return None
    except (SpadeError, OSError):
        return None  # the versions' own import says what is wrong with them
    try:
        return parse_prompt(text, source=str(args.prompt), kind=prompt_kind(args.prompt))
    except SpadeError:
        return None  # the versions' own import says what is wrong with them


def _report_examples(args: argparse.Namespace, out: TextIO, result: Any) -> None:
    shown = [str(warning) for warning in result.warnings[:_WARNINGS_SHOWN]]
    if len(result.warnings) > _WARNINGS_SHOWN:
        shown.append(f"{len(result.warnings) - _WARNINGS_SHOWN} more warning(s); --json lists them all")
    _warn(shown)
    if args.json:
        _emit_json(out, result.to_json())
    else:
        rejected = f", {result.rejected} not imported (see the warnings)" if result.rejected else ""
        out.write(
            f"{result.path}: {result.added} example(s) added, {result.skipped} already there{rejected}; "
            f"{result.total} in all\n"
        )


def _import_versions(args: argparse.Namespace, out: TextIO) -> None:
    from spade_lsp._history import Revision
    from spade_lsp._inputs import read_versions_file
    from spade_lsp._relabel import relabel_prompt

    texts = read_versions_file(args.versions)
    with _open_workspace(args, args.prompt) as workspace:
        # recorded with offline labels at once; an assistant model relabels them afterwards
        result = workspace.history.record_revisions(args.prompt, [Revision(text=t, origin="import") for t in texts])
        if len(texts) > 1 and len(set(texts)) == 1:
            _warn([f"{args.versions}: all {len(texts)} versions are identical"])
        relabelled = relabel_prompt(workspace, args.prompt, settings=_prompt_settings(args, workspace, args.prompt))
        summary = {
            "prompt": workspace.history.prompt_key(args.prompt),
            "added": result.added,
            "unchanged": result.unchanged,
            "versions": len(workspace.history.versions(args.prompt)),
            "labels": relabelled.to_json(),
            "fallbacks": relabelled.fallbacks.to_json(),
        }
        if args.json:
            _emit_json(out, summary)
        else:
            labelled = f"; labelled by {relabelled.classifier}" if relabelled.classifier else ""
            out.write(
                f"{summary['prompt']}: {result.added} version(s) recorded, {result.unchanged} unchanged skipped; "
                f"{summary['versions']} in its history{labelled}\n"
            )
            _warn(relabelled.fallbacks.messages())


def _cmd_export(args: argparse.Namespace, out: TextIO) -> int:
    from spade_lsp._promptfoo_interop import export_promptfoo

    with _open_workspace(args, args.prompt) as workspace:
        done = export_promptfoo(
            workspace,
            args.prompt,
            settings=_prompt_settings(args, workspace, args.prompt),
            output=args.output,
            force=args.force,
            provider=args.provider,
            python=args.python,
        )
    _warn(done.warnings)
    if args.json:
        _emit_json(out, done.to_json())
    else:
        checks = ", ".join(f"{a['name']} (min {a['threshold']:g})" for a in done.assertions)
        out.write(
            f"{done.config}: {done.tests} test(s) on {done.provider}; checks: {checks}\n"
            f"{done.adapter}: the checks promptfoo calls (run in spade's sandbox)\n"
            f"run: promptfoo eval -c {done.config} -o results.json; then: spade import {args.prompt} --promptfoo "
            "results.json\n"
        )
    return EXIT_OK


def _cmd_synthesize(args: argparse.Namespace, out: TextIO) -> int:
    from spade_lsp._fallbacks import Fallbacks
    from spade_lsp._files import sidecar_path
    from spade_lsp._progress import no_progress
    from spade_lsp._render import render_candidates, render_held_back
    from spade_lsp.jobs import run_here
    from spade_lsp.synthesis import Candidate

    params = {"synthesizer": args.synthesizer, "write": True, "include_held_back": args.include_held_back}
    root = _daemon_root(args, args.prompt)
    if root is not None:
        result = _daemon_job(args, root, "synthesize", params)
        module = str(sidecar_path(args.prompt))
    else:
        with _open_workspace(args, args.prompt) as workspace:
            result = run_here(workspace, "synthesize", args.prompt, params, no_progress, overrides=_overrides(args))
        module = str(result["sidecar"])
    candidates = [Candidate(**candidate) for candidate in result["candidates"]]
    warnings = result["warnings"]
    changes = {key: result[key] for key in ("added", "updated", "unchanged", "removed", "kept_edited")}
    fallbacks = Fallbacks.from_json([result.get("fallbacks") or []])
    _warn(warnings)
    _warn([f"fell back: {message}" for message in fallbacks.messages()])
    verdicts, held_back = result.get("verdicts") or {}, result.get("held_back") or []
    if args.json:
        document = {"module": module, "candidates": candidates, **changes, "fallbacks": fallbacks.to_json()}
        _emit_json(out, {**document, "verdicts": verdicts, "held_back": held_back})
    else:
        out.write(render_candidates(candidates, verdicts))
        if not args.include_held_back:
            out.write(render_held_back(held_back, checked=len(verdicts)))
        out.write(
            f"\n{module}: {len(changes['added'])} added, {len(changes['updated'])} updated, "
            f"{len(changes['unchanged'])} unchanged, {len(changes['removed'])} removed, "
            f"{len(changes['kept_edited'])} kept as you edited\n"
        )
    return EXIT_OK


def _cmd_eval(args: argparse.Namespace, out: TextIO) -> int:
    from spade_lsp._assertion_jobs import evaluate, load_eval_run
    from spade_lsp._render import render_eval
    from spade_lsp.sandbox import SandboxLimits

    limits = SandboxLimits(timeout_s=args.timeout)
    if args.memory_mb is not None:
        limits = dataclasses.replace(limits, memory_mb=args.memory_mb)
    if args.workers is not None:
        limits = dataclasses.replace(limits, workers=args.workers)
    root = _daemon_root(args, args.prompt) if args.examples is None else None
    if root is not None:
        flags = {"timeout_s": args.timeout, "memory_mb": args.memory_mb, "workers": args.workers}
        result = _daemon_job(args, root, "evaluate", {k: v for k, v in flags.items() if v is not None})
        with _open_workspace(args, args.prompt) as workspace:
            run = load_eval_run(workspace.store, result["run_id"])
            tau = _prompt_settings(args, workspace, args.prompt).tau
        run.module_error, run.warnings = result["module_error"], result["warnings"]
    else:
        with _open_workspace(args, args.prompt) as workspace:
            settings = _prompt_settings(args, workspace, args.prompt)
            run = evaluate(workspace, args.prompt, settings=settings, examples_file=args.examples, limits=limits)
            tau = settings.tau
    _warn(run.warnings)
    if args.json:
        _emit_json(out, run.matrix_json())
    else:
        out.write(render_eval(run, tau))
    if run.module_error:
        print(f"spade: error: {run.module_error}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_FAILURES if run.failed_cells else EXIT_OK


def _cmd_review(args: argparse.Namespace, out: TextIO) -> int:
    from spade_lsp.cli._review import run_review

    def in_daemon(args: argparse.Namespace, params: dict[str, Any]) -> dict[str, Any] | None:
        root = _daemon_root(args, args.prompt)
        return None if root is None else _daemon_job(args, root, "review", params)

    return run_review(args, out, _open_workspace, in_daemon)


def _cmd_taxonomy(args: argparse.Namespace, out: TextIO) -> int:
    from spade_lsp._deltas import diff_texts
    from spade_lsp._inputs import read_jsonl
    from spade_lsp.taxonomy import delta_labels, ordered
    from spade_lsp.taxonomy.evaluate import evaluate, texts_from_line

    rows = read_jsonl(args.jsonl)
    pairs: list[tuple[str, str]] = []
    for number, row in rows:
        try:
            pairs.append(texts_from_line(row))
        except InputError as error:
            raise InputError(f"{args.jsonl}:{number}: {error}") from error
    from spade_lsp._fallbacks import Fallbacks
    from spade_lsp._relabel import KEPT, STEP, assistant_classifier

    anchor = args.workspace or Path.cwd()
    fallbacks = Fallbacks()
    with _open_workspace(args, anchor) as workspace:
        offline = workspace.history.classifier
        classifier = assistant_classifier(workspace, _prompt_settings(args, workspace, None), fallbacks) or offline
        predicted = []
        for before, after in pairs:
            changes = diff_texts(before, after)
            try:
                per_change = classifier.classify_changes(changes)
            except Exception as error:  # a side call that fails never aborts the command: offline labels
                fallbacks.add(STEP, error, KEPT)
                per_change = offline.classify_changes(changes)
            predicted.append(ordered(delta_labels(per_change)))
    _warn(fallbacks.messages())
    if not args.score:
        for labels in predicted:
            out.write(json.dumps({"labels": labels}) + "\n")
        return EXIT_OK
    gold: list[list[str]] = []
    for number, row in rows:
        gold_labels = row.get("labels")
        if not isinstance(gold_labels, list):
            raise InputError(f"{args.jsonl}:{number}: --score needs a `labels` list on every line")
        gold.append([str(label) for label in gold_labels])
    report = evaluate(list(zip(predicted, gold, strict=True)))
    if args.json:
        _emit_json(out, report)
    else:
        out.write(f"classifier {classifier.name} on {len(rows)} deltas\n{report.table()}\n")
    return EXIT_OK


def _cmd_select(args: argparse.Namespace, out: TextIO) -> int:
    from spade_lsp.cli._selection import run_select, select_params

    def in_daemon(args: argparse.Namespace) -> dict[str, Any] | None:
        root = _daemon_root(args, args.prompt) if args.solver == "highs" else None  # the daemon solves with HiGHS
        return None if root is None else _daemon_job(args, root, "select", select_params(args))

    return run_select(args, out, in_daemon, _overrides(args))


def _sample_in_daemon(args: argparse.Namespace, params: dict[str, Any]) -> dict[str, Any] | None:
    root = _daemon_root(args, args.prompt)
    return None if root is None else _daemon_job(args, root, "sample", params)


def _cmd_sample(args: argparse.Namespace, out: TextIO) -> int:
    from spade_lsp.cli._reliability import run_sample

    return run_sample(args, out, _open_workspace, _sample_in_daemon, _overrides(args))


def _compare_in_daemon(args: argparse.Namespace, params: dict[str, Any]) -> dict[str, Any] | None:
    root = _daemon_root(args, args.prompt)
    return None if root is None else _daemon_job(args, root, "compare", params)


def _cmd_check(args: argparse.Namespace, out: TextIO) -> int:
    from spade_lsp.cli._reliability import run_check

    return run_check(args, out, _open_workspace, _sample_in_daemon, _compare_in_daemon, _overrides(args))


def _cmd_compare(args: argparse.Namespace, out: TextIO) -> int:
    from spade_lsp.cli._reliability import run_compare

    return run_compare(args, out, _open_workspace, _compare_in_daemon, _overrides(args))


def _cmd_report(args: argparse.Namespace, out: TextIO) -> int:
    from spade_lsp.cli._reliability import run_report

    return run_report(args, out, _open_workspace)


def _cmd_judge(args: argparse.Namespace, out: TextIO) -> int:
    from spade_lsp.cli._judges import run_judge

    def in_daemon(args: argparse.Namespace, params: dict[str, Any]) -> dict[str, Any] | None:
        root = _daemon_root(args, args.prompt)
        return None if root is None else _daemon_job(args, root, "judge", params)

    return run_judge(args, out, _open_workspace, in_daemon, _overrides(args))


def _cmd_test(args: argparse.Namespace, out: TextIO) -> int:
    from spade_lsp.cli._judges import run_test, test_anchor

    anchor = test_anchor(args)  # a test file's workspace is the one it sits in
    root = None if args.list or args.name is None else _daemon_root(args, anchor)

    def in_daemon(path: Path, params: dict[str, Any]) -> dict[str, Any] | None:
        """A test file is the daemon's `test` job on that file."""
        if root is None:
            return None
        args.prompt = path  # the job's path
        return _daemon_job(args, root, "test", params)

    return run_test(
        args, out, _open_workspace, daemon_runs=root is not None, in_daemon=in_daemon, overrides=_overrides(args)
    )


def _cmd_lsp(args: argparse.Namespace, out: TextIO) -> int:
    """The language server lives in its own package (LSP glue only); the engine never imports pygls."""
    import spade_lsp_server

    return int(spade_lsp_server.main(["--log-file", str(args.log_file)] if args.log_file else []))


def _cmd_daemon(args: argparse.Namespace, out: TextIO) -> int:
    from spade_lsp.config import find_workspace_root
    from spade_lsp_server import daemon

    root = args.workspace if args.workspace is not None else find_workspace_root(Path.cwd())
    argv = ["--root", str(root)]
    if args.idle_timeout is not None:
        argv += ["--idle-timeout", str(args.idle_timeout)]
    if args.foreground:
        argv.append("--foreground")
    return int(daemon.main(argv))


def _cmd_local_model(args: argparse.Namespace, out: TextIO) -> int:
    """One server per user and machine: what it is, or start and stop it by hand (it stops itself when idle)."""
    from spade_lsp import local_model

    if args.action == "stop":
        stopped = local_model.stop_server()
        if args.json:
            _emit_json(out, {"installed": local_model.is_installed(), "stopped": stopped})
        else:
            out.write("local model: stopped\n" if stopped else "local model: no server was running\n")
        return EXIT_OK
    if args.action == "start":
        local_model.ensure_server()
    status = local_model.server_status()
    if args.json:
        _emit_json(out, {"installed": local_model.is_installed(), "server": status})
    elif status is None or not status.get("healthy"):
        installed = "installed" if local_model.is_installed() else f"not installed ({local_model.INSTALL_HINT})"
        out.write(f"local model: {installed}; no server running\n")
    else:
        out.write(f"local model: serving at {status['api_base']} (pid {status['pid']})\n")
    return EXIT_OK


def _cmd_doctor(args: argparse.Namespace, out: TextIO) -> int:
    """Exit 1 when generated assertions cannot run here (no kernel confinement and no opt-out)."""
    from spade_lsp._doctor import run_checks
    from spade_lsp.config import find_workspace_root

    root = args.workspace or find_workspace_root(Path.cwd())
    checks = run_checks(root.resolve() if (root / "spade.toml").exists() or (root / ".spade").exists() else None)
    if args.json:
        _emit_json(out, {"checks": [check.to_json() for check in checks]})
    else:
        width = max(len(check.name) for check in checks)
        for check in checks:
            out.write(f"{check.name:<{width}}  {check.status:<7}  {check.detail}\n")
    sandbox = next(check for check in checks if check.name == "sandbox")
    return EXIT_OK if sandbox.status != "error" else 1


def _cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    from spade_lsp.cli._demo import run_demo

    return run_demo(args, out)


_HANDLERS: dict[str, Callable[[argparse.Namespace, TextIO], int]] = {
    "history": _cmd_history,
    "deltas": _cmd_deltas,
    "taxonomy": _cmd_taxonomy,
    "import": _cmd_import,
    "export": _cmd_export,
    "synthesize": _cmd_synthesize,
    "trust": _cmd_trust,
    "eval": _cmd_eval,
    "review": _cmd_review,
    "select": _cmd_select,
    "sample": _cmd_sample,
    "check": _cmd_check,
    "compare": _cmd_compare,
    "report": _cmd_report,
    "judge": _cmd_judge,
    "test": _cmd_test,
    "lsp": _cmd_lsp,
    "daemon": _cmd_daemon,
    "local-model": _cmd_local_model,
    "doctor": _cmd_doctor,
    "demo": _cmd_demo,
}


if __name__ == "__main__":
    raise SystemExit(main())
