"""The language server under faults, driven over stdio by a raw JSON-RPC writer (``python -m spade_lsp_server``).

- Framing: a Content-Length too small or too large, a header block without one, a body that is not JSON, JSON
  that is not JSON-RPC, bytes that are not a message at all. Each lost request gets an error answer (with its id
  when it can be read), and the next well-framed message is served.
- Random edits: a seeded stream of incremental didChange edits with random ranges (past the end of a line,
  past the last line, reversed), interleaved with hover, codeLens and codeAction requests at random positions.
  Afterwards the server's text equals a model of the document (checked by ``spade/documentState``) and every
  request got an answer.
- A 5 MB document: opened, edited at its start, middle and end, and hovered within a bound.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.blurb import V3

SERVER = [sys.executable, "-m", "spade_lsp_server"]
DEADLINE_S = 30.0
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
_BREAKS = re.compile(r"(\r\n|\r|\n)")


def frame(message: Any, *, length: int | None = None, headers: str | None = None) -> bytes:
    """A message as LSP frames it; ``length`` overrides the Content-Length, ``headers`` the whole header block."""
    body = message if isinstance(message, bytes) else json.dumps(message).encode("utf-8")
    if headers is None:
        headers = f"Content-Length: {len(body) if length is None else length}\r\n\r\n"
    return headers.encode("ascii") + body


@dataclass
class RawClient:
    """The server as a subprocess, and a reader thread that collects its answers and notifications (and answers
    its requests with null)."""

    root: Path
    process: subprocess.Popen[bytes] = field(init=False)
    answers: dict[Any, dict[str, Any]] = field(default_factory=dict)
    null_answers: list[dict[str, Any]] = field(default_factory=list)
    notifications: list[dict[str, Any]] = field(default_factory=list)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _changed: threading.Condition = field(default_factory=threading.Condition)
    _write: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        log = (self.root / "server.log").open("wb")
        self.process = subprocess.Popen(
            SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, cwd=self.root
        )
        threading.Thread(target=self._read, name="raw-lsp-reader", daemon=True).start()

    def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        while True:
            length = None
            while True:
                line = stdout.readline()
                if not line:
                    return
                if not line.strip():
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            assert length is not None, "the server sent a header block without Content-Length"
            message = json.loads(stdout.read(length))
            if "method" in message and "id" in message:  # the server asks: answer null
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
                continue
            with self._changed:
                if "method" in message:
                    self.notifications.append(message)
                elif message.get("id") is None:
                    self.null_answers.append(message)
                else:
                    self.answers[message["id"]] = message
                self._changed.notify_all()

    def write(self, data: bytes) -> None:
        with self._write:
            assert self.process.stdin is not None
            self.process.stdin.write(data)
            self.process.stdin.flush()

    def send(self, message: Any) -> None:
        self.write(frame(message))

    def request(self, method: str, params: Any) -> int:
        request_id = next(self._ids)
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return request_id

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait_for(self, predicate: Any, what: str, timeout: float = DEADLINE_S) -> Any:
        deadline = time.monotonic() + timeout
        with self._changed:
            while not (value := predicate()):
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.process.poll() is not None:
                    log = (self.root / "server.log").read_text(errors="replace")[-3000:]
                    raise AssertionError(f"timed out waiting for {what}; server log:\n{log}")
                self._changed.wait(min(remaining, 0.5))
            return value

    def answer(self, request_id: Any, timeout: float = DEADLINE_S) -> dict[str, Any]:
        return self.wait_for(lambda: self.answers.get(request_id), f"the answer to {request_id!r}", timeout)  # type: ignore[no-any-return]

    def call(self, method: str, params: Any, timeout: float = DEADLINE_S) -> Any:
        answer = self.answer(self.request(method, params), timeout)
        assert "error" not in answer, answer
        return answer["result"]

    def initialize(self) -> None:
        self.call(
            "initialize",
            {
                "processId": None,
                "rootUri": self.root.as_uri(),
                "capabilities": {"general": {"positionEncodings": ["utf-16"]}},
                "initializationOptions": {"daemon_autostart": False},
                "workspaceFolders": [{"uri": self.root.as_uri(), "name": self.root.name}],
            },
        )
        self.notify("initialized", {})

    def open(self, uri: str, text: str) -> None:
        self.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "prompt", "version": 1, "text": text}},
        )

    def state(self, uri: str) -> dict[str, Any]:
        return self.call("spade/documentState", {"uri": uri})  # type: ignore[no-any-return]

    def stop(self) -> None:
        if self.process.poll() is None:
            try:
                self.call("shutdown", None, timeout=10)
                self.notify("exit", None)
                self.process.wait(10)
            except Exception:
                self.process.kill()
                self.process.wait(10)
        assert self.process.stdin is not None
        self.process.stdin.close()


@pytest.fixture
def lsp(tmp_path: Path) -> Iterator[RawClient]:
    (tmp_path / "spade.toml").write_text("", encoding="utf-8")
    client = RawClient(tmp_path)
    try:
        client.initialize()
        yield client
    finally:
        client.stop()


# -- the document model -------------------------------------------------------------------------------------


def model_offset(text: str, line: int, character: int) -> int:
    """The index of an LSP position (UTF-16) in ``text`` as LSP defines it: lines end at CR, LF or CRLF; a line
    past the last is the end of the text; a character past the end of its line is the line's end; a character
    inside a surrogate pair is the pair's start."""
    parts = _BREAKS.split(text)
    contents, breaks = parts[0::2], parts[1::2]
    if line >= len(contents):
        return len(text)
    offset = sum(len(c) + len(b) for c, b in zip(contents[:line], breaks[:line], strict=True))
    units = 0
    for index, char in enumerate(contents[line]):
        width = 2 if ord(char) > 0xFFFF else 1
        if units + width > character:
            return offset + index
        units += width
    return offset + len(contents[line])


def model_apply(text: str, start: tuple[int, int], end: tuple[int, int], new: str) -> str:
    a, b = model_offset(text, *start), model_offset(text, *end)
    a, b = min(a, b), max(a, b)
    return text[:a] + new + text[b:]


def digest(text: str) -> dict[str, Any]:
    return {"length": len(text), "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()}


def test_model_reads_positions_as_lsp_does() -> None:
    text = "ab\r\ncd\re😋f\n"
    assert model_offset(text, 0, 99) == 2  # past the line's end: before its CRLF
    assert model_offset(text, 1, 0) == 4
    assert model_offset(text, 2, 2) == 8  # inside the surrogate pair: its start
    assert model_offset(text, 2, 3) == 9
    assert model_offset(text, 3, 0) == len(text)  # the empty last line
    assert model_offset(text, 9, 9) == len(text)
    assert model_apply("hello", (0, 4), (0, 1), "X") == "hXo"  # reversed


# -- framing faults ------------------------------------------------------------------------------------------


def _hover(request_id: Any, uri: str = "file:///nowhere.prompt") -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "textDocument/hover",
        "params": {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}},
    }


def _served(answer: dict[str, Any]) -> bool:
    return "result" in answer and "error" not in answer


def test_a_too_short_content_length_is_answered_and_the_next_message_served(lsp: RawClient) -> None:
    lost = json.dumps(_hover(1001)).encode()
    lsp.write(frame(lost, length=len(lost) - 10) + frame(_hover(1002)))
    error = lsp.answer(1001)["error"]
    assert error["code"] == INVALID_REQUEST and "shorter" in error["message"]
    assert _served(lsp.answer(1002))
    # written apart, with the next message only after the error came back
    lsp.write(frame(json.dumps(_hover(1003)).encode(), length=5))
    assert lsp.answer(1003)["error"]["code"] == INVALID_REQUEST
    assert _served(lsp.answer(lsp.request("textDocument/hover", _hover(0)["params"])))


def test_a_header_without_content_length_is_answered_and_the_next_message_served(lsp: RawClient) -> None:
    body = json.dumps(_hover(1101)).encode()
    lsp.write(
        frame(body, headers="Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n") + frame(_hover(1102))
    )
    error = lsp.answer(1101)["error"]
    assert error["code"] == INVALID_REQUEST and "Content-Length" in error["message"]
    assert _served(lsp.answer(1102))
    # alone (the client waits for the answer before it sends anything else)
    lsp.write(frame(json.dumps(_hover(1103)).encode(), headers="Content-Length: twelve\r\n\r\n"))
    assert lsp.answer(1103)["error"]["code"] == INVALID_REQUEST
    # no headers at all, only a body, then a well-framed message
    lsp.write(json.dumps(_hover(1104)).encode() + frame(_hover(1105)))
    assert lsp.answer(1104)["error"]["code"] == INVALID_REQUEST
    assert _served(lsp.answer(1105))


def test_a_too_long_content_length_is_answered_and_the_next_message_served(lsp: RawClient) -> None:
    body = json.dumps(_hover(1201)).encode()
    lsp.write(frame(body, length=len(body) + 40) + frame(_hover(1202)))
    assert lsp.answer(1201)["error"]["code"] == INVALID_REQUEST
    assert _served(lsp.answer(1202))
    # and with nothing after it: the server stops waiting for the missing bytes
    lsp.write(frame(json.dumps(_hover(1203)).encode(), length=len(body) + 400))
    assert lsp.answer(1203, timeout=10)["error"]["code"] == INVALID_REQUEST
    assert _served(lsp.answer(lsp.request("textDocument/hover", _hover(0)["params"])))


def test_malformed_bodies_get_parse_errors_with_the_id_when_it_can_be_read(lsp: RawClient) -> None:
    before = len(lsp.null_answers)
    lsp.write(frame(b'{"jsonrpc": "2.0", "id": 1301, "method": "textDocument/hover", "params": {'))  # cut short
    assert lsp.answer(1301)["error"]["code"] == PARSE_ERROR
    lsp.write(frame(b"this is not json") + frame(b'{"id": 99, "jsonrpc": }') + frame(_hover(1302)))
    assert _served(lsp.answer(1302))
    nulls = lsp.wait_for(lambda: lsp.null_answers[before:] if len(lsp.null_answers) >= before + 1 else None, "null")
    assert all(n["error"]["code"] == PARSE_ERROR for n in nulls)
    assert lsp.answer(99)["error"]["code"] == PARSE_ERROR  # a top-level id is read even from broken JSON
    lsp.write(frame(b'{"jsonrpc": "2.0", "id": 1303, "method": "x", "params": "\xff\xfe"}'))  # not UTF-8
    assert lsp.answer(1303)["error"]["code"] == PARSE_ERROR
    # a body that arrives in pieces is one message, not a fault
    whole = frame(_hover(1304))
    lsp.write(whole[:30])
    time.sleep(0.2)
    lsp.write(whole[30:])
    assert _served(lsp.answer(1304))


def test_json_that_is_not_json_rpc_gets_invalid_request(lsp: RawClient) -> None:
    params = _hover(0)["params"]
    lsp.write(frame({"id": 1401, "method": "textDocument/hover", "params": params}))  # no "jsonrpc"
    lsp.write(frame({"jsonrpc": "1.0", "id": 1402, "method": "textDocument/hover", "params": params}))
    lsp.write(frame({"jsonrpc": "2.0", "id": 1403, "method": 7}))
    lsp.write(frame({"jsonrpc": "2.0", "id": 1404, "method": "textDocument/hover", "params": {"nonsense": 1}}))
    lsp.write(frame({"jsonrpc": "2.0", "id": 1405, "method": "no/suchMethod", "params": {}}))
    lsp.write(frame([_hover(1406)]))  # a batch
    lsp.write(frame({"jsonrpc": "2.0", "id": 1407, "method": "textDocument/hover", "params": 3}))
    for request_id in (1401, 1402, 1403, 1407):
        assert lsp.answer(request_id)["error"]["code"] == INVALID_REQUEST, request_id
    assert lsp.answer(1404)["error"]["code"] == INVALID_PARAMS
    assert lsp.answer(1405)["error"]["code"] == -32601
    batch = lsp.wait_for(lambda: [n for n in lsp.null_answers if "batch" in n["error"]["message"]], "the batch")
    assert batch[0]["error"]["code"] == INVALID_REQUEST
    assert _served(lsp.answer(lsp.request("textDocument/hover", params)))


FAULT_KINDS = ("short", "long", "no-length", "bad-length", "cut", "garbage")


def fault_frame(rng: random.Random, kind: str, body: bytes) -> bytes:
    """``body`` (a request) framed with one fault of ``kind``."""
    match kind:
        case "short":  # Content-Length too small
            return frame(body, length=rng.randint(1, len(body) - 1))
        case "long":  # Content-Length too large
            return frame(body, length=len(body) + rng.randint(1, 200))
        case "no-length":
            return frame(body, headers="Content-Type: application/json\r\n\r\n")
        case "bad-length":
            return frame(body, headers=f"Content-Length: {rng.choice(['-3', 'x', '1e3', ''])}\r\n\r\n")
        case "cut":  # a body cut short, its length right (the id still in it)
            return frame(body[: rng.randint(body.index(b'"method"'), len(body) - 1)])
        case "garbage":  # bytes that are no message, then a frame too short
            return b"\x00garbage \xff\r\n" + frame(body, length=len(body) - 1)
    raise ValueError(kind)


def framing_storm(lsp: RawClient, faults: int, seed: int, first_id: int) -> dict[str, Any]:
    """``faults`` broken requests, each followed by a well-framed one, written as one stream; returns how many
    of each were answered as they should be."""
    rng = random.Random(seed)
    stream = bytearray()
    served, broken, kinds = [], [], dict.fromkeys(FAULT_KINDS, 0)
    for index in range(faults):
        good, bad = first_id + 2 * index, first_id + 2 * index + 1
        kind = rng.choice(FAULT_KINDS)
        kinds[kind] += 1
        stream += fault_frame(rng, kind, json.dumps(_hover(bad)).encode())
        stream += frame(_hover(good))
        served.append(good)
        broken.append(bad)
    started = time.perf_counter()
    lsp.write(bytes(stream))
    ok = sum(_served(lsp.answer(request_id)) for request_id in served)
    errors = sum(lsp.answer(request_id)["error"]["code"] in (PARSE_ERROR, INVALID_REQUEST) for request_id in broken)
    return {
        "faults": faults,
        "kinds": kinds,
        "served": ok,
        "errors": errors,
        "seconds": time.perf_counter() - started,
        "alive": lsp.process.poll() is None,
    }


def test_a_storm_of_framing_faults_loses_nothing_well_framed(lsp: RawClient) -> None:
    """Faults of every kind between well-framed requests, written as one stream: every well-framed request is
    served, every broken one answered with an error (none in silence)."""
    figures = framing_storm(lsp, 60, seed=7, first_id=2000)
    assert all(figures["kinds"].values())
    assert figures["served"] == figures["errors"] == 60
    assert figures["alive"]


# -- random edits ----------------------------------------------------------------------------------------------

_INSERTS = ["", "a", "word ", "\n", "\r\n", "\r", "Keep it short. ", "é", "😋", "{product}", " never ", "\n\n- item"]


def _position(rng: random.Random, text: str) -> tuple[int, int]:
    lines = _BREAKS.split(text)[0::2]
    roll = rng.random()
    if roll < 0.05:
        return rng.randint(len(lines), len(lines) + 5), rng.randint(0, 50)  # past the last line
    if roll < 0.08:
        return rng.randint(0, len(lines) - 1), 2**31 - 1  # far past the end of a line
    line = rng.randint(0, len(lines) - 1)
    return line, rng.randint(0, len(lines[line]) + (8 if roll < 0.25 else 0))


def random_edit(rng: random.Random, text: str) -> tuple[tuple[int, int], tuple[int, int], str]:
    start = _position(rng, text)
    if rng.random() < 0.6:  # a short range nearby, sometimes reversed
        end = (start[0] + rng.choice([0, 0, 0, 1]), min(start[1] + rng.randint(0, 12), 2**31 - 1))
        if rng.random() < 0.1:
            start, end = end, start
    else:
        end = _position(rng, text)
    new = rng.choice(_INSERTS)
    if len(text) > 6000 and rng.random() < 0.5:
        new = ""
    elif len(text) < 1500 and rng.random() < 0.3:
        new = V3  # keep the text large enough for long ranges to matter
    return start, end, new


def _range(start: tuple[int, int], end: tuple[int, int]) -> dict[str, Any]:
    return {"start": {"line": start[0], "character": start[1]}, "end": {"line": end[0], "character": end[1]}}


def run_random_edits(lsp: RawClient, edits: int, seed: int) -> dict[str, Any]:
    """Send ``edits`` random edits (1 to 3 per didChange) with a request after every few; check the server's
    text against the model and that every request was answered. Returns the figures."""
    rng = random.Random(seed)
    uri = (lsp.root / "blurb.prompt").as_uri()
    text = V3 * 4
    lsp.open(uri, text)
    version, sent, requests = 1, 0, []
    started = time.perf_counter()
    while sent < edits:
        changes = []
        for _ in range(min(rng.randint(1, 3), edits - sent)):
            start, end, new = random_edit(rng, text)
            text = model_apply(text, start, end, new)
            changes.append({"range": _range(start, end), "text": new})
            sent += 1
        version += 1
        lsp.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": version}, "contentChanges": changes},
        )
        if rng.random() < 0.15:
            kind = rng.choice(["hover", "codeLens", "codeAction"])
            document = {"textDocument": {"uri": uri}}
            start, end = _position(rng, text), _position(rng, text)
            params: dict[str, Any] = {
                "hover": {**document, "position": {"line": start[0], "character": start[1]}},
                "codeLens": document,
                "codeAction": {**document, "range": _range(start, end), "context": {"diagnostics": []}},
            }[kind]
            requests.append(lsp.request(f"textDocument/{kind}", params))
    state = lsp.state(uri)
    elapsed = time.perf_counter() - started
    for request_id in requests:
        answer = lsp.answer(request_id)
        assert _served(answer), answer
    assert state == {"version": version, **digest(text)}
    diagnostics = lsp.wait_for(
        lambda: [
            n
            for n in lsp.notifications
            if n["method"] == "textDocument/publishDiagnostics" and n["params"].get("version") == version
        ],
        "diagnostics of the last version",
    )
    assert diagnostics[-1]["params"]["uri"] == uri
    return {
        "edits": edits,
        "notifications": version - 1,
        "requests": len(requests),
        "answered": sum(1 for r in requests if r in lsp.answers),
        "seconds": elapsed,
        "edits_per_s": edits / elapsed,
        "final_length": len(text),
    }


def test_random_edits_keep_the_servers_text_equal_to_the_model(lsp: RawClient) -> None:
    figures = run_random_edits(lsp, 10_000, seed=20240611)
    assert figures["answered"] == figures["requests"] > 500


def test_an_out_of_range_edit_is_read_as_lsp_defines_it(lsp: RawClient) -> None:
    uri = (lsp.root / "edge.prompt").as_uri()
    text = "ab\ncd"
    lsp.open(uri, text)
    cases = [
        ((0, 9), (0, 9), "X"),  # past the end of the first line: before its line break, not after it
        ((1, 9), (1, 9), "Y"),  # past the end of the last line: at its end, not one short of it
        ((7, 0), (9, 0), "Z"),  # past the last line: at the end of the text
        ((1, 1), (0, 1), ""),  # reversed, across lines
        ((0, 2), (0, 0), "Q"),  # reversed, on one line
    ]
    for version, (start, end, new) in enumerate(cases, 2):
        text = model_apply(text, start, end, new)
        lsp.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"range": _range(start, end), "text": new}],
            },
        )
        assert lsp.state(uri) == {"version": version, **digest(text)}, (start, end, new, text)
    assert text == "QYZ"


# -- a 5 MB document -------------------------------------------------------------------------------------------

HOVER_BOUND_S = 10.0


def open_and_edit_a_5_mb_document(lsp: RawClient) -> tuple[str, str, int]:
    """A 5 MB prompt opened and edited three times (the start, the middle across lines, the end); its uri, the
    text the server should now hold, and its line count."""
    uri = (lsp.root / "big.prompt").as_uri()
    paragraph = V3.replace("\n", " ") + "\n"
    text = paragraph * (5 * 1024 * 1024 // len(paragraph) + 1)
    assert len(text) >= 5 * 1024 * 1024
    lsp.open(uri, text)
    lines = text.count("\n")
    edits = [
        ((0, 0), (0, 5), "Draft"),
        ((lines // 2, 10), (lines // 2 + 3, 0), "joined "),
        ((lines, 0), (lines, 0), "Last."),
    ]
    for version, (start, end, new) in enumerate(edits, 2):
        text = model_apply(text, start, end, new)
        lsp.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"range": _range(start, end), "text": new}],
            },
        )
    assert lsp.state(uri) == {"version": len(edits) + 1, **digest(text)}
    return uri, text, lines


def test_a_5_mb_document_is_opened_edited_and_hovered_within_a_bound(lsp: RawClient) -> None:
    uri, text, lines = open_and_edit_a_5_mb_document(lsp)
    started = time.perf_counter()
    hover = lsp.answer(
        lsp.request(
            "textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": lines // 2, "character": 3}}
        ),
        timeout=60,
    )
    elapsed = time.perf_counter() - started
    assert _served(hover)
    assert elapsed < HOVER_BOUND_S, elapsed
    assert lsp.state(uri) == {"version": 4, **digest(text)}  # the hover changed nothing
