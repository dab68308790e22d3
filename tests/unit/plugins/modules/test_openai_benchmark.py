# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the openai_benchmark module: main() against the streaming server of the module util's tests."""

from __future__ import annotations

import functools
import json
import typing as t

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.sparkops.inference.plugins.module_utils import _benchmark
from ansible_collections.sparkops.inference.plugins.modules import openai_benchmark
from ansible_collections.sparkops.inference.tests.unit.plugins.module_utils.test__benchmark import MODEL, Pace, SseServer

SECRET = "sk-module-bench-81f3c6d2"


class Run(t.NamedTuple):
    result: dict[str, t.Any]
    output: str  # everything the module printed


def run_module(args: dict[str, t.Any], capsys: pytest.CaptureFixture[str]) -> Run:
    with patch_module_args(args), pytest.raises(SystemExit):
        openai_benchmark.main()
    output = capsys.readouterr().out
    return Run(json.loads(output), output)


@pytest.fixture
def server() -> t.Iterator[SseServer]:
    instance = SseServer()
    yield instance
    instance.close()


def small(url: str, **kwargs: t.Any) -> dict[str, t.Any]:
    args: dict[str, t.Any] = {"url": url, "model": MODEL, "concurrency": [1, 2], "requests_per_level": 2, "prompt_tokens": 8, "output_tokens": 4}
    args.update(kwargs)
    return args


def test_a_sweep_reports_each_level_and_changes_nothing(server: SseServer, capsys: pytest.CaptureFixture[str]) -> None:
    run = run_module(small(f"{server.url}/v1/", api_key=SECRET), capsys)
    result = run.result
    assert not result.get("failed"), result["msg"]
    assert result["changed"] is False and result["measured"] is True
    assert result["url"] == server.url and result["model"] == MODEL and result["server_version"] == "0.30.0"
    assert [level["max_concurrency"] for level in result["levels"]] == [1, 2]
    assert all(level["completed"] == 2 and level["total_output_tokens"] == 8 for level in result["levels"])
    assert result["warmup"]["success"] is True and len(server.bodies) == 6  # warm-up, calibration, 2 + 2
    assert result["settings"] == {
        "concurrency": [1, 2],
        "requests_per_level": 2,
        "prompt_tokens": 8,
        "output_tokens": 4,
        "warmup": True,
        "ignore_eos": True,
        "timeout": 300.0,
    }
    assert server.bodies[0]["ignore_eos"] is True and server.bodies[0]["max_tokens"] == 4
    assert server.headers[0]["Authorization"] == f"Bearer {SECRET}"
    assert SECRET not in run.output


def test_check_mode_measures_nothing(server: SseServer, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_module({**small(server.url, api_key=SECRET), "_ansible_check_mode": True}, capsys).result
    assert (result["changed"], result["measured"], result["levels"], result["warmup"]) == (False, False, [], None)
    assert result["msg"].startswith("check mode: nothing was measured")
    assert server.bodies == []


@pytest.mark.parametrize(
    "changes,words",
    [
        ({"concurrency": [1, 0]}, "concurrency levels must be integers of at least 1, not 0"),
        ({"concurrency": "1,x"}, "concurrency"),  # Ansible's own type check names the option
        ({"requests_per_level": 0}, "requests_per_level must be at least 1, not 0"),
        ({"prompt_tokens": 0}, "prompt_tokens must be at least 1, not 0"),
        ({"output_tokens": 0}, "output_tokens must be at least 1, not 0"),
        ({"timeout": 0}, "timeout must be above 0"),
        ({"url": "http://admin:hunter2@127.0.0.1:1"}, "must not carry credentials"),
        ({"url": "127.0.0.1:8000"}, "url '127.0.0.1:8000' is not an http:// or https:// URL"),
    ],
)
def test_bad_options_fail_naming_the_option(server: SseServer, capsys: pytest.CaptureFixture[str], changes: dict[str, t.Any], words: str) -> None:
    run = run_module({**small(server.url), **changes}, capsys)
    assert run.result["failed"] is True
    assert words in run.result["msg"]
    assert "hunter2" not in run.result["msg"]
    assert server.bodies == []


def test_comma_separated_levels_are_a_list(server: SseServer, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_module(small(server.url, concurrency="2,1", warmup=False), capsys).result
    assert [level["max_concurrency"] for level in result["levels"]] == [2, 1]


def test_a_failed_warm_up_fails_before_the_levels(server: SseServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.pace = Pace(mode="status_500")
    run = run_module(small(server.url, api_key=SECRET), capsys)
    assert run.result["failed"] is True and run.result["levels"] == []
    assert "the warm-up request failed (HTTP 500:" in run.result["msg"] and "nothing was measured" in run.result["msg"]
    assert len(server.bodies) == 1
    assert SECRET not in run.output


def test_no_request_succeeding_fails(server: SseServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.pace = Pace(mode="error_in_stream", break_after=0)
    run = run_module(small(server.url, warmup=False), capsys)
    assert run.result["failed"] is True and run.result["msg"].startswith("no request succeeded: ")
    assert run.result["stopped"] == "every request at concurrency 1 failed: concurrency 2 not run"
    assert run.result["levels"][0]["error_kinds"] == {"stream_error": 2}


def test_some_failures_warn(server: SseServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"n": 0}

    def send(body: bytes) -> _benchmark.RequestRecord:
        calls["n"] += 1
        if calls["n"] % 2:
            return _benchmark.RequestRecord(success=False, error_kind="timeout", error="timed out after 300 s")
        return _benchmark.RequestRecord(success=True, ttft=0.1, latency=0.4, output_tokens=4)

    monkeypatch.setattr(openai_benchmark, "run_benchmark", functools.partial(_benchmark.run_benchmark, send=send, version=lambda: None))
    warned: list[str] = []
    monkeypatch.setattr(openai_benchmark.AnsibleModule, "warn", lambda self, message: warned.append(message))
    result = run_module(small(server.url, warmup=False), capsys).result
    assert not result.get("failed") and result["changed"] is False
    # The module's warning itself (ansible-core's process-wide warning store is not reliable across tests in one process)
    assert warned == ["2 request(s) failed; see levels[].error_messages"], result  # 2.19: WarningSummary objects
    assert [(level["completed"], level["failed"]) for level in result["levels"]] == [(1, 1), (1, 1)]
