# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the process_end module: main() against real child processes (and a fake procfs for names)."""

from __future__ import annotations

import functools
import json
import os
import re
import signal
import subprocess
import sys
import time
import typing as t
from pathlib import Path
from unittest.mock import patch

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.sparkops.inference.plugins.module_utils import _process_end
from ansible_collections.sparkops.inference.plugins.modules import process_end
from fake_clock import FakeClock

IGNORE_TERM = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('ready', flush=True)\ntime.sleep(60)\n"
RESULT_KEYS = {"changed", "ended", "gone", "skipped", "diff"}


@pytest.fixture
def spawn() -> t.Iterator[t.Callable[..., subprocess.Popen[bytes]]]:
    """Start a child (``sleep 60`` by default, or one that ignores SIGTERM); all are killed and reaped afterwards."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(ignore_term: bool = False) -> subprocess.Popen[bytes]:
        if ignore_term:
            proc = subprocess.Popen([sys.executable, "-c", IGNORE_TERM], stdout=subprocess.PIPE)
            procs.append(proc)
            assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        else:
            proc = subprocess.Popen(["sleep", "60"])
            procs.append(proc)
            # Popen returns once exec began; the new command line shows a moment later.
            deadline = time.monotonic() + 5
            while Path(f"/proc/{proc.pid}/cmdline").read_bytes() == b"":
                assert time.monotonic() < deadline, f"sleep (pid {proc.pid}) did not start"
                time.sleep(0.005)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def run_main(args: dict[str, t.Any], capsys: pytest.CaptureFixture[str]) -> dict[str, t.Any]:
    with patch_module_args(args), pytest.raises(SystemExit):
        process_end.main()
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert isinstance(result, dict)
    return result


def running(proc: subprocess.Popen[bytes]) -> bool:
    """Still running: not exited, and not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{proc.pid}/stat").read_text(encoding="utf-8")
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def reaped_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_ends_with_sigterm_and_is_idempotent(spawn: t.Callable[..., subprocess.Popen[bytes]], capsys: pytest.CaptureFixture[str]) -> None:
    proc = spawn()
    result = run_main({"pids": [proc.pid], "_ansible_diff": True}, capsys)
    assert not result.get("failed"), result
    assert set(result) >= RESULT_KEYS
    assert result["changed"] is True
    assert result["ended"] == [{"pid": proc.pid, "name": "sleep", "signal": "SIGTERM"}]
    assert (result["gone"], result["skipped"]) == ([], [])
    assert result["diff"] == {"before": f"{proc.pid} sleep\n", "after": ""}
    assert proc.wait(timeout=5) == -signal.SIGTERM

    again = run_main({"pids": [proc.pid]}, capsys)
    assert (again["changed"], again["ended"], again["gone"]) == (False, [], [proc.pid])


def test_sigkill_when_sigterm_is_ignored(spawn: t.Callable[..., subprocess.Popen[bytes]], capsys: pytest.CaptureFixture[str]) -> None:
    stubborn = spawn(ignore_term=True)
    started = time.monotonic()
    result = run_main({"pids": [stubborn.pid], "timeout": 0.3, "expect_names": {str(stubborn.pid): os.path.basename(sys.executable)}}, capsys)
    assert not result.get("failed"), result
    assert result["ended"] == [{"pid": stubborn.pid, "name": sys.executable, "signal": "SIGKILL"}]
    assert stubborn.wait(timeout=5) == -signal.SIGKILL
    assert 0.3 <= time.monotonic() - started < 3


def test_check_mode_changes_nothing(spawn: t.Callable[..., subprocess.Popen[bytes]], capsys: pytest.CaptureFixture[str]) -> None:
    proc = spawn()
    stubborn = spawn(ignore_term=True)
    gone = reaped_pid()
    args = {"pids": [proc.pid, stubborn.pid, gone], "timeout": 0, "_ansible_check_mode": True, "_ansible_diff": True}
    result = run_main(args, capsys)
    assert not result.get("failed"), result
    assert result["changed"] is True
    assert result["ended"] == [{"pid": proc.pid, "name": "sleep", "signal": "SIGTERM"}, {"pid": stubborn.pid, "name": sys.executable, "signal": "SIGTERM"}]
    assert result["gone"] == [gone]
    assert result["diff"] == {"before": f"{proc.pid} sleep\n{stubborn.pid} {sys.executable}\n", "after": ""}
    time.sleep(0.05)
    assert running(proc) and running(stubborn)


def test_reused_pid_is_skipped(spawn: t.Callable[..., subprocess.Popen[bytes]], capsys: pytest.CaptureFixture[str]) -> None:
    reused = spawn()
    wanted = spawn()
    result = run_main({"pids": [reused.pid, wanted.pid], "expect_names": {str(reused.pid): "ray::RayWorkerWrapper", str(wanted.pid): "/usr/bin/sleep"}}, capsys)
    assert not result.get("failed"), result
    assert result["ended"] == [{"pid": wanted.pid, "name": "sleep", "signal": "SIGTERM"}]
    assert result["skipped"] == [
        {
            "pid": reused.pid,
            "name": "sleep",
            "expected_name": "ray::RayWorkerWrapper",
            "reason": f"pid {reused.pid} is now 'sleep', not 'ray::RayWorkerWrapper' (pid reused?)",
        }
    ]
    assert wanted.wait(timeout=5) == -signal.SIGTERM
    assert running(reused)


def test_fake_proc_root_names(spawn: t.Callable[..., subprocess.Popen[bytes]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Names come from proc_root: a real child that procfs shows as a Ray worker matches its expected name."""
    proc = spawn()
    fake = tmp_path / str(proc.pid)
    fake.mkdir()
    (fake / "cmdline").write_bytes(b"ray::RayWorkerWrapper.execute_method\0\0\0")
    (fake / "comm").write_text("ray::RayWorkerW\n", encoding="utf-8")
    (fake / "stat").write_text(f"{proc.pid} (ray::RayWorkerW) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 4242 0 0\n", encoding="utf-8")

    def vanish() -> None:
        for child in fake.iterdir():
            child.unlink()
        fake.rmdir()

    args = {"pids": [proc.pid], "proc_root": str(tmp_path), "expect_names": {str(proc.pid): "ray::RayWorkerWrapper.execute_method"}}
    result = run_main({**args, "_ansible_check_mode": True}, capsys)
    assert result["ended"] == [{"pid": proc.pid, "name": "ray::RayWorkerWrapper.execute_method", "signal": "SIGTERM"}]
    assert running(proc)

    vanish()
    result = run_main(args, capsys)
    assert (result["changed"], result["ended"], result["gone"]) == (False, [], [proc.pid])
    assert running(proc)  # proc_root says it is gone: nothing is signalled


@pytest.mark.parametrize(
    ("pid", "message"),
    [
        (lambda: 1, r"^refusing to end pid 1 \(.+\): it is init$"),
        (lambda: 0, r"^refusing to end pid 0: not a process id \(0 and negative pids signal process groups\)$"),
        (lambda: -1, r"^refusing to end pid -1: not a process id"),
        (os.getpid, r"^refusing to end pid \d+ \(.+\): it is this module's own process$"),
        (os.getppid, r"^refusing to end pid \d+ \(.+\): it is this module's parent$"),
    ],
)
def test_refusals_fail_naming_pid(
    spawn: t.Callable[..., subprocess.Popen[bytes]], capsys: pytest.CaptureFixture[str], pid: t.Callable[[], int], message: str
) -> None:
    proc = spawn()
    result = run_main({"pids": [proc.pid, pid()]}, capsys)
    assert result["failed"] is True
    assert str(pid()) in result["msg"]
    assert re.search(message, result["msg"]), result["msg"]
    time.sleep(0.05)
    assert running(proc)  # nothing was signalled


def test_gone_pid_is_not_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    gone = reaped_pid()
    result = run_main({"pids": [gone], "_ansible_diff": True}, capsys)
    assert not result.get("failed"), result
    assert (result["changed"], result["ended"], result["gone"], result["skipped"]) == (False, [], [gone], [])
    assert result["diff"] == {"before": "", "after": ""}


def test_bad_expect_names_key_fails(spawn: t.Callable[..., subprocess.Popen[bytes]], capsys: pytest.CaptureFixture[str]) -> None:
    proc = spawn()
    result = run_main({"pids": [proc.pid], "expect_names": {"raylet": "raylet"}}, capsys)
    assert result["failed"] is True
    assert result["msg"] == "expect_names key 'raylet' is not a pid"
    assert running(proc)


def test_survivor_of_sigkill_fails_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A process stuck in D state (faked in proc_root, with kill and the clock stubbed) fails the module."""
    fake = tmp_path / "4100"
    fake.mkdir()
    (fake / "cmdline").write_bytes(b"/usr/bin/python3\0-m\0vllm.entrypoints.openai.api_server\0")
    (fake / "comm").write_text("python3\n", encoding="utf-8")
    (fake / "stat").write_text("4100 (python3) D 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 4242 0 0\n", encoding="utf-8")
    sent: list[tuple[int, int]] = []
    clock = FakeClock()
    end = functools.partial(_process_end.end_processes, kill=lambda pid, sig: sent.append((pid, sig)), clock=clock.clock, sleep=clock.sleep)
    with patch.object(process_end, "end_processes", end):
        result = run_main({"pids": [4100], "timeout": 1, "proc_root": str(tmp_path)}, capsys)
    assert result["failed"] is True
    assert result["msg"] == "pid 4100 (/usr/bin/python3) is still there 5 s after SIGKILL (state D: uninterruptible sleep, usually stuck in a driver)"
    assert sent == [(4100, signal.SIGTERM), (4100, signal.SIGKILL)]
    assert (result["changed"], result["ended"]) == (False, [])
    assert result["diff"]["after"] == "4100 /usr/bin/python3\n"
    assert 5.9 <= clock.now - 1000 <= 6.1


def start_time_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()[19])


def test_reused_pid_of_the_same_name_is_skipped_by_start_time(spawn: t.Callable[..., subprocess.Popen[bytes]], capsys: pytest.CaptureFixture[str]) -> None:
    """ATTACK (issue 15): a pid reused by a process with the same base name passed the name guard and was ended; with
    the start time gpu_info read (expect_start_times) it is skipped."""
    reused = spawn()
    wanted = spawn()
    args = {
        "pids": [reused.pid, wanted.pid],
        "expect_names": {str(reused.pid): "/usr/bin/sleep", str(wanted.pid): "/usr/bin/sleep"},
        "expect_start_times": {str(reused.pid): start_time_of(reused.pid) - 1, str(wanted.pid): start_time_of(wanted.pid)},
    }
    result = run_main(args, capsys)
    assert not result.get("failed"), result
    assert result["ended"] == [{"pid": wanted.pid, "name": "sleep", "signal": "SIGTERM"}]
    assert [(s["pid"], s["start_time"], s["expected_start_time"]) for s in result["skipped"]] == [
        (reused.pid, start_time_of(reused.pid), start_time_of(reused.pid) - 1)
    ]
    assert wanted.wait(timeout=5) == -signal.SIGTERM
    assert running(reused)


def test_bad_expect_start_times_fails(spawn: t.Callable[..., subprocess.Popen[bytes]], capsys: pytest.CaptureFixture[str]) -> None:
    proc = spawn()
    result = run_main({"pids": [proc.pid], "expect_start_times": {str(proc.pid): "yesterday"}}, capsys)
    assert result["failed"] is True
    assert result["msg"] == f"expect_start_times value 'yesterday' for pid {proc.pid} is not a start time"
    assert running(proc)
