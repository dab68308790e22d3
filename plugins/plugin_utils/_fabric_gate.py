# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The fabric link gate: every node's fabric link at its expected speed, with an MTU that is large enough and the
same on every node, from what roce_info returned for each node.

Note that this plugin util is **PRIVATE** to the collection. It can have breaking changes at any time.

A ConnectX-7 link that trained at a degraded speed (~13 Gb/s instead of 200) or an MTU that differs between the nodes
passes a "link up" check, and NCCL then runs slowly or falls back to sockets. :func:`fabric_gate` names each such node
with its interface and figure, all at once.

Speed check modes (``speed_check``):

- ``auto``: checks the speed of every fabric netdev that is a PCI device and reports a speed; a netdev whose kernel
  gives none (``speed`` reads -1 or fails) or a virtual netdev (no PCI device: a veth, whose driver always reports
  a made-up 10000 Mb/s, as the lab's do) is skipped with a note saying so;
- ``required``: every fabric netdev must report a speed at the expected rate (virtual ones too); none is a failure;
- ``off``: no speed check; a note says so.

The twin of a Spark's port (its other PCIe half, also in NCCL_IB_HCA) is checked like the netdev itself.
"""

from __future__ import annotations

import typing as t
from collections import Counter
from dataclasses import dataclass

SPEED_CHECKS = ("auto", "required", "off")
MIN_MTU_FLOOR = 576  # the smallest IPv4 datagram every host must accept (RFC 791); below it a setting is nonsense


class FabricGateError(ValueError):
    """Bad settings or input; the message names the value."""


@dataclass(frozen=True)
class GateSettings:
    """What the gate checks against; :meth:`validate` refuses values that make no sense."""

    expected_speed_mbps: int = 200000
    min_speed_fraction: float = 0.9
    min_mtu: int = 1500
    speed_check: str = "auto"

    def validate(self) -> GateSettings:
        speed = self.expected_speed_mbps
        if isinstance(speed, bool) or not isinstance(speed, int) or speed <= 0:
            raise FabricGateError(f"expected_speed_mbps must be a whole number of Mb/s above 0, got {speed!r}")
        fraction = self.min_speed_fraction
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
            raise FabricGateError(f"min_speed_fraction must be above 0 and at most 1, got {fraction!r}")
        mtu = self.min_mtu
        if isinstance(mtu, bool) or not isinstance(mtu, int) or mtu < MIN_MTU_FLOOR:
            raise FabricGateError(f"min_mtu must be a whole number of at least {MIN_MTU_FLOOR}, got {mtu!r}")
        if self.speed_check not in SPEED_CHECKS:
            raise FabricGateError(f"speed_check must be one of {', '.join(SPEED_CHECKS)}, got {self.speed_check!r}")
        return self

    @property
    def min_speed_mbps(self) -> float:
        return self.expected_speed_mbps * self.min_speed_fraction

    @property
    def percent(self) -> str:
        return f"{self.min_speed_fraction * 100:g}"


@dataclass(frozen=True)
class GateReport:
    """Failures (each names the node, the interface and the figure) and notes (what was not checked, and why)."""

    failures: tuple[str, ...]
    notes: tuple[str, ...]
    mtu: dict[str, int | None]

    @property
    def ok(self) -> bool:
        return not self.failures

    def as_dict(self) -> dict[str, t.Any]:
        return {"ok": self.ok, "failures": list(self.failures), "notes": list(self.notes), "mtu": dict(self.mtu)}


def _int_or_none(value: t.Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _links(roce: t.Mapping[str, t.Any]) -> list[tuple[str, str, t.Mapping[str, t.Any], bool]]:
    """(label, interface, link, virtual) of the netdev and, when it has one, of its twin."""
    links = []
    interface = str(roce.get("interface") or "?")
    links.append((f"fabric link {interface}", interface, roce.get("link") or {}, roce.get("pci_address") is None))
    twin = roce.get("twin")
    if isinstance(twin, t.Mapping) and twin.get("interface"):
        name = str(twin["interface"])
        links.append((f"fabric link {name} (twin of {interface})", name, twin.get("link") or {}, twin.get("pci_address") is None))
    return links


def _check_speed(host: str, label: str, link: t.Mapping[str, t.Any], virtual: bool, settings: GateSettings) -> tuple[list[str], list[str]]:
    speed = _int_or_none(link.get("speed_mbps"))
    mode = settings.speed_check
    if mode == "off":
        return [], [f"{host}: {label}: speed not checked (nccl_env_speed_check: off)"]
    if speed is None or speed <= 0:
        if mode == "required":
            expected = settings.expected_speed_mbps
            return [f"{host}: {label} reports no speed (the kernel gives none), expected {expected} Mb/s (nccl_env_speed_check: required)"], []
        return [], [f"{host}: {label} reports no speed (the kernel gives none): speed not checked (nccl_env_speed_check: auto)"]
    if virtual and mode == "auto":
        return [], [f"{host}: {label} is a virtual netdev (no PCI device, e.g. a veth) reporting {speed} Mb/s: speed not checked (nccl_env_speed_check: auto)"]
    if speed < settings.min_speed_mbps:
        return [f"{host}: {label} runs at {speed} Mb/s, expected {settings.expected_speed_mbps} (at least {settings.percent} %)"], []
    return [], []


def check_node(host: str, roce: t.Mapping[str, t.Any], settings: GateSettings) -> tuple[list[str], list[str]]:
    """The failures and notes of one node: each link up, at its speed, with an MTU of at least ``min_mtu``."""
    failures: list[str] = []
    notes: list[str] = []
    for label, _interface, link, virtual in _links(roce):
        if not link.get("up"):
            failures.append(f"{host}: {label} is not up (operstate {link.get('operstate', 'unknown')})")
            continue
        more_failures, more_notes = _check_speed(host, label, link, virtual, settings)
        failures += more_failures
        notes += more_notes
        mtu = _int_or_none(link.get("mtu"))
        if mtu is None:
            failures.append(f"{host}: {label} has no readable MTU")
        elif mtu < settings.min_mtu:
            failures.append(f"{host}: {label} has MTU {mtu}, below the minimum {settings.min_mtu} (nccl_env_min_mtu)")
    return failures, notes


def _mtu_mismatches(mtus: t.Mapping[str, int | None], interfaces: t.Mapping[str, str]) -> list[str]:
    """One failure per node whose MTU differs from the most common one (ties: the first node's, normally the head)."""
    known = {host: mtu for host, mtu in mtus.items() if mtu is not None}
    if len(set(known.values())) <= 1:
        return []
    counts = Counter(known.values())
    first = next(iter(known.values()))
    usual = max(counts, key=lambda mtu: (counts[mtu], mtu == first))
    usual_hosts = ", ".join(host for host, mtu in known.items() if mtu == usual)
    return [
        f"{host}: fabric link {interfaces[host]} has MTU {mtu}, the other nodes {usual} ({usual_hosts}): the fabric MTU must be the same on every node"
        for host, mtu in known.items()
        if mtu != usual
    ]


def fabric_gate(nodes: t.Mapping[str, t.Mapping[str, t.Any]], settings: GateSettings) -> GateReport:
    """Check every node's fabric link (``nodes``: node name to what roce_info returned for it), all at once."""
    settings.validate()
    if not isinstance(nodes, t.Mapping) or not nodes:
        raise FabricGateError("the gate needs roce_info's result of at least one node")
    failures: list[str] = []
    notes: list[str] = []
    mtus: dict[str, int | None] = {}
    interfaces: dict[str, str] = {}
    for host, roce in nodes.items():
        if not isinstance(roce, t.Mapping):
            raise FabricGateError(f"{host}: no roce_info result (got {type(roce).__name__})")
        more_failures, more_notes = check_node(str(host), roce, settings)
        failures += more_failures
        notes += more_notes
        interfaces[str(host)] = str(roce.get("interface") or "?")
        mtus[str(host)] = _int_or_none((roce.get("link") or {}).get("mtu"))
    failures += _mtu_mismatches(mtus, interfaces)
    return GateReport(tuple(failures), tuple(notes), mtus)
