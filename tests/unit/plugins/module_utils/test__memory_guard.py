# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for _memory_guard: recorded and composed /proc samples, the levels' refusals, the decision, the loop on
a fake systemd and clock, and the command end to end with a fake ``systemctl`` on PATH."""

from __future__ import annotations

import io
import json
import shutil
import signal
import typing as t
from pathlib import Path

import pytest
from ansible_collections.sparkops.inference.plugins.module_utils._memory_guard import (
    GAVE_UP,
    HOLDING,
    ITERATIONS_ENV,
    MIB,
    WATCHING,
    GuardState,
    Levels,
    MemoryGuardError,
    Psi,
    Sample,
    decide,
    describe,
    load_state,
    main,
    parse_meminfo_sample,
    parse_psi,
    read_sample,
    run,
)
from fake_clock import FakeClock
from prometheus_client.parser import text_string_to_metric_families

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "memory_guard"
GB10_TOTAL_MIB = 122_584  # MemTotal 125,526,716 kB
VLLM = "sparkops-vllm.service"
RAY = "sparkops-ray-head.service"
NAMES = {
    "stop_available_mib": "vllm_serve_memory_guard_stop_available_mib",
    "stop_psi_full_pct": "vllm_serve_memory_guard_stop_psi_full_pct",
    "stop_psi_samples": "vllm_serve_memory_guard_stop_psi_samples",
    "resume_available_mib": "vllm_serve_memory_guard_resume_available_mib",
    "resume_hold_s": "vllm_serve_memory_guard_resume_hold_s",
    "interval_s": "vllm_serve_memory_guard_interval_s",
    "max_stops_per_hour": "vllm_serve_memory_guard_max_stops_per_hour",
}


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="ascii", errors="replace")


def psi(full: float = 0.0, some: float | None = None) -> Psi:
    some = full if some is None else some
    return Psi(some, some, some, 1000, full, full, full, 500)


def sample(available_mib: int, full: float | None = 0.0, total_mib: int = GB10_TOTAL_MIB) -> Sample:
    """A GB10 sample; ``full=None``: a host without PSI."""
    if full is None:
        return Sample(total_mib * MIB, available_mib * MIB, 16_000 * MIB, psi=None, psi_problem="no /proc/pressure/memory (a kernel without CONFIG_PSI)")
    return Sample(total_mib * MIB, available_mib * MIB, 16_000 * MIB, psi=psi(full))


SERVING = sample(18_469)
EDGE = sample(1_228, full=55.12)


class FakeSystemd:
    """``systemctl`` for the loop: unit states, every call, and failures queued per ``verb unit``."""

    def __init__(self, states: t.Mapping[str, str]) -> None:
        self.states = dict(states)
        self.calls: list[list[str]] = []
        self.fail: dict[str, list[tuple[int, str]]] = {}

    def __call__(self, args: list[str]) -> tuple[int, str]:
        self.calls.append(list(args))
        verb, unit = args
        queued = self.fail.get(f"{verb} {unit}")
        if queued:
            return queued.pop(0)
        if verb == "is-active":
            state = self.states.get(unit, "inactive")
            return (0 if state == "active" else 3), state + "\n"
        if verb == "stop":
            self.states[unit] = "inactive"
        elif verb == "start":
            self.states[unit] = "active"
        return 0, ""

    def actions(self) -> list[str]:
        """The stops and starts, in order (not the is-active questions)."""
        return [" ".join(call) for call in self.calls if call[0] != "is-active"]


class Feed:
    """``read`` for the loop: the samples in turn, the last one for ever after."""

    def __init__(self, *samples: Sample) -> None:
        self.samples = list(samples)

    def __call__(self) -> Sample:
        return self.samples.pop(0) if len(self.samples) > 1 else self.samples[0]


def guard(
    tmp_path: Path,
    systemd: FakeSystemd,
    feed: t.Callable[[], Sample],
    iterations: int,
    clock: FakeClock | None = None,
    units: t.Sequence[str] = (VLLM,),
    textfile_dir: str = "",
    **levels: t.Any,
) -> tuple[GuardState, list[str], FakeClock]:
    clock = clock or FakeClock()
    lines: list[str] = []
    state = run(
        Levels(names=NAMES, **levels).check(GB10_TOTAL_MIB),
        units,
        read=feed,
        systemctl=systemd,
        clock=clock.clock,
        sleep=clock.sleep,
        log=lines.append,
        state_path=str(tmp_path / "guard-state.json"),
        iterations=iterations,
        textfile_dir=textfile_dir,
    )
    return state, lines, clock


# --- Samples -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("folder", "total_mib", "available_mib", "swap_free_mib", "full", "some", "full_total"),
    [
        ("recorded_here", 24_105, 23_179, 0, 0.0, 0.0, 0),
        ("gb10_serving", GB10_TOTAL_MIB, 18_469, 16_259, 0.0, 0.0, 1_201_933),
        ("gb10_edge", GB10_TOTAL_MIB, 1_228, 5_000, 55.12, 78.43, 61_530_048),
        ("no_psi", GB10_TOTAL_MIB, 17_612, 16_259, None, None, None),
    ],
)
def test_each_recorded_or_composed_sample_parses_to_its_figures(
    folder: str, total_mib: int, available_mib: int, swap_free_mib: int, full: float | None, some: float | None, full_total: int | None
) -> None:
    got = read_sample(str(FIXTURES / folder))
    assert (got.total_mib, got.available_mib, got.swap_free // MIB) == (total_mib, available_mib, swap_free_mib)
    if full is None:
        assert got.psi is None and "no " in got.psi_problem and "CONFIG_PSI" in got.psi_problem
    else:
        assert got.psi is not None and got.psi_problem == ""
        assert (got.psi.full_avg10, got.psi.some_avg10, got.psi.full_total) == (full, some, full_total)


def test_the_edge_sample_reads_as_numbers_for_the_journal() -> None:
    line = describe(read_sample(str(FIXTURES / "gb10_edge")))
    assert line == f"MemAvailable 1228 MiB of {GB10_TOTAL_MIB} MiB, swap free 5000 MiB, PSI memory full avg10 55.12% some avg10 78.43%"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (fixture("garbled/meminfo"), "no MemAvailable"),
        ("", "no MemTotal or MemAvailable"),
        ("\x00\xff\xfe" * 100, "no MemTotal or MemAvailable"),
        ("MemTotal: \u00b2 kB\nMemAvailable: 1 kB\n", "not one"),  # a digit str.isdigit() takes and int() refuses
        ("MemTotal: " + "9" * 5000 + " kB\nMemAvailable: 1 kB\n", "not one"),  # over Python's int digits limit
        ("MemTotal: 0 kB\nMemAvailable: 0 kB\n", "MemTotal 0 MiB"),
        ("MemTotal: 1048576 kB\nMemAvailable: 2097152 kB\n", "above MemTotal"),
    ],
)
def test_a_garbled_meminfo_is_a_clear_error(text: str, message: str) -> None:
    with pytest.raises(MemoryGuardError, match=message):
        parse_meminfo_sample(text)


def test_a_garbled_meminfo_file_stops_read_sample_with_the_error(tmp_path: Path) -> None:
    with pytest.raises(MemoryGuardError, match="no MemAvailable"):
        read_sample(str(FIXTURES / "garbled"))
    with pytest.raises(MemoryGuardError, match="cannot read .*meminfo"):
        read_sample(str(tmp_path))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (fixture("garbled/pressure/memory"), "full has 'avg3', not key=value"),
        ("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=nan avg60=0.00 avg300=0.00 total=0\n", "full avg10=nan is not a percentage"),
        ("", "no 'some' line"),
        ("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", "no 'full' line"),
        ("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nsome avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", "two 'some' lines"),
        ("some avg10=0.00 avg60=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", "some lacks avg300"),
        ("some avg10=101.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", "not a percentage"),
        ("some avg10=-1 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", "not a percentage"),
        ("some avg10=x avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", "not a number"),
        ("some avg10=0.00 avg60=0.00 avg300=0.00 total=-5\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", "not a count"),
        ("some avg10=0.00 avg60=0.00 avg300=0.00 total=1e9\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", "not a count"),
        ("some avg10 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", "not key=value"),
        ("cpu avg10=0.00\n", "unexpected line"),
    ],
)
def test_a_garbled_pressure_file_is_a_clear_error(text: str, message: str) -> None:
    with pytest.raises(MemoryGuardError, match=message):
        parse_psi(text)


def test_pressure_file_garbled_or_unreadable_leaves_the_sample_on_memavailable(tmp_path: Path) -> None:
    root = tmp_path / "proc"
    shutil.copytree(FIXTURES / "garbled", root)
    shutil.copy(FIXTURES / "gb10_serving" / "meminfo", root / "meminfo")
    got = read_sample(str(root))
    assert got.psi is None and got.available_mib == 18_469 and got.psi_problem.startswith("unusable ") and "avg3" in got.psi_problem
    (root / "pressure" / "memory").unlink()
    (root / "pressure" / "memory").mkdir()  # reading a folder fails with an OSError, as EOPNOTSUPP does under psi=0
    got = read_sample(str(root))
    assert got.psi is None and got.psi_problem.startswith("cannot read ") and "psi=1" in got.psi_problem


# --- Levels ------------------------------------------------------------------------------------------------------


def test_the_default_levels_fit_a_gb10_and_a_tiny_host_refuses_them_naming_both_variables() -> None:
    assert Levels().check(GB10_TOTAL_MIB) == Levels()
    with pytest.raises(MemoryGuardError) as caught:
        Levels(names=NAMES).check(mem_total_mib=4096)
    message = str(caught.value)
    assert "vllm_serve_memory_guard_resume_available_mib is 8192 MiB, not below this host's MemTotal of 4096 MiB" in message
    assert "vllm_serve_memory_guard_stop_available_mib" not in message
    with pytest.raises(MemoryGuardError, match="vllm_serve_memory_guard_stop_available_mib is 2048 MiB, not below this host's MemTotal of 2000 MiB"):
        Levels(names=NAMES).check(mem_total_mib=2000)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"stop_available_mib": 130_000, "resume_available_mib": 131_000}, "stop_available_mib is 130000 MiB, not below this host's MemTotal"),
        ({"resume_available_mib": 200_000}, "resume_available_mib is 200000 MiB, not below this host's MemTotal"),
        ({"resume_available_mib": 2048}, r"resume_available_mib \(2048 MiB\) must be above vllm_serve_memory_guard_stop_available_mib \(2048 MiB\)"),
        ({"stop_available_mib": 0}, "stop_available_mib is 0 MiB: it must be at least 1"),
        ({"interval_s": 0}, "interval_s is 0.0: seconds above 0"),
        ({"interval_s": -1}, "interval_s is -1.0: seconds above 0"),
        ({"interval_s": 61}, "interval_s is 61.0: seconds above 0 and at most 60"),
        ({"stop_psi_full_pct": 0}, r"stop_psi_full_pct is 0.0: a percentage above 0 and at most 100"),
        ({"stop_psi_full_pct": 100.5}, r"stop_psi_full_pct is 100.5: a percentage"),
        ({"stop_psi_samples": 0}, "stop_psi_samples is 0: at least 1 sample"),
        ({"resume_hold_s": -5}, "resume_hold_s is -5.0: seconds, 0 or more"),
        ({"max_stops_per_hour": 0}, "max_stops_per_hour is 0: at least 1"),
        ({"interval_s": float("inf")}, "interval_s is inf, not a finite number"),
        ({"stop_available_mib": "2048"}, 'stop_available_mib is "2048", not a number'),
        ({"interval_s": True}, "interval_s is true, not a number"),
        ({"stop_available_mib": 2048.5}, "stop_available_mib is 2048.5, not a whole number"),
        ({"max_stops_per_hour": [3]}, "max_stops_per_hour is list, not a number"),
    ],
)
def test_levels_that_make_no_sense_are_refused_naming_the_variable(change: dict[str, t.Any], message: str) -> None:
    with pytest.raises(MemoryGuardError, match="vllm_serve_memory_guard_" + message):
        Levels.from_settings(change, NAMES).check(GB10_TOTAL_MIB)


def test_levels_from_settings_take_defaults_and_null_turns_psi_off() -> None:
    assert Levels.from_settings({}) == Levels()
    assert Levels.from_settings({"stop_psi_full_pct": None, "interval_s": 2, "resume_available_mib": 100_000.0}) == Levels(
        stop_psi_full_pct=None, interval_s=2.0, resume_available_mib=100_000
    )
    with pytest.raises(MemoryGuardError, match="^interval_s is 0.0"):  # no names: the field's own name
        Levels.from_settings({"interval_s": 0})


# --- The decision ------------------------------------------------------------------------------------------------


def test_memavailable_under_the_stop_level_stops_and_says_why_with_the_numbers() -> None:
    levels = Levels(names=NAMES)
    state, action, message = decide(GuardState(), SERVING, levels, 1000.0)
    assert (state, action, message) == (GuardState(), "none", "")
    state, action, message = decide(GuardState(), sample(2047, full=0.0), levels, 1000.0)
    assert action == "stop" and state.phase == HOLDING and state.stops == (1000.0,) and state.held_since == 1000.0
    assert message.startswith("stop: MemAvailable 2047 MiB < 2048 MiB (vllm_serve_memory_guard_stop_available_mib)")
    assert f"of {GB10_TOTAL_MIB} MiB, swap free 16000 MiB, PSI memory full avg10 0.00%" in message
    assert decide(GuardState(), sample(2048, full=0.0), levels, 1000.0)[1] == "none"  # the level itself is not under it


def test_psi_stops_only_after_n_samples_in_a_row_and_a_single_spike_stops_nothing() -> None:
    levels = Levels(names=NAMES)  # 40% for 3 samples
    high, calm = sample(18_000, full=55.12), sample(18_000, full=3.0)
    state = GuardState()
    actions = []
    messages = []
    for now, each in enumerate([high, high, calm, high, high, high], start=1000):
        state, action, message = decide(state, each, levels, float(now))
        actions.append(action)
        messages.append(message)
    assert actions == ["none", "none", "none", "none", "none", "stop"]
    assert messages[0].startswith("pressure: PSI full avg10 55.12% >= 40%, sample 1 of 3 in a row")
    assert messages[2].startswith("pressure passed after 2 sample(s) in a row, fewer than 3: no stop")
    assert messages[5].startswith("stop: PSI full avg10 55.12% >= 40% for 3 samples in a row (vllm_serve_memory_guard_stop_psi_full_pct)")
    # PSI off: the same pressure never stops.
    state = GuardState()
    for now in range(5):
        state, action, _message = decide(state, high, Levels(stop_psi_full_pct=None), float(now))
        assert action == "none"


def test_the_edge_sample_stops_on_both_conditions_once_psi_has_its_samples() -> None:
    state, action, message = decide(GuardState(pressure_samples=2), EDGE, Levels(), 5.0)
    assert action == "stop" and "MemAvailable 1228 MiB < 2048 MiB" in message and "PSI full avg10 55.12% >= 40% for 3 samples" in message


def test_hysteresis_no_start_until_the_resume_level_holds_and_a_dip_restarts_the_hold() -> None:
    levels = Levels(resume_hold_s=30)
    state = GuardState(phase=HOLDING, stopped=(VLLM,), stops=(900.0,), held_since=900.0, reason="r")
    trace = []
    for now, available in [(1000, 5000), (1001, 9000), (1020, 9000), (1025, 7000), (1026, 9000), (1055, 9000), (1056, 9000)]:
        state, action, message = decide(state, sample(available), levels, float(now))
        trace.append((now, action, state.resume_since, message.split(":")[0]))
    assert trace == [
        (1000, "none", None, ""),  # between the stop and the resume levels: wait
        (1001, "none", 1001.0, "memory back"),
        (1020, "none", 1001.0, ""),
        (1025, "none", None, "memory fell back below the resume level"),  # the dip
        (1026, "none", 1026.0, "memory back"),
        (1055, "none", 1026.0, ""),  # 29 s
        (1056, "start", None, "start"),  # 30 s
    ]
    assert state.phase == WATCHING and state.stopped == (VLLM,)  # the caller starts and clears them


def test_memory_back_under_pressure_is_not_back() -> None:
    state = GuardState(phase=HOLDING, stopped=(VLLM,), held_since=0.0)
    state, action, _message = decide(state, sample(50_000, full=45.0), Levels(resume_hold_s=0), 10.0)
    assert action == "none" and state.resume_since is None


# --- The loop ----------------------------------------------------------------------------------------------------


def test_the_loop_stops_in_order_and_starts_only_what_it_stopped_in_reverse(tmp_path: Path) -> None:
    systemd = FakeSystemd({VLLM: "active", "sparkops-other.service": "inactive", RAY: "active"})
    units = (VLLM, "sparkops-other.service", RAY)
    feed = Feed(SERVING, EDGE, sample(9000), sample(9000), sample(9000), SERVING)
    state, lines, _clock = guard(tmp_path, systemd, feed, iterations=8, units=units, resume_hold_s=2)
    assert systemd.actions() == [f"stop {VLLM}", f"stop {RAY}", f"start {RAY}", f"start {VLLM}"]
    assert systemd.states == {VLLM: "active", "sparkops-other.service": "inactive", RAY: "active"}
    assert state == GuardState(stops=(1001.0,), stops_total=1)
    assert "sparkops-other.service does not run: left alone (the guard starts only what it stopped)" in lines
    assert [line.split(":")[0] for line in lines if not line.startswith("memory guard")] == [
        "stop",
        f"stopped {VLLM}",
        "sparkops-other.service does not run",
        f"stopped {RAY}",
        "memory back",
        "start",
        f"started {RAY}",
        f"started {VLLM}",
    ]


def test_a_unit_the_operator_stopped_is_never_started_and_nothing_running_counts_no_stop(tmp_path: Path) -> None:
    systemd = FakeSystemd({VLLM: "inactive"})
    state, lines, _clock = guard(tmp_path, systemd, Feed(EDGE, EDGE, SERVING), iterations=40)
    assert systemd.actions() == []
    assert state.phase == WATCHING and state.stops == ()
    assert "none of the units runs: nothing stopped; waiting for memory to come back" in lines
    assert sum(line.endswith("left alone (the guard starts only what it stopped)") for line in lines) == 1


def test_a_unit_started_by_hand_while_held_is_no_longer_the_guards_and_is_stopped_again_while_memory_is_low(tmp_path: Path) -> None:
    systemd = FakeSystemd({VLLM: "active", RAY: "active"})
    clock = FakeClock()
    state, _lines, _clock = guard(tmp_path, systemd, Feed(EDGE), iterations=1, clock=clock, units=(VLLM, RAY))
    assert state.stopped == (VLLM, RAY)
    systemd.states[RAY] = "active"  # an operator starts it while memory is still low: the guard stops it again
    state, lines, _clock = guard(tmp_path, systemd, Feed(EDGE), iterations=1, clock=clock, units=(VLLM, RAY))
    assert systemd.actions()[-1] == f"stop {RAY}" and state.stopped == (VLLM, RAY) and len(state.stops) == 1  # not counted
    assert f"{RAY} runs again, started by someone else: no longer the guard's to start" in lines
    systemd.states[RAY] = "active"  # started by hand again, now with memory between the levels: it stays up
    state, lines, _clock = guard(tmp_path, systemd, Feed(sample(5000)), iterations=1, clock=clock, units=(VLLM, RAY))
    assert state.stopped == (VLLM,) and state.phase == HOLDING
    state, _lines, _clock = guard(tmp_path, systemd, Feed(SERVING), iterations=40, clock=clock, units=(VLLM, RAY))
    assert systemd.actions()[-1] == f"start {VLLM}" and systemd.actions().count(f"start {RAY}") == 0 and state.phase == WATCHING


def test_the_third_stop_within_an_hour_gives_up_and_stays_stopped_saying_so(tmp_path: Path) -> None:
    systemd = FakeSystemd({VLLM: "active"})
    clock = FakeClock()
    lines: list[str] = []
    # Three emergencies ten minutes apart, memory back in between.
    for _round in range(3):
        _state, more, _clock = guard(tmp_path, systemd, Feed(EDGE, SERVING), iterations=35, clock=clock, resume_hold_s=30)
        lines += more
        clock.now += 600
    assert systemd.actions() == [f"stop {VLLM}", f"start {VLLM}", f"stop {VLLM}", f"start {VLLM}", f"stop {VLLM}"]
    give_up = [line for line in lines if line.startswith("give up:")]
    assert len(give_up) == 1 and "stop 3 within an hour, the most vllm_serve_memory_guard_max_stops_per_hour allows (3)" in give_up[0]
    assert "start the units by hand once the cause is gone" in give_up[0]
    # Memory back for hours: still stopped, and the journal says so every report.
    state = run(
        Levels(resume_hold_s=30),
        (VLLM,),
        read=Feed(SERVING),
        systemctl=systemd,
        clock=clock.clock,
        sleep=clock.sleep,
        log=lines.append,
        state_path=str(tmp_path / "guard-state.json"),
        iterations=7200,
        report_every_s=600,
    )
    assert state.phase == GAVE_UP and systemd.states[VLLM] == "inactive" and systemd.actions()[-1] == f"stop {VLLM}"
    assert any(line.startswith("gave up ") and f"{VLLM} stay stopped until started by hand" in line for line in lines)
    # An operator starts it: the give-up ends, the guard watches (and guards) again.
    systemd.states[VLLM] = "active"
    state, more, _clock = guard(tmp_path, systemd, Feed(SERVING), iterations=1, clock=clock)
    assert state.phase == WATCHING and state.stopped == () and any(line.startswith("started by hand after the guard gave up") for line in more)


def test_stops_older_than_an_hour_do_not_count(tmp_path: Path) -> None:
    systemd = FakeSystemd({VLLM: "active"})
    clock = FakeClock()
    for _round in range(3):
        state, _lines, _clock = guard(tmp_path, systemd, Feed(EDGE, SERVING), iterations=35, clock=clock, resume_hold_s=30)
        clock.now += 1800  # 31 min apart: at most two stops inside any hour
    assert state.phase == WATCHING and systemd.actions().count(f"start {VLLM}") == 3 and len(state.stops) == 2
    state, _lines, _clock = guard(tmp_path, systemd, Feed(EDGE), iterations=1, clock=clock, max_stops_per_hour=1)
    assert state.phase == GAVE_UP  # 1: the first stop is the last


def test_the_state_survives_a_restart_of_the_guard(tmp_path: Path) -> None:
    systemd = FakeSystemd({VLLM: "active", RAY: "active"})
    clock = FakeClock()
    state, _lines, _clock = guard(tmp_path, systemd, Feed(SERVING, sample(1000, full=60.0)), iterations=2, clock=clock, units=(VLLM, RAY))
    saved = json.loads((tmp_path / "guard-state.json").read_text())
    assert saved == state.to_dict() and saved["phase"] == HOLDING and saved["stopped"] == [VLLM, RAY] and saved["stops"] == [1001.0]
    assert GuardState.from_dict(json.loads(json.dumps(state.to_dict()))) == state
    # A new guard process (same file): it knows what it stopped and starts it when memory is back.
    state, lines, _clock = guard(tmp_path, systemd, Feed(SERVING), iterations=32, clock=clock, units=(VLLM, RAY))
    assert lines[0].endswith(f"holding {VLLM}, {RAY} since a stop (holding)")
    assert systemd.actions()[-2:] == [f"start {RAY}", f"start {VLLM}"] and state.phase == WATCHING
    assert load_state(str(tmp_path / "guard-state.json")) == state


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "is not JSON"),
        ("[]", "not an object"),
        ('{"version": 9, "phase": "holding"}', "version 9"),
        ('{"version": 1, "phase": "asleep"}', 'phase "asleep"'),
        ('{"version": 1, "phase": "holding", "stopped": ["--now"]}', "not a list of unit names"),
        ('{"version": 1, "phase": "holding", "stops": [1e999]}', "not a list of times"),
        ('{"version": 1, "phase": "holding", "retry": "reboot"}', "reason/retry"),
        ("[" * 100_000 + "]" * 100_000, "is not JSON"),
    ],
)
def test_a_garbled_state_file_starts_the_guard_afresh_saying_so(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "guard-state.json").write_text(text)
    with pytest.raises(MemoryGuardError, match=message):
        load_state(str(tmp_path / "guard-state.json"))
    systemd = FakeSystemd({VLLM: "active"})
    state, lines, _clock = guard(tmp_path, systemd, Feed(SERVING), iterations=1)
    assert state == GuardState() and "starting afresh" in lines[0] and message.split(" ")[-1].strip('"') in lines[0]
    assert json.loads((tmp_path / "guard-state.json").read_text()) == GuardState().to_dict()


def test_a_systemctl_failure_is_logged_with_its_output_and_retried_next_interval(tmp_path: Path) -> None:
    systemd = FakeSystemd({VLLM: "active", RAY: "active"})
    systemd.fail[f"stop {VLLM}"] = [(1, "Failed to stop sparkops-vllm.service: Access denied\nSee system logs.\n")]
    systemd.fail[f"is-active {RAY}"] = [(1, "Failed to connect to bus: No such file or directory\n")] * 3
    state, lines, clock = guard(tmp_path, systemd, Feed(EDGE), iterations=5, units=(VLLM, RAY))
    denied = "Failed to stop sparkops-vllm.service: Access denied / See system logs."
    assert lines[2] == f"systemctl stop {VLLM} failed (rc 1): {denied}; trying again in 1s"
    # The same bus failure three times in a row: one line, not three.
    assert sum("systemctl is-active sparkops-ray-head.service failed (rc 1): Failed to connect to bus" in line for line in lines) == 1
    assert systemd.actions() == [f"stop {VLLM}", f"stop {VLLM}", f"stop {RAY}"]
    assert state.stopped == (VLLM, RAY) and state.retry == "" and len(state.stops) == 1
    # A start that fails waits, with the units after it, for the next interval; the guard does not crash.
    systemd.fail[f"start {RAY}"] = [(1, "Job for sparkops-ray-head.service failed.\n"), (124, "no answer within 1800s")]
    state, lines, _clock = guard(tmp_path, systemd, Feed(SERVING), iterations=33, clock=clock, units=(VLLM, RAY))
    assert systemd.actions()[-4:] == [f"start {RAY}", f"start {RAY}", f"start {RAY}", f"start {VLLM}"]
    assert f"systemctl start {RAY} failed (rc 1): Job for sparkops-ray-head.service failed.; trying again in 1s" in lines
    assert f"systemctl start {RAY} failed (rc 124): no answer within 1800s; trying again in 1s" in lines
    assert state == GuardState(stops=state.stops, stops_total=1) and systemd.states == {VLLM: "active", RAY: "active"}


def test_a_systemctl_that_raises_is_a_logged_failure_not_a_crash(tmp_path: Path) -> None:
    calls = []

    def broken(args: list[str]) -> tuple[int, str]:
        calls.append(args)
        raise OSError(7, "Argument list too long")

    state, lines, _clock = guard(tmp_path, t.cast(FakeSystemd, broken), Feed(EDGE), iterations=3)
    assert len(calls) == 3 and state.phase == HOLDING and state.retry == "stop" and state.stopped == ()
    assert any("cannot run systemctl: [Errno 7] Argument list too long" in line for line in lines)


def test_a_host_without_psi_every_2_seconds_guards_on_memavailable_alone_and_says_so_once(tmp_path: Path) -> None:
    no_psi = read_sample(str(FIXTURES / "no_psi"))
    low = Sample(no_psi.mem_total, 1500 * MIB, no_psi.swap_free, psi=None, psi_problem=no_psi.psi_problem)
    systemd = FakeSystemd({VLLM: "active"})
    state, lines, clock = guard(tmp_path, systemd, Feed(no_psi, no_psi, low, no_psi), iterations=20, interval_s=2, resume_hold_s=10)
    assert clock.sleeps == [2.0] * 19
    said = [line for line in lines if line.startswith("no PSI memory pressure")]
    assert said == [f"no PSI memory pressure: {no_psi.psi_problem}; guarding on MemAvailable alone"]
    assert systemd.actions() == [f"stop {VLLM}", f"start {VLLM}"]
    assert any(line.startswith("stop: MemAvailable 1500 MiB < 2048 MiB") and "PSI n/a" in line for line in lines)
    assert state.phase == WATCHING


def test_a_sample_that_cannot_be_read_is_logged_and_the_guard_goes_on(tmp_path: Path) -> None:
    reads = iter([MemoryGuardError("/proc/meminfo has no MemAvailable"), EDGE])

    def read() -> Sample:
        item = next(reads)
        if isinstance(item, Exception):
            raise item
        return item

    systemd = FakeSystemd({VLLM: "active"})
    state, lines, _clock = guard(tmp_path, systemd, read, iterations=2)
    assert lines[1] == "cannot read the memory figures: /proc/meminfo has no MemAvailable; trying again in 1s" and state.phase == HOLDING


# --- The command -------------------------------------------------------------------------------------------------

FAKE_SYSTEMCTL = """#!/bin/sh
# A fake systemctl: logs its arguments, keeps each unit's state in a file.
echo "$*" >> "$FAKE_SYSTEMCTL_LOG"
state="$FAKE_SYSTEMCTL_STATES/$2"
case "$1" in
  is-active) s=$(cat "$state" 2>/dev/null || echo inactive); echo "$s"; [ "$s" = active ];;
  stop) echo inactive > "$state";;
  start) echo active > "$state";;
  *) echo "Unknown command verb $1." >&2; exit 1;;
esac
"""


def command_env(tmp_path: Path, iterations: int) -> dict[str, str]:
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir(exist_ok=True)
    (fake_bin / "systemctl").write_text(FAKE_SYSTEMCTL)
    (fake_bin / "systemctl").chmod(0o755)
    (tmp_path / "states").mkdir(exist_ok=True)
    return {
        "PATH": f"{fake_bin}:/usr/bin:/bin",
        "FAKE_SYSTEMCTL_LOG": str(tmp_path / "systemctl.log"),
        "FAKE_SYSTEMCTL_STATES": str(tmp_path / "states"),
        ITERATIONS_ENV: str(iterations),
    }


def test_main_end_to_end_with_a_proc_folder_and_a_fake_systemctl_on_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    proc = tmp_path / "proc"
    shutil.copytree(FIXTURES / "gb10_edge", proc)
    env = command_env(tmp_path, iterations=2)
    (tmp_path / "states" / VLLM).write_text("active\n")
    (tmp_path / "states" / "sparkops-other.service").write_text("inactive\n")
    settings = {
        "units": [VLLM, "sparkops-other.service"],
        "state_path": str(tmp_path / "guard-state.json"),
        "proc_root": str(proc),
        "interval_s": 0.05,
        "resume_hold_s": 0,
        "names": NAMES,
    }
    (tmp_path / "guard.json").write_text(json.dumps(settings))
    assert main([str(tmp_path / "guard.json")], env) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"memory guard for {VLLM}, sparkops-other.service: stop at MemAvailable < 2048 MiB or PSI full avg10 >= 40% for 3 samples")
    assert out[1].startswith("stop: MemAvailable 1228 MiB < 2048 MiB (vllm_serve_memory_guard_stop_available_mib)")
    assert out[2:] == [f"stopped {VLLM}", "sparkops-other.service does not run: left alone (the guard starts only what it stopped)"]
    assert (tmp_path / "systemctl.log").read_text().splitlines() == [
        f"is-active {VLLM}",
        f"stop {VLLM}",
        "is-active sparkops-other.service",
        f"is-active {VLLM}",  # the second sample, holding: did someone start it?
        "is-active sparkops-other.service",  # memory still low: does anything of the list run (started by hand)?
    ]
    assert json.loads((tmp_path / "guard-state.json").read_text())["stopped"] == [VLLM]
    # The guard restarts (same state file) after memory came back: it starts what it stopped, and only that.
    shutil.rmtree(proc)
    shutil.copytree(FIXTURES / "gb10_serving", proc)
    assert main([str(tmp_path / "guard.json")], command_env(tmp_path, iterations=3)) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith(f"holding {VLLM} since a stop (holding)")
    assert [line.split(":")[0] for line in out[1:]] == ["start", f"started {VLLM}"]
    assert (tmp_path / "states" / VLLM).read_text() == "active\n" and (tmp_path / "states" / "sparkops-other.service").read_text() == "inactive\n"
    assert json.loads((tmp_path / "guard-state.json").read_text())["phase"] == WATCHING


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"interval_s": 0}, "vllm_serve_memory_guard_interval_s is 0.0: seconds above 0"),
        (
            {"stop_available_mib": 150_000, "resume_available_mib": 160_000},
            "vllm_serve_memory_guard_stop_available_mib is 150000 MiB, not below this host's MemTotal of 122584 MiB",
        ),
        ({"units": []}, "units must be a non-empty list"),
        ({"units": ["--now"]}, 'units has "--now": not a systemd unit name'),
        ({"units": [VLLM, VLLM]}, "names a unit twice"),
        ({"state_path": None}, "state_path must be a path"),
        ({"stop_available": 2048}, "unknown setting(s) stop_available"),
        ({"iterations": 0}, "iterations is 0: a count of samples"),
        ({"report_every_s": "often"}, 'report_every_s is "often": seconds above 0'),
    ],
)
def test_main_refuses_settings_that_make_no_sense_with_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], settings: dict[str, t.Any], message: str
) -> None:
    raw = {"units": [VLLM], "state_path": str(tmp_path / "state.json"), "proc_root": str(FIXTURES / "gb10_serving"), "names": NAMES, **settings}
    (tmp_path / "guard.json").write_text(json.dumps(raw))
    assert main([str(tmp_path / "guard.json")], {}) == 2
    out = capsys.readouterr().out
    assert out.startswith(f"memory guard settings {tmp_path / 'guard.json'}: ") and message in out and out.count("\n") == 1
    assert not (tmp_path / "state.json").exists()


def test_main_usage_unreadable_settings_and_an_unreadable_meminfo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([], {}) == 2 and capsys.readouterr().out == "usage: sparkops-memory-guard SETTINGS.json\n"
    assert main([str(tmp_path / "absent.json")], {}) == 2 and "absent.json" in capsys.readouterr().out
    (tmp_path / "guard.json").write_text("{")
    assert main([str(tmp_path / "guard.json")], {}) == 2
    (tmp_path / "guard.json").write_text(json.dumps({"units": [VLLM], "state_path": str(tmp_path / "s.json"), "proc_root": str(tmp_path)}))
    capsys.readouterr()
    assert main([str(tmp_path / "guard.json")], {}) == 1 and "cannot read" in capsys.readouterr().out
    (tmp_path / "guard.json").write_text(json.dumps({"units": [VLLM], "state_path": str(tmp_path / "s.json"), "proc_root": str(FIXTURES / "gb10_serving")}))
    assert main([str(tmp_path / "guard.json")], {ITERATIONS_ENV: "many"}) == 2 and ITERATIONS_ENV in capsys.readouterr().out


def test_main_keeps_the_signal_handlers_it_found(tmp_path: Path) -> None:
    before = signal.getsignal(signal.SIGTERM)
    env = command_env(tmp_path, iterations=1)
    (tmp_path / "guard.json").write_text(json.dumps({"units": [VLLM], "state_path": str(tmp_path / "s.json"), "proc_root": str(FIXTURES / "gb10_serving")}))
    assert main([str(tmp_path / "guard.json")], env, out=io.StringIO()) == 0
    assert signal.getsignal(signal.SIGTERM) is before


# --- Metrics for node exporter's textfile collector ---------------------------------------------------------------


def textfile_metrics(folder: Path) -> dict[str, float]:
    """The guard's .prom file as Prometheus' own parser reads it: sample name -> value."""
    text = (folder / "sparkops_memory_guard.prom").read_text()
    families = list(text_string_to_metric_families(text))
    assert {family.name: family.type for family in families} == {
        "sparkops_memory_guard_stops": "counter",
        "sparkops_memory_guard_holding": "gauge",
        "sparkops_memory_guard_gave_up": "gauge",
    }
    return {sample.name: sample.value for family in families for sample in family.samples}


def run_with_textfile(tmp_path: Path, systemd: FakeSystemd, feed: t.Callable[[], Sample], iterations: int, folder: Path, clock: FakeClock) -> list[str]:
    """guard() writing its metrics into ``folder``: its journal lines."""
    return guard(tmp_path, systemd, feed, iterations, clock=clock, textfile_dir=str(folder), resume_hold_s=2, max_stops_per_hour=2)[1]


def test_the_textfile_metrics_follow_a_stop_a_start_and_a_give_up_and_the_count_survives_a_restart(tmp_path: Path) -> None:
    folder = tmp_path / "node-exporter"
    folder.mkdir()
    systemd, clock = FakeSystemd({VLLM: "active"}), FakeClock()
    run_with_textfile(tmp_path, systemd, Feed(SERVING), 1, folder, clock)
    assert textfile_metrics(folder) == {"sparkops_memory_guard_stops_total": 0, "sparkops_memory_guard_holding": 0, "sparkops_memory_guard_gave_up": 0}
    run_with_textfile(tmp_path, systemd, Feed(EDGE), 1, folder, clock)
    assert textfile_metrics(folder) == {"sparkops_memory_guard_stops_total": 1, "sparkops_memory_guard_holding": 1, "sparkops_memory_guard_gave_up": 0}
    assert oct((folder / "sparkops_memory_guard.prom").stat().st_mode & 0o777) == "0o644"
    run_with_textfile(tmp_path, systemd, Feed(SERVING), 4, folder, clock)  # a new guard process: the count is in its state
    assert systemd.states[VLLM] == "active"
    assert textfile_metrics(folder) == {"sparkops_memory_guard_stops_total": 1, "sparkops_memory_guard_holding": 0, "sparkops_memory_guard_gave_up": 0}
    run_with_textfile(tmp_path, systemd, Feed(EDGE), 1, folder, clock)  # the second stop within the hour: the last
    assert textfile_metrics(folder) == {"sparkops_memory_guard_stops_total": 2, "sparkops_memory_guard_holding": 1, "sparkops_memory_guard_gave_up": 1}
    assert [path.name for path in folder.iterdir()] == ["sparkops_memory_guard.prom"]  # no temporary file left


def test_without_the_textfile_folder_the_guard_says_so_once_and_guards(tmp_path: Path) -> None:
    systemd = FakeSystemd({VLLM: "active"})
    lines = run_with_textfile(tmp_path, systemd, Feed(SERVING, EDGE, EDGE), 3, tmp_path / "missing", FakeClock())
    assert sum("cannot write the metrics into" in line for line in lines) == 1, lines
    assert systemd.actions() == [f"stop {VLLM}"]


def test_a_state_an_earlier_guard_wrote_without_the_count_loads_with_zero(tmp_path: Path) -> None:
    path = tmp_path / "guard-state.json"
    document = GuardState(stops=(5.0,)).to_dict()
    del document["stops_total"]
    path.write_text(json.dumps(document))
    assert load_state(str(path)) == GuardState(stops=(5.0,), stops_total=0)
    path.write_text(json.dumps({**document, "stops_total": -1}))
    with pytest.raises(MemoryGuardError, match="stops_total -1"):
        load_state(str(path))
