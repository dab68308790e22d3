# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the openai_endpoint module: main() against the local OpenAI-compatible server of tests/unit/fake_openai.py.

Where the module waits, the wait loop gets a fake clock (its sleeps move the clock and return at once), while the
HTTP requests are real.
"""

from __future__ import annotations

import functools
import json
import typing as t
from collections.abc import Iterator

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.sparkops.inference.plugins.module_utils import _openai_endpoint
from ansible_collections.sparkops.inference.plugins.modules import openai_endpoint
from fake_clock import FakeClock
from fake_openai import DROPPED, MODEL, SLASHED_KEY, FakeProxy, FakeVllm, Reply, chat_reply, echo_authorization, models_reply

SECRET = "sk-module-4f9a7e21c0d3"
RESULT_KEYS = {
    "changed",
    "msg",
    "ready",
    "state",
    "url",
    "model",
    "elapsed",
    "attempts",
    "health_status",
    "models",
    "steps",
    "content",
    "reasoning",
    "finish_reason",
    "usage",
    "gave_up",
    "unit_state",
}

pytestmark = pytest.mark.usefixtures("no_proxy")


class Run(t.NamedTuple):
    result: dict[str, t.Any]
    output: str  # everything the module printed
    clock: FakeClock
    calls: list[dict[str, t.Any]]  # the keyword arguments wait_ready got


def run_module(args: dict[str, t.Any], capsys: pytest.CaptureFixture[str]) -> Run:
    """Run main() with ``args``; wait_ready runs for real but with a fake clock, and its arguments are recorded."""
    clock = FakeClock()
    calls: list[dict[str, t.Any]] = []
    real = functools.partial(_openai_endpoint.wait_ready, clock=clock.clock, sleep=clock.sleep)

    def wait_ready(*pos: t.Any, **kwargs: t.Any) -> _openai_endpoint.WaitOutcome:
        calls.append(kwargs)
        return real(*pos, **kwargs)

    with patch_module_args(args), pytest.MonkeyPatch.context() as patcher, pytest.raises(SystemExit):
        patcher.setattr(openai_endpoint, "wait_ready", wait_ready)
        openai_endpoint.main()
    output = capsys.readouterr().out
    return Run(json.loads(output), output, clock, calls)


@pytest.fixture
def server() -> Iterator[FakeVllm]:
    fake = FakeVllm()
    fake.listen()
    try:
        yield fake
    finally:
        fake.close()


def test_ready(server: FakeVllm, capsys: pytest.CaptureFixture[str]) -> None:
    run = run_module({"url": server.url + "/v1/", "model": MODEL}, capsys)
    result = run.result
    assert not result.get("failed"), result
    assert set(result) == RESULT_KEYS | {"invocation"}
    assert result["changed"] is False
    assert (result["ready"], result["state"], result["attempts"], result["elapsed"]) == (True, "ready", 1, 0)
    assert result["url"] == server.url
    assert result["msg"] == f"{server.url} serves {MODEL} (ready after 0 s, 1 attempt)"
    assert result["content"] == "Hello!"
    assert result["usage"] == {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
    assert result["steps"] == {"health": "HTTP 200", "models": f"lists {MODEL}", "completion": "HTTP 200: 3 tokens, finish_reason stop"}
    assert server.requests[2].json() == {"model": MODEL, "messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 32, "stream": False}
    assert run.calls == [{"timeout": 900, "interval": 2.0, "opener": run.calls[0]["opener"], "gave_up": None}]  # no unit: never asked
    assert run.clock.sleeps == []


def test_options_reach_the_request(server: FakeVllm, capsys: pytest.CaptureFixture[str]) -> None:
    server.set("POST", "/v1/chat/completions", chat_reply(content=None, finish_reason="length", completion_tokens=16, reasoning="Thinking about it"))
    args = {
        "url": server.url,
        "model": MODEL,
        "prompt": "Hi",
        "max_tokens": 16,
        "chat_template_kwargs": {"enable_thinking": False},
        "timeout": 60,
        "interval": 0.5,
        "request_timeout": 7.5,
        "validate_certs": False,
        "use_proxy": False,
    }
    run = run_module(args, capsys)
    result = run.result
    assert not result.get("failed"), result
    assert (result["ready"], result["content"], result["reasoning"], result["finish_reason"]) == (True, None, "Thinking about it", "length")
    assert server.requests[2].json() == {
        "model": MODEL,
        "messages": [{"role": "user", "content": "Hi"}],
        "max_tokens": 16,
        "stream": False,
        "chat_template_kwargs": {"enable_thinking": False},
    }
    assert (run.calls[0]["timeout"], run.calls[0]["interval"]) == (60, 0.5)


def test_not_ready_fails_with_every_field(server: FakeVllm, capsys: pytest.CaptureFixture[str]) -> None:
    server.set("GET", "/v1/models", models_reply("other-model"))
    run = run_module({"url": server.url, "model": MODEL, "timeout": 10, "interval": 2}, capsys)
    result = run.result
    assert result["failed"] is True
    assert set(result) == RESULT_KEYS | {"failed", "invocation"}
    assert result["changed"] is False
    assert (result["ready"], result["state"], result["attempts"], result["elapsed"]) == (False, "model_missing", 5, 10)
    assert run.clock.sleeps == [2, 2, 2, 2, 2]
    assert result["models"] == ["other-model"]
    assert result["msg"] == (
        f"{server.url} not ready after 10 s (5 attempts): health: HTTP 200; models: lists other-model, not {MODEL}; completion: not tried."
        f" the server does not serve the model '{MODEL}'; it serves: other-model"
    )


def test_wedged_engine_fails_naming_it(server: FakeVllm, capsys: pytest.CaptureFixture[str]) -> None:
    server.set("POST", "/v1/chat/completions", Reply(500, "EngineDeadError"))
    result = run_module({"url": server.url, "model": MODEL, "timeout": 4}, capsys).result
    assert result["failed"] is True
    assert result["state"] == "completion_failed"
    assert result["msg"] == (
        f"{server.url} not ready after 4 s (2 attempts): health: HTTP 200; models: lists {MODEL}; completion: HTTP 500: EngineDeadError."
        " /health answers but completions fail: the engine looks wedged"
    )


def test_a_unit_that_gave_up_fails_at_once_naming_it(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """systemctl says the unit failed on the second look: the module ends there (2 attempts of a 600 s wait)."""
    activating = "ActiveState=activating\nSubState=auto-restart\nResult=exit-code\nNRestarts=4\n"
    states = iter([activating, "ActiveState=failed\nSubState=failed\nResult=start-limit-hit\nNRestarts=5\n"])
    argvs: list[list[str]] = []

    def run_command(self: t.Any, argv: list[str], **kwargs: t.Any) -> tuple[int, str, str]:
        argvs.append(argv)
        return 0, next(states), ""

    monkeypatch.setattr(openai_endpoint.AnsibleModule, "run_command", run_command)
    unstarted = FakeVllm()  # bound, not listening: refused
    try:
        run = run_module({"url": unstarted.url, "model": MODEL, "timeout": 600, "interval": 1, "unit": "sparkops-vllm.service"}, capsys)
    finally:
        unstarted.close()
    result = run.result
    assert (result["failed"], result["ready"], result["gave_up"], result["attempts"], result["elapsed"]) == (True, False, True, 2, 1)
    assert argvs == [["systemctl", "show", "--property", "ActiveState,SubState,Result,NRestarts", "sparkops-vllm.service"]] * 2
    assert result["unit_state"] == "ActiveState=failed\nSubState=failed\nResult=start-limit-hit\nNRestarts=5"  # the last read
    assert result["msg"] == (
        f"{unstarted.url} not ready after 1 s (2 attempts): health: connection refused; models: not tried; completion: not tried."
        " sparkops-vllm.service failed (ActiveState=failed): systemd gave up starting it, so it will not answer"
    )


def test_refused_without_failing(capsys: pytest.CaptureFixture[str]) -> None:
    unstarted = FakeVllm()  # bound, not listening: refused
    try:
        run = run_module({"url": unstarted.url, "model": MODEL, "timeout": 6, "fail_on_timeout": False}, capsys)
    finally:
        unstarted.close()
    result = run.result
    assert not result.get("failed"), result
    assert (result["ready"], result["state"], result["attempts"], result["health_status"]) == (False, "refused", 3, None)
    assert result["steps"] == {"health": "connection refused", "models": "not tried", "completion": "not tried"}
    assert result["msg"].startswith(f"{unstarted.url} not ready after 6 s (3 attempts): health: connection refused; models: not tried; completion: not tried.")


def test_smoke_test_off(server: FakeVllm, capsys: pytest.CaptureFixture[str]) -> None:
    server.set("POST", "/v1/chat/completions", Reply(500, b"not asked"))
    result = run_module({"url": server.url, "model": MODEL, "smoke_test": False}, capsys).result
    assert not result.get("failed"), result
    assert (result["ready"], result["content"], result["usage"]) == (True, None, {})
    assert server.paths() == ["GET /health", "GET /v1/models"]


def test_check_mode_still_looks(server: FakeVllm, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_module({"url": server.url, "model": MODEL, "_ansible_check_mode": True}, capsys).result
    assert not result.get("failed"), result
    assert (result["ready"], result["changed"]) == (True, False)
    assert len(server.requests) == 3


def test_api_key_is_sent_and_never_shown(server: FakeVllm, capsys: pytest.CaptureFixture[str]) -> None:
    server.api_key = SECRET
    run = run_module({"url": server.url, "model": MODEL, "api_key": SECRET}, capsys)
    assert not run.result.get("failed"), run.result
    assert run.result["ready"] is True
    assert [seen.headers.get("Authorization") for seen in server.requests] == [None, f"Bearer {SECRET}", f"Bearer {SECRET}"]
    assert SECRET not in run.output


def test_wrong_api_key_fails_without_showing_it(server: FakeVllm, capsys: pytest.CaptureFixture[str]) -> None:
    server.api_key = SECRET
    wrong = "sk-wrong-a1b2c3d4e5"
    # A server that echoes the key it got in its error: neither the message nor the steps may show it.
    server.set("POST", "/v1/chat/completions", Reply(500, f"bad key {wrong}"))
    run = run_module({"url": server.url, "model": MODEL, "api_key": wrong, "timeout": 2}, capsys)
    result = run.result
    assert result["failed"] is True
    assert result["state"] == "unauthorized"
    assert result["msg"].endswith(". the API key was refused (HTTP 401 from /v1/models); check api_key against the server's --api-key")
    assert server.requests[1].headers["Authorization"] == f"Bearer {wrong}"
    assert wrong not in run.output
    assert SECRET not in run.output


def test_missing_api_key_says_so(server: FakeVllm, capsys: pytest.CaptureFixture[str]) -> None:
    server.api_key = SECRET
    result = run_module({"url": server.url, "model": MODEL, "timeout": 2}, capsys).result
    assert result["failed"] is True
    assert result["msg"].endswith(". the API key is missing: /v1/models answers HTTP 401 and no api_key was given")


def test_echoed_key_is_masked(server: FakeVllm, capsys: pytest.CaptureFixture[str]) -> None:
    server.set("POST", "/v1/chat/completions", Reply(500, f"request with key {SECRET} failed"))
    run = run_module({"url": server.url, "model": MODEL, "api_key": SECRET, "timeout": 2}, capsys)
    assert run.result["failed"] is True
    assert run.result["steps"]["completion"].startswith("HTTP 500: request with key ")
    assert SECRET not in run.output


def test_a_proxy_in_the_environment_is_not_used_by_default(server: FakeVllm, proxy: FakeProxy, capsys: pytest.CaptureFixture[str]) -> None:
    """Security review finding 17: http_proxy set where the module runs, no no_proxy: the key never reaches the proxy."""
    server.api_key = SECRET
    run = run_module({"url": server.url, "model": MODEL, "api_key": SECRET}, capsys)
    assert proxy.seen() == []  # nobody connected to the proxy
    assert run.result["ready"] is True, run.result
    assert [seen.headers.get("Authorization") for seen in server.requests] == [None, f"Bearer {SECRET}", f"Bearer {SECRET}"]


def test_use_proxy_true_goes_through_the_proxy(server: FakeVllm, proxy: FakeProxy, capsys: pytest.CaptureFixture[str]) -> None:
    """The opt-in still works (and the fake proxy sees such a client: the test above is not vacuous)."""
    run = run_module({"url": server.url, "model": MODEL, "use_proxy": True, "timeout": 0, "fail_on_timeout": False}, capsys)
    assert (run.result["state"], run.result["steps"]["health"]) == ("http_error", "HTTP 502")
    assert len(proxy.seen()) == 2 and server.requests == []


@pytest.mark.parametrize(
    ("route", "step", "shown"),
    [
        pytest.param(
            ("POST", "/v1/chat/completions", echo_authorization(500, before="x" * (300 - len("Bearer ") - 12), after=" was refused")),
            "completion",
            "HTTP 500: " + ("x" * (300 - len("Bearer ") - 12) + "Bearer ******** was refused")[:300],
            id="cut by the excerpt inside the key",
        ),
        pytest.param(
            ("POST", "/v1/chat/completions", echo_authorization(500, before='{"detail": "bad auth header: ', after='"}', escape_slash=True)),
            "completion",
            'HTTP 500: {"detail": "bad auth header: Bearer ********"}',
            id="JSON-escaped",
        ),
        pytest.param(
            ("GET", "/v1/models", echo_authorization(401, before='{"detail": "bad auth header: ', after='"}', escape_slash=True)),
            "models",
            f"HTTP 401 {DROPPED}",
            id="401",
        ),
        pytest.param(
            ("POST", "/v1/chat/completions", echo_authorization(403, before='{"detail": "bad auth header: ', after='"}', escape_slash=True)),
            "completion",
            f"HTTP 403 {DROPPED}",
            id="403",
        ),
    ],
)
def test_an_echoed_key_is_never_shown(server: FakeVllm, capsys: pytest.CaptureFixture[str], route: tuple[str, str, t.Any], step: str, shown: str) -> None:
    """Security review finding 17: Ansible's no_log masks the key only as it is; the module masks its other forms."""
    server.set(*route)
    run = run_module({"url": server.url, "model": MODEL, "api_key": SLASHED_KEY, "timeout": 2}, capsys)
    assert run.result["failed"] is True
    assert run.result["steps"][step] == shown
    assert SLASHED_KEY[:8] not in run.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"url": "192.168.200.11:8000", "model": MODEL},
            "url '192.168.200.11:8000' is not an http:// or https:// URL with a host, such as 'http://192.168.200.11:8000'",
        ),
        ({"url": "http://h:8000", "model": MODEL, "timeout": -1}, "timeout must be at least 0, not -1"),
        ({"url": "http://h:8000", "model": MODEL, "interval": -0.5}, "interval must be at least 0, not -0.5"),
        ({"url": "http://h:8000", "model": MODEL, "max_tokens": 0}, "max_tokens must be at least 1, not 0"),
        ({"url": "http://h:8000", "model": MODEL, "request_timeout": 0}, "request_timeout must be above 0, not 0.0"),
        ({"url": "http://h:8000"}, "missing required arguments: model"),
        ({"model": MODEL}, "missing required arguments: url"),
    ],
)
def test_bad_arguments(capsys: pytest.CaptureFixture[str], args: dict[str, t.Any], message: str) -> None:
    run = run_module(args, capsys)
    assert run.result["failed"] is True
    assert run.result["msg"] == message
    assert "ready" not in run.result
    assert run.calls == []
