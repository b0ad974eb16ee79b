"""A scripted OpenAI-compatible files-and-batches server on loopback, for testing the batch path through the
real litellm client.

It implements what OpenAI's batch API offers: ``POST /v1/files`` (multipart upload), ``GET /v1/files/{id}``,
``GET /v1/files/{id}/content``, ``POST /v1/batches``, ``GET /v1/batches/{id}``, ``GET /v1/batches`` (list) and
``POST /v1/batches/{id}/cancel``. A batch answers its requests gradually: ``complete_after_s`` after it was
created every request is done; before that, the first fraction of them (in file order) is. Each request line
is answered by ``answer`` (a chat-completion body, or a :class:`LineError` that goes to the error file), so a
script decides content, partial failures and invalid structured answers. ``expire_after_s`` makes a batch
expire before it is done (the requests done by then are kept), :meth:`BatchStub.cancel_all` cancels batches as
a provider's dashboard would, and ``upload_status``, ``create_status`` and ``retrieve_status`` make those calls
fail with an HTTP status. ``validating_s``, ``finalizing_s`` and ``cancelling_s`` show a batch in those
intermediate statuses for that long; ``mangle`` rewrites each output line as stored (an unreadable line, say).
The list endpoint pages as OpenAI's does (``limit``, ``after``, ``has_more``). :attr:`BatchStub.counts` counts
every endpoint's calls. ``POST /v1/chat/completions``
answers synchronously with the same script. ``python -m tests.support.batch_stub`` serves an echo model from a
process of its own and prints its api_base.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.support.openai_stub import LoopbackServer, completion_body


@dataclass(frozen=True)
class LineError:
    """A request the batch failed: it goes to the error file with this code and message."""

    message: str = "scripted failure"
    code: str = "server_error"
    status: int = 500


Answer = Callable[[dict[str, Any]], "dict[str, Any] | LineError | str"]


def echo(body: dict[str, Any]) -> str:
    """The default answer: the last user message, echoed."""
    for message in reversed(body.get("messages", [])):
        if message.get("role") == "user":
            return f"echo: {str(message.get('content'))[:200]}"
    return "echo"


@dataclass
class _Batch:
    id: str
    input_file_id: str
    endpoint: str
    completion_window: str
    metadata: dict[str, Any] | None
    lines: list[dict[str, Any]]
    created: float
    status: str = "validating"
    cancelled_at: float | None = None
    finished: dict[str, Any] = field(default_factory=dict)  # the object, frozen once final
    shown: set[str] = field(default_factory=set)  # the statuses a retrieve has shown so far


class BatchStub(LoopbackServer):
    """The server (see the module's docstring); a context manager that runs it in a thread of its own."""

    max_body_bytes = 256 * 1024 * 1024  # batch input files

    def __init__(
        self,
        answer: Answer = echo,
        *,
        complete_after_s: float = 0.2,
        expire_after_s: float | None = None,
        upload_status: int | None = None,
        create_status: int | None = None,
        retrieve_status: int | None = None,
        validating_s: float = 0.0,
        finalizing_s: float = 0.0,
        cancelling_s: float = 0.0,
        mangle: Callable[[str], str] | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        self.validating_s = validating_s
        self.finalizing_s = finalizing_s
        self.cancelling_s = cancelling_s
        self.mangle = mangle
        self.statuses: list[str] = []  # every status a retrieve returned, in order
        self.answer = answer
        self.complete_after_s = complete_after_s
        self.expire_after_s = expire_after_s
        self.upload_status = upload_status
        self.create_status = create_status
        self.retrieve_status = retrieve_status
        self.host = host
        self.port = 0
        self.counts: Counter[str] = Counter()
        self.order: list[str] = []  # creates and retrieves, in the order they came
        self.files: dict[str, tuple[str, bytes]] = {}  # id -> (purpose, content)
        self.batches: dict[str, _Batch] = {}
        self.lock = threading.Lock()
        self._ids = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None

    @property
    def api_base(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def requests(self) -> list[dict[str, Any]]:
        """Every request line of every batch created, in order."""
        with self.lock:
            return [line for batch in self.batches.values() for line in batch.lines]

    def cancel_all(self) -> None:
        """Cancel every unfinished batch (as a user of the provider's dashboard would)."""
        with self.lock:
            for batch in self.batches.values():
                if batch.cancelled_at is None and not batch.finished:
                    batch.cancelled_at = time.monotonic()

    # -- the endpoints -----------------------------------------------------------------------------------------

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}-{next(self._ids):06d}"

    @staticmethod
    def _error(status: int, message: str) -> web.Response:
        return web.json_response({"error": {"message": message, "type": "invalid_request_error"}}, status=status)

    def _file_object(self, file_id: str) -> dict[str, Any]:
        purpose, content = self.files[file_id]
        return {
            "id": file_id,
            "object": "file",
            "bytes": len(content),
            "created_at": int(time.time()),
            "filename": f"{file_id}.jsonl",
            "purpose": purpose,
            "status": "processed",
        }

    async def _upload(self, request: web.Request) -> web.Response:
        self.counts["upload"] += 1
        form = await request.post()
        if self.upload_status is not None:
            return self._error(self.upload_status, "scripted upload failure")
        upload = form.get("file")
        content = upload.file.read() if hasattr(upload, "file") else str(upload or "").encode()
        with self.lock:
            file_id = self._new_id("file")
            self.files[file_id] = (str(form.get("purpose", "batch")), content)
            return web.json_response(self._file_object(file_id))

    async def _file(self, request: web.Request) -> web.Response:
        with self.lock:
            file_id = request.match_info["id"]
            if file_id not in self.files:
                return self._error(404, f"no such file: {file_id}")
            return web.json_response(self._file_object(file_id))

    async def _content(self, request: web.Request) -> web.Response:
        self.counts["content"] += 1
        with self.lock:
            file_id = request.match_info["id"]
            if file_id not in self.files:
                return self._error(404, f"no such file: {file_id}")
            return web.Response(body=self.files[file_id][1], content_type="application/jsonl")

    async def _create(self, request: web.Request) -> web.Response:
        self.counts["create"] += 1
        self.order.append("create")
        body = await request.json()
        if self.create_status is not None:
            return self._error(self.create_status, "scripted batch creation failure")
        with self.lock:
            file_id = body.get("input_file_id")
            if file_id not in self.files:
                return self._error(400, f"no such input file: {file_id}")
            lines = [json.loads(line) for line in self.files[file_id][1].decode().splitlines() if line.strip()]
            batch = _Batch(
                id=self._new_id("batch"),
                input_file_id=file_id,
                endpoint=str(body.get("endpoint")),
                completion_window=str(body.get("completion_window")),
                metadata=body.get("metadata"),
                lines=lines,
                created=time.monotonic(),
            )
            self.batches[batch.id] = batch
            return web.json_response(self._object(batch))

    async def _retrieve(self, request: web.Request) -> web.Response:
        self.counts["retrieve"] += 1
        self.order.append("retrieve")
        if self.retrieve_status is not None:
            return self._error(self.retrieve_status, "scripted polling failure")
        with self.lock:
            batch = self.batches.get(request.match_info["id"])
            if batch is None:
                return self._error(404, f"no such batch: {request.match_info['id']}")
            obj = self._object(batch)
            self.statuses.append(str(obj["status"]))
            batch.shown.add(str(obj["status"]))  # what a poll has seen
            return web.json_response(obj)

    async def _list(self, request: web.Request) -> web.Response:
        self.counts["list"] += 1
        limit = int(request.query.get("limit", "20"))
        after = request.query.get("after")
        with self.lock:
            ordered = list(reversed(self.batches.values()))  # newest first, as OpenAI lists them
            if after is not None:
                ids = [batch.id for batch in ordered]
                ordered = ordered[ids.index(after) + 1 :] if after in ids else []
            data = [self._object(batch) for batch in ordered[:limit]]
            more = len(ordered) > limit
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "first_id": data[0]["id"] if data else None,
                "last_id": data[-1]["id"] if data else None,
                "has_more": more,
            }
        )

    async def _cancel(self, request: web.Request) -> web.Response:
        self.counts["cancel"] += 1
        with self.lock:
            batch = self.batches.get(request.match_info["id"])
            if batch is None:
                return self._error(404, f"no such batch: {request.match_info['id']}")
            if batch.cancelled_at is None and not batch.finished:
                batch.cancelled_at = time.monotonic()
            return web.json_response(self._object(batch))

    async def _chat(self, request: web.Request) -> web.Response:
        """The synchronous endpoint (what the client re-asks an invalid structured answer through)."""
        self.counts["chat"] += 1
        answer = self.answer(await request.json())
        if isinstance(answer, LineError):
            return self._error(answer.status, answer.message)
        return web.json_response(completion_body(answer) if isinstance(answer, str) else answer)

    # -- a batch's state ---------------------------------------------------------------------------------------

    def _object(self, batch: _Batch) -> dict[str, Any]:
        """The batch as OpenAI shows it now (call with the lock held)."""
        if batch.finished:
            return batch.finished
        now = time.monotonic()
        elapsed = now - batch.created
        total = len(batch.lines)
        done = total if elapsed >= self.complete_after_s else int(total * elapsed / self.complete_after_s)
        status = "in_progress"
        if self._holds(batch, "validating", elapsed < self.validating_s) and batch.cancelled_at is None:
            return self._unfinished(batch, "validating", 0, elapsed)
        if batch.cancelled_at is not None:
            done = min(done, int(total * (batch.cancelled_at - batch.created) / self.complete_after_s))
            status = "cancelled"
            if self._holds(batch, "cancelling", now - batch.cancelled_at < self.cancelling_s):
                return self._unfinished(batch, "cancelling", done, elapsed)
        elif self.expire_after_s is not None and elapsed >= self.expire_after_s and done < total:
            done = int(total * self.expire_after_s / self.complete_after_s)
            status = "expired"
        elif done == total:
            status = "completed"
            if self._holds(batch, "finalizing", elapsed < self.complete_after_s + self.finalizing_s):
                return self._unfinished(batch, "finalizing", done, elapsed)
        output: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        if status == "in_progress":  # answered when the batch ends (a stateful script sees each line once)
            return self._unfinished(batch, status, done, elapsed)
        output, errors = self._answer(batch.lines[:done])
        counts = {"total": total, "completed": len(output), "failed": len(errors)}
        obj = self._shape(batch, status, counts, elapsed)
        obj[f"{status}_at"] = int(time.time())
        if output:
            obj["output_file_id"] = self._store_lines(output)
        if errors:
            obj["error_file_id"] = self._store_lines(errors)
        batch.finished = obj
        return obj

    def _holds(self, batch: _Batch, status: str, within: bool) -> bool:
        """Whether ``batch`` shows the intermediate ``status`` now: within its time, and at least once when it
        has one (a slow poller sees it all the same)."""
        return bool(getattr(self, f"{status}_s") > 0 and (within or status not in batch.shown))

    def _unfinished(self, batch: _Batch, status: str, done: int, elapsed: float) -> dict[str, Any]:
        return self._shape(batch, status, {"total": len(batch.lines), "completed": done, "failed": 0}, elapsed)

    def _shape(self, batch: _Batch, status: str, counts: dict[str, int], elapsed: float) -> dict[str, Any]:
        obj: dict[str, Any] = {
            "id": batch.id,
            "object": "batch",
            "endpoint": batch.endpoint,
            "errors": None,
            "input_file_id": batch.input_file_id,
            "completion_window": batch.completion_window,
            "status": status,
            "output_file_id": None,
            "error_file_id": None,
            "created_at": int(time.time() - elapsed),
            "in_progress_at": int(time.time() - elapsed),
            "expires_at": int(time.time() + 86400),
            "completed_at": None,
            "failed_at": None,
            "expired_at": None,
            "cancelling_at": None,
            "cancelled_at": None,
            "request_counts": counts,
            "metadata": batch.metadata,
        }
        return obj

    def _answer(self, lines: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        output: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        for line in lines:
            answer = self.answer(line["body"])
            custom_id = line["custom_id"]
            if isinstance(answer, LineError):
                errors.append(
                    {
                        "id": f"batch_req_{custom_id[:12]}",
                        "custom_id": custom_id,
                        "response": {
                            "status_code": answer.status,
                            "request_id": "req",
                            "body": {"error": {"message": answer.message, "code": answer.code}},
                        },
                        "error": None,
                    }
                )
                continue
            body = completion_body(answer) if isinstance(answer, str) else answer
            output.append(
                {
                    "id": f"batch_req_{custom_id[:12]}",
                    "custom_id": custom_id,
                    "response": {"status_code": 200, "request_id": "req", "body": body},
                    "error": None,
                }
            )
        return output, errors

    def _store_lines(self, lines: list[dict[str, Any]]) -> str:
        file_id = self._new_id("file")
        mangle = self.mangle or (lambda text: text)
        self.files[file_id] = ("batch_output", "".join(mangle(json.dumps(line)) + "\n" for line in lines).encode())
        return file_id

    # -- the server --------------------------------------------------------------------------------------------

    def _routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/files", self._upload)
        app.router.add_get("/v1/files/{id}", self._file)
        app.router.add_get("/v1/files/{id}/content", self._content)
        app.router.add_post("/v1/batches", self._create)
        app.router.add_get("/v1/batches", self._list)
        app.router.add_get("/v1/batches/{id}", self._retrieve)
        app.router.add_post("/v1/batches/{id}/cancel", self._cancel)
        app.router.add_post("/v1/chat/completions", self._chat)


def main() -> None:
    parser = argparse.ArgumentParser(description="an OpenAI-compatible files-and-batches echo server on loopback")
    parser.add_argument("--complete-after", type=float, default=1.0)
    args = parser.parse_args()
    with BatchStub(complete_after_s=args.complete_after) as stub:
        print(stub.api_base, flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main()
