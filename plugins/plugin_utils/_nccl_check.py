# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Read the log of the gate's NCCL check (roles/nccl_env/files/sparkops-nccl-check run with NCCL_DEBUG=INFO).

Note that this plugin util is **PRIVATE** to the collection. It can have breaking changes at any time.

What NCCL says about itself, from its own INFO and WARN lines (formats of NVIDIA/nccl v2.28.9-1; the lines of the
lent GPU machine are unit-test fixtures): the library version in use (``NCCL version 2.28.3+cuda13.0``: under
LD_PRELOAD this is the preloaded library, while torch.cuda.nccl.version() still names the one torch was built
with), the network (``Using network IB`` or ``Socket``), its interfaces and RDMA devices (``NET/IB : Using
[0]rocep1s0f1:1/RoCE ...; OOB enp1s0f1np1:...``, ``NET/Socket : Using [0]eth0:...``), the transport of each channel
(``via NET/IB/0``, ``via NET/Socket/0``, ``via P2P/IPC``, ``via SHM/direct/direct``), its warnings; and the check's
own ``SPARKOPS_NCCL_CHECK {json}`` line: whether the sum was right, the bus bandwidth per message size, and the NCCL
that vLLM's own wrapper (PyNccl) loads (``pynccl``: VLLM_NCCL_SO_PATH, else libnccl.so.2).
"""

from __future__ import annotations

import json
import re
import typing as t
from dataclasses import dataclass, field

MARK = "SPARKOPS_NCCL_CHECK"

_VERSION = re.compile(r"NCCL INFO NCCL version (\d+\.\d+\.\d+)(\S*)")
_BOOTSTRAP = re.compile(r"NCCL INFO Bootstrap ?: Using ?\[?\d*\]?([^:\s<]+):")
_NET_IB = re.compile(r"NCCL INFO NET/IB : Using(.*?); OOB ([^:\s]+):")
_NET_SOCKET = re.compile(r"NCCL INFO NET/Socket : Using(.*)$")
_DEVICE = re.compile(r"\[\d+\]([^:\s]+):")
_NETWORK = re.compile(r"NCCL INFO Using network (\S+)")
_CHANNEL = re.compile(r"NCCL INFO Channel \d+/\d+ : \d+\[\d+\] -> \d+\[\d+\] (?:\[(?:send|receive)\] )?via (\S+)")
_WARN = re.compile(r"NCCL WARN (.*)$")
_RESULT = re.compile(re.escape(MARK) + r" (\{.*\})\s*$")


def _transport(via: str) -> str:
    """``NET/IB/0/GDRDMA`` -> ``NET/IB``; ``P2P/IPC`` -> ``P2P/IPC``; ``SHM/direct/direct`` -> ``SHM``."""
    parts = via.split("/")
    if parts[0] == "NET" and len(parts) > 1:
        return f"NET/{parts[1]}"
    if parts[0] == "P2P" and len(parts) > 1:
        return f"P2P/{parts[1].split('(')[0]}"
    return parts[0]


@dataclass
class NcclLog:
    """What one rank's log says; a field NCCL did not log is None or empty."""

    version: str | None = None
    build: str | None = None
    bootstrap_interface: str | None = None
    network: str | None = None
    ib_devices: list[str] = field(default_factory=list)
    ib_oob_interface: str | None = None
    socket_interfaces: list[str] = field(default_factory=list)
    transports: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    results: list[dict[str, t.Any]] = field(default_factory=list)

    @property
    def rank0(self) -> dict[str, t.Any] | None:
        """The check's own line of rank 0 (else the first one)."""
        return next((r for r in self.results if r.get("rank") == 0), self.results[0] if self.results else None)

    @property
    def ok(self) -> bool:
        """Every rank that reported said ok, and at least one did."""
        return bool(self.results) and all(r.get("ok") is True for r in self.results)

    @property
    def error(self) -> str | None:
        """The first error a rank reported, on one line."""
        failed = next((r for r in self.results if r.get("error")), None)
        return None if failed is None else " ".join(str(failed["error"]).split())

    @property
    def busbw_gbps(self) -> float | None:
        """Rank 0's bus bandwidth at its largest message size (GB/s); None without figures."""
        rank0 = self.rank0
        sizes = [r for r in (rank0 or {}).get("results") or [] if isinstance(r, dict) and "busbw_gbps" in r]
        if not sizes:
            return None
        return float(max(sizes, key=lambda r: int(r.get("bytes") or 0))["busbw_gbps"])

    @property
    def interfaces(self) -> list[str]:
        """The interfaces NCCL's network uses (the OOB interface for IB)."""
        if self.network == "IB" and self.ib_oob_interface:
            return [self.ib_oob_interface]
        return list(self.socket_interfaces)

    def as_dict(self) -> dict[str, t.Any]:
        rank0 = self.rank0 or {}
        return {
            "ok": self.ok,
            "error": self.error,
            "nccl_version": self.version,
            "nccl_build": self.build,
            "torch_nccl_version": rank0.get("torch_nccl_version", rank0.get("nccl_version")),
            "pynccl_version": (rank0.get("pynccl") or {}).get("version"),
            "world_size": rank0.get("world_size"),
            "network": self.network,
            "interfaces": self.interfaces,
            "bootstrap_interface": self.bootstrap_interface,
            "ib_devices": self.ib_devices,
            "transports": self.transports,
            "busbw_gbps": self.busbw_gbps,
            "warnings": self.warnings,
        }


def parse_nccl_log(text: str) -> NcclLog:
    """Parse the output of the NCCL check (every rank's lines may be mixed in it)."""
    log = NcclLog()
    for line in text.splitlines():
        match = _VERSION.search(line)
        if match and log.version is None:
            log.version, log.build = match.group(1), match.group(1) + match.group(2)
            continue
        match = _BOOTSTRAP.search(line)
        if match and log.bootstrap_interface is None:
            log.bootstrap_interface = match.group(1)
            continue
        match = _NET_IB.search(line)
        if match:
            log.ib_devices = _DEVICE.findall(match.group(1))
            log.ib_oob_interface = match.group(2)
            continue
        match = _NET_SOCKET.search(line)
        if match:
            log.socket_interfaces = _DEVICE.findall(match.group(1))
            continue
        match = _NETWORK.search(line)
        if match:
            log.network = match.group(1)
            continue
        match = _CHANNEL.search(line)
        if match:
            transport = _transport(match.group(1))
            if transport not in log.transports:
                log.transports.append(transport)
            continue
        match = _WARN.search(line)
        if match:
            warning = match.group(1).strip()
            if warning not in log.warnings:
                log.warnings.append(warning)
            continue
        match = _RESULT.search(line)
        if match:
            try:
                payload = json.loads(match.group(1))
            except ValueError:
                continue
            if isinstance(payload, dict):
                log.results.append(payload)
    return log


def nccl_verdict(log: NcclLog, *, expect: str, min_busbw_gbps: float = 0.0, node: str = "") -> list[str]:
    """The failures of a check that must run over ``expect`` (``ib``: the RoCE transport, ``socket``), each naming the
    node, what NCCL reported and the figure. Empty: it passed."""
    if expect not in ("ib", "socket"):
        raise ValueError(f"expect must be ib or socket, got {expect!r}")
    where = f"{node}: " if node else ""
    if not log.results:
        return [f"{where}the NCCL check printed no result line ({MARK}); NCCL's warnings: {'; '.join(log.warnings) or 'none'}"]
    if not log.ok:
        return [f"{where}the NCCL all-reduce failed: {log.error or 'a rank reported a wrong sum'}"]
    failures = []
    wanted = "IB" if expect == "ib" else "Socket"
    if log.network != wanted:
        failures.append(f"{where}NCCL used network {log.network or 'unknown'}, expected {wanted} (NCCL {log.version or 'of unknown version'})")
    remote = [t for t in log.transports if t.startswith("NET/")]
    if expect == "ib" and any(t != "NET/IB" for t in remote):
        failures.append(f"{where}NCCL channels ran via {', '.join(remote)}, expected NET/IB only")
    busbw = log.busbw_gbps
    if min_busbw_gbps > 0 and (busbw is None or busbw < min_busbw_gbps):
        failures.append(f"{where}NCCL all-reduce bus bandwidth {busbw if busbw is not None else 'unknown'} GB/s, expected at least {min_busbw_gbps:g} GB/s")
    return failures
