"""Settings: ``[tool.spade]`` in pyproject.toml or ``spade.toml`` at the workspace root, then a prompt's
front matter, then (in the editor) the client's settings, each overriding the one before."""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, field_validator

from spade_lsp._files import MAX_SETTINGS_BYTES, read_limited_text
from spade_lsp.errors import ConfigError

if TYPE_CHECKING:
    from spade_lsp._prompts import PromptKind

DEFAULT_PROMPT_GLOBS = (
    "**/*.prompt",
    "**/*.prompt.md",
    "**/*.prompt.txt",
    "**/*.prompty",
    "**/*.prompt.json",
    "**/*.prompt.yaml",
    "**/*.prompt.yml",
)
_WORKSPACE_MARKERS = ("spade.toml", ".spade")
_FALLBACK_MARKERS = ("pyproject.toml", ".git")


#: Said by every run of generated assertions under ``sandbox = "python-only"`` (the CLI, the editor, doctor).
PYTHON_ONLY_WARNING = (
    'sandbox = "python-only": generated assertions run with Python-level checks only, which '
    "hostile code can bypass; remove the setting on a Linux kernel with Landlock and seccomp"
)


class Settings(BaseModel):
    """Every setting, with its default. Unknown keys are rejected so typos surface."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt_globs: tuple[str, ...] = Field(
        default=DEFAULT_PROMPT_GLOBS, description="which files are prompts: glob patterns relative to the workspace"
    )
    model: str | None = Field(
        default=None,
        description="the pipeline's model, the one sampled and compared: any litellm model name, or 'local' "
        "(the embedded SmolLM2); None: nothing to sample",
    )
    api_base: str | None = Field(
        default=None,
        description="base URL of the pipeline model's API (an OpenAI-compatible server); None: the provider's own",
    )
    api_key_env: str | None = Field(default=None, description="environment variable holding the API key")
    assistant_model: str | None = Field(
        default=None,
        description="the model spade-lsp asks for its own work (taxonomy labels, criteria and functions, "
        "subsumption, ask_llm checks, default judge and verifier): a litellm model name, 'local', or 'same' "
        "(the pipeline's model); None: spade-lsp does its own work offline",
    )
    assistant_api_base: str | None = Field(default=None, description="the assistant's endpoint; 'same': api_base")
    assistant_api_key_env: str | None = Field(
        default=None, description="environment variable holding the assistant's API key ('same': api_key_env)"
    )
    llm_timeout_s: float = Field(default=60.0, gt=0, description="timeout of one LLM request")
    llm_max_retries: int = Field(default=3, ge=0, le=20, description="retries on rate limits, 5xx and timeouts")
    llm_concurrency: int = Field(default=8, ge=1, le=256, description="LLM requests in flight at once")
    llm_processes: int | None = Field(
        default=None,
        ge=0,
        le=16,
        description="helper processes that send the pipeline's calls while sampling, each with its own litellm "
        "(whose work per call bounds one process), at most one per CPU spade may use: 0 sends them from spade's own "
        "process; None: one per CPU, none on a single CPU",
    )
    llm_rpm: int | None = Field(default=None, ge=1, description="requests per minute; None: no limit")
    structured_reasks: int = Field(
        default=2, ge=0, le=10, description="times an invalid structured answer is asked again before it fails"
    )
    classifier: Literal["auto", "offline", "llm"] = Field(
        default="auto",
        description="how deltas are labelled: 'offline' (the shipped classifier only), 'llm' (the assistant model), "
        "or 'auto' (offline when recorded, relabelled by the assistant model when one is set)",
    )
    sandbox: Literal["kernel", "python-only"] = Field(
        default="kernel",
        description="what confines generated assertions: 'kernel' (Landlock and seccomp; where the kernel cannot, "
        "they do not run) or 'python-only' (Python-level checks only, which hostile code can bypass: a warning)",
    )
    max_prompt_bytes: int = Field(
        default=1_000_000, gt=0, description="larger prompt files are refused with an error saying so"
    )
    tau: float = Field(
        default=0.25,
        ge=0,
        le=1,
        description="selection's false-failure ceiling: the share of good examples the selected checks may flag",
    )
    alpha: float = Field(
        default=0.6,
        ge=0,
        le=1,
        description="selection's coverage floor: the share of bad examples the selected checks must catch",
    )
    min_success: float = Field(default=0.9, ge=0, le=1, description="a validator's default minimum success rate")
    samples_per_input: int = Field(default=5, ge=1, le=10_000, description="outputs sampled per input")
    sample_inputs: int | None = Field(default=None, ge=1, description="inputs sampled; None: every example")
    temperature: float | None = Field(default=None, ge=0, le=2, description="sampling temperature; None: 1.0")
    max_tokens: int | None = Field(
        default=None,
        ge=1,
        description="the most tokens a sampled output may have; None: the server's limit (256 for the local model)",
    )
    model_parameters: dict[str, JsonValue] = Field(
        default_factory=dict,
        description="more litellm parameters for the pipeline's model (top_p, stop, seed, api_version, ...): a "
        "Prompty file's model parameters land here",
    )
    batch: bool = Field(
        default=False,
        description="the LLM calls of sample, compare and judge go through the provider's batch API (litellm files "
        "and batches): cheaper, answered within the completion window rather than at once; polled, and resumed "
        "after a restart without resubmitting",
    )
    batch_poll_s: float = Field(default=30.0, gt=0, le=3600, description="seconds between polls of a batch")
    batch_completion_window: str = Field(
        default="24h",
        min_length=1,
        description="the completion window asked of the provider's batch API (OpenAI's takes only '24h')",
    )

    @field_validator("batch_completion_window")
    @classmethod
    def _completion_window(cls, value: str) -> str:
        if value != "24h":
            raise ValueError(f"{value!r}: the OpenAI batch API takes only the completion window '24h'")
        return value

    executor: Literal["local", "ray"] = Field(
        default="local",
        description="where sampling and validation run: 'local' (this process and its sandbox workers) or 'ray' "
        "(Ray tasks across a cluster; needs the ray extra, `make ray`)",
    )
    ray_address: str | None = Field(
        default=None, description="the Ray cluster to join (ray.init(address=...)); None: a cluster on this machine"
    )
    confidence: float = Field(default=0.95, gt=0, lt=1, description="confidence level of every interval")
    interval: Literal["wilson", "clopper-pearson"] = Field(
        default="wilson", description="the binomial interval of every rate: 'wilson' or 'clopper-pearson' (exact)"
    )
    early_stopping: bool = Field(
        default=True,
        description="stop sampling once every check is decided above or below its minimum (a sequential test)",
    )
    verifier: bool | Annotated[str, Field(min_length=1)] = Field(
        default=False,
        description="spade sample adds the LLM verifier as a column: true (default criteria) or the criteria text",
    )
    auto_sample: bool = Field(
        default=False,
        description="after each new version, the daemon samples it and the one before on the same inputs and "
        "compares them (needs a model, the sidecar module and examples)",
    )
    daemon_autostart: bool = Field(default=True, description="the language server starts the daemon when none runs")
    save_quiet_s: float = Field(
        default=1.0,
        ge=0,
        le=60,
        description="saves of one prompt (autosave bursts) within this many quiet seconds are recorded as one "
        "version, the last text; 0 records every save at once",
    )
    daemon_idle_timeout_s: float = Field(default=600.0, gt=0, description="idle daemon exits after this long")

    @field_validator("model_parameters")
    @classmethod
    def _parameters_spade_sets(cls, value: dict[str, JsonValue]) -> dict[str, JsonValue]:
        taken = sorted(set(value) & _PARAMETERS_SPADE_SETS)
        if taken:
            raise ValueError(f"{', '.join(taken)}: set by spade itself (use the settings of the same name, if any)")
        secret = sorted(key for key in value if _SECRET_NAME.search(key))
        if secret:  # parameters are stored in cache keys and written into exported configs
            raise ValueError(f"{', '.join(secret)}: credentials never go in settings; name the variable in api_key_env")
        return value

    def merged(self, overrides: dict[str, Any], *, source: str) -> Settings:
        """These settings with ``overrides`` applied (keys may use dashes), validated."""
        if not overrides:
            return self
        data = self.model_dump()
        data.update({key.replace("-", "_"): value for key, value in overrides.items()})
        return _validate(data, source)


#: litellm parameters that spade sets per request or from settings of their own, so ``model_parameters`` cannot.
_PARAMETERS_SPADE_SETS = frozenset(
    {
        "model",
        "messages",
        "temperature",
        "max_tokens",
        "n",
        "stream",
        "response_format",
        "api_base",
        "base_url",
        "api_key",
        "timeout",
        "num_retries",
        "tools",
        "functions",
    }
)


#: Names of parameters or environment variables that hold credentials: never stored, never put into a URL.
_SECRET_NAME = re.compile(r"key|token|secret|password|credential|header|auth", re.IGNORECASE)


#: Settings that decide where a request and a credential go (endpoints, the variables keys are read from, the
#: models a key is paired with) or that loosen confinement (the sandbox, where spade runs: a hostile
#: ``ray_address`` would have the driver unpickle a stranger's cluster's results and send it the key). A
#: repository's own content (spade.toml, pyproject.toml, a prompt's front matter, .vscode/settings.json) sets them
#: only in a workspace the user trusts (:mod:`spade_lsp.trust`); the user's config file, the command line and the
#: editor's user settings always may.
TRUSTED_ONLY = frozenset(
    {
        "model",
        "api_base",
        "api_key_env",
        "assistant_model",
        "assistant_api_base",
        "assistant_api_key_env",
        "sandbox",
        "executor",
        "ray_address",
    }
)
#: Values of those settings that untrusted content may still choose: the embedded local model (a loopback
#: server, no credential) and the defaults, which loosen nothing.
_HARMLESS: dict[str, frozenset[Any]] = {
    "model": frozenset({"local"}),
    "assistant_model": frozenset({"local"}),
    "sandbox": frozenset({"kernel"}),
    "executor": frozenset({"local"}),
}
#: Settings no prompt's front matter and no editor setting may set, trusted or not: the sandbox is the user's (or a
#: trusted workspace file's) to loosen, and where spade runs is not a property of one prompt.
FILE_ONLY_SETTINGS = frozenset({"sandbox"})
NOT_FROM_CONTENT = FILE_ONLY_SETTINGS | {"executor", "ray_address", "llm_processes"}


def setting_default(name: str) -> Any:
    """A setting's declared default, for code with no resolved settings at hand: the value is declared once, in
    :class:`Settings`, never restated in a signature."""
    return Settings.model_fields[name].default


def setting_help(name: str, what: str | None = None) -> str:
    """The help of a command-line flag that sets ``name`` for one run: what it does (the setting's description
    unless ``what``), then the setting's name and default, generated so that no help text restates a default."""
    default = setting_default(name)
    shown = "none" if default is None else json.dumps(default) if isinstance(default, bool | str) else str(default)
    text = f"{what or Settings.model_fields[name].description} (the setting `{name}`, default {shown})"
    return text.replace("%", "%%")  # argparse formats help with %


def setting_choices(name: str) -> list[str]:
    """The values a ``Literal`` setting takes, for a flag's ``choices``."""
    return [str(value) for value in get_args(Settings.model_fields[name].annotation)]


def _restricted(key: str, value: Any) -> bool:
    """Whether untrusted content may not set ``key`` to ``value``."""
    harmless = _HARMLESS.get(key, frozenset())
    return key in TRUSTED_ONLY and not (isinstance(value, str) and value in harmless)  # a table or list: never


def untrusted_part(table: Mapping[str, Any]) -> list[str]:
    """The keys of a settings table that an untrusted workspace's content may not set (dashes read as
    underscores)."""
    return sorted(key for key, value in table.items() if _restricted(key.replace("-", "_"), value))


def _trusted_only_removed(table: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in table.items() if not _restricted(key.replace("-", "_"), value)}


def front_matter_settings(front_matter: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of a prompt's front matter that are settings (other keys belong to the prompt itself, and
    :data:`NOT_FROM_CONTENT` are ignored). A ``model`` mapping is Prompty's model configuration: its model,
    endpoint and parameters become settings, which the front matter's own setting keys override."""
    settings: dict[str, Any] = {}
    model = front_matter.get("model")
    if isinstance(model, Mapping):
        settings.update(prompty_model_settings(model))
    settings.update(
        {
            str(key).replace("-", "_"): value
            for key, value in front_matter.items()
            if str(key).replace("-", "_") in Settings.model_fields.keys() - NOT_FROM_CONTENT
            and not (key == "model" and isinstance(value, Mapping))
        }
    )
    return settings


_ENV_REFERENCE = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)(?::([^}]*))?\}")


def _env_value(value: Any) -> str | None:
    """A Prompty value with ``${env:NAME}`` or ``${env:NAME:default}`` resolved from the environment (None when
    the variable is unset and has no default)."""
    if value is None:
        return None
    text = str(value)
    unresolved = False

    def fill(match: re.Match[str]) -> str:
        nonlocal unresolved
        if _SECRET_NAME.search(match.group(1)):  # a model name or an endpoint is shown, stored and exported
            raise ConfigError(f"front matter: ${{env:{match.group(1)}}} names a secret; only api_key may refer to one")
        found = os.environ.get(match.group(1), match.group(2))
        if found is None:
            unresolved = True
            return ""
        return found

    resolved = _ENV_REFERENCE.sub(fill, text)
    return None if unresolved or not resolved else resolved


def _env_name(value: Any) -> str | None:
    """The environment variable a Prompty key refers to (``${env:OPENAI_API_KEY}``): settings name the variable,
    never hold the key itself."""
    match = _ENV_REFERENCE.fullmatch(str(value)) if value is not None else None
    return match.group(1) if match else None


def prompty_model_settings(model: Mapping[str, Any]) -> dict[str, Any]:
    """Prompty's ``model`` (``api``, ``configuration``, ``parameters``) as spade settings: ``openai`` (``name``),
    ``azure_openai`` (``azure_deployment``, ``azure_endpoint``, ``api_version``) and ``serverless`` (``endpoint``,
    ``model``) configurations name the litellm model and endpoint; ``temperature`` and ``max_tokens`` are settings
    of their own, other parameters go to ``model_parameters``."""
    configuration = model.get("configuration") or {}
    parameters = model.get("parameters") or {}
    if not isinstance(configuration, Mapping) or not isinstance(parameters, Mapping):
        raise ConfigError("front matter: model.configuration and model.parameters must be mappings")
    settings: dict[str, Any] = {}
    kind = str(configuration.get("type", "openai")).lower()
    extra: dict[str, Any] = {}
    if kind in ("azure_openai", "azure"):
        deployment = _env_value(configuration.get("azure_deployment"))
        if deployment:
            settings["model"] = f"azure/{deployment}"
        endpoint = _env_value(configuration.get("azure_endpoint"))
        version = _env_value(configuration.get("api_version"))
        if version:
            extra["api_version"] = version
    elif kind == "serverless":
        name = _env_value(configuration.get("model"))
        if name:
            settings["model"] = name
        endpoint = _env_value(configuration.get("endpoint"))
    else:
        name = _env_value(configuration.get("name") or configuration.get("model"))
        if name:
            settings["model"] = name if "/" in name or kind != "openai" else f"openai/{name}"
        endpoint = _env_value(configuration.get("base_url") or configuration.get("api_base"))
    if endpoint:
        settings["api_base"] = endpoint
    key_env = _env_name(configuration.get("api_key") or configuration.get("key"))
    if key_env:
        settings["api_key_env"] = key_env
    for key, value in parameters.items():
        if key in ("temperature", "max_tokens"):
            settings[key] = value
        else:
            extra[str(key)] = value
    if extra:
        settings["model_parameters"] = extra
    return settings


def resolve(
    root: Path,
    prompt_text: str | None,
    overrides: Mapping[str, Any] | None = None,
    *,
    kind: PromptKind = "text",
    source: str | None = None,
    files: Settings | None = None,
    overrides_source: str = "overrides",
) -> Settings:
    """One prompt's settings, the one way every entry point gets them (the CLI, a daemon job, the editor):
    the workspace's files at ``root`` (or ``files``, already loaded from them), then the prompt's own settings
    (front matter; for a message list the keys beside ``messages``), then ``overrides`` (the command line's
    options, or the editor's settings), each overriding the one before. Overrides never set
    :data:`FILE_ONLY_SETTINGS`. Raises :class:`~spade_lsp.errors.ConfigError` naming the source at fault
    (``source`` names the prompt; the front matter's own faults raise
    :class:`~spade_lsp.errors.FrontMatterError`)."""
    from spade_lsp._prompts import SETTINGS_SOURCE_NAMES, own_settings
    from spade_lsp.trust import is_trusted

    settings = files if files is not None else load_settings(root)
    own = front_matter_settings(own_settings(prompt_text, kind, source=source))
    if own and untrusted_part(own) and not is_trusted(root):
        own = _trusted_only_removed(own)  # said by untrusted_note(), which the entry points show
    own_source = SETTINGS_SOURCE_NAMES[kind] if source is None else f"{source} {SETTINGS_SOURCE_NAMES[kind]}"
    settings = settings.merged(own, source=own_source)
    chosen = {k: v for k, v in (overrides or {}).items() if k.replace("-", "_") not in FILE_ONLY_SETTINGS}
    return settings.merged(chosen, source=overrides_source)


def resolve_file(
    root: Path, prompt: Path, overrides: Mapping[str, Any] | None = None, *, overrides_source: str = "overrides"
) -> Settings:
    """:func:`resolve` for a prompt file as it is on disk (read within the ``max_prompt_bytes`` the files and
    the overrides allow); a prompt that cannot be read has no settings of its own (reading it is the
    consumer's error to report)."""
    from spade_lsp._files import confine_prompt
    from spade_lsp._prompts import prompt_kind, read_prompt_file
    from spade_lsp.errors import PromptFileError

    confine_prompt(root, prompt)  # its front matter is read here: never from a file outside the workspace
    files = load_settings(root)
    limit = resolve(root, None, overrides, files=files, overrides_source=overrides_source).max_prompt_bytes
    try:
        text: str | None = read_prompt_file(prompt, max_bytes=limit)
    except PromptFileError:
        text = None
    return resolve(
        root,
        text,
        overrides,
        kind=prompt_kind(prompt),
        source=str(prompt),
        files=files,
        overrides_source=overrides_source,
    )


def _validate(data: dict[str, Any], source: str) -> Settings:
    try:
        return Settings.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "settings"
        raise ConfigError(f"{source}: {where}: {first['msg']}") from error


def find_workspace_root(start: Path) -> Path:
    """The nearest ancestor holding spade.toml or .spade/, else pyproject.toml or .git, else ``start``."""
    if os.path.lexists(start) and not (start.is_dir() or start.is_file()):
        start = Path(os.path.abspath(start)).parent  # a device or fifo (or a link to one): where its name is
    # where the name is, links not followed: a prompt that links out of the workspace belongs to the workspace
    # its link is in (which then refuses to read it), never to the folder it points to
    start = Path(os.path.abspath(start))
    if start.is_file():
        start = start.parent
    for markers in (_WORKSPACE_MARKERS, _FALLBACK_MARKERS):
        for directory in (start, *start.parents):
            if any((directory / marker).exists() for marker in markers):
                return directory
    return start


def load_settings(workspace_root: Path) -> Settings:
    """The settings every prompt of the workspace starts from: the user's own config file, then the
    workspace's files (spade.toml wins over pyproject.toml's [tool.spade]), whose :data:`TRUSTED_ONLY` settings
    count only in a workspace the user trusts."""
    from spade_lsp.trust import is_trusted, user_config_path

    settings = Settings()
    user = user_config_path()
    if user.is_file():
        table = _read_toml(user)
        settings = settings.merged(table.get("spade", table), source=str(user))
    tables = workspace_tables(workspace_root)
    trusted = not any(untrusted_part(table) for _, table in tables) or is_trusted(workspace_root)
    for source, table in tables:
        settings = settings.merged(table if trusted else _trusted_only_removed(table), source=source)
    return settings


def workspace_tables(workspace_root: Path) -> list[tuple[str, dict[str, Any]]]:
    """The workspace's settings tables with where each comes from, in the order they apply."""
    tables: list[tuple[str, dict[str, Any]]] = []
    pyproject = workspace_root / "pyproject.toml"
    if pyproject.exists():  # a directory, device or fifo by that name is refused with one line, not skipped
        _confined(workspace_root, pyproject)
        tool = _read_toml(pyproject).get("tool", {})
        table = tool.get("spade", {}) if isinstance(tool, dict) else {}
        tables.append((f"{pyproject} [tool.spade]", table if isinstance(table, dict) else {}))
    spade_toml = workspace_root / "spade.toml"
    if spade_toml.exists():
        _confined(workspace_root, spade_toml)
        table = _read_toml(spade_toml)
        found = table.get("spade", table)
        tables.append((str(spade_toml), found if isinstance(found, dict) else {}))
    return tables


def _confined(root: Path, path: Path) -> None:
    from spade_lsp._files import confine
    from spade_lsp.errors import InputError

    try:
        confine(root, path, "a settings file")
    except InputError as error:
        raise ConfigError(str(error)) from error


def untrusted_note(
    root: Path, prompt_text: str | None = None, *, kind: PromptKind = "text", source: str = ""
) -> str | None:
    """One line saying what an untrusted workspace's content asked for and did not get (the settings ignored
    and where they were), and how to trust it; None when nothing was ignored or the workspace is trusted."""
    from spade_lsp._prompts import SETTINGS_SOURCE_NAMES, own_settings
    from spade_lsp.trust import is_trusted

    ignored = [(key, Path(where).name if " " not in where else where) for where, table in workspace_tables(root)
               for key in untrusted_part(table)]  # fmt: skip
    if prompt_text is not None:
        try:
            own = front_matter_settings(own_settings(prompt_text, kind, source=source or None))
        except ConfigError:
            own = {}
        where = f"{Path(source).name} {SETTINGS_SOURCE_NAMES[kind]}".strip()
        ignored += [(key, where) for key in untrusted_part(own)]
    if not ignored or is_trusted(root):
        return None
    listed = ", ".join(f"{key} ({where})" for key, where in ignored)
    return (
        f"this workspace is not trusted, so its own files cannot choose models, endpoints, API key variables or the "
        f"sandbox: ignored {listed}; if you trust its files, run `spade trust {root}` (in VS Code: the command "
        "“SPADE: Trust this workspace”)"
    )


def _read_toml(path: Path) -> dict[str, Any]:
    text = read_limited_text(path, limit=MAX_SETTINGS_BYTES, what="a settings file", error=ConfigError)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from error
    except RecursionError as error:
        raise ConfigError(f"{path}: invalid TOML: nested too deeply") from error
