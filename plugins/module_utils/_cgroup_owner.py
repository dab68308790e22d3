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

A cgroup's name is only a claim: systemd delegates the subtree of a user's service manager (``user@UID.service``)
to that user, who may create ``docker-<any id>.scope`` there. :attr:`CgroupOwner.delegated` says so, and
:attr:`CgroupOwner.container_cgroup` is the path that the container runtime's own word (the cgroup of the container's
main process) must confirm before the process is taken for the container's (``_gpu_info``).
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

    @property
    def container_cgroup(self) -> str | None:
        """The cgroup path down to the component that names the container (its scope, or cgroupfs's ``<id>``)."""
        if self.container_id is None:
            return None
        parts = [part for part in self.cgroup.split("/") if part]
        for position in range(len(parts) - 1, -1, -1):
            if parts[position] == self.container_id or parts[position].endswith(f"-{self.container_id}.scope"):
                return "/" + "/".join(parts[: position + 1])
        return None

    @property
    def delegated(self) -> bool:
        """Whether the container's cgroup lies where someone other than systemd and the system's runtime may name
        cgroups at will: in a user's service manager (``user@UID.service``, delegated to the user; rootless runtimes
        put their containers there), or a scope below a unit rather than in a slice (systemd puts scopes only in
        slices; below a unit is a subtree delegated to that unit's processes). The system's docker never does."""
        path = self.container_cgroup or self.cgroup
        parts = [part for part in path.split("/") if part]
        if any(part.startswith("user@") and part.endswith(".service") for part in parts):
            return True
        return len(parts) >= 2 and parts[-1].endswith(".scope") and not parts[-2].endswith(".slice")

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
