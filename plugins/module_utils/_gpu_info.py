# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What holds GPU memory on a host, and how much memory a new GPU process can get.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

Puts together nvidia-smi's GPUs and compute processes (:mod:`._nvidia_smi`), each process's owner from
``/proc/<pid>/cgroup`` (:mod:`._cgroup_owner`), container names from the container runtime, and ``/proc/meminfo``
(:mod:`._meminfo`). When the driver reports no memory size (GB10: unified memory) the memory a GPU process can get
is ``MemAvailable``; on discrete GPUs it is the GPUs' free memory.
"""

from __future__ import annotations

import typing as t
from pathlib import Path

from ansible_collections.sparkops.inference.plugins.module_utils._cgroup_owner import owner
from ansible_collections.sparkops.inference.plugins.module_utils._docker_cli import Container
from ansible_collections.sparkops.inference.plugins.module_utils._meminfo import Meminfo, MeminfoError, parse_meminfo
from ansible_collections.sparkops.inference.plugins.module_utils._nvidia_smi import (
    ComputeApp,
    Gpu,
    NvidiaSmiError,
    parse_compute_apps,
    parse_gpus,
    query_args,
)

# Runs an argv and returns (rc, stdout, stderr).
Runner = t.Callable[[list[str]], tuple[int, str, str]]


class GpuInfoError(Exception):
    """nvidia-smi failed, or its output or /proc/meminfo could not be read; ``rc`` is nvidia-smi's when it failed."""

    def __init__(self, message: str, rc: int | None = None) -> None:
        super().__init__(message)
        self.rc = rc


def read_text(path: Path) -> str | None:
    """A /proc file's text, or None when the process is gone or the file unreadable."""
    try:
        return path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return None


def _container(container_id: str | None, containers: list[Container] | None) -> Container | None:
    if container_id is None or containers is None:
        return None
    for container in containers:
        if container.id.startswith(container_id) or container_id.startswith(container.id):
            return container
    return None


def describe_process(app: ComputeApp, proc_root: Path, containers: list[Container] | None) -> dict[str, t.Any]:
    """One GPU process: nvidia-smi's view plus its command line, unit and container.

    ``container_running`` is None when the process is in no container, when docker could not be asked
    (``containers`` is None), or when the container belongs to another runtime (podman, containerd, CRI-O) that the
    docker listing does not show: only docker's own listing can prove a container gone.
    """
    cmdline_raw = read_text(proc_root / str(app.pid) / "cmdline")
    cgroup_text = read_text(proc_root / str(app.pid) / "cgroup")
    who = owner(cgroup_text or "")
    container = _container(who.container_id, containers)
    exists: bool | None = None
    if container is not None:
        exists = container.running
    elif who.container_id is not None and containers is not None and who.container_runtime == "docker":
        exists = False
    return {
        "pid": app.pid,
        "name": app.name,
        "used_mib": app.used_mib,
        "gpu_uuid": app.gpu_uuid,
        "running": cmdline_raw is not None,
        "cmdline": " ".join(part for part in (cmdline_raw or "").split("\0") if part),
        **who.as_dict(),
        "container_name": container.name if container else None,
        "container_image": container.image if container else None,
        "container_running": exists,
    }


def memory_summary(gpus: list[Gpu], meminfo: Meminfo) -> dict[str, t.Any]:
    """Total and available memory for GPU work: the host's on unified memory, the GPUs' otherwise."""
    unified = not gpus or any(gpu.unified for gpu in gpus)
    if unified:
        return {"unified_memory": True, "total_mib": meminfo.total_mib, "available_mib": meminfo.available_mib}
    return {
        "unified_memory": False,
        "total_mib": sum(gpu.memory_total_mib or 0 for gpu in gpus),
        "available_mib": sum(gpu.memory_free_mib or 0 for gpu in gpus),
    }


def _rss_mib(status: str) -> int:
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            fields = line.split()
            return int(fields[1]) // 1024 if len(fields) > 1 and fields[1].isdigit() else 0
    return 0


def top_memory(proc_root: Path, count: int) -> list[dict[str, t.Any]]:
    """The ``count`` processes with the largest resident memory: on unified memory, what else holds it."""
    found = []
    for entry in proc_root.iterdir() if count > 0 else ():
        if not entry.name.isdigit():
            continue
        status = read_text(entry / "status")
        if status is None:
            continue
        rss = _rss_mib(status)
        if rss:
            found.append((rss, int(entry.name), status))
    found.sort(reverse=True)
    top = []
    for rss, pid, status in found[:count]:
        name = next((line.partition(":")[2].strip() for line in status.splitlines() if line.startswith("Name:")), "?")
        who = owner(read_text(proc_root / str(pid) / "cgroup") or "")
        top.append({"pid": pid, "name": name, "rss_mib": rss, "unit": who.unit, "container_id": who.container_id})
    return top


def gpu_report(
    gpus: list[Gpu],
    apps: list[ComputeApp],
    meminfo: Meminfo,
    proc_root: Path,
    containers: list[Container] | None,
    top_count: int = 0,
) -> dict[str, t.Any]:
    """The module's result: GPUs, processes with owners, host memory, the summary and the top memory holders."""
    processes = [describe_process(app, proc_root, containers) for app in apps]
    return {
        "gpus": [gpu.as_dict() for gpu in gpus],
        "processes": processes,
        "used_mib": sum(p["used_mib"] or 0 for p in processes),
        "meminfo": meminfo.as_dict(),
        **memory_summary(gpus, meminfo),
        "top_memory": top_memory(proc_root, top_count),
    }


def collect(
    run: Runner,
    nvidia_smi: str,
    proc_root: Path,
    containers: t.Callable[[], list[Container] | None] = lambda: None,
    top_count: int = 0,
) -> dict[str, t.Any]:
    """Ask nvidia-smi (through ``run``) for the GPUs and their compute processes, read ``proc_root``/meminfo, and
    return :func:`gpu_report` (``containers`` is called once the GPU side was read). Raises :class:`GpuInfoError`."""
    outputs = {}
    for kind in ("gpu", "compute-apps"):
        rc, out, err = run([nvidia_smi, *query_args(kind)])
        if rc != 0:
            raise GpuInfoError(f"{nvidia_smi} --query-{kind} failed (rc {rc}): {(err or out).strip()}", rc)
        outputs[kind] = out
    try:
        gpus = parse_gpus(outputs["gpu"])
        apps = parse_compute_apps(outputs["compute-apps"])
        meminfo = parse_meminfo(read_text(proc_root / "meminfo") or "")
    except (NvidiaSmiError, MeminfoError) as exc:
        raise GpuInfoError(str(exc)) from exc
    return gpu_report(gpus, apps, meminfo, proc_root, containers(), top_count=top_count)
