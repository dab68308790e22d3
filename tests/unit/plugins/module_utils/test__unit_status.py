# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the _unit_status module util: systemctl and journalctl outputs parsed, commands faked."""

from __future__ import annotations

import json
import typing as t
from datetime import datetime, timedelta, timezone

import pytest
from ansible_collections.sparkops.inference.plugins.module_utils._unit_status import (
    LIST_UNIT_FILES,
    LIST_UNITS,
    MESSAGE_CHARS,
    SHOW_PROPERTIES,
    collect,
    journal_args,
    matching,
    parse_journal,
    parse_show,
    parse_timestamp,
    parse_unit_names,
    show_args,
    unit_state,
)

SYSTEMCTL = "/usr/bin/systemctl"
JOURNALCTL = "/usr/bin/journalctl"
# 2026-01-31T12:00:00Z
NOON = 1769860800

LIST_UNITS_OUT = """\
sparkops-ray-head.service loaded active running sparkops.inference: Ray head on spark-head
sparkops-vllm.service     loaded failed failed  sparkops.inference: vLLM (ray backend) on spark-head
"""
# The unit files: the same two, a template (left out) and a disabled unit that is not loaded.
LIST_UNIT_FILES_OUT = """\
sparkops-ray-head.service     enabled  enabled
sparkops-vllm-rank@.service   static   -
sparkops-vllm.service         enabled  enabled
sparkops-old.service          disabled enabled
"""
SHOW_UNIX = f"""\
Id=sparkops-old.service
LoadState=loaded
ActiveState=inactive
SubState=dead
UnitFileState=disabled
ActiveEnterTimestamp=
StateChangeTimestamp=
NRestarts=0
MainPID=0
Result=success

Id=sparkops-ray-head.service
LoadState=loaded
ActiveState=active
SubState=running
UnitFileState=enabled
ActiveEnterTimestamp=@{NOON}
StateChangeTimestamp=@{NOON + 5}
NRestarts=2
MainPID=4242
Result=success

Id=sparkops-vllm.service
LoadState=loaded
ActiveState=failed
SubState=failed
UnitFileState=enabled
ActiveEnterTimestamp=@{NOON + 60}
StateChangeTimestamp=@{NOON + 3600}
NRestarts=5
MainPID=0
Result=exit-code
"""
# An old systemd: the same in its default timestamp format (LC_ALL=C), the host in UTC.
SHOW_DEFAULT = (
    SHOW_UNIX.replace(f"@{NOON + 3600}", "Sat 2026-01-31 13:00:00 UTC")
    .replace(f"@{NOON + 60}", "Sat 2026-01-31 12:01:00 UTC")
    .replace(f"@{NOON + 5}", "Sat 2026-01-31 12:00:05 UTC")
    .replace(f"@{NOON}", "Sat 2026-01-31 12:00:00 UTC")
)


def entry(micros: int, message: t.Any, priority: str = "4", **fields: str) -> str:
    return json.dumps({"__REALTIME_TIMESTAMP": str(micros), "PRIORITY": priority, "MESSAGE": message, **fields})


JOURNAL_OUT = "\n".join(
    [
        # systemd (PID 1, init.scope) about the unit: UNIT names it.
        entry((NOON + 3590) * 1_000_000, "sparkops-vllm.service: Failed with result 'exit-code'.", _SYSTEMD_UNIT="init.scope", UNIT="sparkops-vllm.service"),
        # The unit's own output at err.
        entry((NOON + 3595) * 1_000_000 + 250_000, "RuntimeError: CUDA out of memory", "3", _SYSTEMD_UNIT="sparkops-vllm.service"),
        entry((NOON + 10) * 1_000_000, "raylet: low memory", _SYSTEMD_UNIT="sparkops-ray-head.service"),
    ]
)


class FakeCommands:
    """Answers systemctl and journalctl as a systemd would; records every argv."""

    def __init__(self, show_unix: tuple[int, str, str] | None = None, show_default: str = SHOW_DEFAULT, journal: tuple[int, str, str] | None = None) -> None:
        self.show_unix = show_unix if show_unix is not None else (0, SHOW_UNIX, "")
        self.show_default = show_default
        self.journal = journal if journal is not None else (0, JOURNAL_OUT + "\n", "")
        self.calls: list[list[str]] = []

    def __call__(self, argv: list[str]) -> tuple[int, str, str]:
        self.calls.append(argv)
        if argv[0] == SYSTEMCTL and argv[1:] == [*LIST_UNITS, "sparkops-*"]:
            return 0, LIST_UNITS_OUT, ""
        if argv[0] == SYSTEMCTL and argv[1:] == [*LIST_UNIT_FILES, "sparkops-*"]:
            return 0, LIST_UNIT_FILES_OUT, ""
        if argv[0] == SYSTEMCTL and argv[1] == "show":
            return self.show_unix if "--timestamp=unix" in argv else (0, self.show_default, "")
        if argv[0] == JOURNALCTL:
            return self.journal
        raise AssertionError(f"unexpected command {argv}")


def utc_localize(moment: datetime) -> float:
    return moment.replace(tzinfo=timezone.utc).timestamp()  # noqa: UP017


def test_parse_unit_names_skips_marks_and_keeps_order() -> None:
    text = "● sparkops-vllm.service loaded failed failed vLLM\nsparkops-ray-head.service loaded active running Ray\n\n"
    assert parse_unit_names(text) == ["sparkops-vllm.service", "sparkops-ray-head.service"]
    assert parse_unit_names("") == []


def test_matching_drops_templates_and_others() -> None:
    names = ["sparkops-vllm.service", "sparkops-vllm-rank@.service", "ray.service", "sparkops-ray-head.service", "sparkops-vllm.service"]
    assert matching(names, ["sparkops-*"]) == ["sparkops-ray-head.service", "sparkops-vllm.service"]
    assert matching(names, ["sparkops-ray-*", "ray.*"]) == ["ray.service", "sparkops-ray-head.service"]


def test_parse_show_blocks() -> None:
    blocks = parse_show(SHOW_UNIX)
    assert [block["Id"] for block in blocks] == ["sparkops-old.service", "sparkops-ray-head.service", "sparkops-vllm.service"]
    assert blocks[1]["NRestarts"] == "2"
    assert blocks[0]["ActiveEnterTimestamp"] == ""


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (f"@{NOON}", NOON),
        ("Sat 2026-01-31 12:00:00 UTC", NOON),
        ("Sat 2026-01-31 12:00:00.250000 UTC", NOON + 0.25),
        ("Sat 2026-01-31 13:00:00 +0100", NOON),
        ("Sat 2026-01-31 07:00:00 -05:00", NOON),
        ("2026-01-31 12:00:00 GMT", NOON),
        ("", None),
        ("n/a", None),
        ("@0", None),
        ("0", None),
        ("yesterday", None),
        (None, None),
    ],
)
def test_parse_timestamp(value: str | None, expected: float | None) -> None:
    assert parse_timestamp(value) == expected


def test_parse_timestamp_local_zone_uses_localize() -> None:
    # CET is the host's zone: the naive time goes through localize (here one hour ahead of UTC).
    def cet(moment: datetime) -> float:
        return (moment - timedelta(hours=1)).replace(tzinfo=timezone.utc).timestamp()  # noqa: UP017

    assert parse_timestamp("Sat 2026-01-31 13:00:00 CET", cet) == NOON


def test_unit_state_active_since_active_enter() -> None:
    state = unit_state("sparkops-ray-head.service", parse_show(SHOW_UNIX)[1])
    assert state.as_dict() == {
        "unit": "sparkops-ray-head.service",
        "load_state": "loaded",
        "active_state": "active",
        "sub_state": "running",
        "enabled": "enabled",
        "since": "2026-01-31T12:00:00Z",
        "since_epoch": NOON,
        "restarts": 2,
        "main_pid": 4242,
        "result": "success",
    }


def test_unit_state_failed_since_state_change() -> None:
    state = unit_state("sparkops-vllm.service", parse_show(SHOW_UNIX)[2])
    assert (state.active_state, state.since, state.since_epoch, state.restarts, state.main_pid, state.result) == (
        "failed",
        "2026-01-31T13:00:00Z",
        NOON + 3600,
        5,
        None,
        "exit-code",
    )


def test_unit_state_never_started_and_unknown_values() -> None:
    state = unit_state("x.service", {"ActiveState": "inactive", "NRestarts": "[not set]", "MainPID": "0", "UnitFileState": ""})
    assert (state.since, state.since_epoch, state.restarts, state.main_pid, state.enabled, state.load_state) == (None, None, None, None, None, None)


def test_journal_args() -> None:
    assert journal_args(["a.service", "b.service"], 7) == [
        "--no-pager",
        "--quiet",
        "-o",
        "json",
        "-p",
        "warning",
        "-n",
        "7",
        "-u",
        "a.service",
        "-u",
        "b.service",
    ]


def test_show_args() -> None:
    assert show_args(["a.service"]) == ["show", "--no-pager", "-p", ",".join(SHOW_PROPERTIES), "--timestamp=unix", "a.service"]
    assert "--timestamp=unix" not in show_args(["a.service"], unix_timestamps=False)


def test_parse_journal_newest_first_with_units_and_priorities() -> None:
    units = ["sparkops-ray-head.service", "sparkops-vllm.service"]
    events = [event.as_dict() for event in parse_journal("-- No entries --\n" + JOURNAL_OUT, units)]
    assert events == [
        {
            "time": "2026-01-31T12:59:55Z",
            "time_epoch": NOON + 3595.25,
            "unit": "sparkops-vllm.service",
            "priority": "err",
            "message": "RuntimeError: CUDA out of memory",
        },
        {
            "time": "2026-01-31T12:59:50Z",
            "time_epoch": NOON + 3590,
            "unit": "sparkops-vllm.service",
            "priority": "warning",
            "message": "sparkops-vllm.service: Failed with result 'exit-code'.",
        },
        {"time": "2026-01-31T12:00:10Z", "time_epoch": NOON + 10, "unit": "sparkops-ray-head.service", "priority": "warning", "message": "raylet: low memory"},
    ]


def test_parse_journal_truncates_and_decodes() -> None:
    long_line = entry(NOON * 1_000_000, "x" * 1000)
    binary = entry(NOON * 1_000_000, list(b"caf\xc3\xa9 \xff"), "2", SYSLOG_IDENTIFIER="vllm")
    empty = entry(NOON * 1_000_000, None, "9")
    long_event, binary_event, empty_event = parse_journal(f"{empty}\n{binary}\n{long_line}")
    assert len(long_event.message) == MESSAGE_CHARS
    assert long_event.message.endswith("…")
    assert binary_event.message == "café \ufffd"
    assert (binary_event.priority, binary_event.unit) == ("crit", "vllm")
    assert (empty_event.message, empty_event.priority, empty_event.unit) == ("", None, None)


def test_collect_with_unix_timestamps() -> None:
    commands = FakeCommands()
    report = collect(commands, SYSTEMCTL, JOURNALCTL, journal_lines=3)
    result = report.as_dict()
    assert [unit["unit"] for unit in result["units"]] == ["sparkops-old.service", "sparkops-ray-head.service", "sparkops-vllm.service"]
    assert [unit["active_state"] for unit in result["units"]] == ["inactive", "active", "failed"]
    assert [unit["restarts"] for unit in result["units"]] == [0, 2, 5]
    assert [event["priority"] for event in result["health_events"]] == ["err", "warning", "warning"]
    assert result["notes"] == []
    show = [argv for argv in commands.calls if argv[1] == "show"]
    assert show == [[SYSTEMCTL, *show_args(["sparkops-old.service", "sparkops-ray-head.service", "sparkops-vllm.service"])]]
    journal = [argv for argv in commands.calls if argv[0] == JOURNALCTL]
    assert journal == [[JOURNALCTL, *journal_args(["sparkops-old.service", "sparkops-ray-head.service", "sparkops-vllm.service"], 3)]]


def test_collect_falls_back_to_default_timestamps() -> None:
    commands = FakeCommands(show_unix=(1, "", "systemctl: unrecognized option '--timestamp=unix'"))
    fallback = collect(commands, SYSTEMCTL, JOURNALCTL, localize=utc_localize).as_dict()
    assert collect(FakeCommands(), SYSTEMCTL, JOURNALCTL).as_dict() == fallback
    assert [argv[-4] == "--timestamp=unix" for argv in commands.calls if argv[1] == "show"] == [True, False]
    assert fallback["units"][2]["since"] == "2026-01-31T13:00:00Z"


def test_collect_show_failing_keeps_the_names() -> None:
    commands = FakeCommands(show_unix=(1, "", "Failed to connect to bus"))
    commands.show_default = ""

    def run(argv: list[str]) -> tuple[int, str, str]:
        if argv[1] == "show" and "--timestamp=unix" not in argv:
            commands.calls.append(argv)
            return 1, "", "Failed to connect to bus: No such file or directory"
        return commands(argv)

    report = collect(run, SYSTEMCTL, JOURNALCTL, journal_lines=0)
    assert [unit.unit for unit in report.units] == ["sparkops-old.service", "sparkops-ray-head.service", "sparkops-vllm.service"]
    assert all(unit.active_state is None for unit in report.units)
    assert report.notes == ["systemctl show failed (rc 1): Failed to connect to bus: No such file or directory"]
    assert not any(argv[0] == JOURNALCTL for argv in commands.calls)


def test_collect_maps_blocks_by_id_when_counts_differ() -> None:
    # Only two blocks for three units: mapped by Id, the third noted.
    two_blocks = "\n\n".join(SHOW_UNIX.split("\n\n")[1:])
    report = collect(FakeCommands(show_unix=(0, two_blocks, "")), SYSTEMCTL, None, journal_lines=0)
    assert [unit.active_state for unit in report.units] == [None, "active", "failed"]
    assert report.notes == ["systemctl show said nothing of sparkops-old.service"]


def test_collect_without_systemctl_or_journalctl() -> None:
    report = collect(FakeCommands(), None, None)
    assert (report.units, report.health_events, report.notes) == ([], [], ["systemctl not found: no systemd units reported"])
    report = collect(FakeCommands(), SYSTEMCTL, None)
    assert len(report.units) == 3
    assert report.notes == ["journalctl not found: no health events reported"]


def test_collect_journal_failure_is_a_note() -> None:
    report = collect(FakeCommands(journal=(1, "", "Failed to open journal: Permission denied")), SYSTEMCTL, JOURNALCTL)
    assert report.health_events == []
    assert report.notes == ["journalctl failed (rc 1): Failed to open journal: Permission denied"]


def test_collect_no_units_runs_no_show() -> None:
    calls: list[list[str]] = []

    def run(argv: list[str]) -> tuple[int, str, str]:
        calls.append(argv)
        # systemd exits 1 with nothing printed when the pattern matches nothing: no failure.
        return 1, "", ""

    report = collect(run, SYSTEMCTL, JOURNALCTL, patterns=["nothing-*"])
    assert (report.units, report.health_events, report.notes) == ([], [], [])
    assert [argv[1] for argv in calls] == ["list-units", "list-unit-files"]
