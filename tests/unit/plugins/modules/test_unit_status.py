# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the unit_status module: main() with systemctl and journalctl answered by fakes."""

from __future__ import annotations

import json
import typing as t
from unittest.mock import MagicMock

import pytest
from ansible_collections.sparkops.inference.plugins.module_utils._unit_status import LIST_UNIT_FILES, LIST_UNITS
from ansible_collections.sparkops.inference.plugins.modules import unit_status
from module_main import run_main

SYSTEMCTL = "/usr/bin/systemctl"
JOURNALCTL = "/usr/bin/journalctl"
NOON = 1769860800

SHOW = f"""\
Id=sparkops-ray-head.service
LoadState=loaded
ActiveState=active
SubState=running
UnitFileState=enabled
ActiveEnterTimestamp=@{NOON}
StateChangeTimestamp=@{NOON}
NRestarts=0
MainPID=4242
Result=success

Id=sparkops-vllm.service
LoadState=loaded
ActiveState=activating
SubState=auto-restart
UnitFileState=enabled
ActiveEnterTimestamp=@{NOON + 10}
StateChangeTimestamp=@{NOON + 120}
NRestarts=3
MainPID=0
Result=exit-code
"""
FAILED = "sparkops-vllm.service: Failed with result 'exit-code'."
JOURNAL = json.dumps({"__REALTIME_TIMESTAMP": str((NOON + 119) * 1_000_000), "PRIORITY": "4", "UNIT": "sparkops-vllm.service", "MESSAGE": FAILED})


class Run(t.NamedTuple):
    result: dict[str, t.Any]
    run_command: MagicMock


def fake_commands(argv: list[str], **_kwargs: t.Any) -> tuple[int, str, str]:
    # Whatever the patterns, both units are listed: the module filters them itself too.
    if argv[1 : len(LIST_UNITS) + 1] == list(LIST_UNITS):
        return 0, "sparkops-vllm.service loaded activating auto-restart vLLM\nsparkops-ray-head.service loaded active running Ray head\n", ""
    if argv[1 : len(LIST_UNIT_FILES) + 1] == list(LIST_UNIT_FILES):
        return 0, "sparkops-vllm.service enabled enabled\nsparkops-ray-head.service enabled enabled\n", ""
    if argv[1] == "show":
        units = [arg for arg in argv if arg.endswith(".service")]
        return 0, "\n\n".join(block for block in SHOW.split("\n\n") if block.split("\n")[0][3:] in units), ""
    if argv[0] == JOURNALCTL:
        return 0, JOURNAL + "\n", ""
    raise AssertionError(f"unexpected command {argv}")


def run_module(args: dict[str, t.Any], capsys: pytest.CaptureFixture[str], bins: dict[str, str | None] | None = None) -> Run:
    found = {"systemctl": SYSTEMCTL, "journalctl": JOURNALCTL} if bins is None else bins
    return Run(*run_main(unit_status.main, args, capsys, found, fake_commands))


def test_reports_units_and_events(capsys: pytest.CaptureFixture[str]) -> None:
    run = run_module({"journal_lines": 5}, capsys)
    result = run.result
    assert result["changed"] is False
    assert "failed" not in result
    assert result["units"] == [
        {
            "unit": "sparkops-ray-head.service",
            "load_state": "loaded",
            "active_state": "active",
            "sub_state": "running",
            "enabled": "enabled",
            "since": "2026-01-31T12:00:00Z",
            "since_epoch": NOON,
            "restarts": 0,
            "main_pid": 4242,
            "result": "success",
        },
        {
            "unit": "sparkops-vllm.service",
            "load_state": "loaded",
            "active_state": "activating",
            "sub_state": "auto-restart",
            "enabled": "enabled",
            "since": "2026-01-31T12:02:00Z",
            "since_epoch": NOON + 120,
            "restarts": 3,
            "main_pid": None,
            "result": "exit-code",
        },
    ]
    assert result["health_events"] == [
        {
            "time": "2026-01-31T12:01:59Z",
            "time_epoch": NOON + 119,
            "unit": "sparkops-vllm.service",
            "priority": "warning",
            "message": "sparkops-vllm.service: Failed with result 'exit-code'.",
        }
    ]
    assert result["notes"] == []
    journal = [c.args[0] for c in run.run_command.call_args_list if c.args[0][0] == JOURNALCTL]
    assert journal[0][journal[0].index("-n") + 1] == "5"
    # Every command runs in the C locale, so that default timestamps parse.
    assert all(c.kwargs["environ_update"]["LC_ALL"] == "C" for c in run.run_command.call_args_list)


def test_journal_lines_zero_reads_no_journal(capsys: pytest.CaptureFixture[str]) -> None:
    run = run_module({"journal_lines": 0}, capsys)
    assert run.result["health_events"] == []
    assert len(run.result["units"]) == 2
    assert not any(c.args[0][0] == JOURNALCTL for c in run.run_command.call_args_list)


def test_patterns_are_passed_and_filter(capsys: pytest.CaptureFixture[str]) -> None:
    run = run_module({"patterns": ["sparkops-vllm*"], "journal_lines": 0}, capsys)
    assert [unit["unit"] for unit in run.result["units"]] == ["sparkops-vllm.service"]
    assert run.result["units"][0]["restarts"] == 3
    listed = [c.args[0] for c in run.run_command.call_args_list]
    assert listed[:2] == [[SYSTEMCTL, *LIST_UNITS, "sparkops-vllm*"], [SYSTEMCTL, *LIST_UNIT_FILES, "sparkops-vllm*"]]
    assert listed[2][-1] == "sparkops-vllm.service"


def test_no_systemctl_is_a_note(capsys: pytest.CaptureFixture[str]) -> None:
    run = run_module({}, capsys, bins={})
    assert run.result["units"] == []
    assert run.result["notes"] == ["systemctl not found: no systemd units reported"]
    run.run_command.assert_not_called()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"journal_lines": -1}, "journal_lines must be at least 0, not -1"),
        ({"patterns": []}, "patterns is empty"),
    ],
)
def test_bad_options_fail(args: dict[str, t.Any], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    run = run_module(args, capsys)
    assert run.result["failed"] is True
    assert message in run.result["msg"]
    run.run_command.assert_not_called()
