# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fakes for testing a client of an OpenAI-compatible server (the openai_endpoint module and its module util).

:class:`FakeVllm` is a threaded local server on 127.0.0.1 that answers like ``vllm serve``; each test sets its answers
(:class:`Reply`, or a function of the request, a :class:`Seen`) per route. :class:`FakeProxy` is a local HTTP proxy that
records what reaches it: with :func:`point_proxies_at` it stands for a proxy that the environment of the host names.

The ``no_proxy`` and ``proxy`` fixtures built on these live in tests/unit/plugins/conftest.py. Test modules import
this module as ``fake_openai`` (tests/unit/conftest.py puts tests/unit on ``sys.path``), like ``fake_clock``.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
import typing as t
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

MODEL = "tiny-moe"
# A key with characters that JSON writers escape (``/`` as ``\/`` in PHP and Java, ``+`` as ``\u002b``), as in the review.
SLASHED_KEY = "sk-live-0123456789abcdefGHIJ/KLMN+opq"
PROXY_VARIABLES = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY")
DROPPED = "(body dropped: it may echo credentials)"


# ---------------------------------------------------------------------------------------------------------------
# The local server


@dataclass
class Reply:
    """An answer of :class:`FakeVllm`: a status and a body (bytes, text, or JSON), after ``delay`` seconds.

    ``drop`` closes the connection without answering.
    """

    status: int = 200
    body: t.Any = b""
    delay: float = 0.0
    drop: bool = False

    def payload(self) -> bytes:
        if isinstance(self.body, bytes):
            return self.body
        if isinstance(self.body, str):
            return self.body.encode("utf-8")
        return json.dumps(self.body).encode("utf-8")


@dataclass(frozen=True)
class Seen:
    """A request the server got."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float

    def json(self) -> t.Any:
        return json.loads(self.body)


Route = t.Union[Reply, Callable[[Seen], Reply]]  # noqa: UP007 - pylint (ansible-test) does not take `|` on a Callable


def models_reply(*ids: str) -> Reply:
    """``GET /v1/models`` as vLLM answers it."""
    data = [
        {"id": name, "object": "model", "created": 1735689600, "owned_by": "vllm", "root": f"/models/{name}", "parent": None, "max_model_len": 4096}
        for name in ids
    ]
    return Reply(200, {"object": "list", "data": data})


def chat_reply(
    content: str | None = "Hello!",
    finish_reason: str = "stop",
    completion_tokens: int | None = 3,
    **message: t.Any,
) -> Reply:
    """``POST /v1/chat/completions`` as vLLM answers it; ``message`` adds fields such as ``reasoning``."""
    answer: dict[str, t.Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1735689601,
        "model": MODEL,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content, "tool_calls": [], **message}, "finish_reason": finish_reason, "logprobs": None}
        ],
    }
    if completion_tokens is not None:
        answer["usage"] = {"prompt_tokens": 12, "completion_tokens": completion_tokens, "total_tokens": 12 + completion_tokens}
    return Reply(200, answer)


NOT_FOUND = Reply(404, {"detail": "Not Found"})


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    owner: FakeVllm


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: t.Any) -> None:  # noqa: A002 - the base class's name
        pass

    def _answer(self) -> None:
        owner = t.cast(_Server, self.server).owner
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        seen = Seen(self.command, self.path, dict(self.headers.items()), body, time.monotonic())
        reply = owner.reply(seen)
        if reply.delay:
            owner.released.wait(reply.delay)
        if reply.drop:
            self.close_connection = True
            return
        payload = reply.payload()
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(payload)
        except OSError:  # the client gave up (a request timeout)
            pass
        self.close_connection = True

    do_GET = _answer
    do_POST = _answer


class FakeVllm:
    """A local OpenAI-compatible server. It is bound at once (connections are refused) and listens after :meth:`listen`.

    ``routes`` maps ``(method, path)`` to a :class:`Reply` or a function of the request; a missing route is 404.
    With ``api_key`` set, ``/v1/`` requests without ``Authorization: Bearer <api_key>`` get vLLM's 401.
    """

    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], Route] = {
            ("GET", "/health"): Reply(200, b""),
            ("GET", "/v1/models"): models_reply(MODEL),
            ("POST", "/v1/chat/completions"): chat_reply(),
        }
        self.api_key: str | None = None
        self.requests: list[Seen] = []
        self.released = threading.Event()
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler, bind_and_activate=False)
        self._server.owner = self
        self._server.allow_reuse_address = True
        self._server.server_bind()
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread: threading.Thread | None = None

    def listen(self) -> None:
        self._server.server_activate()
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.released.set()
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(5)
        self._server.server_close()

    def set(self, method: str, path: str, route: Route) -> None:
        with self._lock:
            self.routes[(method, path)] = route

    def reply(self, seen: Seen) -> Reply:
        with self._lock:
            self.requests.append(seen)
            route = self.routes.get((seen.method, seen.path), NOT_FOUND)
            api_key = self.api_key
        if api_key is not None and seen.path.startswith("/v1/") and seen.headers.get("Authorization") != f"Bearer {api_key}":
            return Reply(401, {"error": "Unauthorized"})
        return route(seen) if callable(route) else route

    def paths(self) -> list[str]:
        with self._lock:
            return [f"{seen.method} {seen.path}" for seen in self.requests]


# ---------------------------------------------------------------------------------------------------------------
# The proxy of the environment


class FakeProxy:
    """A local HTTP proxy that records what each client sent it (the request line and headers) and answers 502."""

    def __init__(self) -> None:
        self.received: list[bytes] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(8)
        self._sock.settimeout(0.05)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _address = self._sock.accept()
            except OSError:  # the poll's timeout
                continue
            with conn:
                conn.settimeout(2)
                data = b""
                try:
                    while b"\r\n\r\n" not in data:
                        chunk = conn.recv(65536)
                        if not chunk:
                            break
                        data += chunk
                except OSError:
                    pass
                with self._lock:
                    self.received.append(data)
                with contextlib.suppress(OSError):
                    conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    def seen(self) -> list[bytes]:
        with self._lock:
            return list(self.received)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._sock.close()


def point_proxies_at(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    """Set every proxy variable of the environment to ``url``, with no ``no_proxy``: a head whose shell exports a proxy."""
    for name in PROXY_VARIABLES:
        if name.lower() != "no_proxy":
            monkeypatch.setenv(name, url)


def clear_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unset every proxy variable of the environment: requests to 127.0.0.1 must not go through a proxy the test machine sets."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


# ---------------------------------------------------------------------------------------------------------------
# Security review finding 17: servers that echo the key


def echo_authorization(status: int, before: str = "", after: str = "", escape_slash: bool = False) -> Callable[[Seen], Reply]:
    """A route that answers ``status`` with the request's ``Authorization`` header in its body, as some servers do."""

    def route(seen: Seen) -> Reply:
        echoed = seen.headers.get("Authorization", "")
        return Reply(status, before + (echoed.replace("/", "\\/") if escape_slash else echoed) + after)

    return route
