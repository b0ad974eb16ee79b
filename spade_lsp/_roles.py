"""The two model roles, never conflated.

``model`` is the pipeline's model: what ``sample`` and ``compare`` call. ``assistant_model`` is the model
spade-lsp asks for its own work (taxonomy labels, criteria and functions, subsumption, ``ask_llm`` checks, the
default judge and verifier). With no assistant, spade-lsp does its own work offline: it never borrows the
pipeline's model unless ``assistant_model = "same"`` says so. ``"local"`` names the embedded local model in
either role; its server is started on demand, when a client for it is first made, never at import.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

from spade_lsp.errors import ConfigError, ModelNotConfiguredError

if TYPE_CHECKING:
    from spade_lsp.config import Settings
    from spade_lsp.llm import LiteLLMClient, LLMClient
    from spade_lsp.store import Store

Role = Literal["pipeline", "assistant"]

SAME: Final = "same"
LOCAL: Final = "local"
LOCAL_PIPELINE_MAX_TOKENS: Final = 256
LOCAL_ASSISTANT_MAX_TOKENS: Final = 768

_NO_LOCAL_BATCH: Final = "batch: the embedded local model has no batch API; run without --batch"
HOW_TO_CONFIGURE_PIPELINE: Final = (
    "no model is configured: set `model` under [tool.spade] in pyproject.toml or spade.toml "
    '(any litellm model name, e.g. model = "openai/gpt-4o-mini", or "local" for the embedded model), pass '
    "--model, or set spade.model in the editor; for a local OpenAI-compatible server also set api_base"
)
HOW_TO_CONFIGURE_ASSISTANT: Final = (
    "no assistant model is configured: set `assistant_model` under [tool.spade] (a litellm model name, "
    '"local" for the embedded model, or "same" to use the pipeline\'s model), pass --assistant-model, or set '
    "spade.assistantModel in the editor"
)


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where one role's requests go: the model as configured (a litellm name, or ``local``) and its server."""

    role: Role
    model: str
    api_base: str | None
    api_key_env: str | None


def pipeline_endpoint(settings: Settings) -> Endpoint | None:
    """The pipeline's endpoint, or None when no ``model`` is set."""
    if not settings.model:
        return None
    return Endpoint("pipeline", settings.model, settings.api_base, settings.api_key_env)


def assistant_endpoint(settings: Settings) -> Endpoint | None:
    """The assistant's endpoint, or None (offline). ``same`` borrows the pipeline's model and endpoint, each
    ``assistant_*`` setting overriding its counterpart."""
    chosen = settings.assistant_model
    if not chosen:
        return None
    if chosen == SAME:
        if not settings.model:
            return None
        return Endpoint(
            "assistant",
            settings.model,
            settings.assistant_api_base or settings.api_base,
            settings.assistant_api_key_env or settings.api_key_env,
        )
    return Endpoint("assistant", chosen, settings.assistant_api_base, settings.assistant_api_key_env)


def require(endpoint: Endpoint | None, role: Role, *, what: str | None = None) -> Endpoint:
    """``endpoint``, or :class:`ModelNotConfiguredError` saying how to configure the role (and what needs it)."""
    if endpoint is not None:
        return endpoint
    how = HOW_TO_CONFIGURE_PIPELINE if role == "pipeline" else HOW_TO_CONFIGURE_ASSISTANT
    raise ModelNotConfiguredError(f"{what} needs a model; {how}" if what else how)


def make_client(endpoint: Endpoint, settings: Settings, *, store: Store | None = None) -> LiteLLMClient:
    """A litellm client for ``endpoint`` under ``settings``' limits; ``local`` starts (or joins) the machine's
    embedded model server first, logging under the workspace's ``.spade/``."""
    from spade_lsp.llm import LiteLLMClient

    batch = settings.batch and endpoint.role == "pipeline"  # the assistant's own work stays synchronous
    if batch and endpoint.model == LOCAL:  # refused before its server is started
        raise ConfigError(_NO_LOCAL_BATCH)
    if endpoint.role == "pipeline" and (batch or settings.executor == "ray"):
        from spade_lsp._llm_helper import release_unused

        release_unused()  # the calls go to Ray tasks or the provider's batch API
    # Ray takes the pipeline's calls (sampling): the assistant's own work stays in this process; with batch the
    # provider takes the calls and Ray only validates
    if settings.executor == "ray" and endpoint.role == "pipeline" and not batch:
        from spade_lsp._ray import ray_client

        return ray_client(endpoint, settings, store=store)
    model, api_base = endpoint.model, endpoint.api_base
    api_key = os.environ.get(endpoint.api_key_env) if endpoint.api_key_env else None
    max_tokens = settings.max_tokens if endpoint.role == "pipeline" else None
    if model == LOCAL:
        from spade_lsp.local_model import ensure_server

        log_dir = store.path.parent if store is not None else None
        local = ensure_server(log_dir=log_dir)
        model, api_base = local.litellm_model, local.api_base
        # a 135M model may ramble to the end of its context: cap it (the assistant's JSON needs more room)
        max_tokens = max_tokens or (
            LOCAL_PIPELINE_MAX_TOKENS if endpoint.role == "pipeline" else LOCAL_ASSISTANT_MAX_TOKENS
        )
    if api_key is None and api_base:
        api_key = "no-key"  # local OpenAI-compatible servers need none, but litellm insists on one
    client = LiteLLMClient(
        model,
        store=store,
        api_base=api_base,
        api_key=api_key,
        timeout_s=settings.llm_timeout_s,
        max_retries=settings.llm_max_retries,
        concurrency=settings.llm_concurrency,
        rpm=settings.llm_rpm,
        max_reasks=settings.structured_reasks,
        max_tokens=max_tokens,
        parameters=settings.model_parameters if endpoint.role == "pipeline" else None,
        endpoint=LOCAL if endpoint.model == LOCAL else None,  # its port changes at every start
    )
    if batch:
        return _batch_client(client, settings)
    if endpoint.role == "pipeline":
        from spade_lsp._llm_helper import helpers_for

        client.helpers = helpers_for(settings)
    return client


def batched(client: LLMClient, settings: Settings) -> LLMClient:
    """``client`` sending its calls through the provider's batch API (``batch``): the pipeline's client in
    sample and compare, and the judge's in ``spade judge``. Only those: the assistant's other work (labels,
    synthesis, ``ask_llm``) must not wait on a batch window. An injected client is returned as it is."""
    from spade_lsp._batch import BatchLiteLLMClient
    from spade_lsp.llm import LiteLLMClient

    if not settings.batch or not isinstance(client, LiteLLMClient) or isinstance(client, BatchLiteLLMClient):
        return client
    return _batch_client(client, settings)


def _batch_client(client: LiteLLMClient, settings: Settings) -> LiteLLMClient:
    from spade_lsp._batch import BatchLiteLLMClient

    if client.endpoint == LOCAL:
        raise ConfigError(_NO_LOCAL_BATCH)
    return BatchLiteLLMClient.adopt(
        client, poll_s=settings.batch_poll_s, completion_window=settings.batch_completion_window
    )


def local_server_is(api_base: str | None) -> bool:
    """Whether the machine's local model server still answers at ``api_base`` (cheap: a state file and a
    health check)."""
    from spade_lsp.local_model import server_status

    status = server_status()
    return status is not None and bool(status.get("healthy")) and status.get("api_base") == api_base
