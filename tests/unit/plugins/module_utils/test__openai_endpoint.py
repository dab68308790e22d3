# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the private module util _openai_endpoint.

Most tests talk HTTP, through the real client (:func:`ansible_opener`, on ``ansible.module_utils.urls``), to
:class:`FakeVllm` (tests/unit/fake_openai.py), a threaded local server on 127.0.0.1 that answers like ``vllm serve``
and whose answers each test sets. The loop's timing rules are tested with an injected opener and :class:`FakeClock`.
"""

from __future__ import annotations

import errno
import http.client
import json
import re
import socket
import threading
import time
import typing as t
import urllib.error
from collections.abc import Callable, Iterator

import pytest
from ansible.module_utils.urls import ConnectionError as UrlsConnectionError
from ansible_collections.sparkops.inference.plugins.module_utils._openai_endpoint import (
    EndpointConfig,
    EndpointError,
    HttpRequest,
    HttpResponse,
    UnitWatch,
    WaitOutcome,
    ansible_opener,
    check_once,
    describe_failure,
    format_seconds,
    normalise_url,
    wait_ready,
)
from fake_clock import FakeClock
from fake_openai import (
    DROPPED,
    MODEL,
    NOT_FOUND,
    SLASHED_KEY,
    FakeProxy,
    FakeVllm,
    Reply,
    Seen,
    chat_reply,
    echo_authorization,
    models_reply,
)

SECRET = "sk-test-6d1f0c2a9b8e"

pytestmark = pytest.mark.usefixtures("no_proxy")


# ---------------------------------------------------------------------------------------------------------------
# Fixtures and helpers


@pytest.fixture
def bound_server() -> Iterator[FakeVllm]:
    """A server that is bound but not listening yet: connections to it are refused until ``listen()``."""
    server = FakeVllm()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def server(bound_server: FakeVllm) -> FakeVllm:
    bound_server.listen()
    return bound_server


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port of 127.0.0.1 where nothing listens (bound without listening, so that no one else takes it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def wait(url: str, timeout: float = 5, interval: float = 0.1, **config: t.Any) -> WaitOutcome:
    """wait_ready against ``url`` for MODEL, with the real HTTP client and the real clock."""
    config.setdefault("request_timeout", 5.0)
    return wait_ready(
        EndpointConfig(url=normalise_url(url), model=config.pop("model", MODEL), **config), timeout=timeout, interval=interval, opener=ansible_opener()
    )


def whole_output(outcome: WaitOutcome) -> str:
    return json.dumps(outcome.as_dict()) + outcome.message()


# ---------------------------------------------------------------------------------------------------------------
# URLs and small helpers


@pytest.mark.parametrize(
    ("url", "base"),
    [
        ("http://192.168.200.11:8000", "http://192.168.200.11:8000"),
        ("http://192.168.200.11:8000/", "http://192.168.200.11:8000"),
        ("http://192.168.200.11:8000/v1", "http://192.168.200.11:8000"),
        ("http://192.168.200.11:8000/v1/", "http://192.168.200.11:8000"),
        ("  https://llm.example.com//  ", "https://llm.example.com"),
        ("https://gateway.example.com/vllm/v1", "https://gateway.example.com/vllm"),
        ("http://[fd00::11]:8000/v1", "http://[fd00::11]:8000"),
    ],
)
def test_normalise_url(url: str, base: str) -> None:
    assert normalise_url(url) == base


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("192.168.200.11:8000", "url '192.168.200.11:8000' is not an http:// or https:// URL with a host, such as 'http://192.168.200.11:8000'"),
        ("ftp://host/", "url 'ftp://host/' is not an http:// or https:// URL with a host, such as 'http://192.168.200.11:8000'"),
        ("http://", "url 'http://' is not an http:// or https:// URL with a host, such as 'http://192.168.200.11:8000'"),
        ("http://host:port", "url 'http://host:port' is not a valid URL: Port could not be cast to integer value as 'port'"),
        ("http://host:8000/v1?x=1", "url 'http://host:8000/v1?x=1' must not have a query or a fragment"),
    ],
)
def test_normalise_url_refuses(url: str, message: str) -> None:
    with pytest.raises(EndpointError) as raised:
        normalise_url(url)
    assert str(raised.value) == message


@pytest.mark.parametrize(("value", "text"), [(900, "900"), (900.0, "900"), (0.5, "0.5"), (2.345, "2.3"), (0.99, "1")])
def test_format_seconds(value: float, text: str) -> None:
    assert format_seconds(value) == text


@pytest.mark.parametrize(
    ("exc", "failure", "detail"),
    [
        (urllib.error.URLError(ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")), "refused", "connection refused"),
        (ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"), "refused", "connection refused"),
        (urllib.error.URLError(OSError(errno.ECONNREFUSED, "Connection refused")), "refused", "connection refused"),
        (urllib.error.URLError(TimeoutError("timed out")), "timeout", "timed out after 30 s"),
        (TimeoutError("The read operation timed out"), "timeout", "timed out after 30 s"),
        (urllib.error.URLError("timed out"), "timeout", "timed out after 30 s"),
        (urllib.error.URLError(socket.gaierror(-2, "Name or service not known")), "unreachable", "cannot resolve the host name: Name or service not known"),
        (urllib.error.URLError(OSError(errno.EHOSTUNREACH, "No route to host")), "unreachable", "No route to host"),
        (http.client.RemoteDisconnected("Remote end closed connection without response"), "unreachable", "the server closed the connection without answering"),
        (ConnectionResetError(errno.ECONNRESET, "Connection reset by peer"), "unreachable", "Connection reset by peer"),
        (
            UrlsConnectionError("Failed to connect to proxy.example.com at port 3128: refused"),
            "unreachable",
            "Failed to connect to proxy.example.com at port 3128: refused",
        ),
    ],
)
def test_describe_failure(exc: BaseException, failure: str, detail: str) -> None:
    assert describe_failure(exc, 30.0) == HttpResponse(failure=failure, detail=detail)


# ---------------------------------------------------------------------------------------------------------------
# Against the local server: each state


def test_ready_with_plain_content(server: FakeVllm) -> None:
    outcome = wait(server.url)
    assert outcome.ready is True
    assert outcome.attempts == 1
    assert outcome.as_dict() == {
        "ready": True,
        "state": "ready",
        "url": server.url,
        "model": MODEL,
        "elapsed": outcome.as_dict()["elapsed"],
        "attempts": 1,
        "health_status": 200,
        "models": [MODEL],
        "steps": {"health": "HTTP 200", "models": f"lists {MODEL}", "completion": "HTTP 200: 3 tokens, finish_reason stop"},
        "content": "Hello!",
        "reasoning": None,
        "finish_reason": "stop",
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
        "gave_up": False,
    }
    assert 0 <= outcome.elapsed < 2
    assert outcome.message().startswith(f"{server.url} serves {MODEL} (ready after ")
    assert outcome.message().endswith(" s, 1 attempt)")
    assert server.paths() == ["GET /health", "GET /v1/models", "POST /v1/chat/completions"]
    post = server.requests[2]
    assert post.json() == {"model": MODEL, "messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 32, "stream": False}
    assert post.headers["Content-Type"] == "application/json"
    assert all("Authorization" not in seen.headers for seen in server.requests)


def test_prompt_max_tokens_and_chat_template_kwargs_are_sent(server: FakeVllm) -> None:
    outcome = wait(server.url, prompt="Count to three.", max_tokens=7, chat_template_kwargs={"enable_thinking": False})
    assert outcome.ready is True
    assert server.requests[2].json() == {
        "model": MODEL,
        "messages": [{"role": "user", "content": "Count to three."}],
        "max_tokens": 7,
        "stream": False,
        "chat_template_kwargs": {"enable_thinking": False},
    }


@pytest.mark.parametrize(
    ("message", "reasoning"),
    [
        ({"reasoning": "The user greets me, so"}, "The user greets me, so"),
        ({"reasoning_content": "Older vLLM: the user greets"}, "Older vLLM: the user greets"),
        ({"reasoning": "New field", "reasoning_content": "Old field"}, "New field"),
        ({"reasoning": None, "reasoning_content": "Old field only"}, "Old field only"),
    ],
)
def test_reasoning_model_is_ready(server: FakeVllm, message: dict[str, t.Any], reasoning: str) -> None:
    server.set("POST", "/v1/chat/completions", chat_reply(content=None, finish_reason="length", completion_tokens=32, **message))
    outcome = wait(server.url)
    result = outcome.as_dict()
    assert (result["ready"], result["state"]) == (True, "ready")
    assert result["content"] is None
    assert result["reasoning"] == reasoning
    assert result["finish_reason"] == "length"
    assert result["usage"]["completion_tokens"] == 32
    assert result["steps"]["completion"] == "HTTP 200: 32 tokens, finish_reason length"


def test_reasoning_model_with_empty_content_and_stop(server: FakeVllm) -> None:
    server.set("POST", "/v1/chat/completions", chat_reply(content="", finish_reason="stop", completion_tokens=9, reasoning="Hmm."))
    result = wait(server.url).as_dict()
    assert (result["ready"], result["content"], result["reasoning"], result["finish_reason"]) == (True, "", "Hmm.", "stop")


def test_connection_refused_until_the_timeout(closed_port: int) -> None:
    url = f"http://127.0.0.1:{closed_port}"
    start = time.monotonic()
    outcome = wait(url, timeout=1, interval=0.2)
    took = time.monotonic() - start
    result = outcome.as_dict()
    assert (result["ready"], result["state"], result["health_status"]) == (False, "refused", None)
    assert result["steps"] == {"health": "connection refused", "models": "not tried", "completion": "not tried"}
    assert result["models"] == [] and result["content"] is None and result["usage"] == {}
    assert 4 <= outcome.attempts <= 6
    # Upper bounds with room for a loaded 2-core CI host (the lab runs beside the unit tests); a wait past the
    # timeout by a retry interval or more still fails.
    assert 1.0 <= outcome.elapsed < 1.5 and took < 2.0
    assert outcome.message() == (
        f"{url} not ready after 1 s ({outcome.attempts} attempts): health: connection refused; models: not tried; completion: not tried."
        f" nothing listens on 127.0.0.1:{closed_port} (vLLM opens its port only once the model is loaded)"
    )


@pytest.mark.parametrize(
    ("reply", "state", "models_step", "hint"),
    [
        (
            Reply(500, {"object": "error", "message": "Internal Server Error"}),
            "http_error",
            'HTTP 500: {"object": "error", "message": "Internal Server Error"}',
            None,
        ),
        (Reply(502, b"<html>\n  <body>Bad Gateway</body>\n</html>\n"), "http_error", "HTTP 502: <html> <body>Bad Gateway</body> </html>", None),
        (Reply(503, b""), "loading", "HTTP 503", "/v1/models answers HTTP 503: the server is still loading"),
        (Reply(404, {"detail": "Not Found"}), "http_error", 'HTTP 404: {"detail": "Not Found"}', None),
        (
            Reply(200, b"<html>welcome</html>"),
            "bad_response",
            "HTTP 200 but not a model list: <html>welcome</html>",
            "does not look like an OpenAI-compatible endpoint",
        ),
        (Reply(200, {"data": "nope"}), "bad_response", 'HTTP 200 but not a model list: {"data": "nope"}', "does not look like an OpenAI-compatible endpoint"),
        (Reply(200, b""), "bad_response", "HTTP 200 but not a model list: (empty)", "does not look like an OpenAI-compatible endpoint"),
    ],
)
def test_models_errors(server: FakeVllm, reply: Reply, state: str, models_step: str, hint: str | None) -> None:
    server.set("GET", "/v1/models", reply)
    outcome = wait(server.url, timeout=1, interval=0.05)
    result = outcome.as_dict()
    assert (result["ready"], result["state"]) == (False, state)
    assert result["steps"] == {"health": "HTTP 200", "models": models_step, "completion": "not tried"}
    assert outcome.attempts >= 2
    assert "POST /v1/chat/completions" not in server.paths()
    prefix = f"{server.url} not ready after 1 s ({outcome.attempts} attempts): health: HTTP 200; models: {models_step}; completion: not tried"
    assert outcome.message().startswith(prefix)
    if hint is None:
        assert outcome.message() == prefix
    else:
        assert hint in outcome.message()[len(prefix) :]


def test_health_and_models_503_is_loading(server: FakeVllm) -> None:
    server.set("GET", "/health", Reply(503, b""))
    server.set("GET", "/v1/models", Reply(503, {"error": "loading"}))
    result = wait(server.url, timeout=0).as_dict()
    assert (result["ready"], result["state"], result["health_status"]) == (False, "loading", 503)
    assert result["steps"]["health"] == "HTTP 503"
    assert result["steps"]["models"] == 'HTTP 503: {"error": "loading"}'


def test_wedged_engine(server: FakeVllm) -> None:
    body = "EngineCore error: " + "x" * 400
    server.set("POST", "/v1/chat/completions", Reply(500, {"object": "error", "message": body}))
    outcome = wait(server.url, timeout=1, interval=0.05)
    result = outcome.as_dict()
    assert (result["ready"], result["state"], result["health_status"]) == (False, "completion_failed", 200)
    completion = result["steps"]["completion"]
    assert completion == "HTTP 500: " + json.dumps({"object": "error", "message": body})[:300]
    assert len(completion) == len("HTTP 500: ") + 300
    assert result["steps"]["models"] == f"lists {MODEL}"
    assert outcome.attempts >= 2
    assert outcome.message() == (
        f"{server.url} not ready after 1 s ({outcome.attempts} attempts): health: HTTP 200; models: lists {MODEL};"
        f" completion: {completion}. /health answers but completions fail: the engine looks wedged"
    )


def test_completion_fails_without_health(server: FakeVllm) -> None:
    server.set("GET", "/health", NOT_FOUND)
    server.set("POST", "/v1/chat/completions", Reply(500, b""))
    outcome = wait(server.url, timeout=0)
    assert outcome.as_dict()["steps"] == {"health": "HTTP 404 (no /health; ignored)", "models": f"lists {MODEL}", "completion": "HTTP 500"}
    assert outcome.probe.state == "completion_failed"
    assert outcome.message().endswith(". /v1/models lists the model but completions fail")


@pytest.mark.parametrize(
    ("reply", "completion_step"),
    [
        (Reply(200, b"not json"), "HTTP 200 but no choice with a message: not json"),
        (Reply(200, {"choices": []}), 'HTTP 200 but no choice with a message: {"choices": []}'),
        (Reply(200, {"choices": [{"text": "legacy"}]}), 'HTTP 200 but no choice with a message: {"choices": [{"text": "legacy"}]}'),
    ],
)
def test_completion_without_a_message(server: FakeVllm, reply: Reply, completion_step: str) -> None:
    server.set("POST", "/v1/chat/completions", reply)
    result = wait(server.url, timeout=0).as_dict()
    assert (result["ready"], result["state"]) == (False, "completion_failed")
    assert result["steps"]["completion"] == completion_step


def test_model_missing_lists_the_served_names(server: FakeVllm) -> None:
    server.set("GET", "/v1/models", models_reply("qwen3.5-122b", "qwen3.5-122b-lora"))
    outcome = wait(server.url, timeout=1, interval=0.05)
    result = outcome.as_dict()
    assert (result["ready"], result["state"]) == (False, "model_missing")
    assert result["models"] == ["qwen3.5-122b", "qwen3.5-122b-lora"]
    assert result["steps"]["models"] == f"lists qwen3.5-122b, qwen3.5-122b-lora, not {MODEL}"
    assert outcome.attempts >= 2  # retried: a server can still be adding adapters
    assert outcome.message().endswith(f". the server does not serve the model '{MODEL}'; it serves: qwen3.5-122b, qwen3.5-122b-lora")


def test_model_missing_from_an_empty_list(server: FakeVllm) -> None:
    server.set("GET", "/v1/models", models_reply())
    outcome = wait(server.url, timeout=0)
    assert outcome.probe.steps["models"] == f"lists no model, not {MODEL}"
    assert outcome.message().endswith("it serves: no model")


def test_model_appears_later(server: FakeVllm) -> None:
    calls: list[int] = []

    def models(seen: Seen) -> Reply:
        calls.append(1)
        return models_reply("base") if len(calls) < 3 else models_reply("base", MODEL)

    server.set("GET", "/v1/models", models)
    outcome = wait(server.url, timeout=5, interval=0.05)
    assert outcome.ready is True
    assert outcome.attempts == 3
    assert outcome.as_dict()["models"] == ["base", MODEL]


def test_api_key_missing(server: FakeVllm) -> None:
    server.api_key = SECRET
    outcome = wait(server.url, timeout=0)
    result = outcome.as_dict()
    assert (result["ready"], result["state"]) == (False, "unauthorized")
    assert result["steps"]["models"] == f"HTTP 401 {DROPPED}"
    assert outcome.message().endswith(". the API key is missing: /v1/models answers HTTP 401 and no api_key was given")


def test_api_key_refused(server: FakeVllm) -> None:
    server.api_key = SECRET
    wrong = "sk-wrong-0000"
    outcome = wait(server.url, timeout=0, api_key=wrong)
    result = outcome.as_dict()
    assert (result["ready"], result["state"]) == (False, "unauthorized")
    assert outcome.message().endswith(". the API key was refused (HTTP 401 from /v1/models); check api_key against the server's --api-key")
    assert wrong not in whole_output(outcome)
    assert server.requests[1].headers["Authorization"] == f"Bearer {wrong}"


def test_api_key_refused_by_the_completion_only(server: FakeVllm) -> None:
    server.set("POST", "/v1/chat/completions", Reply(403, {"error": "Forbidden"}))
    outcome = wait(server.url, timeout=0, api_key=SECRET)
    assert outcome.probe.state == "unauthorized"
    assert outcome.probe.steps["completion"] == f"HTTP 403 {DROPPED}"
    assert outcome.message().endswith(". the API key was refused (HTTP 403 from /v1/chat/completions); check api_key against the server's --api-key")


def test_api_key_is_sent_as_bearer_and_never_returned(server: FakeVllm) -> None:
    server.api_key = SECRET
    outcome = wait(server.url, api_key=SECRET)
    assert outcome.ready is True
    assert server.paths() == ["GET /health", "GET /v1/models", "POST /v1/chat/completions"]
    assert "Authorization" not in server.requests[0].headers  # /health is not protected: the key is not sent there
    assert [seen.headers["Authorization"] for seen in server.requests[1:]] == [f"Bearer {SECRET}"] * 2
    assert SECRET not in whole_output(outcome)


def test_api_key_echoed_by_the_server_is_masked(server: FakeVllm) -> None:
    server.set("POST", "/v1/chat/completions", Reply(500, {"message": f"bad request from key {SECRET}"}))
    outcome = wait(server.url, timeout=0, api_key=SECRET)
    assert outcome.probe.state == "completion_failed"
    assert outcome.as_dict()["steps"]["completion"] == 'HTTP 500: {"message": "bad request from key ********"}'
    assert SECRET not in whole_output(outcome)


# ---------------------------------------------------------------------------------------------------------------
# Security review finding 17: the API key never reaches a proxy, nor the output in any form


def test_a_proxy_in_the_environment_never_gets_the_key(server: FakeVllm, proxy: FakeProxy) -> None:
    """http_proxy (and the rest) set on the head, without no_proxy for the fabric: the requests still go to the server."""
    server.api_key = SECRET
    outcome = wait(server.url, api_key=SECRET)
    assert proxy.seen() == []  # nobody connected to the proxy
    assert outcome.ready is True
    assert [seen.headers.get("Authorization") for seen in server.requests] == [None, f"Bearer {SECRET}", f"Bearer {SECRET}"]


def test_use_proxy_goes_through_the_proxy_only_when_asked(server: FakeVllm, proxy: FakeProxy) -> None:
    """The opt-in still works, and shows the fake proxy sees what such a client sends it (the key included)."""
    config = EndpointConfig(url=server.url, model=MODEL, api_key=SECRET, request_timeout=5.0)
    outcome = wait_ready(config, timeout=0, interval=0.1, opener=ansible_opener(use_proxy=True))
    assert (outcome.probe.state, outcome.probe.steps["health"], outcome.probe.steps["models"]) == ("http_error", "HTTP 502", "HTTP 502")
    assert server.requests == []
    seen = proxy.seen()
    assert [data.split(b"\r\n", 1)[0] for data in seen] == [f"GET {server.url}/health HTTP/1.1".encode(), f"GET {server.url}/v1/models HTTP/1.1".encode()]
    assert f"Bearer {SECRET}".encode() in seen[1]


@pytest.mark.parametrize("inside", [3, 8, 14, len(SECRET) - 1])
def test_a_key_cut_by_the_excerpt_is_masked_whole(server: FakeVllm, inside: int) -> None:
    """A long body echoing the key where the 300-character cut falls ``inside`` characters into it."""
    filler = "x" * (300 - len("Bearer ") - inside)
    server.set("POST", "/v1/chat/completions", echo_authorization(500, before=filler, after=" was refused"))
    outcome = wait(server.url, timeout=0, api_key=SECRET)
    assert outcome.probe.state == "completion_failed"
    assert outcome.as_dict()["steps"]["completion"] == "HTTP 500: " + (filler + "Bearer ******** was refused")[:300]
    assert SECRET[:inside] not in whole_output(outcome)


@pytest.mark.parametrize("kept", [8, 12, len(SECRET) - 1])
def test_a_start_of_the_key_that_ends_the_body_is_masked(server: FakeVllm, kept: int) -> None:
    """A server that cut its own echo of the key after ``kept`` characters: that start of the key ends the excerpt."""
    server.set("POST", "/v1/chat/completions", Reply(500, f"bad header: Bearer {SECRET[:kept]}"))
    outcome = wait(server.url, timeout=0, api_key=SECRET)
    assert outcome.as_dict()["steps"]["completion"] == "HTTP 500: bad header: Bearer ********"
    assert SECRET[:8] not in whole_output(outcome)


@pytest.mark.parametrize(
    ("body", "shown"),
    [
        pytest.param(
            json.dumps({"detail": f"bad token {SLASHED_KEY}"}).replace("/", "\\/"), '{"detail": "bad token ********"}', id="slash escaped (PHP, Java)"
        ),
        pytest.param('{"detail": "' + "".join(f"\\u{ord(c):04x}" for c in SLASHED_KEY) + '"}', '{"detail": "********"}', id="every character as uXXXX"),
        pytest.param(f'{{"detail": "{SLASHED_KEY}"}}'.replace("+", "\\u002B"), '{"detail": "********"}', id="plus as u002B"),
        pytest.param(
            json.dumps({"error": json.dumps({"detail": SLASHED_KEY}).replace("/", "\\/")}),
            '{"error": "{\\"detail\\": \\"********\\"}"}',
            id="escaped twice (JSON in JSON)",
        ),
        pytest.param(f"token: {SLASHED_KEY[:10]}\n{SLASHED_KEY[10:]}", "token: ********", id="split by a newline"),
        pytest.param(json.dumps({"detail": f"{SLASHED_KEY[:10]}\n{SLASHED_KEY[10:]}"}), '{"detail": "********"}', id="split by an escaped newline"),
    ],
)
def test_a_key_echoed_json_escaped_or_split_is_masked(server: FakeVllm, body: str, shown: str) -> None:
    server.set("POST", "/v1/chat/completions", Reply(500, body))
    outcome = wait(server.url, timeout=0, api_key=SLASHED_KEY)
    assert outcome.probe.state == "completion_failed"
    assert outcome.as_dict()["steps"]["completion"] == f"HTTP 500: {shown}"
    assert SLASHED_KEY[:8] not in whole_output(outcome)


@pytest.mark.parametrize("status", [401, 403])
@pytest.mark.parametrize(("method", "path", "step"), [("GET", "/v1/models", "models"), ("POST", "/v1/chat/completions", "completion")])
def test_a_401_or_403_body_is_dropped(server: FakeVllm, status: int, method: str, path: str, step: str) -> None:
    """A 401 or 403 that echoes the Authorization header (``/`` escaped): only the status is shown."""
    server.set(method, path, echo_authorization(status, before='{"detail": "bad auth header: ', after='"}', escape_slash=True))
    outcome = wait(server.url, timeout=0, api_key=SLASHED_KEY)
    result = outcome.as_dict()
    assert (result["state"], result["steps"][step]) == ("unauthorized", f"HTTP {status} {DROPPED}")
    assert "bad auth header" not in whole_output(outcome)
    assert SLASHED_KEY[:8] not in whole_output(outcome)


def test_an_answer_echoing_the_key_is_masked_in_every_return_value(server: FakeVllm) -> None:
    """A hostile server that puts the key in the answer's fields and in the model list."""
    server.set("GET", "/v1/models", models_reply(MODEL, f"model-{SECRET}"))
    server.set("POST", "/v1/chat/completions", chat_reply(content=f"your key: {SECRET}", finish_reason=SECRET, reasoning=f"it is {SECRET}"))
    outcome = wait(server.url, api_key=SECRET)
    result = outcome.as_dict()
    assert result["ready"] is True
    assert (result["content"], result["reasoning"], result["finish_reason"]) == ("your key: ********", "it is ********", "********")
    assert result["models"] == [MODEL, "model-********"]
    assert SECRET not in whole_output(outcome)


@pytest.mark.parametrize(
    ("completion_tokens", "step"),
    [(0, "HTTP 200 but no completion tokens (usage.completion_tokens: 0)"), (None, "HTTP 200 but no completion tokens (usage.completion_tokens: null)")],
)
def test_no_completion_tokens(server: FakeVllm, completion_tokens: int | None, step: str) -> None:
    server.set("POST", "/v1/chat/completions", chat_reply(content="", completion_tokens=completion_tokens))
    outcome = wait(server.url, timeout=0)
    result = outcome.as_dict()
    assert (result["ready"], result["state"]) == (False, "no_tokens")
    assert result["steps"]["completion"] == step
    assert result["content"] == ""
    assert outcome.message().endswith(". the completion answered but generated no tokens")


def test_smoke_test_off_needs_only_the_model_list(server: FakeVllm) -> None:
    server.set("POST", "/v1/chat/completions", Reply(500, b"must not be asked"))
    outcome = wait(server.url, smoke_test=False)
    result = outcome.as_dict()
    assert (result["ready"], result["state"], result["attempts"]) == (True, "ready", 1)
    assert result["steps"] == {"health": "HTTP 200", "models": f"lists {MODEL}", "completion": "not tried (smoke_test is false)"}
    assert result["content"] is None and result["usage"] == {}
    assert server.paths() == ["GET /health", "GET /v1/models"]


def test_smoke_test_off_with_health_failing_is_not_ready(server: FakeVllm) -> None:
    server.set("GET", "/health", Reply(503, b""))
    outcome = wait(server.url, timeout=0, smoke_test=False)
    assert (outcome.ready, outcome.probe.state, outcome.probe.health_status) == (False, "loading", 503)
    assert outcome.message().endswith(". /health answers HTTP 503 (still loading, or on vLLM a dead engine)")


def test_smoke_test_proves_the_engine_even_when_health_fails(server: FakeVllm) -> None:
    server.set("GET", "/health", Reply(503, b""))
    outcome = wait(server.url)
    assert (outcome.ready, outcome.probe.health_status, outcome.probe.steps["health"]) == (True, 503, "HTTP 503")


def test_health_missing_is_fine(server: FakeVllm) -> None:
    server.set("GET", "/health", NOT_FOUND)
    outcome = wait(server.url)
    assert (outcome.ready, outcome.probe.health_status, outcome.probe.steps["health"]) == (True, 404, "HTTP 404 (no /health; ignored)")


def test_connection_dropped_without_an_answer(server: FakeVllm) -> None:
    server.set("GET", "/v1/models", Reply(drop=True))
    outcome = wait(server.url, timeout=0)
    assert (outcome.probe.state, outcome.probe.steps["models"]) == ("unreachable", "the server closed the connection without answering")


@pytest.mark.parametrize("suffix", ["/", "/v1", "/v1/"])
def test_url_with_a_trailing_slash_or_v1(server: FakeVllm, suffix: str) -> None:
    outcome = wait(server.url + suffix)
    assert outcome.ready is True
    assert outcome.as_dict()["url"] == server.url
    assert server.paths() == ["GET /health", "GET /v1/models", "POST /v1/chat/completions"]


def test_becomes_ready_after_a_delay(bound_server: FakeVllm) -> None:
    """Refused, then 503 while loading, then ready: found within the interval plus a request's time."""
    server = bound_server
    server.set("GET", "/v1/models", Reply(503, b""))
    switched: dict[str, float] = {}

    def timeline() -> None:
        time.sleep(0.8)
        server.listen()  # from now on: 503
        time.sleep(0.8)
        server.set("GET", "/v1/models", models_reply(MODEL))
        switched["ready_at"] = time.monotonic()

    thread = threading.Thread(target=timeline, daemon=True)
    start = time.monotonic()
    thread.start()
    outcome = wait(server.url, timeout=10, interval=0.5)
    done = time.monotonic()
    thread.join(5)
    assert outcome.ready is True
    assert done - switched["ready_at"] < 0.5 + 0.5
    assert 1.6 <= done - start < 2.6
    paths = server.paths()
    assert paths.count("GET /v1/models") >= 2  # at least one 503 before the model was listed
    assert paths[-1] == "POST /v1/chat/completions"
    # Refused at first, so the server saw fewer attempts than were made.
    assert outcome.attempts > paths.count("GET /health") >= 2


def test_first_attempt_is_immediate(server: FakeVllm) -> None:
    start = time.monotonic()
    outcome = wait(server.url, interval=5)
    assert outcome.ready is True
    assert server.requests[0].at - start < 1  # the interval is 5 s: a first attempt after it fails
    assert time.monotonic() - start < 2.5


def test_timeout_respected_while_the_completion_hangs(server: FakeVllm) -> None:
    server.set("POST", "/v1/chat/completions", Reply(200, b"{}", delay=10))
    start = time.monotonic()
    outcome = wait(server.url, timeout=1.5, interval=0.2, request_timeout=5)
    took = time.monotonic() - start
    result = outcome.as_dict()
    assert 1.5 <= result["elapsed"] < 2.5 and took < 3.0  # the request's own timeout (5 s) would end it later
    assert (result["ready"], result["state"], result["attempts"]) == (False, "completion_failed", 1)
    # the time left then: the budget less what /health and /models took (0.2 s on a busy 2-core CI machine)
    left = re.fullmatch(r"timed out after (\d+[.]\d) s", result["steps"]["completion"])
    assert left and 0.5 <= float(left.group(1)) <= 1.5, result["steps"]
    assert outcome.message().endswith(". /health answers but completions fail: the engine looks wedged")


def test_a_slow_but_working_completion_is_waited_for(server: FakeVllm) -> None:
    slow = chat_reply()
    slow.delay = 0.6
    server.set("POST", "/v1/chat/completions", slow)
    outcome = wait(server.url, timeout=5, request_timeout=2)
    assert outcome.ready is True and outcome.attempts == 1


def test_request_timeout_is_reported(server: FakeVllm) -> None:
    server.set("GET", "/v1/models", Reply(200, b"{}", delay=10))
    outcome = wait(server.url, timeout=1, interval=0.05, request_timeout=0.3)
    assert (outcome.probe.state, outcome.probe.steps["models"]) == ("timeout", "timed out after 0.3 s")
    assert outcome.attempts >= 3


# ---------------------------------------------------------------------------------------------------------------
# The loop's timing, with an injected opener and clock


class ScriptedOpener:
    """An opener that answers from a function of the request, moving the fake clock by the time each request takes."""

    def __init__(self, clock: FakeClock, answer: Callable[[HttpRequest], tuple[float, HttpResponse]]) -> None:
        self.clock = clock
        self.answer = answer
        self.requests: list[tuple[float, HttpRequest]] = []

    def __call__(self, request: HttpRequest) -> HttpResponse:
        self.requests.append((self.clock.now, request))
        took, response = self.answer(request)
        self.clock.now += min(took, request.timeout)
        if took > request.timeout:
            return HttpResponse(failure="timeout", detail=f"timed out after {format_seconds(request.timeout)} s")
        return response


REFUSED = HttpResponse(failure="refused", detail="connection refused")
CONFIG = EndpointConfig(url="http://spark-head:8000", model=MODEL, request_timeout=30.0)
READY_ANSWERS = {
    "/health": HttpResponse(200, b""),
    "/v1/models": HttpResponse(200, models_reply(MODEL).payload()),
    "/v1/chat/completions": HttpResponse(200, chat_reply().payload()),
}


def path_of(request: HttpRequest) -> str:
    return request.url[len(CONFIG.url) :]


def test_sleeps_never_pass_the_deadline() -> None:
    clock = FakeClock()
    opener = ScriptedOpener(clock, lambda request: (0.0, REFUSED))
    outcome = wait_ready(CONFIG, timeout=5, interval=2, opener=opener, clock=clock.clock, sleep=clock.sleep)
    assert outcome.ready is False
    assert clock.sleeps == [2, 2, 1]
    assert outcome.attempts == 3
    assert [at for at, _request in opener.requests] == [1000, 1002, 1004]  # the first one at once
    assert outcome.elapsed == 5


def test_ready_on_the_third_attempt() -> None:
    clock = FakeClock()

    def answer(request: HttpRequest) -> tuple[float, HttpResponse]:
        return (0.25, READY_ANSWERS[path_of(request)] if clock.now >= 1004 else REFUSED)

    outcome = wait_ready(CONFIG, timeout=900, interval=2, opener=ScriptedOpener(clock, answer), clock=clock.clock, sleep=clock.sleep)
    assert outcome.ready is True
    assert outcome.attempts == 3
    assert clock.sleeps == [2, 2]
    assert outcome.elapsed == pytest.approx(4.5 + 0.75)


def test_each_request_waits_at_most_the_time_left() -> None:
    clock = FakeClock()
    opener = ScriptedOpener(clock, lambda request: (100.0, HttpResponse(200, b"")))  # a server that never answers
    outcome = wait_ready(CONFIG, timeout=45, interval=2, opener=opener, clock=clock.clock, sleep=clock.sleep)
    assert [(path_of(request), request.timeout) for _at, request in opener.requests] == [("/health", 30.0), ("/v1/models", 15.0)]
    assert outcome.elapsed == 45
    assert outcome.attempts == 1
    assert clock.sleeps == []
    assert outcome.probe.state == "timeout"
    assert outcome.probe.steps == {"health": "timed out after 30 s", "models": "timed out after 15 s", "completion": "not tried"}


def test_an_attempt_cut_short_by_the_deadline_does_not_hide_the_previous_one() -> None:
    clock = FakeClock()
    models_calls: list[float] = []

    def answer(request: HttpRequest) -> tuple[float, HttpResponse]:
        if path_of(request) == "/v1/models":
            models_calls.append(clock.now)
            if len(models_calls) > 1:
                return (100.0, HttpResponse(200, b""))  # hangs from the second attempt on
            return (0.5, HttpResponse(500, b"boom"))
        return (0.5, HttpResponse(200, b""))

    outcome = wait_ready(CONFIG, timeout=10, interval=2, opener=ScriptedOpener(clock, answer), clock=clock.clock, sleep=clock.sleep)
    assert outcome.attempts == 2
    assert outcome.elapsed == 10
    assert outcome.probe.state == "http_error"
    assert outcome.probe.steps["models"] == "HTTP 500: boom"


def test_no_request_without_time_left() -> None:
    clock = FakeClock()
    opener = ScriptedOpener(clock, lambda request: (5.0, HttpResponse(200, b"")))  # /health answers at the deadline
    outcome = wait_ready(CONFIG, timeout=5, interval=2, opener=opener, clock=clock.clock, sleep=clock.sleep)
    assert len(opener.requests) == 1
    assert outcome.probe.state == "timeout"
    assert outcome.probe.steps == {"health": "HTTP 200", "models": "not tried (the time ran out)", "completion": "not tried"}
    assert outcome.message() == (
        "http://spark-head:8000 not ready after 5 s (1 attempt): health: HTTP 200; models: not tried (the time ran out); completion: not tried"
    )


def test_timeout_zero_makes_one_full_attempt() -> None:
    clock = FakeClock()
    opener = ScriptedOpener(clock, lambda request: (0.1, HttpResponse(503, b"")))
    outcome = wait_ready(CONFIG, timeout=0, interval=2, opener=opener, clock=clock.clock, sleep=clock.sleep)
    assert outcome.attempts == 1
    assert clock.sleeps == []
    assert [request.timeout for _at, request in opener.requests] == [30.0, 30.0]
    assert outcome.probe.state == "loading"
    assert outcome.message().startswith("http://spark-head:8000 not ready after 0 s (1 attempt): health: HTTP 503; models: HTTP 503; completion: not tried")


def test_a_unit_that_gave_up_ends_the_wait_after_the_attempt_that_found_it() -> None:
    """The unit is asked after each attempt that is not ready (not before the first, not after a ready one): the
    third answer says it failed, so the wait ends there, long before its 900 s, not ready, saying why."""
    clock = FakeClock()
    answers = iter(["", "", "sparkops-vllm.service failed"])
    asked: list[float] = []

    def gave_up() -> str:
        asked.append(clock.now)
        return next(answers)

    opener = ScriptedOpener(clock, lambda request: (0.0, REFUSED))
    outcome = wait_ready(CONFIG, timeout=900, interval=2, opener=opener, clock=clock.clock, sleep=clock.sleep, gave_up=gave_up)
    assert (outcome.ready, outcome.attempts, asked, clock.sleeps) == (False, 3, [1000, 1002, 1004], [2, 2])
    assert outcome.as_dict()["gave_up"] is True and outcome.elapsed == 4
    assert outcome.message() == (
        "http://spark-head:8000 not ready after 4 s (3 attempts): health: connection refused; models: not tried; "
        "completion: not tried. sparkops-vllm.service failed"
    )


def test_a_unit_that_may_still_answer_changes_nothing() -> None:
    clock = FakeClock()

    def answer(request: HttpRequest) -> tuple[float, HttpResponse]:
        return (0.0, READY_ANSWERS[path_of(request)] if clock.now >= 1004 else REFUSED)

    asked: list[float] = []
    outcome = wait_ready(CONFIG, timeout=900, interval=2, opener=ScriptedOpener(clock, answer), clock=clock.clock, sleep=clock.sleep,
                         gave_up=lambda: asked.append(clock.now) or "")  # fmt: skip
    assert (outcome.ready, outcome.attempts, asked) == (True, 3, [1000, 1002])  # not asked after the ready attempt
    assert outcome.as_dict()["gave_up"] is False


FAILED = "ActiveState=failed\nSubState=failed\nResult=start-limit-hit\nNRestarts=5"
RESTARTING = "ActiveState=activating\nSubState=auto-restart\nResult=exit-code\nNRestarts=2"  # after a crash: it may answer
RUNNING = "ActiveState=active\nSubState=running\nResult=success\nNRestarts=0"
UNKNOWN = "ActiveState=inactive\nSubState=dead\nResult=success\nNRestarts=0"  # also a unit systemd does not know


@pytest.mark.parametrize(
    ("answer", "why", "state"),
    [
        ((0, FAILED + "\n", ""), "sparkops-vllm.service failed (ActiveState=failed): systemd gave up starting it, so it will not answer", FAILED),
        ((0, RESTARTING + "\n", ""), "", RESTARTING),
        ((0, RUNNING + "\n", ""), "", RUNNING),
        ((0, UNKNOWN + "\n", ""), "", UNKNOWN),
        ((0, "ActiveState=failedish\n", ""), "", "ActiveState=failedish"),  # a whole line, not a prefix
        ((1, "", "System has not been booted with systemd"), "", ""),
        ((127, "", "cannot run systemctl"), "", ""),
    ],
)  # fmt: skip
def test_unit_watch_reads_the_units_state_and_says_when_it_gave_up(answer: tuple[int, str, str], why: str, state: str) -> None:
    argvs: list[list[str]] = []

    def run(argv: list[str]) -> tuple[int, str, str]:
        argvs.append(argv)
        return answer

    watch = UnitWatch("sparkops-vllm.service", run)
    assert watch.state == ""  # nothing read before it is asked
    assert (watch(), watch.state) == (why, state)
    assert argvs == [["systemctl", "show", "--property", "ActiveState,SubState,Result,NRestarts", "sparkops-vllm.service"]]


def test_check_once_defaults_to_no_deadline() -> None:
    seen: list[HttpRequest] = []

    def opener(request: HttpRequest) -> HttpResponse:
        seen.append(request)
        return READY_ANSWERS[path_of(request)]

    probe = check_once(CONFIG, opener)
    assert probe.ready is True and probe.cut_short is False
    assert [(r.method, path_of(r), r.timeout, r.body is None) for r in seen] == [
        ("GET", "/health", 30.0, True),
        ("GET", "/v1/models", 30.0, True),
        ("POST", "/v1/chat/completions", 30.0, False),
    ]
