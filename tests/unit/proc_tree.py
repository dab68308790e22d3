# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Build a fake procfs for the gpu_info tests: pid directories with cmdline, cgroup and status, and a meminfo.

``cmdline`` is written NUL-separated with a trailing NUL, as the kernel does; ``status`` holds ``Name:`` and, when
``rss_kib`` is set, ``VmRSS:`` (kernel threads have none); ``stat`` only when ``start_time`` is set, with it as field
22 (starttime, clock ticks after boot). A few non-pid entries are added so that code walking the tree must skip them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "nvidia_smi"

JUPYTER_ID = "5c0ffee15c0ffee15c0ffee15c0ffee15c0ffee15c0ffee15c0ffee15c0ffee1"


@dataclass(frozen=True)
class Proc:
    pid: int
    cmdline: tuple[str, ...] = ()
    cgroup: str = ""
    name: str = ""
    rss_kib: int | None = None
    start_time: int | None = None


# A GB10 head node running the processes of gb10_apps_busy.txt (graphics in the greeter's session, a jupyter
# container, the old vLLM service), plus a kernel thread (no VmRSS) and sshd (no GPU).
GB10_PROCS = [
    Proc(2741, ("/usr/lib/xorg/Xorg", "vt1", "-displayfd", "3"), "0::/user.slice/user-128.slice/session-c1.scope\n", "Xorg", 90_000, 2_211),
    Proc(3046, ("/usr/bin/gnome-shell",), "0::/user.slice/user-128.slice/session-c1.scope\n", "gnome-shell", 250_000, 2_390),
    Proc(114687, ("/usr/local/bin/python", "-m", "jupyterlab"), f"0::/system.slice/docker-{JUPYTER_ID}.scope\n", "python", 2_100_000, 811_042),
    Proc(118211, ("VLLM::EngineCore",), "0::/system.slice/vllm-cluster.service\n", "VLLM::EngineCore", 4_500_000, 912_377),
    Proc(2, (), "0::/\n", "kthreadd", None),
    Proc(900, ("/usr/sbin/sshd", "-D"), "0::/system.slice/ssh.service\n", "sshd", 8_000),
]


def stat_line(pid: int, comm: str, state: str, start_time: int) -> str:
    """A ``/proc/<pid>/stat`` line with ``start_time`` as field 22 (starttime)."""
    # pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime
    # priority nice num_threads itrealvalue starttime vsize ...
    return f"{pid} ({comm}) {state} 1 {pid} {pid} 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 {start_time} 1000 10 18446744073709551615\n"


def fixture_text(name: str) -> str:
    """A file of the nvidia_smi fixture folder."""
    return (FIXTURES / name).read_text(encoding="utf-8")


def make_proc(root: Path, procs: list[Proc], meminfo: str | None = None) -> Path:
    """Write ``procs`` (and ``meminfo``) under ``root`` and return it."""
    root.mkdir(parents=True, exist_ok=True)
    for non_pid in ("sys", "self", "1a"):
        (root / non_pid).mkdir(exist_ok=True)
    (root / "uptime").write_text("12.34 56.78\n", encoding="utf-8")
    if meminfo is not None:
        (root / "meminfo").write_text(meminfo, encoding="utf-8")
    for proc in procs:
        directory = root / str(proc.pid)
        directory.mkdir()
        (directory / "cmdline").write_bytes(b"".join(part.encode() + b"\0" for part in proc.cmdline))
        (directory / "cgroup").write_text(proc.cgroup, encoding="utf-8")
        status = f"Name:\t{proc.name}\nUmask:\t0022\nState:\tS (sleeping)\nPid:\t{proc.pid}\n"
        if proc.rss_kib is not None:
            status += f"VmPeak:\t{proc.rss_kib * 2} kB\nVmRSS:\t{proc.rss_kib:>8} kB\nVmSwap:\t       0 kB\n"
        (directory / "status").write_text(status + "Threads:\t1\n", encoding="utf-8")
        if proc.start_time is not None:
            (directory / "stat").write_text(stat_line(proc.pid, proc.name, "S", proc.start_time), encoding="utf-8")
    return root
