"""Provider batch APIs: the LLM layer's requests sent through litellm's files and batches API (OpenAI-style JSONL
batches), answered within the completion window at the provider's batch price.

:class:`BatchLiteLLMClient` is a :class:`~spade_lsp.llm.LiteLLMClient` whose :meth:`complete_many` answers
cached requests from the store as usual and sends the rest through provider batches. Every batch has an
``llm_batches`` row and its cache keys in ``llm_batch_keys``. In one store transaction, a run finds the open
rows holding any of its uncached keys (those batches are polled and collected, never submitted again) and
inserts a row (status ``uploading``) for each new chunk of the keys no open row holds (at most 50,000 requests
and ~190 MB of JSONL per chunk); only then does it upload, create, and poll every batch together. The JSONL's
``custom_id`` is the request's cache key; its body is what the synchronous path sends in the client's current
structured mode (the key stays the ``json_schema`` form). A final batch's answers are validated as the
synchronous path validates them, cached by ``custom_id`` (also those of keys this run did not ask for) and the
row closed, in one transaction. An invalid structured answer is asked again through the synchronous path, once
per key, with the request's re-asks; with ``reasks=0`` it is returned as
:class:`~spade_lsp.llm.InvalidAnswerError` instead. A line refused for its response format steps the
endpoint's structured mode down and goes to the synchronous path.

A batch the provider no longer has (404), a create refused for good (a 4xx other than 429) or an output file
that is gone closes its row as ``lost`` (the error written): the next run submits its keys again. An unreadable
output line is an error for its ``custom_id`` only. A row that never learnt its batch id (death between create
and the write) is matched against the provider's batch list by input file id. Open rows no request of the
current run needs are swept at its start (:func:`collect_open_batches`): finished ones are cached and closed.
A single :meth:`complete` (the editor's interactive calls) stays synchronous.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from spade_lsp.errors import LLMError
from spade_lsp.llm import (
    _FORMAT_WORDS,
    STRUCTURED_MODES,
    Completion,
    InvalidAnswerError,
    LiteLLMClient,
    LLMRequest,
    _import_litellm,
    _Invalid,
    _mode_messages,
    _mode_parameters,
    _normalised,
    _read_json,
)
from spade_lsp.store import (
    claim_llm_batches,
    close_llm_batch_lost,
    collect_llm_batch,
    delete_llm_batch,
    llm_batch_state,
    submitted_llm_batches,
    take_over_llm_batch,
    update_llm_batch,
)

__all__ = ["BatchLiteLLMClient", "BatchPrice", "batch_price", "collect_open_batches"]

#: OpenAI takes at most 50,000 requests in one batch...
MAX_BATCH_REQUESTS: Final = 50_000
#: ... and an input file of at most 200 MB: chunks stay below this many bytes of JSONL.
MAX_BATCH_BYTES: Final = 190 * 1024 * 1024
#: Provider statuses after which a batch changes no more.
FINAL_STATUSES: Final = frozenset({"completed", "failed", "expired", "cancelled"})
_ENDPOINT: Final = "/v1/chat/completions"
_LIST_PAGES: Final = 10
_HEARTBEAT_S: Final = 1.0
_CUSTOM_ID: Final = re.compile(r'"custom_id"\s*:\s*"([^"\\]+)"')
#: Statuses of a row some process is submitting right now (it holds a lease on it, see ``_lease_s``).
_SUBMITTING: Final = frozenset({"uploading", "submitting"})

Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class BatchPrice:
    """Dollars per token for a batch's input and output (None: unknown), and where the figures come from."""

    input: float | None
    output: float | None
    source: str

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        if self.input is None or self.output is None:
            return None
        return prompt_tokens * self.input + completion_tokens * self.output


def batch_price(model: str) -> BatchPrice:
    """The batch price litellm's cost map gives ``model``; without one, the synchronous price as an upper bound
    (said in ``source``); without either, unknown."""
    litellm = _import_litellm()
    try:
        info: Mapping[str, Any] = litellm.get_model_info(model=model)
    except Exception:  # litellm raises for a model its map does not know
        return BatchPrice(None, None, f"litellm's price map does not know {model}")
    batch_in, batch_out = info.get("input_cost_per_token_batches"), info.get("output_cost_per_token_batches")
    if batch_in is not None and batch_out is not None:
        return BatchPrice(float(batch_in), float(batch_out), "batch price from litellm's price map")
    sync_in, sync_out = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if sync_in is not None and sync_out is not None:
        return BatchPrice(
            float(sync_in),
            float(sync_out),
            f"litellm's price map has no batch price for {model}: priced at its synchronous price (an upper bound)",
        )
    return BatchPrice(None, None, f"litellm's price map has no price for {model}")


@dataclass
class _Answer:
    """What a batch said about one request: its text and tokens, or the error it gave (``status``: its HTTP
    status, when it had one)."""

    text: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None
    status: int | None = None
    where: str = ""  # "batch ID (STATUS)"
    log: dict[str, Any] | None = None  # its batch's batch_log entry


class _CallFailed(LLMError):
    """A call of the files and batches API that failed; ``gone`` when retrying cannot help (404, or a 4xx other
    than 408, 409 and 429): the provider does not have, or will never take, what was asked for."""

    def __init__(self, message: str, status: int | None, kind: str) -> None:
        super().__init__(message)
        self.status = status
        self.gone = kind == "NotFoundError" or (
            isinstance(status, int) and 400 <= status < 500 and status not in (408, 409, 429)
        )


@dataclass
class _Row:
    """One ``llm_batches`` row this run waits for."""

    id: int
    keys: set[str]
    batch_id: str | None = None
    input_file_id: str | None = None
    status: str = "uploading"
    digest: str = ""
    data: bytes = b""  # the JSONL to upload (new rows only)
    batch: Any = None  # the provider's batch, once final
    done: int = 0
    failures: int = 0
    error: LLMError | None = None  # why this run cannot collect it
    answers: dict[str, _Answer] = field(default_factory=dict)
    file_errors: list[str] = field(default_factory=list)
    lost: bool = False  # an output file is gone: the row closes as 'lost'

    @property
    def waiting(self) -> bool:
        return self.error is None and self.batch is None


class BatchLiteLLMClient(LiteLLMClient):
    """:class:`LiteLLMClient` whose batches go through the provider's batch API (see the module's docstring)."""

    #: The sampler sends every call of a run in one round: each round is one batch, waited for in full.
    round_calls: int = MAX_BATCH_REQUESTS
    max_batch_requests: int = MAX_BATCH_REQUESTS
    max_batch_bytes: int = MAX_BATCH_BYTES

    def __init__(
        self,
        model: str,
        *,
        poll_s: float = 30.0,
        completion_window: str = "24h",
        **kwargs: Any,
    ) -> None:
        super().__init__(model, **kwargs)
        self.poll_s = poll_s
        self.completion_window = completion_window
        #: One summary per batch this client (and those :meth:`with_model` derives) collected, oldest first.
        self.batch_log: list[dict[str, Any]] = []
        self._log_lock = threading.Lock()

    @classmethod
    def adopt(cls, client: LiteLLMClient, *, poll_s: float, completion_window: str) -> BatchLiteLLMClient:
        """``client`` (its settings, limits, usage and cache) sending its batches through the provider's API."""
        batch = cls.__new__(cls)
        batch.__dict__.update(client.__dict__)
        batch.poll_s = poll_s
        batch.completion_window = completion_window
        batch.batch_log = []
        batch._log_lock = threading.Lock()
        return batch

    def complete(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        response_schema: Mapping[str, Any] | None = None,
        temperature: float = 0.0,
        sample_index: int = 0,
    ) -> Completion:
        """One call: synchronous (a batch of one would only wait)."""
        [answer] = LiteLLMClient.complete_many(self, [LLMRequest(messages, response_schema, temperature, sample_index)])
        if isinstance(answer, LLMError):
            raise answer
        return answer

    def complete_many(
        self,
        requests: Sequence[LLMRequest],
        *,
        on_result: Callable[[int, Completion | LLMError], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
        on_progress: Progress | None = None,
    ) -> list[Completion | LLMError]:
        """Answers for ``requests`` in order: cached ones from the store, the rest through provider batches
        (open ones that already hold them, else new ones). ``on_progress(done, total)`` runs at every poll; an
        exception from it (or from ``on_result``) leaves the batches running for a later run to resume. When
        ``should_stop()`` turns true the batches are cancelled at the provider and what they answered is kept;
        so are they when ``on_progress`` raises :class:`~spade_lsp.errors.JobCancelled` (the job was cancelled),
        the rows then left for the next run."""
        results: list[Completion | LLMError | None] = [None] * len(requests)
        keys = [self._key(request) for request in requests]
        for index, answer in self._cached_answers(requests, keys).items():
            self._deliver(results, index, answer, on_result)
        pending: dict[str, list[int]] = {}
        for index, result in enumerate(results):
            if result is None:
                pending.setdefault(keys[index], []).append(index)
        if not pending:
            return results  # type: ignore[return-value]
        try:
            name, _ = self._provider()
        except LLMError as error:  # nothing can be sent: every request gets the one-line reason
            for indices in pending.values():
                self.usage.add_failure(Completion("", calls=0, cost=0.0))
                self._deliver_all(results, indices, error, on_result)
            return results  # type: ignore[return-value]
        mode = STRUCTURED_MODES.index(self.structured_mode())
        lines = {key: self._line(requests[indices[0]], key, name, mode) for key, indices in pending.items()}
        rows = self._claim(lines)
        with contextlib.suppress(LLMError):
            self.collect_open_batches(exclude={row.id for row in rows})
        for row in rows:
            if row.data:
                self._submit(row)
        self._poll(rows, len(pending), should_stop, on_progress)
        outcome: dict[str, _Answer | LLMError] = {}
        for row in rows:
            self._finish(row, requests, pending, outcome)
        self._answer(requests, pending, outcome, results, on_result, should_stop, mode)
        return results  # type: ignore[return-value]

    def collect_open_batches(self, *, exclude: set[int] | frozenset[int] = frozenset()) -> int:
        """Collect every open row of this client's endpoint that has a batch id (but those in ``exclude``):
        one poll each; a final batch's answers are cached by ``custom_id`` and its row closed, a batch the
        provider no longer has closes as 'lost'. The number of rows closed."""
        if self.store is None:
            return 0
        closed = 0
        for submitted in submitted_llm_batches(self.store, self.endpoint):
            if submitted.id in exclude:
                continue
            batch_id, model = submitted.batch_id, submitted.model
            client = self if model == self.model else self.with_model(model)
            assert isinstance(client, BatchLiteLLMClient)
            row = _Row(submitted.id, set(), batch_id=batch_id, status="")
            try:
                batch = client._call(f"polling batch {batch_id}", "retrieve_batch", batch_id=batch_id)
            except _CallFailed as error:
                if error.gone:
                    client._close_lost(row.id, f"{error}: the batch is gone; its requests will be submitted again")
                    closed += 1
                continue
            if str(batch.status) not in FINAL_STATUSES:
                continue
            row.batch = batch
            try:
                client._download(row)
            except LLMError:
                continue
            entries = [(k, a.text) for k, a in row.answers.items() if a.error is None and a.text is not None]
            client._collect(row, entries)
            closed += 1
        return closed

    # -- claiming and submitting -----------------------------------------------------------------------------

    def _line(self, request: LLMRequest, key: str, name: str, mode: int) -> bytes:
        """The request's JSONL line: its body as the synchronous path sends it now."""
        schema = request.response_schema
        if schema is None:
            body: dict[str, Any] = {"model": name, "messages": [dict(m) for m in request.messages]}
            body.update(self._parameters(request))
        else:
            body = {"model": name, "messages": _mode_messages(request.messages, schema, mode)}
            body.update({**self.parameters, **_mode_parameters(request, schema, mode, self.max_tokens)})
        line = {"custom_id": key, "method": "POST", "url": _ENDPOINT, "body": body}
        return (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8")

    def _lease_s(self) -> float:
        """How long a row being uploaded or created is left to the process doing it."""
        return self.timeout_s * (self.max_retries + 1) * 2 + 30.0

    def _claim(self, lines: Mapping[str, bytes]) -> list[_Row]:
        """The rows answering ``lines``' keys: the open rows holding any of them, then a new row (inserted,
        status 'uploading', with its keys) per chunk of the keys none holds; all in one transaction, so two
        processes never submit the same key twice."""
        wanted = list(lines)
        if self.store is None:
            return [self._new_row(0, chunk, lines) for chunk in self._chunks(wanted, lines)]
        claimed = claim_llm_batches(
            self.store,
            wanted,
            model=self.model,
            endpoint=self.endpoint,
            lease_s=self._lease_s(),
            lost_error="the process uploading it stopped before the upload was recorded",
            split=lambda keys: [(self._digest(chunk), chunk) for chunk in self._chunks(keys, lines)],
        )
        live = [_Row(o.id, o.keys, o.batch_id, o.input_file_id, o.status) for o in claimed.open]
        return [*live, *(self._new_row(n.id, n.keys, lines, n.digest) for n in claimed.new)]

    def _chunks(self, keys: Sequence[str], lines: Mapping[str, bytes]) -> list[list[str]]:
        """``keys`` split so that no chunk exceeds the provider's request count or input file size."""
        chunks: list[list[str]] = []
        chunk: list[str] = []
        size = 0
        for key in keys:
            length = len(lines[key])
            if chunk and (len(chunk) >= self.max_batch_requests or size + length > self.max_batch_bytes):
                chunks.append(chunk)
                chunk, size = [], 0
            chunk.append(key)
            size += length
        if chunk:
            chunks.append(chunk)
        return chunks

    def _new_row(self, row_id: int, chunk: Sequence[str], lines: Mapping[str, bytes], digest: str = "") -> _Row:
        return _Row(row_id, set(chunk), digest=digest or self._digest(chunk), data=b"".join(lines[k] for k in chunk))

    def _digest(self, keys: Sequence[str] | set[str]) -> str:
        payload = json.dumps({"endpoint": self.endpoint, "model": self.model, "keys": sorted(keys)})
        return hashlib.sha256(payload.encode()).hexdigest()

    def _submit(self, row: _Row) -> None:
        """Upload a new row's JSONL and create its batch; a failed upload deletes the row (nothing was
        accepted), a create refused for good closes it as lost, a transient failure leaves it to the next run."""
        try:
            uploaded = self._call(
                "uploading the batch input", "create_file", file=("spade-batch.jsonl", row.data), purpose="batch"
            )
        except LLMError as error:
            row.error = error
            if self.store is not None and row.id:
                delete_llm_batch(self.store, row.id)
            return
        row.input_file_id, row.data = str(uploaded.id), b""
        self._update(row.id, input_file_id=row.input_file_id, status="submitting")
        self._create(row)

    def _create(self, row: _Row) -> None:
        assert row.input_file_id is not None
        try:
            batch = self._call(
                "creating the batch",
                "create_batch",
                completion_window=self.completion_window,
                endpoint=_ENDPOINT,
                input_file_id=row.input_file_id,
                metadata={"spade_digest": row.digest[:64]} if row.digest else None,
            )
        except _CallFailed as error:
            if error.gone:
                message = f"{error}: the provider refused it for good; its requests will be submitted again"
                self._close_lost(row.id, message)
                row.error = LLMError(message)
            else:  # the next run creates it from the same upload
                self._update(row.id, status="create_failed", error=str(error))
                row.error = LLMError(f"{error}; the upload is kept: run again to create the batch")
            return
        row.batch_id, row.status = str(batch.id), str(batch.status)
        self._update(row.id, batch_id=row.batch_id, status=row.status, submitted=True)

    def _resume(self, row: _Row) -> None:
        """An adopted row without a batch id: left to the process submitting it while its lease lasts (re-read
        from the store), else taken over (one process only: a conditional update), found in the provider's list
        by its input file, or created from it."""
        if self.store is not None:
            found = llm_batch_state(self.store, row.id)
            if found is None or found.collected_at is not None:
                row.error = LLMError(f"{self.model}: batch row {row.id} was closed by another process: run again")
                return
            row.batch_id, row.input_file_id, row.status = found.batch_id, found.input_file_id, found.status
            if row.batch_id:
                return
            touched = datetime.fromisoformat(found.updated_at)
            touched = touched if touched.tzinfo is not None else touched.replace(tzinfo=UTC)
            if row.status in _SUBMITTING and (datetime.now(UTC) - touched).total_seconds() < self._lease_s():
                return  # another process is submitting it: wait
            if not take_over_llm_batch(self.store, row.id, status=row.status, updated_at=found.updated_at):
                return  # another process took it first: wait for it
        if not row.input_file_id:
            row.error = LLMError(f"{self.model}: batch row {row.id} has no upload: run again to submit it")
            self._close_lost(row.id, "no upload was recorded")
            return
        row.status = "submitting"
        try:
            found_id = self._find(row.input_file_id)
        except LLMError as error:
            self._update(row.id, status="create_failed")
            row.error = LLMError(f"{error}; run again to resume the batch")
            return
        if found_id is not None:
            row.batch_id, row.status = found_id, "validating"
            self._update(row.id, batch_id=found_id, status="validating", submitted=True)
            return
        self._create(row)

    def _find(self, file_id: str) -> str | None:
        """The provider's batch made from ``file_id``, if one was created (its list, page by page)."""
        after: str | None = None
        for _ in range(_LIST_PAGES):
            kwargs: dict[str, Any] = {"limit": 100}
            if after is not None:
                kwargs["after"] = after
            page = self._call("listing the provider's batches", "list_batches", **kwargs)
            data = list(getattr(page, "data", None) or [])
            for batch in data:
                if getattr(batch, "input_file_id", None) == file_id:
                    return str(batch.id)
            if not data or not getattr(page, "has_more", False):
                return None
            after = str(data[-1].id)
        return None

    # -- polling -----------------------------------------------------------------------------------------------

    def _poll(
        self, rows: list[_Row], total: int, should_stop: Callable[[], bool] | None, on_progress: Progress | None
    ) -> None:
        """Poll every row's batch until each is final (or cannot be polled now), rows kept up to date; polling
        errors are retried ``max_retries`` times in a row per batch, then the row stays open for a later run."""
        cancelled = False
        while True:
            for row in rows:
                if not row.waiting:
                    continue
                if not row.batch_id:
                    self._resume(row)
                    if not row.batch_id:
                        continue
                self._poll_once(row)
            waiting = [row for row in rows if row.waiting]
            done = min(total, sum(row.done for row in rows))
            self._progress(rows, on_progress, done, total)
            if not waiting:
                return
            if not cancelled and should_stop is not None and should_stop():
                cancelled = True
                for row in waiting:
                    if row.batch_id:
                        with contextlib.suppress(LLMError):
                            self._call(f"cancelling batch {row.batch_id}", "cancel_batch", batch_id=row.batch_id)
            self._wait(rows, on_progress, done, total)

    def _poll_once(self, row: _Row) -> None:
        try:
            batch = self._call(f"polling batch {row.batch_id}", "retrieve_batch", batch_id=row.batch_id)
        except _CallFailed as error:
            if error.gone:
                message = f"{error}: the batch is gone at the provider; the row was closed, run again to resubmit"
                self._close_lost(row.id, message)
                row.error = LLMError(message)
                return
            row.failures += 1
            if row.failures > self.max_retries:
                row.error = LLMError(f"{error}; the batch is kept: run again to resume it")
            return
        row.failures = 0
        counts = getattr(batch, "request_counts", None)
        completed = int(getattr(counts, "completed", 0) or 0)
        failed = int(getattr(counts, "failed", 0) or 0)
        status = str(batch.status)
        if (status, completed + failed) != (row.status, row.done):
            self._update(row.id, status=status, completed=completed, failed=failed)
        row.status, row.done = status, completed + failed
        if status in FINAL_STATUSES:
            row.batch = batch

    def _wait(self, rows: list[_Row], on_progress: Progress | None, done: int, total: int) -> None:
        """``poll_s`` until the next poll, reporting progress at least every second meanwhile, so a cancelled
        job or a stopping daemon is heard at once, not at the next poll."""
        deadline = time.monotonic() + self.poll_s
        while (left := deadline - time.monotonic()) > 0:
            time.sleep(min(left, _HEARTBEAT_S))
            if time.monotonic() < deadline:
                self._progress(rows, on_progress, done, total)

    def _progress(self, rows: list[_Row], on_progress: Progress | None, done: int, total: int) -> None:
        if on_progress is None:
            return
        try:
            on_progress(done, total)
        except Exception as error:
            from spade_lsp.errors import JobCancelled

            if isinstance(error, JobCancelled):  # the user cancelled the job: stop the batches' spending too
                for row in rows:
                    if row.waiting and row.batch_id:
                        with contextlib.suppress(LLMError):
                            self._call(f"cancelling batch {row.batch_id}", "cancel_batch", batch_id=row.batch_id)
            raise  # the rows stay open: the next run collects what the batches kept

    # -- collecting --------------------------------------------------------------------------------------------

    def _download(self, row: _Row) -> None:
        """Every answer and error a final batch holds, by custom id, into ``row.answers``. A file that is gone
        is noted (an output file gone makes the row lost); an unreadable line is an error for its custom id."""
        batch = row.batch
        for which, file_id in (("error", batch.error_file_id), ("output", batch.output_file_id)):
            if not file_id:
                continue
            what = f"downloading {file_id} of batch {batch.id}"
            try:
                content = self._call(what, "file_content", file_id=file_id)
            except _CallFailed as error:
                if not error.gone:
                    raise
                row.file_errors.append(f"its {which} file {file_id} is gone ({error})")
                row.lost = row.lost or which == "output"
                continue
            text = bytes(content.content).decode("utf-8", errors="replace")
            for number, line in enumerate(text.splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    row.answers[str(record["custom_id"])] = _read_line(record)
                except (ValueError, KeyError, TypeError, IndexError, AttributeError) as error:
                    match = _CUSTOM_ID.search(line)
                    problem = f"line {number} of {file_id} (batch {batch.id}) is unreadable: {_line(error)}"
                    if match is not None:
                        row.answers[match.group(1)] = _Answer(error=problem)
                    else:
                        row.file_errors.append(problem)

    def _finish(
        self,
        row: _Row,
        requests: Sequence[LLMRequest],
        pending: Mapping[str, list[int]],
        outcome: dict[str, _Answer | LLMError],
    ) -> None:
        """What ``row`` says about each pending key it holds, into ``outcome`` (a success from any row wins);
        a final batch is cached (valid answers of pending keys, every answer of keys this run did not ask for)
        and its row closed, in one transaction."""
        mine = [key for key in row.keys if key in pending]
        if row.error is not None or row.batch is None:
            error = row.error or LLMError(f"{self.model}: batch row {row.id} is still being submitted: run again")
            for key in mine:
                outcome.setdefault(key, error)
            return
        batch = row.batch
        try:
            self._download(row)
        except LLMError as error:
            later = LLMError(f"{error}; the batch is kept: run again to collect it")
            for key in mine:
                outcome.setdefault(key, later)
            return
        status = str(batch.status)
        entries: list[tuple[str, str]] = []
        for key, answer in row.answers.items():
            if answer.error is not None or answer.text is None:
                continue
            text = answer.text
            if key in pending:
                schema = requests[pending[key][0]].response_schema
                if schema is not None:
                    try:
                        text = _normalised(_read_json(text, schema))
                    except _Invalid:
                        continue  # not cached: judged when answered
            entries.append((key, text))
        self._collect(row, entries)
        unanswered = 0
        gone = "; ".join(row.file_errors)
        kept = [a for a in row.answers.values() if a.error is None]
        price = batch_price(self.model)
        costs = [price.cost(a.prompt_tokens, a.completion_tokens) for a in kept]
        entry = {
            "id": str(batch.id),
            "status": status,
            "requested": len(row.keys),
            "completed": len(kept),
            "failed": len(row.answers) - len(kept),
            "unanswered": 0,
            "invalid": 0,
            "cost": round(sum(c for c in costs if c is not None), 6) if None not in costs else None,
            "price": price.source,
        }
        for key in mine:
            said = row.answers.get(key)
            candidate: _Answer | LLMError
            if said is None:
                unanswered += 1
                why = f": {_batch_errors(batch.errors)}" if status == "failed" and batch.errors else ""
                why += f" ({gone})" if gone else ""
                candidate = LLMError(
                    f"{self.model}: not answered: batch {batch.id} ended {status}{why} "
                    f"({len(kept)} of {len(row.keys)} answered; those were kept)"
                )
            else:
                said.where, said.log = f"batch {batch.id} ({status})", entry
                candidate = said
            if _rank(candidate) > _rank(outcome.get(key)):
                outcome[key] = candidate
        entry["unanswered"] = unanswered
        with self._log_lock:
            self.batch_log.append(entry)

    def _answer(
        self,
        requests: Sequence[LLMRequest],
        pending: Mapping[str, list[int]],
        outcome: Mapping[str, _Answer | LLMError],
        results: list[Completion | LLMError | None],
        on_result: Callable[[int, Completion | LLMError], None] | None,
        should_stop: Callable[[], bool] | None,
        mode: int,
    ) -> None:
        """Deliver each pending key's outcome to its requests: usage and failures counted once per key, invalid
        structured answers and format refusals asked again synchronously once per key (or, with ``reasks=0``,
        returned as :class:`InvalidAnswerError`)."""
        price = batch_price(self.model)
        again: list[str] = []
        for key, indices in pending.items():
            request = requests[indices[0]]
            result = outcome.get(key)
            if result is None:
                result = LLMError(f"{self.model}: no batch holds this request: run again")
            if isinstance(result, LLMError):
                self.usage.add_failure(Completion("", calls=0, cost=0.0))
                self._deliver_all(results, indices, result, on_result)
                continue
            spent = Completion(
                "",
                prompt_tokens=result.prompt_tokens,
                completion_tokens=result.completion_tokens,
                cost=price.cost(result.prompt_tokens, result.completion_tokens),
            )
            if result.error is not None:
                if request.response_schema is not None and _format_refusal(result):
                    self._step_down(mode, result.error)
                    again.append(key)
                    continue
                self.usage.add_failure(Completion("", calls=1, cost=0.0))
                error = LLMError(f"{self.model}: {result.where}: {result.error}")
                self._deliver_all(results, indices, error, on_result)
                continue
            assert result.text is not None
            text = result.text
            schema = request.response_schema
            if schema is not None:
                try:
                    text = _normalised(_read_json(text, schema))
                except _Invalid as invalid:
                    if request.reasks == 0:  # the caller reads the answer itself (as the synchronous path gives it)
                        self.usage.add_failure(spent)
                        failure = InvalidAnswerError(f"{self.model}: the model's answer {invalid.problem}", result.text)
                        self._deliver_all(results, indices, failure, on_result)
                    else:  # a call answered all the same: counted, then asked again
                        self.usage.add(spent)
                        if result.log is not None:
                            with self._log_lock:
                                result.log["invalid"] += 1
                        again.append(key)
                    continue
            completion = Completion(
                text=text,
                prompt_tokens=result.prompt_tokens,
                completion_tokens=result.completion_tokens,
                cost=spent.cost,
            )
            self._deliver_all(results, indices, completion, on_result, count=True)
        if again:  # the synchronous path asks again, with its re-asks: once per key
            answers = LiteLLMClient.complete_many(
                self, [requests[pending[k][0]] for k in again], should_stop=should_stop
            )
            for key, retry in zip(again, answers, strict=True):
                self._deliver_all(results, pending[key], retry, on_result)

    def _step_down(self, mode: int, reason: str) -> None:
        """The lines went out in ``mode`` and the provider refused it: the synchronous path goes on from below."""
        if mode + 1 >= len(STRUCTURED_MODES):
            return
        capability = self._capability()
        capability.step_down(mode, f"{STRUCTURED_MODES[mode]} rejected in a batch: {reason}"[:500])

    def _deliver_all(
        self,
        results: list[Completion | LLMError | None],
        indices: Sequence[int],
        answer: Completion | LLMError,
        on_result: Callable[[int, Completion | LLMError], None] | None,
        *,
        count: bool = False,
    ) -> None:
        """``answer`` for every request of one key: duplicates share it, only the first paid for it."""
        for position, index in enumerate(indices):
            if position and isinstance(answer, Completion):
                self._deliver(results, index, Completion(text=answer.text, cached=True, calls=0), on_result)
            else:
                self._deliver(results, index, answer, on_result, count=count)

    def _deliver(
        self,
        results: list[Completion | LLMError | None],
        index: int,
        answer: Completion | LLMError,
        on_result: Callable[[int, Completion | LLMError], None] | None,
        *,
        count: bool = False,
    ) -> None:
        results[index] = answer
        if isinstance(answer, Completion) and (answer.cached or count):
            self.usage.add(answer)
        if on_result is not None:
            on_result(index, answer)

    # -- the provider and the store ----------------------------------------------------------------------------

    def _provider(self) -> tuple[str, str]:
        """The model name the provider knows and litellm's provider name (``openai/gpt-4o-mini`` -> both)."""
        litellm = _import_litellm()
        try:
            name, provider, _, _ = litellm.get_llm_provider(model=self.model, api_base=self.api_base)
        except Exception as error:
            raise LLMError(f"{self.model}: litellm cannot tell its provider: {_line(error)}") from None
        return str(name), str(provider)

    def _call(self, what: str, function: str, **kwargs: Any) -> Any:
        """One call of litellm's files and batches API, with the client's timeout, retries and credentials."""
        litellm = _import_litellm()
        _, provider = self._provider()
        try:
            return getattr(litellm, function)(
                custom_llm_provider=provider,
                api_base=self.api_base,
                api_key=self.api_key,
                timeout=self.timeout_s,
                max_retries=self.max_retries,
                **kwargs,
            )
        except Exception as error:  # litellm and the provider's SDK raise their own classes
            status = getattr(error, "status_code", None)
            raise _CallFailed(
                f"{self.model}: {what} failed: {_line(error)}",
                status if isinstance(status, int) else None,
                type(error).__name__,
            ) from None

    def _collect(self, row: _Row, entries: Sequence[tuple[str, str]]) -> None:
        """Cache ``entries`` and close the row in one transaction: a run resumed after this finds the answers
        cached, one resumed before finds the row open."""
        if self.store is None or not row.id:
            return
        batch = row.batch
        counts = getattr(batch, "request_counts", None)
        collect_llm_batch(
            self.store,
            row.id,
            model=self.model,
            entries=entries,
            status="lost" if row.lost else str(batch.status),
            completed=int(getattr(counts, "completed", 0) or 0),
            failed=int(getattr(counts, "failed", 0) or 0),
            error="; ".join(row.file_errors) or None,
        )

    def _close_lost(self, row_id: int, error: str) -> None:
        """Close a row whose batch will never answer: its keys are submitted again by the next run."""
        if self.store is None or not row_id:
            return
        close_llm_batch_lost(self.store, row_id, error)

    def _update(
        self,
        row_id: int,
        *,
        status: str | None = None,
        input_file_id: str | None = None,
        batch_id: str | None = None,
        completed: int | None = None,
        failed: int | None = None,
        error: str | None = None,
        submitted: bool = False,
    ) -> None:
        """Set the given columns of row ``row_id`` (None: unchanged; ``submitted``: accepted by the provider now)."""
        if self.store is None or not row_id:
            return
        update_llm_batch(
            self.store,
            row_id,
            status=status,
            input_file_id=input_file_id,
            batch_id=batch_id,
            completed=completed,
            failed=failed,
            error=error,
            submitted=submitted,
        )


def collect_open_batches(client: LiteLLMClient) -> int:
    """Sweep the store's open batch rows of ``client``'s endpoint (see
    :meth:`BatchLiteLLMClient.collect_open_batches`): the number closed. Cheap: one poll per open row."""
    batch = client if isinstance(client, BatchLiteLLMClient) else None
    if batch is None:
        batch = BatchLiteLLMClient.adopt(client, poll_s=30.0, completion_window="24h")
    return batch.collect_open_batches()


def _rank(outcome: _Answer | LLMError | None) -> int:
    """Which of two rows' word on a key stands: an answer, over a refused line, over an error, over nothing."""
    if isinstance(outcome, _Answer):
        return 3 if outcome.error is None else 2
    return 1 if outcome is not None else 0


def _format_refusal(answer: _Answer) -> bool:
    return answer.status in (400, 415, 422) and bool(_FORMAT_WORDS.search(answer.error or ""))


def _read_line(record: Mapping[str, Any]) -> _Answer:
    """One line of an output or error file."""
    response = record.get("response") or {}
    error = record.get("error")
    status = response.get("status_code")
    body = response.get("body") or {}
    if error or status != 200:
        detail = (error or {}).get("message") or ((body.get("error") or {}).get("message")) or "no detail"
        return _Answer(error=f"HTTP {status}: {detail}" if status else str(detail), status=status)
    text = body["choices"][0]["message"]["content"]
    if not isinstance(text, str):
        return _Answer(error="the answer has no text content")
    usage = body.get("usage") or {}
    return _Answer(
        text=text,
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
    )


def _batch_errors(errors: Any) -> str:
    data = getattr(errors, "data", None) or []
    messages = [str(getattr(e, "message", e)) for e in data]
    return "; ".join(messages[:3]) or "no detail"


def _line(error: Exception) -> str:
    message = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {message}" if message else type(error).__name__
