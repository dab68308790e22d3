# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the _process_end module util: procfs reading, name guard, refusals, and ending real children."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import typing as t
from pathlib import Path

import pytest
from ansible_collections.sparkops.inference.plugins.module_utils._process_end import (
    Process,
    ProcessEndError,
    end_processes,
    name_matches,
    parse_expect_names,
    parse_stat,
    read_process,
    refusal,
)
from fake_clock import FakeClock

IGNORE_TERM = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('ready', flush=True)\ntime.sleep(60)\n"
PROC = Path("/proc")


def stat_line(pid: int, comm: str, state: str, start_time: int) -> str:
    # pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime
    # priority nice num_threads itrealvalue starttime vsize ...
    return f"{pid} ({comm}) {state} 1 {pid} {pid} 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 {start_time} 1000 10 18446744073709551615\n"


def fake_process(root: Path, pid: int, argv: list[str], comm: str, state: str = "S", start_time: int = 5000) -> None:
    directory = root / str(pid)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "cmdline").write_bytes(b"".join(a.encode() + b"\0" for a in argv))
    (directory / "comm").write_text(comm + "\n", encoding="utf-8")
    (directory / "stat").write_text(stat_line(pid, comm, state, start_time), encoding="utf-8")


class Children:
    """Real child processes, killed and reaped after the test."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []

    def sleep(self) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(["sleep", "60"])
        self.procs.append(proc)
        # Popen returns once exec began; the new command line shows a moment later.
        wait_for(lambda: (PROC / str(proc.pid) / "cmdline").read_bytes() != b"")
        return proc

    def ignoring_term(self) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen([sys.executable, "-c", IGNORE_TERM], stdout=subprocess.PIPE)
        self.procs.append(proc)
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"  # the handler is in place
        return proc

    def exited(self, reap: bool) -> int:
        proc = subprocess.Popen(["true"])
        self.procs.append(proc)
        if reap:
            proc.wait()
        else:
            wait_for(lambda: read_state(proc.pid) == "Z")
        return proc.pid

    def cleanup(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()


@pytest.fixture
def children() -> t.Iterator[Children]:
    kids = Children()
    yield kids
    kids.cleanup()


def read_state(pid: int) -> str | None:
    process = read_process(PROC, pid)
    return None if process is None else process.state


def wait_for(condition: t.Callable[[], bool], seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def alive(proc: subprocess.Popen[bytes]) -> bool:
    """Running (not exited, not a zombie waiting for us)."""
    return read_state(proc.pid) not in (None, "Z")


# procfs reading


def test_parse_stat_comm_with_spaces_and_parentheses() -> None:
    assert parse_stat(stat_line(42, "ray::Worker (x) y", "D", 123456)) == ("ray::Worker (x) y", "D", 123456)
    assert parse_stat("garbage") == (None, None, None)
    assert parse_stat("42 (short) R") == ("short", "R", None)


def test_read_process_from_fake_root(tmp_path: Path) -> None:
    fake_process(tmp_path, 4100, ["/usr/bin/python3", "-m", "vllm.entrypoints.openai.api_server"], "python3", "S", 777)
    fake_process(tmp_path, 4101, [], "kworker/0:1", "I", 5)
    (tmp_path / "4102").mkdir()  # a directory we cannot read anything from
    assert read_process(tmp_path, 4100) == Process(pid=4100, argv0="/usr/bin/python3", comm="python3", state="S", start_time=777)
    kthread = read_process(tmp_path, 4101)
    assert kthread is not None and (kthread.name, kthread.argv0) == ("kworker/0:1", None)
    unreadable = read_process(tmp_path, 4102)
    assert unreadable is not None and (unreadable.name, unreadable.state, unreadable.start_time) == ("?", None, None)
    assert read_process(tmp_path, 4103) is None


def test_read_process_real_child(children: Children) -> None:
    proc = children.sleep()
    process = read_process(PROC, proc.pid)
    assert process is not None
    assert (process.argv0, process.comm, process.zombie) == ("sleep", "sleep", False)
    assert process.state in ("R", "S", "D"), process.state
    assert isinstance(process.start_time, int) and process.start_time > 0


@pytest.mark.parametrize(
    ("expected", "argv0", "comm", "matches"),
    [
        ("sleep", "sleep", "sleep", True),
        ("/usr/bin/python3", "/usr/bin/python3", "python3", True),
        ("python3", "/usr/bin/python3", "python3", True),
        ("/usr/bin/python3", "python3", "python3", True),
        ("/opt/sparkops/ray/bin/python3", "/usr/bin/python3", "python3", True),  # same base name
        ("ray::RayWorkerWrapper", "ray::RayWorkerWrapper", "ray::RayWorkerW", True),
        ("ray::RayWorkerWrapper", None, "ray::RayWorkerW", True),  # comm keeps 15 characters
        ("ray::IDLE", "ray::IDLE", "ray::IDLE", True),
        ("ray::IDLE", "/bin/bash", "bash", False),
        ("python3", "/bin/bash", "bash", False),
        ("VLLM::EngineCore", "/usr/bin/python3", "VLLM::EngineCor", True),  # expected read from comm-like source
        ("", "sleep", "sleep", False),
        ("sleep", None, None, False),
    ],
)
def test_name_matches(expected: str, argv0: str | None, comm: str | None, matches: bool) -> None:
    assert name_matches(expected, Process(pid=9, argv0=argv0, comm=comm, state="S", start_time=1)) is matches


def test_parse_expect_names() -> None:
    assert parse_expect_names({"4100": "python3", 4101: "ray::IDLE", " 7 ": "x"}) == {4100: "python3", 4101: "ray::IDLE", 7: "x"}
    assert parse_expect_names(None) == {}
    with pytest.raises(ProcessEndError, match="expect_names key 'vllm' is not a pid"):
        parse_expect_names({"vllm": "python3"})


# refusals


@pytest.mark.parametrize(
    ("pid", "message"),
    [
        (0, "refusing to end pid 0: not a process id (0 and negative pids signal process groups)"),
        (-12, "refusing to end pid -12: not a process id (0 and negative pids signal process groups)"),
        (1, "refusing to end pid 1 (/sbin/init): it is init"),
        (500, "refusing to end pid 500 (python3): it is this module's own process"),
        (400, "refusing to end pid 400 (/bin/sh): it is this module's parent"),
    ],
)
def test_refusal_names_pid_and_name(tmp_path: Path, pid: int, message: str) -> None:
    fake_process(tmp_path, 1, ["/sbin/init", "splash"], "systemd")
    fake_process(tmp_path, 500, ["python3"], "python3")
    fake_process(tmp_path, 400, ["/bin/sh", "-c", "python3 module.py"], "sh")
    assert refusal(pid, own_pid=500, parent_pid=400, proc_root=tmp_path) == message
    assert refusal(4100, own_pid=500, parent_pid=400, proc_root=tmp_path) is None


def test_refusals_come_before_any_signal(children: Children) -> None:
    proc = children.sleep()
    sent: list[tuple[int, int]] = []
    with pytest.raises(ProcessEndError) as exc:
        end_processes([proc.pid, 1, os.getpid()], 1, kill=lambda pid, sig: sent.append((pid, sig)))
    assert str(exc.value).startswith("refusing to end pid 1 (")
    assert f"; refusing to end pid {os.getpid()} (" in str(exc.value)
    assert str(exc.value).endswith("): it is this module's own process")
    assert sent == []
    assert alive(proc)


def test_parent_is_refused() -> None:
    with pytest.raises(ProcessEndError, match=rf"refusing to end pid {os.getppid()} \(.*\): it is this module's parent"):
        end_processes([os.getppid()], 1)


def test_negative_timeout_is_refused(children: Children) -> None:
    with pytest.raises(ProcessEndError, match="timeout must be 0 or more, not -1"):
        end_processes([children.sleep().pid], -1)


# ending real children


def test_sigterm_ends_sleep(children: Children) -> None:
    proc = children.sleep()
    result = end_processes([proc.pid, proc.pid], 5)
    assert result.ended == [{"pid": proc.pid, "name": "sleep", "signal": "SIGTERM"}]
    assert (result.gone, result.skipped, result.failures, result.changed) == ([], [], [], True)
    assert proc.wait(timeout=5) == -signal.SIGTERM
    assert result.diff == {"before": f"{proc.pid} sleep\n", "after": ""}


def test_sigkill_after_timeout(children: Children) -> None:
    stubborn = children.ignoring_term()
    polite = children.sleep()
    started = time.monotonic()
    result = end_processes([stubborn.pid, polite.pid], 0.3)
    took = time.monotonic() - started
    assert result.ended == [
        {"pid": stubborn.pid, "name": sys.executable, "signal": "SIGKILL"},
        {"pid": polite.pid, "name": "sleep", "signal": "SIGTERM"},
    ]
    assert result.failures == []
    assert stubborn.wait(timeout=5) == -signal.SIGKILL
    assert polite.wait(timeout=5) == -signal.SIGTERM
    assert 0.3 <= took < 3


def test_check_mode_signals_nothing(children: Children) -> None:
    proc = children.sleep()
    gone = children.exited(reap=True)
    result = end_processes([proc.pid, gone], 5, check_mode=True)
    assert result.ended == [{"pid": proc.pid, "name": "sleep", "signal": "SIGTERM"}]
    assert result.gone == [gone]
    assert result.changed is True
    assert result.diff == {"before": f"{proc.pid} sleep\n", "after": ""}
    time.sleep(0.05)
    assert alive(proc)


def test_gone_and_zombie_are_not_errors(children: Children) -> None:
    gone = children.exited(reap=True)
    zombie = children.exited(reap=False)
    sent: list[tuple[int, int]] = []
    result = end_processes([gone, zombie], 5, kill=lambda pid, sig: sent.append((pid, sig)))
    assert (result.ended, result.gone, result.skipped, result.changed) == ([], [gone, zombie], [], False)
    assert sent == []
    assert result.diff == {"before": "", "after": ""}


def test_reused_pid_is_skipped(children: Children) -> None:
    proc = children.sleep()
    result = end_processes([proc.pid], 5, expect_names={proc.pid: "ray::RayWorkerWrapper"})
    assert result.ended == []
    assert result.skipped == [
        {
            "pid": proc.pid,
            "name": "sleep",
            "expected_name": "ray::RayWorkerWrapper",
            "reason": f"pid {proc.pid} is now 'sleep', not 'ray::RayWorkerWrapper' (pid reused?)",
        }
    ]
    assert result.changed is False
    assert result.diff == {"before": f"{proc.pid} sleep\n", "after": f"{proc.pid} sleep\n"}
    time.sleep(0.05)
    assert alive(proc)


def test_expected_name_matching_is_ended(children: Children) -> None:
    proc = children.sleep()
    result = end_processes([proc.pid], 5, expect_names={proc.pid: "/usr/bin/sleep", 999999: "other"})
    assert [e["pid"] for e in result.ended] == [proc.pid]
    assert proc.wait(timeout=5) == -signal.SIGTERM


# fake procfs: states a test cannot make real processes take


def test_survives_sigkill_fails_naming_pid_name_and_state(tmp_path: Path) -> None:
    fake_process(tmp_path, 4100, ["/usr/bin/python3", "-m", "vllm"], "python3", state="D")
    fake_process(tmp_path, 4200, ["sleep", "60"], "sleep")
    clock = FakeClock()
    sent: list[tuple[int, int]] = []

    def kill(pid: int, sig: int) -> None:
        sent.append((pid, sig))
        if pid == 4200:
            (tmp_path / "4200" / "stat").write_text(stat_line(4200, "sleep", "Z", 5000), encoding="utf-8")

    result = end_processes([4100, 4200], 2, proc_root=tmp_path, kill=kill, clock=clock.clock, sleep=clock.sleep, own_pid=10, parent_pid=9)
    assert sent == [(4100, signal.SIGTERM), (4200, signal.SIGTERM), (4100, signal.SIGKILL)]
    assert result.ended == [{"pid": 4200, "name": "sleep", "signal": "SIGTERM"}]
    assert result.failures == ["pid 4100 (/usr/bin/python3) is still there 5 s after SIGKILL (state D: uninterruptible sleep, usually stuck in a driver)"]
    assert result.diff["after"] == "4100 /usr/bin/python3\n"
    assert 6.9 <= clock.now - 1000 <= 7.1  # 2 s after SIGTERM, 5 s after SIGKILL


def test_pid_reused_while_waiting_is_not_killed(tmp_path: Path) -> None:
    """The process exits after SIGTERM and its pid is taken by another before the next look: no SIGKILL."""
    fake_process(tmp_path, 4100, ["/usr/bin/python3"], "python3", start_time=5000)
    clock = FakeClock()
    sent: list[tuple[int, int]] = []

    def kill(pid: int, sig: int) -> None:
        sent.append((pid, sig))
        fake_process(tmp_path, 4100, ["/bin/bash"], "bash", start_time=9000)

    result = end_processes([4100], 2, proc_root=tmp_path, kill=kill, clock=clock.clock, sleep=clock.sleep, own_pid=10, parent_pid=9)
    assert sent == [(4100, signal.SIGTERM)]
    assert result.ended == [{"pid": 4100, "name": "/usr/bin/python3", "signal": "SIGTERM"}]


def test_permission_denied_fails_naming_pid(tmp_path: Path) -> None:
    fake_process(tmp_path, 4100, ["/usr/bin/python3"], "python3")

    def kill(pid: int, sig: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    result = end_processes([4100], 2, proc_root=tmp_path, kill=kill, own_pid=10, parent_pid=9)
    assert result.failures == ["not permitted to send SIGTERM to pid 4100 (/usr/bin/python3): Operation not permitted"]
    assert result.ended == []
    assert result.diff["after"] == "4100 /usr/bin/python3\n"


def test_process_gone_before_signal_is_gone(tmp_path: Path) -> None:
    fake_process(tmp_path, 4100, ["/usr/bin/python3"], "python3")

    def kill(pid: int, sig: int) -> None:
        raise ProcessLookupError(3, "No such process")

    result = end_processes([4100], 2, proc_root=tmp_path, kill=kill, own_pid=10, parent_pid=9)
    assert (result.ended, result.gone, result.failures) == ([], [4100], [])


# identity: (pid, start time), as gpu_info read it (issue 15)


def test_pid_reused_by_a_process_of_the_same_base_name_is_not_ended(tmp_path: Path) -> None:
    """ATTACK (issue 15): the name guard compares base names, so a pid reused by another ``python3`` (a user's job that
    got the pid of a vLLM worker ended meanwhile) was ended. The start time gpu_info read tells them apart."""
    fake_process(tmp_path, 4100, ["/home/alice/venv/bin/python3", "train.py"], "python3", start_time=9000)
    sent: list[tuple[int, int]] = []
    result = end_processes(
        [4100],
        2,
        expect_names={4100: "/usr/bin/python3"},
        expect_start_times={4100: 5000},
        proc_root=tmp_path,
        kill=lambda pid, sig: sent.append((pid, sig)),
        own_pid=10,
        parent_pid=9,
    )
    assert sent == []
    assert result.ended == []
    assert result.skipped == [
        {
            "pid": 4100,
            "name": "/home/alice/venv/bin/python3",
            "expected_start_time": 5000,
            "start_time": 9000,
            "reason": "pid 4100 started at 9000, not 5000 (clock ticks after boot): another process has the pid (pid reused)",
        }
    ]
    assert result.diff["after"] == "4100 /home/alice/venv/bin/python3\n"


def test_matching_start_time_is_ended(tmp_path: Path) -> None:
    fake_process(tmp_path, 4100, ["/usr/bin/python3"], "python3", start_time=5000)
    clock = FakeClock()
    sent: list[tuple[int, int]] = []

    def kill(pid: int, sig: int) -> None:
        sent.append((pid, sig))
        (tmp_path / "4100" / "stat").write_text(stat_line(4100, "python3", "Z", 5000), encoding="utf-8")

    result = end_processes(
        [4100], 2, expect_start_times={4100: 5000}, proc_root=tmp_path, kill=kill, clock=clock.clock, sleep=clock.sleep, own_pid=10, parent_pid=9
    )
    assert sent == [(4100, signal.SIGTERM)]
    assert result.ended == [{"pid": 4100, "name": "/usr/bin/python3", "signal": "SIGTERM"}]


def test_pid_unseen_when_looked_up_is_not_ended(tmp_path: Path) -> None:
    """gpu_info could not read the process (start time null): whatever has the pid now is another process."""
    fake_process(tmp_path, 4100, ["/usr/bin/python3"], "python3", start_time=5000)
    sent: list[tuple[int, int]] = []
    result = end_processes(
        [4100], 2, expect_start_times={4100: None}, proc_root=tmp_path, kill=lambda pid, sig: sent.append((pid, sig)), own_pid=10, parent_pid=9
    )
    assert sent == []
    assert result.skipped[0]["reason"] == "pid 4100 was not running when it was looked up: '/usr/bin/python3' has the pid now (pid reused)"


def test_unreadable_start_time_is_not_ended(tmp_path: Path) -> None:
    fake_process(tmp_path, 4100, ["/usr/bin/python3"], "python3", start_time=5000)
    (tmp_path / "4100" / "stat").unlink()
    sent: list[tuple[int, int]] = []
    result = end_processes(
        [4100], 2, expect_start_times={4100: 5000}, proc_root=tmp_path, kill=lambda pid, sig: sent.append((pid, sig)), own_pid=10, parent_pid=9
    )
    assert sent == []
    assert result.skipped[0]["reason"] == "pid 4100: its start time cannot be read, so it cannot be told from another process with the pid"


def test_parse_expect_start_times() -> None:
    from ansible_collections.sparkops.inference.plugins.module_utils._process_end import parse_expect_start_times

    assert parse_expect_start_times({"4100": 5000, 4101: "77", " 7 ": None}) == {4100: 5000, 4101: 77, 7: None}
    assert parse_expect_start_times(None) == {}
    with pytest.raises(ProcessEndError, match="expect_start_times key 'vllm' is not a pid"):
        parse_expect_start_times({"vllm": 5})
    with pytest.raises(ProcessEndError, match="expect_start_times value 'soon' for pid 4100 is not a start time"):
        parse_expect_start_times({"4100": "soon"})
