"""One way through: a prompt's settings are resolved once per request or job, the same way from every entry
point. The prompt's front matter sets ``tau`` and ``model`` (and ``auto_sample``), the workspace's spade.toml
other values: `spade select` and `spade sample` in-process, the same jobs in the daemon submitted as the palette
submits them, the daemon's automatic comparison after a save, and :func:`spade_lsp.config.resolve_file` all use
the front matter's; the editor's settings and the command line's options beat it alike."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from spade_lsp.cli import main
from spade_lsp.config import resolve_file
from spade_lsp.errors import ConfigError
from spade_lsp_client import DaemonClient, run_job
from spade_lsp_server.features.commands import _with_editor_settings
from tests.spade_lsp_client.daemons import Daemons, daemons
from tests.support.blurb import V3, sampling_workspace
from tests.support.openai_stub import OpenAIStub, chat_reply

__all__ = ["daemons"]

FRONT_MATTER_TAU = 0.7
FRONT_MATTER_MODEL = "openai/from-front-matter"
FILES_TAU = 0.4
FILES_MODEL = "openai/from-files"
OVERRIDE_MODEL = "openai/from-the-editor-or-cli"
FRONT_MATTER = f"---\ntau: {FRONT_MATTER_TAU}\nmodel: {FRONT_MATTER_MODEL}\nauto_sample: true\n---\n"


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub(lambda request: chat_reply("A lovely thing for you.")) as server:
        yield server


@pytest.fixture
def prompt(workspace_dir: Path, stub: OpenAIStub) -> Path:
    path = sampling_workspace(workspace_dir)
    path.write_text(FRONT_MATTER + V3, encoding="utf-8")
    (workspace_dir / "spade.toml").write_text(
        f'tau = {FILES_TAU}\nmodel = "{FILES_MODEL}"\napi_base = "{stub.api_base}"\nclassifier = "offline"\n'
        "samples_per_input = 1\nsample_inputs = 2\n",
        encoding="utf-8",
    )
    return path


def cli(*argv: str) -> dict[str, Any]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main([*argv, "--json"])
    assert code in (0, 1), out.getvalue()
    document: dict[str, Any] = json.loads(out.getvalue())
    return document


def models_asked(stub: OpenAIStub, since: int) -> set[str]:
    return {str(request["model"]) for request in stub.requests[since:]}


def test_every_entry_point_resolves_the_same_tau_and_model(
    workspace_dir: Path, prompt: Path, stub: OpenAIStub, daemons: Daemons
) -> None:
    root = workspace_dir.resolve()
    # (d) resolve, directly
    direct = resolve_file(root, prompt)
    assert (direct.tau, direct.model) == (FRONT_MATTER_TAU, FRONT_MATTER_MODEL)
    assert (direct.tau, direct.model) != (FILES_TAU, FILES_MODEL)

    # (a) the CLI, in-process (no daemon runs): the selection's tau, and the model the sampling run asked
    cli("eval", str(prompt))
    selected_here = cli("select", str(prompt), "--folds", "0")
    assert selected_here["tau"] == direct.tau
    assert cli("select", str(prompt), "--folds", "0", "--tau", "0.35")["tau"] == 0.35  # as --model beats it
    before = len(stub.requests)
    sampled_here = cli("sample", str(prompt))
    assert sampled_here["model"] == direct.model and models_asked(stub, before) == {"from-front-matter"}
    before = len(stub.requests)
    overridden_here = cli("sample", str(prompt), "--model", OVERRIDE_MODEL)  # the command line beats it
    assert overridden_here["model"] == OVERRIDE_MODEL and models_asked(stub, before) == {"from-the-editor-or-cli"}

    # (b) the same jobs in the daemon, submitted as the palette submits them (its params and the editor's settings)
    daemons.start(root)

    def palette(kind: str, params: dict[str, Any], editor: dict[str, Any]) -> dict[str, Any]:
        job = run_job(root, kind, prompt, _with_editor_settings(params, editor), client_name="editor", timeout_s=60)
        assert job["status"] == "done", job
        result: dict[str, Any] = job["result"]
        return result

    assert palette("select", {}, {})["tau"] == selected_here["tau"] == FRONT_MATTER_TAU
    assert palette("select", {}, {"tau": 0.2})["tau"] == 0.2  # the editor's settings beat the front matter
    # a threshold the command itself is given travels as --model does: in the job's settings, over the editor's
    assert palette("select", {"settings": {"tau": 0.35}}, {"tau": 0.2})["tau"] == 0.35
    # and the CLI's --tau and --model reach the daemon's job the same way (its settings), resolved there once
    from spade_lsp.cli import _overrides, build_parser

    args = build_parser().parse_args(["select", str(prompt), "--tau", "0.35", "--model", OVERRIDE_MODEL])
    assert _overrides(args) == {"tau": 0.35, "model": OVERRIDE_MODEL}
    selected_there = cli("select", str(prompt), "--folds", "0", "--tau", "0.35", "--workspace", str(root))
    assert selected_there["tau"] == 0.35
    # the same model and messages as the CLI's runs: answered from the LLM cache those filled (it is keyed by
    # the model), so nothing new is asked
    before = len(stub.requests)
    sampled_there = palette("sample", {}, {})
    assert sampled_there["model"] == sampled_here["model"] == FRONT_MATTER_MODEL
    overridden_there = palette("sample", {}, {"model": OVERRIDE_MODEL})
    assert overridden_there["model"] == overridden_here["model"] == OVERRIDE_MODEL
    assert sampled_there["calls_cached"] > 0 and overridden_there["calls_cached"] > 0
    assert len(stub.requests) == before

    # (c) the daemon's automatic comparison after a save: only the front matter turns auto_sample on and names
    # the model, so a comparison that runs at all, on that model, resolved the prompt's own settings
    prompt.write_text(FRONT_MATTER + V3 + "Mention the price.\n", encoding="utf-8")
    before = len(stub.requests)
    compared = asyncio.run(_record_and_wait_for_the_comparison(root, prompt))
    assert compared["status"] == "done" and compared["client"] == "daemon", compared
    assert {variant["model"] for variant in compared["result"]["variants"]} == {FRONT_MATTER_MODEL}
    assert models_asked(stub, before) == {"from-front-matter"}


async def _record_and_wait_for_the_comparison(root: Path, prompt: Path) -> dict[str, Any]:
    async with await DaemonClient.connect(root, client_name="editor", start=False) as client:
        answer = await client.request("prompt/record", {"path": str(prompt), "settings": {}})
        assert answer["version"] == 2  # recorded by this request, or by the watcher just before it

        async def finished() -> dict[str, Any] | None:
            jobs = await client.request("job/list", {"path": str(prompt)})
            return next((job for job in jobs if job["kind"] == "compare" and job["finished_at"]), None)

        found: dict[str, Any] | None = None
        for _ in range(600):
            found = await finished()
            if found is not None:
                break
            await asyncio.sleep(0.1)
        assert found is not None, "no automatic comparison finished"
        return found


def test_auto_compare_needs_the_prompts_own_settings_files_alone_do_not_turn_it_on(
    workspace_dir: Path, prompt: Path, daemons: Daemons
) -> None:
    """Without the front matter's ``auto_sample`` (the files do not set it) a save queues no comparison."""
    root = workspace_dir.resolve()
    prompt.write_text(f"---\nmodel: {FRONT_MATTER_MODEL}\n---\n" + V3, encoding="utf-8")
    assert resolve_file(root, prompt).auto_sample is False
    daemons.start(root)

    async def save_twice() -> list[dict[str, Any]]:
        async with await DaemonClient.connect(root, client_name="editor", start=False) as client:
            await client.request("prompt/record", {"path": str(prompt)})
            prompt.write_text(
                f"---\nmodel: {FRONT_MATTER_MODEL}\n---\n" + V3 + "Mention the price.\n", encoding="utf-8"
            )
            answer = await client.request("prompt/record", {"path": str(prompt)})
            assert answer["version"] == 2
            jobs: list[dict[str, Any]] = await client.request("job/list", {})
            return jobs

    assert [job["kind"] for job in asyncio.run(save_twice()) if job["kind"] == "compare"] == []


def test_a_settings_error_names_the_prompt(workspace_dir: Path) -> None:
    prompt = workspace_dir / "bad.prompt"
    for front_matter, fault in (("tau: 3", "tau"), ("tau: [0.2", "invalid YAML"), ("- a list", "must be a mapping")):
        prompt.write_text(f"---\n{front_matter}\n---\nKeep it short.\n", encoding="utf-8")
        with pytest.raises(ConfigError) as raised:
            resolve_file(workspace_dir, prompt)
        assert str(prompt) in str(raised.value) and fault in str(raised.value)


def test_a_jobs_settings_decide_how_its_prompt_is_read(workspace_dir: Path, daemons: Daemons) -> None:
    """``max_prompt_bytes`` from the job's settings (the editor's, or the command line's) beats the files' for
    everything the job reads, recording the prompt included."""
    root = workspace_dir.resolve()
    (root / "spade.toml").write_text('classifier = "offline"\nmax_prompt_bytes = 1000\n', encoding="utf-8")
    prompt = root / "long.prompt"
    prompt.write_text("Keep it under 100 words. " * 100 + "\n", encoding="utf-8")
    assert resolve_file(root, prompt, {"max_prompt_bytes": 100_000}).max_prompt_bytes == 100_000
    daemons.start(root)
    refused = run_job(root, "synthesize", prompt, {"synthesizer": "offline"}, client_name="editor", timeout_s=60)
    assert refused["status"] == "failed" and "1 kB" in (refused["error"] or ""), refused
    params = {"synthesizer": "offline", "settings": {"max_prompt_bytes": 100_000}}
    done = run_job(root, "synthesize", prompt, params, client_name="editor", timeout_s=60)
    assert done["status"] == "done", done
    assert done["result"]["candidates"], done["result"]


def _restated_defaults() -> list[str]:
    """Every parameter (or class attribute) of the engine, the server and the client that is named like a setting
    and defaults to that setting's own default: a second declaration that drifts when the setting changes."""
    import ast

    from spade_lsp.config import Settings

    defaults = {name: field.default for name, field in Settings.model_fields.items()}
    root = Path(__file__).resolve().parents[2]
    found = []
    for package in ("spade_lsp", "server/spade_lsp_server", "client/spade_lsp_client"):
        for path in sorted((root / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                named: list[tuple[str, ast.expr]] = []
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    positional = node.args.posonlyargs + node.args.args
                    named += [(a.arg, d) for a, d in zip(positional[::-1], node.args.defaults[::-1], strict=False)]
                    keywords = zip(node.args.kwonlyargs, node.args.kw_defaults, strict=True)
                    named += [(a.arg, d) for a, d in keywords if d is not None]
                elif isinstance(node, ast.ClassDef) and node.name != "Settings":
                    named += [
                        (s.target.id, s.value)
                        for s in node.body
                        if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.value is not None
                    ]
                for name, default in named:
                    try:
                        value = ast.literal_eval(default)
                    except ValueError:
                        continue
                    if name in defaults and value is not None and value == defaults[name]:
                        found.append(f"{path.relative_to(root)}:{default.lineno} {name}={value!r}")
    return found


def test_no_signature_restates_a_settings_default() -> None:
    assert _restated_defaults() == []


#: Flags and job params whose names are not their setting's.
_RENAMED = {"samples": "samples_per_input", "inputs": "sample_inputs"}


def _subparsers() -> dict[str, Any]:
    import argparse

    from spade_lsp.cli import build_parser

    (commands,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(commands.choices)


def test_a_flag_that_sets_a_setting_takes_its_help_and_default_from_the_settings_model() -> None:
    """The command line's flags for settings say what the setting's description and default say: generated, so
    a default changed in the model changes every flag's help (no help text restates one)."""
    from spade_lsp.config import Settings, setting_default

    checked = set()
    for command, parser in _subparsers().items():
        for action in parser._actions:
            name = _RENAMED.get(action.dest, action.dest)
            if name not in Settings.model_fields or not action.option_strings:
                continue
            default = setting_default(name)
            shown = "none" if default is None else json.dumps(default) if isinstance(default, bool | str) else default
            assert f"(the setting `{name}`, default {shown})" in (action.help or ""), (command, action.option_strings)
            checked.add(name)
    assert {"tau", "alpha", "model", "samples_per_input", "confidence", "interval", "early_stopping"} <= checked


def test_a_job_param_that_sets_a_setting_refuses_what_the_setting_refuses() -> None:
    """Every job param named for a setting has the setting's bounds and choices, declared once in the model: a
    value the settings would refuse is refused when the job is submitted, naming the param."""
    from spade_lsp.config import Settings
    from spade_lsp.jobs import JOB_KINDS, spec
    from spade_lsp.jobs._spec import JobParamsError

    checked = set()
    for kind in JOB_KINDS:
        params = spec(kind).params
        for field_name, field in params.model_fields.items():
            name = _RENAMED.get(field_name, field_name)
            if name not in Settings.model_fields or field_name in ("settings", "verify"):
                continue
            extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
            assert extra.get("setting") == name, f"{kind}.{field_name} does not declare the setting it sets"
            bounds = [m for m in Settings.model_fields[name].metadata if type(m).__name__ in ("Ge", "Gt", "Le", "Lt")]
            assert list(field.metadata) == bounds, (kind, field_name)
            checked.add((kind, field_name))
    assert {("sample", "samples"), ("sample", "confidence"), ("compare", "temperature")} <= checked
    from spade_lsp.jobs.sample import SampleParams

    for raw, message in (
        ({"samples": 0}, "params.samples: expected an integer in [1, 10000], got 0"),
        ({"confidence": 1.0}, "params.confidence: expected a number in (0, 1), got 1.0"),
        ({"interval": "exact"}, "params.interval: expected one of wilson, clopper-pearson, got 'exact'"),
    ):
        with pytest.raises(JobParamsError) as refused:
            spec("sample").parse(raw)
        assert str(refused.value) == message
    assert SampleParams.model_fields["samples"].json_schema_extra == {
        "expected": "an integer in [1, 10000]",
        "nullable": False,
        "setting": "samples_per_input",
    }


def test_a_jobs_sampling_knobs_are_settings_resolved_with_the_rest(
    workspace_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--samples 2`` (a job's ``samples``) and ``samples_per_input`` in the front matter are one setting,
    resolved once with the others: the job's value beats the front matter's, which beats the files'; what the
    job does not set keeps the front matter's value."""
    import dataclasses

    from spade_lsp import jobs
    from spade_lsp.jobs import sample
    from spade_lsp.workspace import Workspace

    prompt = sampling_workspace(workspace_dir)
    prompt.write_text("---\nsamples_per_input: 3\nconfidence: 0.8\n---\n" + V3, encoding="utf-8")
    (workspace_dir / "spade.toml").write_text("samples_per_input = 7\ninterval = 'clopper-pearson'\n")
    seen: list[Any] = []
    fake = dataclasses.replace(sample.SPEC, run=lambda ctx, params, progress: seen.append(ctx.settings) or {})
    monkeypatch.setattr(sample, "SPEC", fake)
    with Workspace(workspace_dir) as workspace:
        jobs.run_here(workspace, "sample", prompt, {"samples": 2, "temperature": 0.3}, lambda m, p: None)
        jobs.run_here(workspace, "sample", prompt, {}, lambda m, p: None)
    given, plain = seen
    assert (given.samples_per_input, given.temperature, given.confidence, given.interval) == (
        2, 0.3, 0.8, "clopper-pearson"
    )  # fmt: skip
    assert (plain.samples_per_input, plain.temperature, plain.confidence) == (3, None, 0.8)
