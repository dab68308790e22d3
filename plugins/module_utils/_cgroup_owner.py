# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Who owns a process: its systemd unit and container, read from ``/proc/<pid>/cgroup``.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

On cgroup v2 the file has one line ``0::/system.slice/vllm-cluster.service``; on cgroup v1 systemd's own hierarchy
is the ``name=systemd`` line. The unit is the innermost path component that is a systemd unit (``.service`` or
``.scope``), so a user service under ``user@1000.service/app.slice/`` is that service, and a path nested under a
container's root (a host that is itself a container, like the spark lab) still gives the unit inside it.

Containers are found the way their runtimes name cgroups: docker and podman with the systemd driver put a container
in ``docker-<id>.scope`` / ``libpod-<id>.scope``, containerd/CRI-O in ``cri-containerd-<id>.scope`` /
``crio-<id>.scope``; docker's cgroupfs driver uses ``/docker/<id>``. Only a path component *after* the unit part
counts for cgroupfs, so the cgroup a whole host-container sits in is not taken for a container on it.
"""

from __future__ import annotations

import re
import typing as t
from dataclasses import dataclass

_SCOPE_CONTAINER = re.compile(r"^(docker|libpod|cri-containerd|crio)-([0-9a-f]{12,64})\.scope$")
_CGROUPFS_RUNTIMES = {"docker": "docker"}
_CONTAINER_ID = re.compile(r"^[0-9a-f]{64}$")
_RUNTIME_NAMES = {"docker": "docker", "libpod": "podman", "cri-containerd": "containerd", "crio": "cri-o"}


@dataclass(frozen=True)
class CgroupOwner:
    cgroup: str
    unit: str | None
    user_unit: bool
    container_id: str | None
    container_runtime: str | None

    @property
    def service(self) -> str | None:
        """The systemd service that runs the process (system or user), else None (scopes, no unit)."""
        return self.unit if self.unit and self.unit.endswith(".service") else None

    def as_dict(self) -> dict[str, t.Any]:
        return {
            "cgroup": self.cgroup,
            "unit": self.unit,
            "user_unit": self.user_unit,
            "service": self.service,
            "container_id": self.container_id,
            "container_runtime": self.container_runtime,
        }


def cgroup_path(text: str) -> str:
    """The systemd cgroup path in a ``/proc/<pid>/cgroup`` text: the v1 ``name=systemd`` line, else the v2 line."""
    unified = ""
    for line in text.splitlines():
        parts = line.strip().split(":", 2)
        if len(parts) != 3:
            continue
        hierarchy, controllers, path = parts
        if controllers == "name=systemd":
            return path
        if hierarchy == "0" and controllers == "":
            unified = path
    return unified


def owner(text: str) -> CgroupOwner:
    """The unit and container owning a process, from its ``/proc/<pid>/cgroup`` text."""
    path = cgroup_path(text)
    parts = [part for part in path.split("/") if part]
    unit_at = -1
    for position, part in enumerate(parts):
        if part.endswith((".service", ".scope")):
            unit_at = position
    unit = parts[unit_at] if unit_at >= 0 else None
    user_unit = unit is not None and any(p.startswith("user@") and p.endswith(".service") for p in parts[:unit_at])
    container_id = runtime = None
    match = _SCOPE_CONTAINER.match(unit or "")
    if match:
        runtime, container_id = _RUNTIME_NAMES[match.group(1)], match.group(2)
    else:
        after = parts[unit_at + 1 :]
        for first, second in zip(after, after[1:], strict=False):
            if first in _CGROUPFS_RUNTIMES and _CONTAINER_ID.match(second):
                runtime, container_id = _CGROUPFS_RUNTIMES[first], second
    return CgroupOwner(cgroup=path, unit=unit, user_unit=user_unit, container_id=container_id, container_runtime=runtime)
