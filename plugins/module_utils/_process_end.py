# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""End processes by pid: SIGTERM, a wait, then SIGKILL for the survivors.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

Meant for the GPU processes that outlive their container or unit (Ray and vLLM workers). Each process is read
from procfs first: its name (argv[0] of ``cmdline``, else ``comm``), its state and its start time. The start time
pins the process: a pid whose start time changes was ended and reused, and is never signalled again.

A process is identified by its pid *and* its start time (field 22 of ``/proc/<pid>/stat``): ``expect_start_times``,
as ``gpu_info`` read them, guards against a pid reused between the caller's look and this one, whatever the new
process is called. ``expect_names`` is a weaker guard (:func:`name_matches` compares base names, so another
``python3`` passes it): both are checked when both are given.
A zombie counts as ended: it has exited and released its memory; only its parent's reaping is left.
"""

from __future__ import annotations

import os
import posixpath
import signal
import time
import typing as t
from dataclasses import dataclass, field
from pathlib import Path

SIGTERM = "SIGTERM"
SIGKILL = "SIGKILL"
# How long a process may take to vanish after SIGKILL (it may be in the kernel, e.g. releasing GPU memory).
KILL_WAIT = 5.0
POLL_INTERVAL = 0.05
# comm is the first 15 bytes of the executable's name (TASK_COMM_LEN 16, with the NUL).
COMM_LENGTH = 15
_STATES = {
    "D": "uninterruptible sleep, usually stuck in a driver",
    "T": "stopped",
    "t": "stopped by a tracer",
    "R": "running",
    "S": "sleeping",
}

Kill = t.Callable[[int, int], None]


class ProcessEndError(Exception):
    """A pid the module refuses to end, or a bad argument; the message names the pid."""


@dataclass(frozen=True)
class Process:
    """A process read from ``<proc_root>/<pid>``; fields are None when their file is unreadable."""

    pid: int
    argv0: str | None
    comm: str | None
    state: str | None
    start_time: int | None

    @property
    def name(self) -> str:
        """argv[0] from cmdline, else comm (kernel threads and zombies have an empty cmdline), else ``?``."""
        return self.argv0 or self.comm or "?"

    @property
    def zombie(self) -> bool:
        return self.state in ("Z", "X", "x")

    def describe(self) -> str:
        return f"pid {self.pid} ({self.name})"

    def line(self) -> str:
        return f"{self.pid} {self.name}"

    def as_dict(self, signal_name: str) -> dict[str, t.Any]:
        return {"pid": self.pid, "name": self.name, "signal": signal_name}


def _read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def parse_stat(text: str) -> tuple[str | None, str | None, int | None]:
    """comm, state and start time (clock ticks after boot) from ``/proc/<pid>/stat``.

    comm is between the first ``(`` and the last ``)``: it may itself hold spaces and parentheses.
    """
    open_paren, close_paren = text.find("("), text.rfind(")")
    if open_paren < 0 or close_paren < open_paren:
        return None, None, None
    comm = text[open_paren + 1 : close_paren]
    fields = text[close_paren + 1 :].split()
    state = fields[0] if fields else None
    # Field 22 of stat is starttime; fields[] starts at field 3 (state).
    start_time = int(fields[19]) if len(fields) > 19 and fields[19].isdigit() else None
    return comm, state, start_time


def read_process(proc_root: Path, pid: int) -> Process | None:
    """The process ``pid`` as procfs shows it, or None when it does not exist."""
    directory = proc_root / str(pid)
    stat = _read_bytes(directory / "stat")
    if stat is None and not directory.is_dir():
        return None
    comm, state, start_time = parse_stat(stat.decode("utf-8", "replace")) if stat is not None else (None, None, None)
    comm_file = _read_bytes(directory / "comm")
    if comm_file is not None:
        comm = comm_file.decode("utf-8", "replace").rstrip("\n")
    cmdline = _read_bytes(directory / "cmdline")
    argv0 = cmdline.split(b"\0", 1)[0].decode("utf-8", "replace") if cmdline else None
    return Process(pid=pid, argv0=argv0 or None, comm=comm or None, state=state, start_time=start_time)


def name_matches(expected: str, process: Process) -> bool:
    """Whether ``process`` is still the one named ``expected``.

    It is when ``expected`` equals its argv[0] or its comm, when the base names of ``expected`` and argv[0] are
    equal (``/usr/bin/python3`` and ``python3``), or when comm is the base name of ``expected`` cut to 15 characters.
    """
    wanted = expected.strip()
    if not wanted:
        return False
    base = posixpath.basename(wanted) or wanted
    if process.argv0 is not None and (wanted == process.argv0 or base == (posixpath.basename(process.argv0) or process.argv0)):
        return True
    return process.comm is not None and process.comm in (wanted, base[:COMM_LENGTH])


def refusal(pid: int, own_pid: int, parent_pid: int, proc_root: Path) -> str | None:
    """Why ``pid`` must not be ended, or None when it may be."""
    if pid <= 0:
        return f"refusing to end pid {pid}: not a process id (0 and negative pids signal process groups)"
    reason = {1: "it is init", own_pid: "it is this module's own process", parent_pid: "it is this module's parent"}.get(pid)
    if reason is None:
        return None
    process = read_process(proc_root, pid)
    what = f"pid {pid}" if process is None else process.describe()
    return f"refusing to end {what}: {reason}"


def parse_expect_names(raw: t.Mapping[t.Any, t.Any] | None) -> dict[int, str]:
    """``expect_names`` with its keys as ints (module arguments arrive with text keys)."""
    names: dict[int, str] = {}
    for key, value in (raw or {}).items():
        try:
            pid = int(str(key).strip())
        except ValueError:
            raise ProcessEndError(f"expect_names key {key!r} is not a pid") from None
        names[pid] = str(value)
    return names


def parse_expect_start_times(raw: t.Mapping[t.Any, t.Any] | None) -> dict[int, int | None]:
    """``expect_start_times`` with int keys and values (module arguments arrive with text keys; null stays None)."""
    times: dict[int, int | None] = {}
    for key, value in (raw or {}).items():
        try:
            pid = int(str(key).strip())
        except ValueError:
            raise ProcessEndError(f"expect_start_times key {key!r} is not a pid") from None
        if value is None:
            times[pid] = None
            continue
        if isinstance(value, bool) or not str(value).strip().isdigit():
            raise ProcessEndError(f"expect_start_times value {value!r} for pid {pid} is not a start time")
        times[pid] = int(str(value).strip())
    return times


def start_time_mismatch(pid: int, expected: int | None, process: Process) -> str | None:
    """Why ``process`` is not the one that had ``pid`` with start time ``expected``, or None when it is."""
    if expected is None:
        return f"pid {pid} was not running when it was looked up: {process.name!r} has the pid now (pid reused)"
    if process.start_time is None:
        return f"pid {pid}: its start time cannot be read, so it cannot be told from another process with the pid"
    if process.start_time != expected:
        return f"pid {pid} started at {process.start_time}, not {expected} (clock ticks after boot): another process has the pid (pid reused)"
    return None


@dataclass
class EndResult:
    """What :func:`end_processes` ended (or would end), found gone, skipped, and could not end."""

    ended: list[dict[str, t.Any]] = field(default_factory=list)
    gone: list[int] = field(default_factory=list)
    skipped: list[dict[str, t.Any]] = field(default_factory=list)
    before: list[Process] = field(default_factory=list)
    remaining: list[Process] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.ended)

    @property
    def diff(self) -> dict[str, str]:
        """Before: ``pid name`` of every requested process that existed; after: those still there."""
        return {"before": "".join(p.line() + "\n" for p in self.before), "after": "".join(p.line() + "\n" for p in self.remaining)}

    def as_dict(self) -> dict[str, t.Any]:
        return {"ended": self.ended, "gone": self.gone, "skipped": self.skipped, "diff": self.diff}


class _Ender:
    def __init__(self, proc_root: Path, kill: Kill, clock: t.Callable[[], float], sleep: t.Callable[[float], None]) -> None:
        self.proc_root = proc_root
        self.kill = kill
        self.clock = clock
        self.sleep = sleep

    def current(self, process: Process) -> Process | None:
        """The process now, or None when it has ended: gone, a zombie, or its pid reused (another start time)."""
        now = read_process(self.proc_root, process.pid)
        if now is None or now.zombie:
            return None
        if process.start_time is not None and now.start_time is not None and now.start_time != process.start_time:
            return None
        return now

    def signal(self, processes: t.Iterable[Process], signum: int, result: EndResult) -> list[Process]:
        """Send ``signum`` to each process still there; the ones it was sent to."""
        sent = []
        for process in processes:
            if self.current(process) is None:
                continue
            try:
                self.kill(process.pid, signum)
            except ProcessLookupError:
                continue
            except PermissionError as exc:
                result.failures.append(f"not permitted to send {signal.Signals(signum).name} to {process.describe()}: {exc.strerror}")
                result.remaining.append(process)
                continue
            sent.append(process)
        return sent

    def wait(self, processes: t.Sequence[Process], seconds: float) -> list[Process]:
        """Wait up to ``seconds`` until the processes have ended; the ones still there (as they are now)."""
        deadline = self.clock() + seconds
        while True:
            survivors = [now for now in (self.current(p) for p in processes) if now is not None]
            left = deadline - self.clock()
            if not survivors or left <= 0:
                return survivors
            self.sleep(min(POLL_INTERVAL, left))


def end_processes(
    pids: t.Sequence[int],
    timeout: float,
    expect_names: t.Mapping[int, str] | None = None,
    proc_root: Path = Path("/proc"),
    check_mode: bool = False,
    kill: Kill = os.kill,
    clock: t.Callable[[], float] = time.monotonic,
    sleep: t.Callable[[float], None] = time.sleep,
    kill_wait: float = KILL_WAIT,
    own_pid: int | None = None,
    parent_pid: int | None = None,
    expect_start_times: t.Mapping[int, int | None] | None = None,
) -> EndResult:
    """End ``pids``: SIGTERM, up to ``timeout`` seconds' wait, SIGKILL, up to ``kill_wait`` seconds' wait.

    Raises :class:`ProcessEndError`, before signalling anything, for pid 1, pids <= 0 and this process and its
    parent. A pid that does not exist or is a zombie goes to ``gone``; one whose start time is not the one in
    ``expect_start_times`` (None there: the pid was not running when looked up), or whose name no longer matches
    ``expect_names``, goes to ``skipped``. In check mode the processes that would be signalled are returned in
    ``ended`` with SIGTERM and nothing is signalled. A process still there after SIGKILL is a failure naming it.
    """
    if timeout < 0:
        raise ProcessEndError(f"timeout must be 0 or more, not {timeout}")
    own = os.getpid() if own_pid is None else own_pid
    parent = os.getppid() if parent_pid is None else parent_pid
    unique = list(dict.fromkeys(pids))
    refusals = [r for r in (refusal(pid, own, parent, proc_root) for pid in unique) if r is not None]
    if refusals:
        raise ProcessEndError("; ".join(refusals))

    expected = dict(expect_names or {})
    started = dict(expect_start_times or {})
    result = EndResult()
    targets: list[Process] = []
    for pid in unique:
        process = read_process(proc_root, pid)
        if process is None or process.zombie:
            result.gone.append(pid)
            continue
        result.before.append(process)
        if pid in started:
            mismatch = start_time_mismatch(pid, started[pid], process)
            if mismatch is not None:
                skip = {"pid": pid, "name": process.name, "expected_start_time": started[pid], "start_time": process.start_time, "reason": mismatch}
                result.skipped.append(skip)
                result.remaining.append(process)
                continue
        want = expected.get(pid)
        if want is not None and not name_matches(want, process):
            reason = f"pid {pid} is now {process.name!r}, not {want!r} (pid reused?)"
            result.skipped.append({"pid": pid, "name": process.name, "expected_name": want, "reason": reason})
            result.remaining.append(process)
            continue
        targets.append(process)

    if check_mode:
        result.ended = [p.as_dict(SIGTERM) for p in targets]
        return result

    ender = _Ender(proc_root, kill, clock, sleep)
    termed = ender.signal(targets, signal.SIGTERM, result)
    gone_before_signal = {p.pid for p in targets} - {p.pid for p in termed} - {p.pid for p in result.remaining}
    survivors = {p.pid for p in ender.wait(termed, timeout)}
    killed = ender.signal([p for p in termed if p.pid in survivors], signal.SIGKILL, result)
    stuck = ender.wait(killed, kill_wait)
    stuck_pids = {p.pid for p in stuck}
    failed = {p.pid for p in result.remaining}
    killed_pids = {p.pid for p in killed}

    for process in targets:
        if process.pid in gone_before_signal:
            result.gone.append(process.pid)
        elif process.pid in stuck_pids or process.pid in failed:
            continue
        else:
            result.ended.append(process.as_dict(SIGKILL if process.pid in killed_pids else SIGTERM))
    for process in stuck:
        state = process.state or "?"
        what = f"state {state}: {_STATES[state]}" if state in _STATES else f"state {state}"
        result.failures.append(f"{process.describe()} is still there {kill_wait:g} s after SIGKILL ({what})")
        result.remaining.append(process)
    result.remaining.sort(key=lambda p: unique.index(p.pid))
    return result
