# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The serve_wait action plugin: the module runs it makes (the probe in steps, nothing else: the probe reads the unit),
what it prints and returns, and its argument checks (the probe's runs faked)."""

from __future__ import annotations

import re
import typing as t
from unittest.mock import MagicMock, patch

import pytest
from ansible.errors import AnsibleActionFail
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from ansible_collections.sparkops.inference.plugins.action import serve_wait
from ansible_collections.sparkops.inference.plugins.action.serve_wait import ActionModule

SECRET = "sk-serve-wait-secret-1234"
RUNNING = "ActiveState=active\nSubState=running\nResult=success\nNRestarts=0"
NOT_READY = {"ready": False, "state": "refused", "msg": "not ready", "url": "http://10.0.0.1:8000",
             "steps": {"health": "connection refused", "models": "not tried", "completion": "not tried"},
             "invocation": {"module_args": {"api_key": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"}}}  # fmt: skip
READY = {"ready": True, "state": "ready", "msg": "serves", "url": "http://10.0.0.1:8000", "content": "hi", "usage": {"completion_tokens": 3}}


def make_action(args: dict[str, t.Any], answers: list[dict[str, t.Any]], unit: str = RUNNING) -> tuple[ActionModule, list[tuple[str, dict[str, t.Any]]]]:
    loader = DataLoader()
    task = MagicMock(args=args, async_val=0, check_mode=False, action="sparkops.inference.serve_wait")
    action = ActionModule(task=task, connection=MagicMock(), play_context=MagicMock(), loader=loader, templar=Templar(loader=loader), shared_loader_obj=None)
    calls: list[tuple[str, dict[str, t.Any]]] = []

    def execute_module(module_name: str, module_args: dict[str, t.Any], task_vars: dict[str, t.Any]) -> dict[str, t.Any]:
        calls.append((module_name, dict(module_args)))
        answer = dict(answers.pop(0))
        if not answer.get("failed"):  # as the probe answers: the unit's state after its last attempt not ready
            answer["unit_state"] = unit if module_args.get("unit") and not answer["ready"] else ""
            answer["gave_up"] = "ActiveState=failed" in answer["unit_state"].splitlines()
        return answer

    action._execute_module = execute_module  # type: ignore[method-assign]
    action._remove_tmp_path = lambda path: None  # type: ignore[method-assign]
    return action, calls


def run(action: ActionModule) -> tuple[dict[str, t.Any], list[str]]:
    said: list[str] = []
    with patch.object(serve_wait.display, "display", side_effect=lambda line, *a, **k: said.append(line)):
        result = action.run(task_vars={"inventory_hostname": "spark-head"})
    return result, said


ARGS = {"url": "http://10.0.0.1:8000", "model": "tiny-moe", "api_key": SECRET, "timeout": 600, "report_every": 15, "unit": "sparkops-vllm.service"}


def test_it_asks_in_steps_says_where_it_stands_and_returns_the_last_answer() -> None:
    action, calls = make_action(ARGS, [NOT_READY, NOT_READY, READY])
    result, said = run(action)
    probes = [args for name, args in calls if name == "sparkops.inference.openai_endpoint"]
    assert [args["timeout"] for args in probes] == [15, 15, 15]
    assert probes[0] == {"url": "http://10.0.0.1:8000", "model": "tiny-moe", "interval": 1.0, "smoke_test": True, "fail_on_timeout": False,
                         "api_key": SECRET, "unit": "sparkops-vllm.service", "timeout": 15}  # fmt: skip
    assert [name for name, _args in calls] == ["sparkops.inference.openai_endpoint"] * 3  # no module run of its own for the unit
    assert len(said) == 2 and said == result["reports"]
    assert re.match(r"spark-head: vLLM not ready after \d+ s \(ActiveState=active, SubState=running, Result=success, NRestarts=0\): refused;", said[0])
    assert (result["ready"], result["ended_by"], result["changed"], result["content"]) == (True, "ready", False, "hi")
    assert result["unit_state"] == RUNNING and "invocation" not in result  # the last one read
    assert SECRET not in repr(result) and not any(SECRET in line for line in said)


def test_a_failed_unit_ends_the_wait_not_ready_and_not_failed() -> None:
    action, calls = make_action(ARGS, [NOT_READY], unit="ActiveState=failed\nSubState=failed\nResult=start-limit-hit\nNRestarts=5")
    result, said = run(action)
    assert (result["ready"], result["ended_by"], result.get("failed", False)) == (False, "unit_failed", False)
    assert len(said) == 1 and "Result=start-limit-hit" in said[0]


def test_without_a_key_or_unit_neither_is_used() -> None:
    args = {key: value for key, value in ARGS.items() if key not in ("api_key", "unit")}
    action, calls = make_action({**args, "timeout": 0}, [NOT_READY])
    result, said = run(action)
    assert [call[0] for call in calls] == ["sparkops.inference.openai_endpoint"]
    assert "api_key" not in calls[0][1] and calls[0][1]["timeout"] == 0
    assert (result["ended_by"], result["unit_state"]) == ("timeout", "")
    assert "(unit state unknown)" in said[0]


def test_a_failing_probe_fails_the_task_with_its_message() -> None:
    action, _calls = make_action(ARGS, [{"failed": True, "msg": "url: not an http(s) URL"}])
    result, said = run(action)
    assert (result["failed"], result["msg"], result["ended_by"], said) == (True, "url: not an http(s) URL", "probe_failed", [])


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ({"model": "m"}, "url"),
        ({**ARGS, "report_every": 0}, "report_every must be a whole number of seconds, 1 or more, not 0"),
        ({**ARGS, "timeout": -5}, "timeout must be a whole number of seconds, 0 or more, not -5"),
        ({**ARGS, "timeout": "soon"}, "timeout"),
    ],
)
def test_bad_arguments_are_refused_naming_them(args: dict[str, t.Any], said: str) -> None:
    action, calls = make_action(args, [])
    with pytest.raises(AnsibleActionFail, match=said):
        run(action)
    assert calls == []
