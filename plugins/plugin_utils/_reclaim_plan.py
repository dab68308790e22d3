# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Decide how to free GPU memory: which units to stop, containers to remove, processes to end, and what to refuse.

Note that this plugin util is **PRIVATE** to the collection. It can have breaking changes at any time.

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

*Protected* units (:data:`PROTECTED_UNITS`: remote access, the network, the bus, systemd's own, consoles, cron, the
container engines, the GPU driver's daemons, and the collection's own units) are never planned, whatever a setting
matches: a configured pattern that matches one is reported in ``units_protected``; a configured name that names one
exactly is in ``units_protected_named``, which the role fails on, naming ``gpu_reclaim_units``.

A container counts as running only when docker listed it running (``container_running`` true): a container docker
cannot see (podman, containerd, CRI-O, or no docker CLI) or did not confirm (``container_confirmed`` false: its
cgroup is named like a docker container's, but docker's main process of that container is elsewhere) is never removed
through docker, and a process in it is not a leftover by name; it is an unknown consumer. A configured container
matches by its exact name or its full 64-hex id, never by an id prefix. The collection's own containers
(``own_containers``: ``sparkops-vllm``, ``sparkops-ray``, which the docker runtime runs from the ``sparkops-*`` units)
are never removed: a process in one is *own* (with ``include_own`` the own unit running it is stopped), and a
configured entry naming one is in ``containers_protected_named``.
"""

from __future__ import annotations

import fnmatch
import re
import typing as t
from dataclasses import dataclass, field

UNIT_SUFFIXES = (".service", ".scope", ".socket", ".timer", ".target", ".mount", ".path", ".slice")
_TEMPLATE = re.compile(r"@\.[a-z]+$")
_GLOB = re.compile(r"[*?\[]")
_FULL_ID = re.compile(r"^[0-9a-fA-F]{64}$")
# Units never stopped or disabled, whatever a setting matches (shell patterns on the full unit name). Stopping one
# would cut the host off (ssh, the network, D-Bus, systemd's own daemons, logins and consoles), end other people's
# work or the audit trail (cron, at, the container engines, which also run the containers this role removes through
# them; rsyslog, auditd, polkit), or take the GPU's own daemons away (nvidia-persistenced, fabric manager). They also
# host other people's processes when pam_systemd is not in use (cron jobs, ssh sessions): an unknown GPU consumer
# found in one of them is ended, never the unit stopped and disabled. The collection's own units (``own_units``) are
# protected too: they are only stopped through ``include_own``, and never disabled.
PROTECTED_UNITS = (
    "ssh.*",
    "sshd.*",
    "ssh@*",
    "sshd@*",
    "sshd-*",
    "systemd-*",
    "dbus.*",
    "dbus-broker.*",
    "networking.*",
    "NetworkManager*",
    "ifup@*",
    "wpa_supplicant*",
    "netplan-*",
    "docker.*",
    "containerd.*",
    "podman*",
    "crio.*",
    "cron.*",
    "crond.*",
    "anacron.*",
    "atd.*",
    "getty@*",
    "serial-getty@*",
    "console-getty.*",
    "autovt@*",
    "user@*",
    "user-runtime-dir@*",
    "init.scope",
    "polkit.*",
    "rsyslog.*",
    "auditd.*",
    "nvidia-persistenced.*",
    "nvidia-fabricmanager.*",
)


class ReclaimSettingsError(ValueError):
    """A setting of the wrong type; the message names it."""


@dataclass(frozen=True)
class Settings:
    units: tuple[str, ...] = ()
    containers: tuple[str, ...] = ()
    allowed_processes: tuple[str, ...] = ("Xorg", "Xwayland", "gnome-shell")
    own_units: tuple[str, ...] = ("sparkops-*",)
    # roles/vllm_serve/vars/main.yml __vllm_serve_container; sparkops-ray, ray_cluster's former docker runtime's
    own_containers: tuple[str, ...] = ("sparkops-vllm", "sparkops-ray")
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
    units_protected: list[dict[str, str]] = field(default_factory=list)
    units_protected_named: list[str] = field(default_factory=list)
    own_units: list[str] = field(default_factory=list)
    containers: list[str] = field(default_factory=list)
    containers_protected_named: list[str] = field(default_factory=list)
    processes: list[dict[str, t.Any]] = field(default_factory=list)
    kept: list[dict[str, t.Any]] = field(default_factory=list)
    freed: list[dict[str, t.Any]] = field(default_factory=list)
    refused: list[dict[str, t.Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, t.Any]:
        return {
            "units": self.units,
            "units_absent": self.units_absent,
            "units_protected": self.units_protected,
            "units_protected_named": self.units_protected_named,
            "own_units": self.own_units,
            "containers_protected_named": self.containers_protected_named,
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
        state = ", gone" if process.get("container_running") is False else ""
        if process.get("container_confirmed") is False:
            state = ", not confirmed by docker"
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
    """The configured entry naming the process's container: its exact name or its full id (never an id prefix)."""
    cid = str(process.get("container_id") or "")
    name = process.get("container_name")
    for wanted in configured:
        if (name and wanted == name) or (_FULL_ID.match(wanted) and wanted.lower() == cid):
            return wanted
    return None


def protected_unit(name: str, settings: Settings) -> bool:
    """Whether the unit ``name`` is never stopped and disabled (:data:`PROTECTED_UNITS`, the collection's own)."""
    return matches(name, PROTECTED_UNITS) or matches(name, settings.own_units)


def own_container(process: t.Mapping[str, t.Any], settings: Settings) -> bool:
    """Whether the process runs in one of the collection's own containers, as docker named and confirmed it."""
    name = process.get("container_name")
    return bool(process.get("container_id")) and process.get("container_running") is True and bool(name) and matches(str(name), settings.own_containers)


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
        if not _GLOB.search(pattern) and protected_unit(pattern, settings):
            # Named exactly: an error (the role fails naming gpu_reclaim_units), whether the host has it or not.
            _add(result.units_protected_named, wanted)
            continue
        found = [name for name in existing if fnmatch.fnmatchcase(name, pattern)]
        if not found:
            result.units_absent.append(wanted)
        for name in found:
            if protected_unit(name, settings):
                # Matched by a pattern: reported, never planned (the own units are only stopped through include_own).
                entry = {"unit": name, "configured": wanted}
                if entry not in result.units_protected:
                    result.units_protected.append(entry)
                continue
            _add(result.units, name)
    configured_units = frozenset(result.units)
    stopped = frozenset(name for name in configured_units if str(services[name].get("state", "")) != "running")
    processes = list(gpu_info.get("processes", []))
    # Configured containers that are the collection's own, by name or by the full id docker confirmed for one.
    own_ids = {str(p.get("container_id")).lower() for p in processes if own_container(p, settings)}
    containers = []
    for wanted in settings.containers:
        if matches(wanted, settings.own_containers) or wanted.lower() in own_ids:
            _add(result.containers_protected_named, wanted)
        else:
            containers.append(wanted)
    for process in processes:
        _classify(process, settings, result, containers, configured_units, stopped, services)
    result.containers = containers
    return result


def _own_container_units(container: str, settings: Settings, services: t.Mapping[str, t.Any]) -> list[str]:
    """The running own units named for an own container: ``sparkops-vllm.service``; ``sparkops-ray-head.service``."""
    found = []
    for name, facts in sorted(services.items()):
        if not (name == f"{container}.service" or (name.startswith(f"{container}-") and name.endswith(".service"))):
            continue
        if matches(name, settings.own_units) and _stoppable(name, facts) and isinstance(facts, t.Mapping) and facts.get("state") == "running":
            found.append(name)
    return found


def _classify(
    process: t.Mapping[str, t.Any],
    settings: Settings,
    result: Plan,
    containers: list[str],
    configured_units: frozenset[str],
    stopped_units: frozenset[str],
    services: t.Mapping[str, t.Any],
) -> None:
    keys = ("pid", "name", "used_mib", "unit", "user_unit", "container_id", "container_name", "container_running", "container_confirmed", "start_time")
    entry = {key: process.get(key) for key in keys}
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
    if own_container(process, settings):
        # Never removed: the docker runtime runs it from an own unit, which include_own stops (not disables).
        if not settings.include_own:
            result.kept.append({**entry, "why": "own"})
            return
        name = str(process.get("container_name"))
        runners = _own_container_units(name, settings, services)
        if not runners:
            result.refused.append({**entry, "why": f"own container {name}, run by no own unit"})
            return
        for runner in runners:
            _add(result.own_units, runner)
        result.freed.append({**entry, "by": f"stopping own unit {', '.join(runners)}"})
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
    stoppable = bool(service) and service in services and not protected_unit(str(service), settings)
    if (leftover and settings.end_leftover_processes) or (settings.end_unknown_consumers and not stoppable):
        why = "outlived its container" if outlived else "outlived its stopped unit" if outlived_unit else "leftover" if leftover else "unknown consumer"
        # (pid, start time) as gpu_info read them: process_end signals nothing whose start time differs (pid reused).
        result.processes.append({"pid": process.get("pid"), "name": process.get("name"), "why": why, "start_time": process.get("start_time")})
        result.freed.append({**entry, "by": f"ending pid {process.get('pid')} ({why})"})
        return
    if settings.end_unknown_consumers and stoppable:
        _add(result.units, str(service))
        result.freed.append({**entry, "by": f"stopping unit {service} (unknown consumer)"})
        return
    result.refused.append({**entry, "why": "leftover (end_leftover_processes is off)" if leftover else "unknown consumer"})
