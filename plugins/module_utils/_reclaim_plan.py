# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Decide how to free GPU memory: which units to stop, containers to remove, processes to end, and what to refuse.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

Input is a ``gpu_info`` result (GPU processes with their unit and container) and the host's systemd services
(``ansible_facts.services``). Each GPU process is, in this order:

1. *allowed*: a graphics process (``Xorg``, ``gnome-shell``...) by the basename of its name;
2. *own*: run by one of the collection's units (``sparkops-*``), kept unless ``include_own``;
3. freed by stopping a configured unit it runs in;
4. freed by removing its container: a configured one, or any running container holding the GPU when
   ``remove_gpu_containers``;
5. a *leftover* to end: its container is gone (a worker that outlived ``docker rm -f``), or it runs in no service
   and its name or command line matches ``leftover_processes`` (``ray::*``, ``VLLM::*``...); only when
   ``end_leftover_processes``, else it is refused;
6. otherwise *unknown*: refused, unless ``end_unknown_consumers``: then its service is stopped and disabled, its
   container removed, or the process ended.

Configured units are stopped and disabled whether or not they hold GPU memory (they are the conflicting stack);
configured units that do not exist are reported, not an error. ``ansible_facts.services`` also lists units that
are only referenced (``status: not-found``) and template units (``name@.service``): neither can be stopped, so
neither counts as existing. Nothing that is neither configured nor holding GPU memory is ever touched.

A container counts as running only when docker listed it running (``container_running`` true): a container docker
cannot see (podman, containerd, CRI-O, or no docker CLI) is never removed through docker, and a process in it is
not a leftover by name; it is an unknown consumer.
"""

from __future__ import annotations

import fnmatch
import re
import typing as t
from dataclasses import dataclass, field

UNIT_SUFFIXES = (".service", ".scope", ".socket", ".timer", ".target", ".mount", ".path", ".slice")
_TEMPLATE = re.compile(r"@\.[a-z]+$")
# Units that host other people's processes when pam_systemd is not in use (cron jobs, ssh sessions): an unknown GPU
# consumer found in one of them is ended, never the unit stopped and disabled.
PROTECTED_UNITS = (
    "ssh.service",
    "sshd.service",
    "cron.service",
    "crond.service",
    "atd.service",
    "dbus.service",
    "docker.service",
    "containerd.service",
    "systemd-*",
    "user@*",
    "getty@*",
    "init.scope",
)


class ReclaimSettingsError(ValueError):
    """A setting of the wrong type; the message names it."""


@dataclass(frozen=True)
class Settings:
    units: tuple[str, ...] = ()
    containers: tuple[str, ...] = ()
    allowed_processes: tuple[str, ...] = ("Xorg", "Xwayland", "gnome-shell")
    own_units: tuple[str, ...] = ("sparkops-*",)
    include_own: bool = False
    remove_gpu_containers: bool = True
    end_leftover_processes: bool = False
    leftover_processes: tuple[str, ...] = ("ray::*", "VLLM::*", "raylet", "gcs_server", "*vllm serve*", "*vllm.entrypoints*")
    end_unknown_consumers: bool = False

    @classmethod
    def from_mapping(cls, values: t.Mapping[str, t.Any]) -> Settings:
        if not isinstance(values, t.Mapping):
            raise ReclaimSettingsError(f"reclaim settings must be a dict, got {type(values).__name__}")
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(values) - known)
        if unknown:
            raise ReclaimSettingsError(f"unknown reclaim setting(s): {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        converted: dict[str, t.Any] = {}
        for name, value in values.items():
            default = getattr(cls, name)
            if isinstance(default, bool):
                if not isinstance(value, bool):
                    raise ReclaimSettingsError(f"reclaim setting {name} must be true or false, got {value!r}")
                converted[name] = value
            else:
                if isinstance(value, str) or not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
                    raise ReclaimSettingsError(f"reclaim setting {name} must be a list of strings, got {value!r}")
                converted[name] = tuple(value)
        return cls(**converted)


@dataclass
class Plan:
    units: list[str] = field(default_factory=list)
    units_absent: list[str] = field(default_factory=list)
    own_units: list[str] = field(default_factory=list)
    containers: list[str] = field(default_factory=list)
    processes: list[dict[str, t.Any]] = field(default_factory=list)
    kept: list[dict[str, t.Any]] = field(default_factory=list)
    freed: list[dict[str, t.Any]] = field(default_factory=list)
    refused: list[dict[str, t.Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, t.Any]:
        return {
            "units": self.units,
            "units_absent": self.units_absent,
            "own_units": self.own_units,
            "containers": self.containers,
            "processes": self.processes,
            "kept": self.kept,
            "freed": self.freed,
            "refused": self.refused,
            "refused_table": process_table(self.refused) if self.refused else "",
            "nothing_to_do": not (self.units or self.own_units or self.containers or self.processes),
        }


def unit_name(name: str) -> str:
    """``vllm-cluster`` -> ``vllm-cluster.service``; names with a unit suffix or a glob's ``*`` suffix stay."""
    return name if name.endswith(UNIT_SUFFIXES) or name.endswith("*") else f"{name}.service"


def matches(name: str, patterns: t.Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def basename(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def owner_text(process: t.Mapping[str, t.Any]) -> str:
    """'unit X, container Y (image)' or '-' for a process."""
    parts = []
    if process.get("unit"):
        parts.append(("user unit " if process.get("user_unit") else "unit ") + str(process["unit"]))
    if process.get("container_id"):
        label = process.get("container_name") or str(process["container_id"])[:12]
        state = "" if process.get("container_running") is not False else ", gone"
        parts.append(f"container {label}{state}")
    return ", ".join(parts) or "no unit"


def process_table(processes: t.Iterable[t.Mapping[str, t.Any]]) -> str:
    """A fixed-width table of GPU processes: pid, MiB, name, owner."""
    rows = [("PID", "MiB", "NAME", "OWNER")]
    for p in processes:
        used = p.get("used_mib")
        rows.append((str(p.get("pid")), "?" if used is None else str(used), str(p.get("name")), owner_text(p)))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return "\n".join(f"{a:>{widths[0]}}  {b:>{widths[1]}}  {c:<{widths[2]}}  {d}".rstrip() for a, b, c, d in rows)


def _container_matches(process: t.Mapping[str, t.Any], configured: t.Iterable[str]) -> str | None:
    cid = str(process.get("container_id") or "")
    name = process.get("container_name")
    for wanted in configured:
        if wanted == name or (len(wanted) >= 12 and cid.startswith(wanted)):
            return wanted
    return None


def _add(items: list[str], value: str) -> None:
    if value not in items:
        items.append(value)


def _stoppable(name: str, facts: t.Any) -> bool:
    """Whether a unit of ``ansible_facts.services`` exists as a unit systemctl can stop (not a template, not not-found)."""
    if _TEMPLATE.search(name):
        return False
    return not (isinstance(facts, t.Mapping) and facts.get("status") == "not-found")


def plan(gpu_info: t.Mapping[str, t.Any], services: t.Mapping[str, t.Any], settings: Settings) -> Plan:
    """The reclaim plan for one host."""
    result = Plan()
    existing = sorted(name for name, facts in services.items() if _stoppable(name, facts))
    for wanted in settings.units:
        pattern = unit_name(wanted)
        found = [name for name in existing if fnmatch.fnmatchcase(name, pattern)]
        if not found:
            result.units_absent.append(wanted)
        for name in found:
            if matches(name, settings.own_units):
                continue  # the collection's own units are only stopped through include_own
            _add(result.units, name)
    configured_units = frozenset(result.units)
    stopped = frozenset(name for name in configured_units if str(services[name].get("state", "")) != "running")
    containers = list(settings.containers)
    for process in gpu_info.get("processes", []):
        _classify(process, settings, result, containers, configured_units, stopped, services)
    result.containers = containers
    return result


def _classify(
    process: t.Mapping[str, t.Any],
    settings: Settings,
    result: Plan,
    containers: list[str],
    configured_units: frozenset[str],
    stopped_units: frozenset[str],
    services: t.Mapping[str, t.Any],
) -> None:
    entry = {key: process.get(key) for key in ("pid", "name", "used_mib", "unit", "user_unit", "container_id", "container_name", "container_running")}
    unit = process.get("unit")
    service = unit if unit and str(unit).endswith(".service") and not process.get("user_unit") else None
    if matches(basename(str(process.get("name", ""))), settings.allowed_processes):
        result.kept.append({**entry, "why": "allowed"})
        return
    if service and matches(service, settings.own_units):
        if not settings.include_own:
            result.kept.append({**entry, "why": "own"})
            return
        _add(result.own_units, service)
        result.freed.append({**entry, "by": f"stopping own unit {service}"})
        return
    outlived_unit = bool(service) and service in stopped_units
    if service and service in configured_units and not outlived_unit:
        result.freed.append({**entry, "by": f"stopping unit {service}"})
        return
    running_container = bool(process.get("container_id")) and process.get("container_running") is True
    configured = _container_matches(process, containers)
    if running_container and (configured or settings.remove_gpu_containers or settings.end_unknown_consumers):
        target = configured or process.get("container_name") or str(process["container_id"])
        _add(containers, target)
        result.freed.append({**entry, "by": f"removing container {target}"})
        return
    outlived = bool(process.get("container_id")) and process.get("container_running") is False
    text = (str(process.get("name", "")), basename(str(process.get("name", ""))), str(process.get("cmdline", "")))
    in_container = bool(process.get("container_id"))
    leftover = outlived or outlived_unit or (service is None and not in_container and any(matches(part, settings.leftover_processes) for part in text))
    stoppable = bool(service) and service in services and not matches(str(service), PROTECTED_UNITS)
    if (leftover and settings.end_leftover_processes) or (settings.end_unknown_consumers and not stoppable):
        why = "outlived its container" if outlived else "outlived its stopped unit" if outlived_unit else "leftover" if leftover else "unknown consumer"
        result.processes.append({"pid": process.get("pid"), "name": process.get("name"), "why": why})
        result.freed.append({**entry, "by": f"ending pid {process.get('pid')} ({why})"})
        return
    if settings.end_unknown_consumers and stoppable:
        _add(result.units, str(service))
        result.freed.append({**entry, "by": f"stopping unit {service} (unknown consumer)"})
        return
    result.refused.append({**entry, "why": "leftover (end_leftover_processes is off)" if leftover else "unknown consumer"})
