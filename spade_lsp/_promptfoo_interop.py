"""promptfoo interop, both ways.

- :func:`export_promptfoo` (``spade export promptfoo PROMPT [-o FILE]``) writes a ``promptfooconfig.yaml`` that
  runs as it is with ``promptfoo eval``: the prompt's messages (as on disk) as a chat prompt, one test per
  example's inputs, the selected assertions as ``python`` assertions, each with its minimum success rate as
  ``threshold`` and its name as ``metric``. Generated assertion code runs only in spade's sandbox, so promptfoo is
  never pointed at the sidecar itself: an adapter module written beside the config (``NAME_promptfoo.py``) has one
  ``assert_x(output, context)`` per assertion, each calling :func:`check`, which runs that one assertion in the
  sandbox and answers with promptfoo's GradingResult (``{"pass", "score", "reason"}``). The config's ``env`` block
  sets ``PROMPTFOO_PYTHON`` to the Python that ran the export (the one that has spade_lsp): promptfoo reads its
  Python from there first.
- :func:`read_promptfoo_results` (``spade import PROMPT --promptfoo results.json``) reads the JSON that
  ``promptfoo eval -o results.json`` (or ``promptfoo export eval ID -o results.json``) writes, version 3, into
  examples for :func:`~spade_lsp._examples.merge_examples`. A human rating made in promptfoo's viewer (a
  component result whose assertion type is ``human``) decides the label, else the grade of the row's other
  assertions, those that are not spade's exported checks: a label that came from spade's own checks would make
  ``spade select`` measure the checks against themselves. A row graded by spade's checks alone is imported
  unlabelled, and one note says how many were. Rows with an error (no output) are skipped with a warning. Each
  id is the test's description (or ``promptfoo``) and a hash of the inputs and output, so importing the same
  results twice adds nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import yaml

from spade_lsp._examples import SKIPPED, UNLABELLED, Example, ExamplesRead, ExampleWarning
from spade_lsp._files import (
    MAX_EXAMPLES_BYTES,
    MAX_SIDECAR_BYTES,
    atomic_write_text,
    prompt_stem,
    read_limited_text,
    sidecar_path,
)
from spade_lsp.errors import InputError, SpadeError
from spade_lsp.synthesis import PLACEHOLDER_PATTERN

if TYPE_CHECKING:
    from spade_lsp._prompts import PromptText
    from spade_lsp.config import Settings
    from spade_lsp.workspace import Workspace

__all__ = [
    "MARKER",
    "PromptfooExport",
    "adapter_path",
    "check",
    "export_promptfoo",
    "promptfoo_provider",
    "read_promptfoo_results",
]

MARKER: Final = "Written by `spade export promptfoo`"
"""The first line of every file the export writes: a file without it is never overwritten without --force."""
RESULTS_VERSION: Final = 3
_NUNJUCKS_SYNTAX: Final = re.compile(r"\{\{|\{%|\{#|\}\}|%\}|#\}")
#: a ``python`` assertion of an exported config: ``file://NAME_promptfoo.py:assert_x`` (see :func:`adapter_path`)
_SPADE_CHECK: Final = re.compile(r"file://(?:.*[/\\])?[0-9A-Za-z_]*_promptfoo\.py:assert_\w*\s*\Z", re.DOTALL)
_SHOWN_TESTS: Final = 5  # tests named in the warning about missing inputs

# litellm provider prefix -> promptfoo provider id prefix (best effort; see promptfoo_provider)
_PROVIDERS: Final = {
    "openai": "openai:chat:",
    "anthropic": "anthropic:messages:",
    "azure": "azure:chat:",
    "ollama": "ollama:chat:",
    "ollama_chat": "ollama:chat:",
    "hosted_vllm": "openai:chat:",
    "openrouter": "openrouter:",
    "groq": "groq:",
    "mistral": "mistral:",
    "gemini": "google:",
    "vertex_ai": "vertex:",
    "bedrock": "bedrock:",
    "deepseek": "deepseek:",
    "together_ai": "togetherai:",
    "fireworks_ai": "fireworks:",
    "xai": "xai:",
}


# -- export -------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PromptfooExport:
    """What an export wrote: the config, the adapter, and what went in."""

    config: Path
    adapter: Path
    provider: str
    tests: int
    assertions: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "config": str(self.config),
            "adapter": str(self.adapter),
            "provider": self.provider,
            "tests": self.tests,
            "assertions": self.assertions,
            "warnings": self.warnings,
        }


def adapter_path(config: Path, prompt: Path) -> Path:
    """``NAME_promptfoo.py`` beside the config: the module promptfoo's ``python`` assertions call."""
    return config.with_name(f"{re.sub(r'[^0-9A-Za-z_]', '_', prompt_stem(prompt))}_promptfoo.py")


def promptfoo_provider(settings: Settings, *, override: str | None = None) -> dict[str, Any]:
    """The pipeline's model (``model``, ``api_base``, ``api_key_env``, ``temperature``, ``max_tokens``,
    ``model_parameters``) as a promptfoo provider entry. litellm's ``PROVIDER/NAME`` maps to promptfoo's id for
    the same provider (``openai/gpt-4o-mini`` -> ``openai:chat:gpt-4o-mini``; a bare name is OpenAI's, as
    litellm reads it); ``override`` (``--provider``) names promptfoo's id outright. :class:`InputError` for the
    embedded local model, an unset model, or a provider spade cannot name."""
    config: dict[str, Any] = {}
    if override:
        provider_id = override
    else:
        model = settings.model
        if model is None:
            raise InputError(
                "no pipeline model to export: set `model` in [tool.spade] or the prompt's front matter, pass "
                "--model, or name promptfoo's provider with --provider ID (e.g. openai:chat:gpt-4o-mini)"
            )
        if model == "local":
            raise InputError(
                'model = "local" (the embedded llama.cpp server) has no fixed address for promptfoo to call: start '
                "it (`spade local-model start`), then export with --provider openai:chat:local --api-base URL "
                "(the URL `spade local-model status` prints)"
            )
        prefix, _, name = model.partition("/")
        if not name:
            prefix, name = "openai", model
        mapped = _PROVIDERS.get(prefix)
        if mapped is None:
            raise InputError(
                f"model {model!r}: spade does not know promptfoo's name for the litellm provider {prefix!r}; pass "
                "--provider ID (promptfoo's provider id, e.g. openai:chat:NAME for an OpenAI-compatible server)"
            )
        provider_id = mapped + name
    if settings.api_base:
        if provider_id.startswith("azure:"):
            config["apiHost"] = re.sub(r"^https?://", "", settings.api_base).rstrip("/")
        else:
            config["apiBaseUrl"] = settings.api_base
    if settings.api_key_env:
        if provider_id.startswith(("anthropic:", "azure:")):
            config["apiKey"] = "{{ env." + settings.api_key_env + " }}"
        else:
            config["apiKeyEnvar"] = settings.api_key_env
    elif settings.api_base and provider_id.startswith("openai:"):
        config["apiKey"] = "no-key"  # a local OpenAI-compatible server needs none (as spade calls it)
    if settings.temperature is not None:
        config["temperature"] = settings.temperature
    if settings.max_tokens is not None:
        config["max_tokens"] = settings.max_tokens
    for key, value in settings.model_parameters.items():
        config.setdefault(key, value)
    entry: dict[str, Any] = {"id": provider_id}
    if config:
        entry["config"] = config
    return entry


def nunjucks_template(content: str, templating: str) -> str:
    """A message's template in promptfoo's syntax (nunjucks): ``{x}``/``{{x}}`` become ``{{ x }}`` and any
    other text nunjucks would read as syntax is kept literal (``{% raw %}``); Jinja2 is passed as it is."""
    if templating == "jinja2":
        return content
    out: list[str] = []
    position = 0
    for match in PLACEHOLDER_PATTERN.finditer(content):
        out.append(_literal(content[position : match.start()]))
        out.append("{{ " + (match.group(1) or match.group(2)) + " }}")
        position = match.end()
    out.append(_literal(content[position:]))
    return "".join(out)


def _literal(text: str) -> str:
    if not _NUNJUCKS_SYNTAX.search(text):
        return text
    return "{% raw %}" + text.replace("{% endraw %}", "{% endraw %}{{ '{% endraw %}' }}{% raw %}") + "{% endraw %}"


def _messages(parsed: PromptText) -> list[dict[str, str]]:
    out = []
    for message in parsed.messages:
        entry = {"role": message.role, "content": nunjucks_template(message.content, parsed.templating)}
        if message.name:
            entry["name"] = message.name
        out.append(entry)
    return out


def _refuse_foreign(path: Path, force: bool) -> None:
    if force or not path.exists():
        return
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            head = handle.read(400)
    except OSError as error:
        raise InputError(f"{path}: cannot read it to check who wrote it: {error}") from error
    if MARKER not in head:
        raise InputError(f"{path}: exists and was not written by spade; not overwritten (pass --force to replace it)")


def export_promptfoo(
    workspace: Workspace,
    prompt: Path,
    *,
    settings: Settings,
    output: Path | None = None,
    force: bool = False,
    provider: str | None = None,
    python: str | None = None,
) -> PromptfooExport:
    """Write the promptfoo config (default ``promptfooconfig.yaml`` beside the prompt) and its adapter module.
    ``settings`` are the prompt's, resolved once by the caller (:func:`spade_lsp.config.resolve_file`)."""
    from spade_lsp._examples import prompt_examples
    from spade_lsp._prompts import parse_prompt, prompt_kind, read_prompt_file
    from spade_lsp.reliability import selected_assertions

    prompt = prompt.resolve()
    text = read_prompt_file(prompt, max_bytes=settings.max_prompt_bytes)
    parsed = parse_prompt(text, source=str(prompt), kind=prompt_kind(prompt))
    if not parsed.messages:
        raise InputError(f"{prompt}: the prompt has no messages to export")
    provider_entry = promptfoo_provider(settings, override=provider)
    warnings: list[str] = []
    examples = prompt_examples(prompt, parsed, warnings)
    module = sidecar_path(prompt)
    chosen = selected_assertions(workspace, prompt, module, settings, warnings, use="exported")
    config = (output if output is not None else prompt.with_name("promptfooconfig.yaml")).resolve()
    adapter = adapter_path(config, prompt)
    _refuse_foreign(config, force)
    _refuse_foreign(adapter, force)
    assertions = []
    for descriptor in chosen:
        meta = descriptor.to_info()
        minimum = meta.min_success if meta.min_success is not None else settings.min_success
        assertions.append({"name": descriptor.name, "threshold": minimum})
    versions = workspace.history.versions(prompt)
    # the version number only when the file is the newest recorded version (an unsaved edit has none yet)
    version = len(versions) if versions and workspace.history.content(versions[-1].content_hash) == text else None
    document: dict[str, Any] = {
        "description": f"spade: {prompt.name}" + (f" (version {version})" if version else ""),
        "env": {"PROMPTFOO_PYTHON": python or sys.executable},
        "prompts": [
            {
                "label": prompt_stem(prompt),
                "raw": json.dumps(_messages(parsed), ensure_ascii=False, indent=2),
            }
        ],
        "providers": [provider_entry],
        "defaultTest": {
            "assert": [
                {
                    "type": "python",
                    "value": f"file://{adapter.name}:{a['name']}",
                    "metric": a["name"],
                    "threshold": a["threshold"],
                }
                for a in assertions
            ]
        },
        "tests": _tests(examples),
    }
    warnings += _lacking_inputs(parsed, document["tests"], str(prompt))
    header = (
        f"# {MARKER} from {_relative(prompt, config.parent)}; run it with `promptfoo eval -c {config.name}`.\n"
        f"# spade rewrites this file on the next export: change the prompt, its examples or its selection instead.\n"
        f"# Each python assertion runs one spade check in spade's sandbox ({adapter.name}); its threshold is the\n"
        f"# check's minimum success rate and its metric the check's name (promptfoo's per-metric pass rates).\n"
        f"# PROMPTFOO_PYTHON (env) is the Python with spade installed that runs them.\n"
    )
    body = yaml.dump(document, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
    atomic_write_text(adapter, _adapter_source(prompt, module, adapter, [a.name for a in chosen]))
    atomic_write_text(config, header + body)
    tests = len(document["tests"])
    return PromptfooExport(config, adapter, str(provider_entry["id"]), tests, assertions, warnings)


#: YAML with text of several lines (the prompt's JSON) as a literal block, as it reads
_Dumper: Any = type("_Dumper", (yaml.SafeDumper,), {})


def _text_block(dumper: Any, value: str) -> Any:
    style = "|" if "\n" in value and not any(line != line.rstrip() for line in value.splitlines()) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text_block)


def _tests(examples: Sequence[Example]) -> list[dict[str, Any]]:
    """One test per distinct inputs (an imported output shares its inputs with the example it was made for),
    named by the first example that has them."""
    tests: dict[str, dict[str, Any]] = {}
    for example in examples:
        key = json.dumps(example.inputs, sort_keys=True, ensure_ascii=False, default=str)
        tests.setdefault(key, {"description": example.id, "vars": dict(example.inputs)})
    return list(tests.values())


def _lacking_inputs(parsed: PromptText, tests: Sequence[Mapping[str, Any]], source: str) -> list[str]:
    """A warning for the tests whose inputs lack a placeholder the prompt uses: spade keeps such a placeholder as
    written (``{x}``) where promptfoo renders an undefined variable empty, so the two would see different
    prompts for them."""
    from spade_lsp._prompts import render_messages

    lacking: list[tuple[str, list[str]]] = []
    for test in tests:
        try:
            _, missing = render_messages(parsed, test["vars"], source=source)
        except SpadeError:
            continue  # a template error: spade's own runs say what it is
        if missing:
            lacking.append((str(test["description"]), missing))
    if not lacking:
        return []
    names = ", ".join("{" + name + "}" for name in dict.fromkeys(n for _, missing in lacking for n in missing))
    shown = ", ".join(repr(test) for test, _ in lacking[:_SHOWN_TESTS])
    more = f" and {len(lacking) - _SHOWN_TESTS} more" if len(lacking) > _SHOWN_TESTS else ""
    return [
        f"{len(lacking)} test(s) lack inputs the prompt uses ({names}): {shown}{more}; promptfoo renders a missing "
        "input empty where spade keeps it as written, so the two see different prompts: give those examples the "
        "inputs"
    ]


def _relative(path: Path, start: Path) -> str:
    try:
        return os.path.relpath(path, start)
    except ValueError:  # another drive (Windows)
        return str(path)


def _adapter_source(prompt: Path, module: Path, adapter: Path, names: Sequence[str]) -> str:
    sidecar = _relative(module.resolve(), adapter.parent)
    lines = [
        f'"""{MARKER} from {_relative(prompt, adapter.parent)}: promptfoo\'s python assertions.',
        "",
        "Each function runs one assertion of the sidecar module in spade's sandbox (never in this process) and",
        "answers with promptfoo's GradingResult. Rewritten by the next export: do not edit.",
        '"""',
        "",
        "from pathlib import Path",
        "",
        "from spade_lsp.promptfoo import check",
        "",
        f"SIDECAR = Path(__file__).resolve().parent / {sidecar!r}",
        f"PROMPT = Path(__file__).resolve().parent / {_relative(prompt.resolve(), adapter.parent)!r}",
        "",
    ]
    for name in names:
        lines += [
            "",
            f"def {name}(output, context):",
            f"    return check(SIDECAR, {name!r}, output, context, prompt=PROMPT)",
            "",
        ]
    return "\n".join(lines)


# -- the check promptfoo calls ----------------------------------------------------------------------------------


class _LazyAsk:
    """``ask_llm`` answered by the assistant model of the sidecar's workspace (made from the prompt's ``settings``),
    opened at the first question."""

    def __init__(self, module: Path, settings: Settings) -> None:
        self.module = module
        self.settings = settings
        self.answer: Any = None
        self.workspace: Workspace | None = None

    def __call__(self, question: str, response: str, context: Mapping[str, Any]) -> bool:
        if self.answer is None:
            from spade_lsp._assertion_jobs import assistant_ask
            from spade_lsp.workspace import Workspace

            self.workspace = Workspace.for_path(self.module)
            self.answer = assistant_ask(self.workspace, self.settings)
            if self.answer is None:
                from spade_lsp.assertions import AskLLMUnavailable

                raise AskLLMUnavailable("needs a model: ask_llm has no assistant model (set `assistant_model`)")
        return bool(self.answer(question, response, context))

    def close(self) -> None:
        if self.workspace is not None:
            self.workspace.close()


def _prompt_of(rendered: Any) -> tuple[str, list[dict[str, str]] | None]:
    """promptfoo's rendered prompt (a chat prompt is its JSON message list) as spade gives it to assertions."""
    from spade_lsp._prompts import conversation_text

    if isinstance(rendered, str):
        try:
            value = json.loads(rendered)
        except ValueError:
            return rendered, None
        if isinstance(value, list) and value and all(isinstance(m, dict) and "role" in m for m in value):
            messages = [
                {"role": str(m["role"]), "content": m["content"] if isinstance(m.get("content"), str) else ""}
                for m in value
            ]
            return conversation_text(messages), messages
        return rendered, None
    if isinstance(rendered, Mapping) and isinstance(rendered.get("raw"), str):
        return _prompt_of(rendered["raw"])
    return "", None


def check(
    module: Path | str, name: str, output: Any, context: Mapping[str, Any], *, prompt: Path | str | None = None
) -> dict[str, Any]:
    """Run assertion ``name`` of the sidecar ``module`` on one promptfoo output, in spade's sandbox: the
    example is ``context["vars"]``, the prompt promptfoo's rendered prompt. Returns promptfoo's GradingResult:
    ``pass``, ``score`` (1.0 or 0.0) and ``reason``; an error in the check is a fail naming it. The settings
    (sandbox, assistant model for ``ask_llm``) are resolved once for the call from the workspace's files and the
    prompt file ``prompt``'s own (an adapter written before it named the prompt: the workspace's files only)."""
    from spade_lsp.config import find_workspace_root, resolve, resolve_file
    from spade_lsp.errors import SpadeError
    from spade_lsp.sandbox import ModuleSource, SandboxCase, SandboxLimits, run_assertions

    path = Path(module).resolve()
    variables = context.get("vars") if isinstance(context, Mapping) else None
    example = dict(variables) if isinstance(variables, Mapping) else {}
    rendered, messages = _prompt_of(context.get("prompt") if isinstance(context, Mapping) else None)
    response = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    ask: _LazyAsk | None = None
    try:
        root = find_workspace_root(path)
        settings = resolve_file(root, Path(prompt).resolve()) if prompt is not None else resolve(root, None)
        ask = _LazyAsk(path, settings)
        source = read_limited_text(path, limit=MAX_SIDECAR_BYTES, what="a sidecar module")
        result = run_assertions(
            ModuleSource(source, str(path)),
            [SandboxCase(example, rendered, response, messages)],
            names=[name],
            limits=SandboxLimits(confinement=settings.sandbox, workers=1),
            ask_llm=ask,
        )
    except SpadeError as error:
        return {"pass": False, "score": 0.0, "reason": f"spade: {error}"}
    finally:
        if ask is not None:
            ask.close()
    if result.module_error is not None:
        where = f"{path.name}:{result.module_error.line}" if result.module_error.line else path.name
        return {"pass": False, "score": 0.0, "reason": f"spade: {where}: {result.module_error.message}"}
    verdict = result.passed[0][0] if result.passed and result.passed[0] else None
    if verdict is None:
        cell = result.error(0, 0)
        reason = f"{cell.kind}: {cell.message}" if cell is not None else "no verdict"
        return {"pass": False, "score": 0.0, "reason": f"spade: {name} did not run ({reason})"}
    return {
        "pass": verdict,
        "score": 1.0 if verdict else 0.0,
        "reason": f"spade: {name} {'passed' if verdict else 'failed'}",
    }


# -- import -----------------------------------------------------------------------------------------------------


def _bad(path: Path, what: str) -> InputError:
    return InputError(f"{path}: not a promptfoo results file ({what}); write one with `promptfoo eval -o FILE.json`")


def read_promptfoo_results(path: Path) -> ExamplesRead:
    """The examples in a promptfoo results file (see the module docstring); each problem with a result row is a
    warning naming the row (``path:N``, N counting results from 1). :class:`InputError` (one line) for a file
    that is not promptfoo's results, of another version, or without a usable row."""
    text = read_limited_text(path, limit=MAX_EXAMPLES_BYTES, what="a promptfoo results file", encoding="utf-8-sig")
    try:
        document = json.loads(text)
    except ValueError as error:
        raise _bad(path, f"invalid JSON: {error}") from error
    if not isinstance(document, dict) or not isinstance(document.get("results"), dict):
        raise _bad(path, "no `results` object")
    results = document["results"]
    version = results.get("version")
    if "results" not in results or not isinstance(results.get("results"), list):
        raise _bad(path, "no `results.results` list")
    if version != RESULTS_VERSION:
        raise InputError(
            f"{path}: promptfoo results version {version!r}; spade reads version {RESULTS_VERSION} "
            "(as promptfoo 0.123 writes it): re-run `promptfoo eval -o FILE.json` "
            "or `promptfoo export eval ID -o FILE.json`"
        )
    examples: list[Example] = []
    lines: list[int] = []
    warnings: list[ExampleWarning] = []
    seen: set[str] = set()
    unlabelled = 0
    for number, row in enumerate(results["results"], 1):
        example, problem = _example_of(row)
        if example is None:
            warnings.append(ExampleWarning(path, number, problem or "not a result object", SKIPPED))
            continue
        if example.id in seen:  # the same inputs and output twice (a repeat): one example
            continue
        seen.add(example.id)
        examples.append(example)
        lines.append(number)
        unlabelled += example.label is None
    if not examples and not warnings:
        raise InputError(f"{path}: no results in the file")
    if unlabelled:
        warnings.append(
            ExampleWarning(
                path,
                None,
                f"{unlabelled} of {len(examples)} example(s) graded only by spade's own checks: rate them in "
                "`promptfoo view` to label them",
                UNLABELLED,
            )
        )
    return ExamplesRead(path, examples, lines, warnings)


def _example_of(row: Any) -> tuple[Example | None, str | None]:
    if not isinstance(row, dict):
        return None, "not a result object"
    test: dict[str, Any] = row["testCase"] if isinstance(row.get("testCase"), dict) else {}
    variables = row.get("vars", test.get("vars"))
    if variables is None:
        variables = {}
    if not isinstance(variables, dict):
        return None, f"`vars` is not an object ({type(variables).__name__})"
    description = test.get("description") if isinstance(test.get("description"), str) else None
    response: dict[str, Any] = row["response"] if isinstance(row.get("response"), dict) else {}
    output = response.get("output")
    # failureReason 2 (ERROR) is promptfoo's "the call or a check errored"; 1 (ASSERT) a graded fail, whose
    # reason promptfoo also writes into `error`
    error = response.get("error") or (row.get("error") if row.get("failureReason") == 2 else None)
    if output is None or error or row.get("failureReason") == 2:
        what = f" {description!r}" if description else ""
        reason = " ".join(str(error).split())[:200] if error else "no output"
        return None, f"test{what} has no output ({reason})"
    if not isinstance(output, str):
        output = json.dumps(output, ensure_ascii=False)
    label = _grade(row)
    digest = hashlib.sha256(
        json.dumps([variables, output], sort_keys=True, ensure_ascii=False, default=str).encode("utf-8")
    ).hexdigest()[:12]
    identifier = f"{description or 'promptfoo'}-{digest}"
    prompt = row.get("prompt")
    raw = prompt.get("raw") if isinstance(prompt, dict) else prompt
    rendered = _prompt_of(raw)[0] if isinstance(raw, str) else None
    return Example(identifier, dict(variables), output, label, prompt=rendered or None), None


def _spade_check(assertion: Mapping[str, Any]) -> bool:
    """An assertion ``spade export promptfoo`` wrote: a ``python`` one calling the adapter module."""
    value = assertion.get("value")
    return assertion.get("type") == "python" and isinstance(value, str) and bool(_SPADE_CHECK.match(value))


def _grade(row: Mapping[str, Any]) -> int | None:
    """1 (good) or 0 (bad): a human rating when present, else whether the row passed its assertions that are not
    spade's exported checks (promptfoo's own, a user's); None when only spade's checks graded it."""
    grading = row.get("gradingResult")
    if not isinstance(grading, dict):
        return None
    others: list[bool] = []
    for component in grading.get("componentResults") or []:
        if not isinstance(component, dict) or not isinstance(component.get("pass"), bool):
            continue
        assertion = component.get("assertion")
        if not isinstance(assertion, dict):
            continue
        if assertion.get("type") == "human":
            return int(component["pass"])
        if not _spade_check(assertion):
            others.append(component["pass"])
    return int(all(others)) if others else None
