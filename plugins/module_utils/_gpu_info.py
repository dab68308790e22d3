# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What holds GPU memory on a host, and how much memory a new GPU process can get.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

Puts together nvidia-smi's GPUs and compute processes (:mod:`._nvidia_smi`), each process's owner from
``/proc/<pid>/cgroup`` (:mod:`._cgroup_owner`), container names from the container runtime, and ``/proc/meminfo``
(:mod:`._meminfo`). When the driver reports no memory size (GB10: unified memory) the memory a GPU process can get
is ``MemAvailable``; on discrete GPUs it is the GPUs' free memory.

What the result says may end up in Ansible's output and logs, and the reclaim plan acts on it:

* a process is identified by its pid *and* its start time (field 22 of ``/proc/<pid>/stat``), which
  ``process_end`` compares before it signals anything, so a pid reused since is never ended;
* command lines are returned with the values of secret flags (``--api-key``, ``--hf-token``, ``--token``,
  ``--password``, any ``--*-key``/``--*-token``/``--*-secret``/``--*-password``) and of ``*_TOKEN``, ``*_KEY``,
  ``*_SECRET``, ``*_PASSWORD`` assignments replaced by ``********`` (:func:`redact_argv`);
* a cgroup's name is only a claim (a user may name a cgroup of their own ``docker-<id>.scope``): a process is taken
  for a running docker container's only when docker lists that exact full id and the container's main process (from
  ``docker container inspect``) is in the same container cgroup; a container docker does not list is called gone only
  when its cgroup lies where docker's daemon puts containers (not in a delegated subtree).
"""

from __future__ import annotations

import re
import typing as t
from pathlib import Path

from ansible_collections.sparkops.inference.plugins.module_utils._cgroup_owner import CgroupOwner, cgroup_path, owner
from ansible_collections.sparkops.inference.plugins.module_utils._docker_cli import FULL_ID, Container
from ansible_collections.sparkops.inference.plugins.module_utils._meminfo import Meminfo, MeminfoError, parse_meminfo
from ansible_collections.sparkops.inference.plugins.module_utils._nvidia_smi import (
    ComputeApp,
    Gpu,
    NvidiaSmiError,
    parse_compute_apps,
    parse_gpus,
    query_args,
)
from ansible_collections.sparkops.inference.plugins.module_utils._process_end import parse_stat

# Runs an argv and returns (rc, stdout, stderr).
Runner = t.Callable[[list[str]], tuple[int, str, str]]
# Asks the container runtime for the main process of each running container (full id -> pid; 0 when not running).
MainPids = t.Callable[[list[str]], t.Mapping[str, int]]

REDACTED = "********"
_SECRET_WORD = r"(?:token|key|secret|password|passwd)"
# A flag whose value is a secret: --api-key, --hf-token, --token, --password, --redis-password, --hf_token...
_SECRET_FLAG = re.compile(rf"--?(?:[a-z0-9]+[-_])*{_SECRET_WORD}", re.IGNORECASE)
_VALUE = r"(?:\"[^\"]*\"|'[^']*'|\S+)"
# The same within an argument (--api-key=sk-..., or a shell command line passed as one argument).
_SECRET_FLAG_IN_TEXT = re.compile(rf"(?<![\w-])(--?(?:[a-z0-9]+[-_])*{_SECRET_WORD})(=|\s+)({_VALUE})", re.IGNORECASE)
# KEY=value forms of *_TOKEN, *_KEY, *_SECRET, *_PASSWORD (env HF_TOKEN=..., docker run -e HF_TOKEN=...).
_SECRET_ASSIGNMENT = re.compile(rf"(?<![\w-])((?:[a-z0-9]+_)+{_SECRET_WORD})=({_VALUE})", re.IGNORECASE)


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


def redact_text(text: str) -> str:
    """``text`` with the values of secret flags and ``*_TOKEN=``-like assignments in it replaced by ``********``."""
    text = _SECRET_FLAG_IN_TEXT.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
    return _SECRET_ASSIGNMENT.sub(lambda m: f"{m.group(1)}={REDACTED}", text)


def redact_argv(argv: t.Sequence[str]) -> list[str]:
    """A command line with its secrets' values replaced by ``********``: the argument after a secret flag
    (``--api-key sk-...``), and within any argument ``--api-key=...``, ``HF_TOKEN=...`` and the like."""
    redacted: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            redacted.append(REDACTED)
            hide_next = False
        elif _SECRET_FLAG.fullmatch(arg):
            redacted.append(arg)
            hide_next = True
        else:
            redacted.append(redact_text(arg))
    return redacted


def _listed(container_id: str | None, containers: list[Container] | None) -> Container | None:
    """The container docker lists with exactly this id (docker names its cgroups by the full id; no prefixes)."""
    if container_id is None or containers is None:
        return None
    return next((container for container in containers if container.id == container_id), None)


def _confirmed(who: CgroupOwner, container: Container, proc_root: Path, main_pids: t.Mapping[str, int]) -> bool:
    """Whether docker's main process of ``container`` is in the container cgroup the process is in."""
    main = main_pids.get(container.id)
    prefix = who.container_cgroup
    if not main or not prefix:
        return False
    main_path = cgroup_path(read_text(proc_root / str(main) / "cgroup") or "")
    return main_path == prefix or main_path.startswith(prefix + "/")


def _start_time(proc_root: Path, pid: int) -> int | None:
    stat = read_text(proc_root / str(pid) / "stat")
    return None if stat is None else parse_stat(stat)[2]


def describe_process(app: ComputeApp, proc_root: Path, containers: list[Container] | None, main_pids: t.Mapping[str, int] | None = None) -> dict[str, t.Any]:
    """One GPU process: nvidia-smi's view plus its start time, its command line (secrets redacted), unit and container.

    ``main_pids`` maps a running container's full id to its main process as docker inspect reports it. A process
    whose cgroup names a container docker lists running is that container's (name, image, ``container_running``
    true, ``container_confirmed`` true) only when the container's main process is in the same container cgroup;
    otherwise ``container_confirmed`` is false and nothing is taken from docker's listing. With ``main_pids`` None
    (a report that acts on nothing, such as node_recon's) docker is not asked: a listed running container is taken
    from the listing alone (``container_confirmed`` None), unless its cgroup is in a delegated subtree.

    ``container_running`` is false when docker lists the container stopped, or does not list it while the cgroup is
    where docker's daemon puts its containers (gone: a worker that outlived ``docker rm -f``). It is None when the
    process is in no container, when docker could not be asked (``containers`` is None), when docker did not confirm
    it, or when the container belongs to another runtime (podman, containerd, CRI-O) that the docker listing does not
    show: only docker's own listing can prove a container gone.
    """
    cmdline_raw = read_text(proc_root / str(app.pid) / "cmdline")
    cgroup_text = read_text(proc_root / str(app.pid) / "cgroup")
    who = owner(cgroup_text or "")
    listed = _listed(who.container_id, containers)
    container: Container | None = None
    exists: bool | None = None
    confirmed: bool | None = None
    if who.container_id is None or containers is None:
        pass
    elif listed is not None and listed.running and main_pids is None and not who.delegated:
        container, exists = listed, True  # not confirmed: docker was not asked (see above)
    elif listed is not None and listed.running:
        confirmed = main_pids is not None and _confirmed(who, listed, proc_root, main_pids)
        container, exists = (listed, True) if confirmed else (None, None)
    elif listed is not None and not who.delegated:
        container, exists = listed, False  # stopped while the process lives on
    elif listed is None and who.container_runtime == "docker" and FULL_ID.match(who.container_id) and not who.delegated:
        exists = False  # gone
    elif listed is not None or who.container_runtime == "docker":
        confirmed = False  # named like docker's, in a cgroup docker's daemon does not make
    return {
        "pid": app.pid,
        "name": app.name,
        "used_mib": app.used_mib,
        "gpu_uuid": app.gpu_uuid,
        "running": cmdline_raw is not None,
        "start_time": _start_time(proc_root, app.pid),
        "cmdline": " ".join(redact_argv([part for part in (cmdline_raw or "").split("\0") if part])),
        **who.as_dict(),
        "container_name": container.name if container else None,
        "container_image": container.image if container else None,
        "container_running": exists,
        "container_confirmed": confirmed,
    }


def _running_container_ids(apps: list[ComputeApp], proc_root: Path, containers: list[Container] | None) -> list[str]:
    """The full ids of the running containers docker lists that the GPU processes' cgroups name."""
    ids = []
    for app in apps:
        listed = _listed(owner(read_text(proc_root / str(app.pid) / "cgroup") or "").container_id, containers)
        if listed is not None and listed.running and listed.id not in ids:
            ids.append(listed.id)
    return ids


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
    main_pids: MainPids | None = None,
) -> dict[str, t.Any]:
    """The module's result: GPUs, processes with owners, host memory, the summary and the top memory holders.

    ``main_pids`` is asked once, for the running containers the processes' cgroups name (none: not asked)."""
    ids = _running_container_ids(apps, proc_root, containers)
    mains = main_pids(ids) if main_pids is not None and ids else {}
    processes = [describe_process(app, proc_root, containers, mains) for app in apps]
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
    main_pids: MainPids | None = None,
) -> dict[str, t.Any]:
    """Ask nvidia-smi (through ``run``) for the GPUs and their compute processes, read ``proc_root``/meminfo, and
    return :func:`gpu_report` (``containers`` is called once the GPU side was read, then ``main_pids`` for the
    running containers the processes' cgroups name). Raises :class:`GpuInfoError`."""
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
    return gpu_report(gpus, apps, meminfo, proc_root, containers(), top_count=top_count, main_pids=main_pids)
