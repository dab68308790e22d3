# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The _serve_wait plugin util: the steps, their length, the progress lines and what ends the wait (a fake clock)."""

from __future__ import annotations

import typing as t

import pytest
from ansible_collections.sparkops.inference.plugins.plugin_utils._serve_wait import (
    PROBE_FAILED,
    READY,
    TIMEOUT,
    UNIT_FAILED,
    WaitSettings,
    progress_line,
    step_seconds,
    wait,
)

RUNNING = "ActiveState=active\nSubState=running\nResult=success\nNRestarts=0\n"
FAILED = "ActiveState=failed\nSubState=failed\nResult=start-limit-hit\nNRestarts=5\n"
REFUSED = {"ready": False, "state": "refused", "steps": {"health": "connection refused", "models": "not tried", "completion": "not tried"}}


class World:
    """A probe that takes the seconds it is given (or ``answer_after``), a clock, and what was said."""

    def __init__(self, ready_at: float | None = None, unit: str = RUNNING, failed_at: float | None = None) -> None:
        self.now = 100.0
        self.ready_at = ready_at
        self.unit = unit
        self.failed_at = failed_at
        self.steps: list[int] = []
        self.said: list[str] = []

    def clock(self) -> float:
        return self.now

    def probe(self, seconds: int) -> dict[str, t.Any]:
        self.steps.append(seconds)
        elapsed = self.now - 100.0
        if self.ready_at is not None and elapsed + seconds >= self.ready_at:
            self.now = 100.0 + max(self.ready_at, elapsed)
            return {"ready": True, "state": "ready", "url": "http://h:8000"}
        self.now += seconds + 0.2  # a step ends a little after its share
        state = self.unit_state()
        return {**REFUSED, "unit_state": state, "gave_up": state == FAILED}  # as the probe decides (UnitWatch)

    def unit_state(self) -> str:  # as the probe read it after its last attempt
        if self.failed_at is not None and self.now - 100.0 >= self.failed_at:
            return FAILED
        return self.unit

    def run(self, timeout: int, report_every: int) -> t.Any:
        return wait(WaitSettings(timeout, report_every), self.probe, host="spark-head", clock=self.clock, say=self.said.append)


def test_ready_at_once_says_nothing() -> None:
    world = World(ready_at=0)
    outcome = world.run(900, 30)
    assert (outcome.ended_by, outcome.waited, outcome.reports, world.said, world.steps) == (READY, 0.0, [], [], [30])
    assert outcome.endpoint["ready"] is True and outcome.unit_state == ""


def test_a_line_after_each_step_that_is_not_ready_then_ready() -> None:
    world = World(ready_at=75)
    outcome = world.run(900, 30)
    assert outcome.ended_by == READY and world.steps == [30, 30, 30]
    assert world.said == outcome.reports and len(outcome.reports) == 2
    assert outcome.reports[0] == (
        "spark-head: vLLM not ready after 30 s (ActiveState=active, SubState=running, Result=success, NRestarts=0): refused; "
        "health: connection refused; models: not tried; completion: not tried"
    )
    assert outcome.reports[1].startswith("spark-head: vLLM not ready after 60 s (")
    assert outcome.waited == 75


def test_the_last_step_takes_what_is_left_and_the_wait_ends_at_the_timeout() -> None:
    world = World()
    outcome = world.run(70, 30)
    assert outcome.ended_by == TIMEOUT
    assert world.steps == [30, 30, 10]  # 70 - 60.4 s left: 10 s, whole seconds up
    assert len(outcome.reports) == 3 and outcome.waited >= 70
    assert outcome.endpoint["state"] == "refused" and outcome.unit_state == RUNNING


def test_a_unit_that_failed_for_good_ends_the_wait() -> None:
    world = World(failed_at=60)
    outcome = world.run(900, 30)
    assert outcome.ended_by == UNIT_FAILED and world.steps == [30, 30]
    assert "ActiveState=failed, SubState=failed, Result=start-limit-hit, NRestarts=5" in outcome.reports[-1]
    assert outcome.unit_state == FAILED


def test_timeout_0_asks_once() -> None:
    world = World()
    outcome = world.run(0, 30)
    assert (outcome.ended_by, world.steps, len(outcome.reports)) == (TIMEOUT, [0], 1)


def test_a_failing_probe_ends_the_wait_at_once() -> None:
    said: list[str] = []

    def probe(seconds: int) -> dict[str, t.Any]:
        return {"failed": True, "msg": "bad url"}

    outcome = wait(WaitSettings(900, 30), probe, host="h", clock=lambda: 1.0, say=said.append)
    assert (outcome.ended_by, outcome.endpoint, said) == (PROBE_FAILED, {"failed": True, "msg": "bad url"}, [])


def test_no_unit_state_is_said_so() -> None:
    assert "(unit state unknown): refused;" in progress_line("h", 3.4, "", REFUSED)
    assert progress_line("h", 3.6, "", {}).endswith("not ready after 4 s (unit state unknown): ?; health: ?; models: ?; completion: ?")


@pytest.mark.parametrize(("elapsed", "seconds"), [(0, 30), (29.5, 30), (880.2, 20), (899.9, 1), (900, 0), (950, 0)])
def test_step_seconds(elapsed: float, seconds: int) -> None:
    assert step_seconds(WaitSettings(900, 30), elapsed) == seconds


@pytest.mark.parametrize(
    ("timeout", "report_every", "said"),
    [
        (-1, 30, "timeout must be"),
        (True, 30, "timeout must be"),
        (1.5, 30, "timeout must be"),
        (10, 0, "report_every must be"),
        (10, "5", "report_every must be"),
    ],
)
def test_bad_settings_are_refused_naming_them(timeout: t.Any, report_every: t.Any, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        WaitSettings(timeout, report_every)
