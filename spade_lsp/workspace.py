"""A workspace: its root, settings, store and prompt history, opened together."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from spade_lsp._history import History
from spade_lsp._roles import (
    LOCAL,
    Endpoint,
    assistant_endpoint,
    batched,
    local_server_is,
    make_client,
    pipeline_endpoint,
    require,
)
from spade_lsp.config import Settings, find_workspace_root, resolve
from spade_lsp.llm import LLMClient
from spade_lsp.store import Store, settle_orphaned_runs

#: The settings a client is made with (:func:`~spade_lsp._roles.make_client`): prompts that differ in them (by
#: front matter, say) get clients of their own.
_CLIENT_SETTINGS = (
    "llm_timeout_s",
    "llm_max_retries",
    "llm_concurrency",
    "llm_rpm",
    "structured_reasks",
    "max_tokens",
    "model_parameters",
    "batch",
    "batch_poll_s",
    "batch_completion_window",
    "executor",
    "ray_address",
)


class Workspace:
    """Everything the engine needs for one workspace root. Close it (or use ``with``) when done."""

    def __init__(
        self,
        root: Path,
        *,
        settings: Settings | None = None,
        overrides: dict[str, Any] | None = None,
        overrides_source: str = "command-line options",
        llm_client: LLMClient | None = None,
        assistant_client: LLMClient | None = None,
        busy_timeout_s: float = 5.0,
    ) -> None:
        self.root = root.resolve()
        #: The workspace's own settings (no prompt's): its files (or ``settings``), then the overrides.
        self.settings = resolve(self.root, None, overrides, files=settings, overrides_source=overrides_source)
        self.store = Store.open(self.root, busy_timeout_s=busy_timeout_s)
        #: Runs a killed process had left ``running``, ended as interrupted when this workspace was opened.
        self.settled = settle_orphaned_runs(self.store)
        self._injected = {"pipeline": llm_client, "assistant": assistant_client}
        self._clients: dict[tuple[Any, ...], LLMClient] = {}
        # Recording a version never waits on an LLM: deltas are labelled offline at once; an assistant model
        # relabels them afterwards (:func:`spade_lsp._relabel.relabel_prompt`, a daemon job).
        from spade_lsp.taxonomy import OfflineClassifier

        self.history = History(self.store, self.root, OfflineClassifier())

    @classmethod
    def for_path(cls, path: Path, **kwargs: Any) -> Workspace:
        """The workspace that holds ``path`` (see :func:`find_workspace_root`)."""
        return cls(find_workspace_root(path), **kwargs)

    def llm_client(self, settings: Settings | None = None) -> LLMClient:
        """The pipeline's model (``model``) under ``settings`` (default: the workspace's), or
        :class:`~spade_lsp.errors.ModelNotConfiguredError` saying how to configure one."""
        injected = self._injected["pipeline"]
        if injected is not None:
            return injected
        settings = settings or self.settings
        return self._client(require(pipeline_endpoint(settings), "pipeline"), settings)

    def has_assistant(self, settings: Settings | None = None) -> bool:
        """Whether spade-lsp's own work may ask a model (``assistant_model``), or must stay offline."""
        return self._injected["assistant"] is not None or assistant_endpoint(settings or self.settings) is not None

    def assistant_client(self, settings: Settings | None = None, *, what: str | None = None) -> LLMClient:
        """The assistant model (``assistant_model``), or :class:`~spade_lsp.errors.ModelNotConfiguredError`
        naming ``what`` needed it and how to configure one."""
        injected = self._injected["assistant"]
        if injected is not None:
            return injected
        settings = settings or self.settings
        return self._client(require(assistant_endpoint(settings), "assistant", what=what), settings)

    def judge_client(self, settings: Settings | None = None) -> LLMClient:
        """The assistant model as a judge: through the provider's batch API when ``batch`` is set (the judge's
        calls, unlike the assistant's other work, may wait for a batch window)."""
        settings = settings or self.settings
        return batched(self.assistant_client(settings, what="judging"), settings)

    def _client(self, endpoint: Endpoint, settings: Settings) -> LLMClient:
        """One client per endpoint, so requests to one server share its limits, usage and cache. The local
        model's server stops when idle: its client is made again when the server it knew is gone."""
        key = (endpoint, *(json.dumps(getattr(settings, name), sort_keys=True) for name in _CLIENT_SETTINGS))
        client = self._clients.get(key)
        if client is None or (endpoint.model == LOCAL and not local_server_is(getattr(client, "api_base", None))):
            client = self._clients[key] = make_client(endpoint, settings, store=self.store)
        return client

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def sync_prompt(workspace: Workspace, path: Path, *, git: bool = True, text: str | None = None) -> list[str]:
    """Bring the store up to date with ``path``: its git history, then its current text (``text`` when given:
    what an editor saved, else the file on disk). Returns warnings.

    Unusable text (a missing or binary file, invalid Unicode, over ``max_prompt_bytes``) raises
    :class:`~spade_lsp.errors.PromptFileError` before anything is written.
    """
    from spade_lsp._files import confine
    from spade_lsp._prompts import decode_prompt, read_prompt_file
    from spade_lsp.errors import GitHistoryError, PromptFileError

    confine(workspace.root, path, "a prompt")  # the files kept beside it are confined where they are read
    max_bytes = workspace.settings.max_prompt_bytes
    from_file = text is None  # then recorded only if the file still holds it (see History.record)
    if text is None:
        text = read_prompt_file(path, max_bytes=max_bytes)
    else:
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError as error:
            reason = f"the text is not valid Unicode ({error.reason})"
            raise PromptFileError(f"{path}: {reason}; nothing recorded") from error
        decode_prompt(data, source=str(path), max_bytes=max_bytes)  # the same checks as for a file
    warnings: list[str] = []
    if git:
        try:  # outside any repository the history is simply empty
            warnings += workspace.history.import_git(path, max_bytes=max_bytes).warnings or []
        except GitHistoryError as error:
            warnings.append(f"git history not imported: {error}")
    if not text.strip():
        warnings.append(f"{path}: the prompt is empty; nothing recorded")
        return warnings
    _refuse_unparsed_message_list(path, text)
    workspace.history.record(path, text, origin="save", from_file=from_file)
    return warnings


def _refuse_unparsed_message_list(path: Path, text: str) -> None:
    """A message list (``.prompt.json``, ``.prompt.yaml``) that does not parse, half-typed JSON an autosave wrote,
    is not recorded (its git history is imported before): as a version it would be its raw text, so every sentence
    would count as removed and added again once it parses, losing its origin and labels.
    :class:`~spade_lsp.errors.ConfigError` says why, as for invalid front matter."""
    from spade_lsp._prompts import parse_prompt, prompt_kind
    from spade_lsp.errors import ConfigError

    if prompt_kind(path) != "messages":
        return
    try:
        parse_prompt(text, source=str(path), kind="messages")
    except ConfigError as error:
        raise ConfigError(f"{error}; not recorded until it parses") from error


def synced_head(workspace: Workspace, path: Path) -> tuple[list[str], int, str]:
    """Sync ``path`` (see :func:`sync_prompt`), then its newest recorded version: warnings, the version's number
    and its text. :class:`~spade_lsp.errors.InputError` when nothing is recorded (an empty prompt)."""
    from spade_lsp.errors import InputError

    warnings = sync_prompt(workspace, path)
    versions = workspace.history.versions(path)
    if not versions:
        raise InputError(f"{path}: the prompt has no recorded version")
    return warnings, versions[-1].number, workspace.history.content(versions[-1].content_hash)
