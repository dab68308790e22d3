# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The RoCE view of a fabric address on a DGX Spark, read from sysfs.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

Each ConnectX-7 port of a DGX Spark appears as two "twin" netdevs, each with its own RDMA device, on two PCIe
domains: e.g. ``enp1s0f1np1``/``rocep1s0f1`` at 0000:01:00.1 and ``enP2p1s0f1np1``/``roceP2p1s0f1`` at
0002:01:00.1. Given the host's fabric address (or a netdev), :func:`roce_info` finds the netdev that holds it,
its link, its RDMA devices with their port state, the RoCE v2 GID index NCCL needs (``NCCL_IB_GID_INDEX``), the
twin and the HCA list for ``NCCL_IB_HCA``.

IPv4 addresses are not in sysfs, so callers pass them as ``addresses`` (netdev -> IPv4 addresses): parsed from
``ip -j -4 addr show`` with :func:`parse_ip_addr_json` or, lacking ``ip``, taken from the IPv4-mapped RoCE v2 GIDs
with :func:`addresses_from_gids`. The netdev is always found by address, never by the default route.
"""

from __future__ import annotations

import ipaddress
import json
import re
import typing as t
from dataclasses import dataclass
from pathlib import Path

ROCE_V2 = "RoCE v2"
IP_ADDR = ("-j", "-4", "addr", "show")  # ip's arguments that list the IPv4 addresses as JSON
TRANSPORT_IB = "ib"
TRANSPORT_SOCKET = "socket"

_PCI_ADDRESS = re.compile(r"([0-9a-f]{4,}):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])", re.IGNORECASE)
_NUMBER = re.compile(r"[0-9]+")


class RoceError(ValueError):
    """The address or interface cannot be resolved; the message names it."""


@dataclass(frozen=True)
class Link:
    """The link of a netdev, from /sys/class/net/<netdev>/{operstate,carrier,mtu,address,speed}.

    ``speed_mbps`` is None where the kernel gives no speed: a veth or a down link (``speed`` reads -1 or fails).
    """

    operstate: str
    carrier: bool | None
    mtu: int | None
    mac: str | None
    speed_mbps: int | None = None

    @property
    def up(self) -> bool:
        """Operstate up, or unknown (drivers that do not report it) with carrier."""
        return self.operstate == "up" or (self.operstate == "unknown" and self.carrier is True)

    def as_dict(self) -> dict[str, t.Any]:
        return {"operstate": self.operstate, "up": self.up, "carrier": self.carrier, "mtu": self.mtu, "mac": self.mac, "speed_mbps": self.speed_mbps}


@dataclass(frozen=True)
class Gid:
    """One populated entry of /sys/class/infiniband/<ibdev>/ports/<port>/gids; type and ndev None when unreadable."""

    index: int
    gid: ipaddress.IPv6Address
    type: str | None
    ndev: str | None

    @property
    def ipv4(self) -> str | None:
        """The IPv4 address of an IPv4-mapped GID (::ffff:a.b.c.d), else None."""
        mapped = self.gid.ipv4_mapped
        return None if mapped is None else str(mapped)


@dataclass(frozen=True)
class RdmaPort:
    """A port of an RDMA device of a netdev, with the RoCE v2 GID index of the netdev's address on it."""

    name: str
    port: int
    state: str | None
    gid_index: int | None

    @property
    def active(self) -> bool:
        return self.state == "ACTIVE"

    def as_dict(self) -> dict[str, t.Any]:
        return {"name": self.name, "port": self.port, "state": self.state, "active": self.active, "gid_index": self.gid_index}


@dataclass(frozen=True)
class Netdev:
    """A netdev with its PCI address, IPv4 address (None when it has none), link and RDMA device ports."""

    interface: str
    pci_address: str | None
    address: str | None
    link: Link
    rdma_devices: tuple[RdmaPort, ...]

    @property
    def gid_index(self) -> int | None:
        """The RoCE v2 GID index of the address on the first RDMA port that has one."""
        return next((p.gid_index for p in self.rdma_devices if p.gid_index is not None), None)

    @property
    def hcas(self) -> list[str]:
        return list(dict.fromkeys(p.name for p in self.rdma_devices))

    def as_dict(self) -> dict[str, t.Any]:
        return {
            "interface": self.interface,
            "pci_address": self.pci_address,
            "address": self.address,
            "link": self.link.as_dict(),
            "rdma_devices": [p.as_dict() for p in self.rdma_devices],
            "gid_index": self.gid_index,
        }


@dataclass(frozen=True)
class RoceInfo:
    """The netdev that holds the fabric address, its twin (None when it has none) and the warnings found."""

    netdev: Netdev
    twin: Netdev | None
    warnings: tuple[str, ...]

    @property
    def hca_list(self) -> list[str]:
        """The RDMA devices of the netdev, then those of its twin (for NCCL_IB_HCA)."""
        twin = self.twin.hcas if self.twin is not None else []
        return list(dict.fromkeys([*self.netdev.hcas, *twin]))

    @property
    def transport(self) -> str:
        """``ib`` when the netdev has an RDMA device (NCCL's IB/RoCE transport), else ``socket``."""
        return TRANSPORT_IB if self.netdev.rdma_devices else TRANSPORT_SOCKET

    def as_dict(self) -> dict[str, t.Any]:
        """The module's result (without the warnings, which the module emits as warnings)."""
        return {
            **self.netdev.as_dict(),
            "twin": None if self.twin is None else self.twin.as_dict(),
            "hca_list": self.hca_list,
            "transport": self.transport,
        }


def _read(path: Path) -> str | None:
    """The stripped content of a sysfs attribute, or None when absent or unreadable (EINVAL on unused GIDs)."""
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except (OSError, ValueError):
        return None


def _read_int(path: Path) -> int | None:
    raw = _read(path)
    return int(raw) if raw is not None and _NUMBER.fullmatch(raw) else None


def _ipv4(value: t.Any) -> str | None:
    """The normalized IPv4 address of ``value`` (``a.b.c.d`` or ``a.b.c.d/len``), or None when it is not one."""
    try:
        return str(ipaddress.IPv4Address(str(value).split("/", 1)[0].strip()))
    except ValueError:
        return None


def _numbered(directory: Path) -> list[tuple[int, Path]]:
    """The entries of ``directory`` named by a number, in numeric order; empty when it is missing."""
    try:
        entries = [(int(p.name), p) for p in directory.iterdir() if _NUMBER.fullmatch(p.name)]
    except OSError:
        return []
    return sorted(entries)


def _names(directory: Path) -> list[str]:
    try:
        return sorted(p.name for p in directory.iterdir())
    except OSError:
        return []


def _net_dir(root: Path) -> Path:
    return root / "class" / "net"


def _netdevs(root: Path) -> list[str]:
    """The netdevs in /sys/class/net (skipping files such as bonding_masters)."""
    net = _net_dir(root)
    return [name for name in _names(net) if (net / name).is_dir()]


def _netdev_exists(root: Path, name: str) -> bool:
    return bool(name) and "/" not in name and name not in (".", "..") and (_net_dir(root) / name).is_dir()


def _link(netdir: Path) -> Link:
    carrier = _read(netdir / "carrier")
    return Link(
        operstate=(_read(netdir / "operstate") or "unknown").lower(),
        carrier=None if carrier not in ("0", "1") else carrier == "1",
        mtu=_read_int(netdir / "mtu"),
        mac=_read(netdir / "address"),
        speed_mbps=_speed(netdir),
    )


def _speed(netdir: Path) -> int | None:
    """The link speed in Mb/s; None when the kernel gives none (-1, SPEED_UNKNOWN, or EINVAL on a down link)."""
    speed = _read_int(netdir / "speed")  # "-1" does not match a plain number
    return speed if speed is not None and 0 < speed < 0xFFFFFFFF else None


def _pci_address(netdir: Path) -> str | None:
    """The PCI address the netdev's ``device`` link points to (None for virtual netdevs such as a veth)."""
    device = netdir / "device"
    if not device.exists():
        return None
    name = device.resolve().name
    return name.lower() if _PCI_ADDRESS.fullmatch(name) else None


def _ibdevs(netdir: Path) -> list[str]:
    """The RDMA devices of a netdev, listed in /sys/class/net/<netdev>/device/infiniband."""
    return _names(netdir / "device" / "infiniband")


def _ibdev_dir(root: Path, netdir: Path, ibdev: str) -> Path:
    path = root / "class" / "infiniband" / ibdev
    return path if path.is_dir() else netdir / "device" / "infiniband" / ibdev


def _gids(port_dir: Path) -> list[Gid]:
    """The populated GIDs of a port; an unused index (all zeros, or unparsable) is absent."""
    gids = []
    for index, path in _numbered(port_dir / "gids"):
        raw = _read(path)
        try:
            gid = ipaddress.IPv6Address(raw or "")
        except ValueError:
            continue
        if gid.is_unspecified:
            continue
        attrs = port_dir / "gid_attrs"
        gids.append(Gid(index, gid, _read(attrs / "types" / str(index)), _read(attrs / "ndevs" / str(index))))
    return gids


def _port_state(port_dir: Path) -> str | None:
    """``ACTIVE`` from ``4: ACTIVE``; None when unreadable."""
    raw = _read(port_dir / "state")
    if not raw:
        return None
    return raw.split(":", 1)[-1].strip().upper() or None


def _gid_index(gids: t.Sequence[Gid], netdev: str, address: str) -> int | None:
    """The index of the RoCE v2 GID of ``netdev`` that maps ``address`` (what NCCL_IB_GID_INDEX must be)."""
    return next((g.index for g in gids if g.type == ROCE_V2 and g.ndev == netdev and g.ipv4 == address), None)


def _why_no_gid(gids: t.Sequence[Gid], netdev: str, address: str) -> str:
    """Why ``_gid_index`` found nothing, in a few words for the warning."""
    if not gids:
        return "no GIDs"
    same = [g for g in gids if g.ipv4 == address]
    elsewhere = [g for g in same if g.type == ROCE_V2 and g.ndev != netdev]
    if elsewhere:
        return f"its RoCE v2 GID {elsewhere[0].index} for that address belongs to {elsewhere[0].ndev or 'an unknown netdev'}"
    if same:
        return f"only a {same[0].type or 'GID of unknown type'} GID at index {same[0].index}"
    others = sorted({g.ipv4 for g in gids if g.ipv4 is not None and g.type == ROCE_V2})
    if others:
        return "RoCE v2 IPv4 GIDs only for " + ", ".join(others)
    return "only IPv6 GIDs"


class _Port(t.NamedTuple):
    ibdev: str
    number: int
    state: str | None
    gids: list[Gid]


def _describe(
    root: Path,
    name: str,
    addresses: t.Mapping[str, t.Sequence[str]],
    address: str | None,
) -> tuple[Netdev, list[str]]:
    """Read a netdev; ``address`` given picks the GID for it, else the netdev's own addresses are tried in order.

    Also returns a note for each RDMA port without a RoCE v2 GID for the address.
    """
    netdir = _net_dir(root) / name
    ports: list[_Port] = []
    for ibdev in _ibdevs(netdir):
        ibdir = _ibdev_dir(root, netdir, ibdev)
        for number, port_dir in _numbered(ibdir / "ports"):
            ports.append(_Port(ibdev, number, _port_state(port_dir), _gids(port_dir)))

    if address is None:
        own = [a for a in (_ipv4(raw) for raw in addresses.get(name, ())) if a is not None]
        with_gid = [a for a in own if any(_gid_index(port.gids, name, a) is not None for port in ports)]
        address = next(iter(with_gid or own), None)

    rdma: list[RdmaPort] = []
    notes: list[str] = []
    for ibdev, number, state, gids in ports:
        index = None if address is None else _gid_index(gids, name, address)
        if address is not None and index is None:
            notes.append(f"{ibdev} has no RoCE v2 GID for {address} ({_why_no_gid(gids, name, address)})")
        rdma.append(RdmaPort(ibdev, number, state, index))
    return Netdev(name, _pci_address(netdir), address, _link(netdir), tuple(rdma)), notes


def _find_twin(root: Path, netdev: Netdev) -> str | None:
    """Another netdev at the same bus:device.function on another PCIe domain, with an RDMA device."""
    match = _PCI_ADDRESS.fullmatch(netdev.pci_address or "")
    if match is None:
        return None
    domain, bdf = match.group(1), match.groups()[1:]
    for name in _netdevs(root):
        if name == netdev.interface:
            continue
        other = _PCI_ADDRESS.fullmatch(_pci_address(_net_dir(root) / name) or "")
        if other is not None and other.group(1) != domain and other.groups()[1:] == bdf and _ibdevs(_net_dir(root) / name):
            return name
    return None


def _holder(root: Path, addresses: t.Mapping[str, t.Sequence[str]], address: str, warnings: list[str]) -> str:
    """The netdev that holds ``address``; by address only, whatever the routes say."""
    holders = sorted(name for name, addrs in addresses.items() if address in {_ipv4(a) for a in addrs})
    if not holders:
        valid = {name: [a for a in (_ipv4(raw) for raw in addrs) if a is not None] for name, addrs in sorted(addresses.items())}
        held = [f"{name} ({', '.join(addrs)})" for name, addrs in valid.items() if addrs]
        raise RoceError(f"no interface holds {address}; interfaces with IPv4: {', '.join(held) or 'none'}")
    existing = [name for name in holders if _netdev_exists(root, name)]
    if not existing:
        raise RoceError(f"{address} is held by {', '.join(holders)}, which does not exist under {_net_dir(root)}")
    # Several holders (rare: a macvlan, a bridge port): prefer one with an RDMA device.
    chosen = next((name for name in existing if _ibdevs(_net_dir(root) / name)), existing[0])
    if len(holders) > 1:
        warnings.append(f"{address} is held by several interfaces ({', '.join(holders)}); using {chosen}")
    return chosen


def roce_info(
    sysfs_root: Path,
    addresses: t.Mapping[str, t.Sequence[str]],
    address: str | None = None,
    interface: str | None = None,
) -> RoceInfo:
    """Describe the netdev that holds ``address`` (or the netdev ``interface``) for NCCL; give exactly one of them.

    ``addresses`` maps each netdev to its IPv4 addresses. Raises RoceError naming the address or interface when it
    cannot be resolved.
    """
    if (address is None) == (interface is None):
        raise RoceError("give exactly one of address and interface")
    root = Path(sysfs_root)
    if not _net_dir(root).is_dir():
        raise RoceError(f"{_net_dir(root)} does not exist: is {root} a sysfs mount?")
    warnings: list[str] = []
    wanted: str | None = None
    if address is not None:
        wanted = _ipv4(address)
        if wanted is None or "/" in address:
            raise RoceError(f"address {address!r} is not an IPv4 address")
        name = _holder(root, addresses, wanted, warnings)
    else:
        name = str(interface)
        if not _netdev_exists(root, name):
            raise RoceError(f"interface {name} does not exist under {_net_dir(root)}")

    netdev, notes = _describe(root, name, addresses, wanted)
    if netdev.rdma_devices and netdev.address is None:
        warnings.append(f"{name} has no IPv4 address: NCCL_IB_GID_INDEX left to NCCL")
    suffix = ": NCCL_IB_GID_INDEX left to NCCL" if netdev.gid_index is None else ""
    warnings += [note + suffix for note in notes]
    if not netdev.link.up:
        carrier = {True: "1", False: "0", None: "unknown"}[netdev.link.carrier]
        warnings.append(f"{name} is not up (operstate {netdev.link.operstate}, carrier {carrier})")
    warnings += [f"{p.name} port {p.port} is {p.state or 'in an unknown state'}, not ACTIVE" for p in netdev.rdma_devices if not p.active]

    twin_name = _find_twin(root, netdev)
    twin: Netdev | None = None
    if twin_name is not None:
        twin, notes = _describe(root, twin_name, addresses, None)
        warnings += [f"twin {note}" for note in notes]
    if twin is not None and twin.gid_index is not None and netdev.gid_index is not None and twin.gid_index != netdev.gid_index:
        warnings.append(
            f"{name} uses GID index {netdev.gid_index} but its twin {twin_name} uses {twin.gid_index}: NCCL_IB_GID_INDEX is one value for every HCA"
        )
    return RoceInfo(netdev, twin, tuple(warnings))


def parse_ip_addr_json(text: str) -> dict[str, list[str]]:
    """Map each netdev to its IPv4 addresses from the output of ``ip -j -4 addr show``."""
    try:
        links = json.loads(text or "[]")
    except ValueError as exc:
        raise RoceError(f"cannot parse the output of ip -j -4 addr show: {exc}") from exc
    if not isinstance(links, list):
        raise RoceError("cannot parse the output of ip -j -4 addr show: not a JSON list")
    addresses: dict[str, list[str]] = {}
    for link in links:
        if not isinstance(link, dict) or not isinstance(link.get("ifname"), str):
            continue  # iproute2 prints {} for links without an IPv4 address
        for info in link.get("addr_info") or []:
            if isinstance(info, dict) and info.get("family", "inet") == "inet":
                local = _ipv4(info.get("local"))
                if local is not None and local not in addresses.setdefault(link["ifname"], []):
                    addresses[link["ifname"]].append(local)
    return addresses


def addresses_from_gids(sysfs_root: Path) -> dict[str, list[str]]:
    """Map each netdev to the IPv4 addresses of its IPv4-mapped RoCE v2 GIDs (when ``ip`` is missing).

    Only netdevs with an RDMA device show up here.
    """
    root = Path(sysfs_root)
    addresses: dict[str, list[str]] = {}
    ib_root = root / "class" / "infiniband"
    for ibdev in _names(ib_root):
        for _number, port_dir in _numbered(ib_root / ibdev / "ports"):
            for gid in _gids(port_dir):
                if gid.type == ROCE_V2 and gid.ndev and gid.ipv4 is not None and gid.ipv4 not in addresses.setdefault(gid.ndev, []):
                    addresses[gid.ndev].append(gid.ipv4)
    return {name: addrs for name, addrs in sorted(addresses.items()) if addrs}


def addresses_from_ip(run: t.Callable[[list[str]], tuple[int, str, str]], ip: str, sysfs_root: Path) -> tuple[dict[str, list[str]], tuple[int, str] | None]:
    """Map each netdev to its IPv4 addresses from ``ip -j -4 addr show`` (``ip`` the command's path, run by ``run``),
    else from the RoCE v2 GIDs; with, when ip's answer was not used, its rc and stderr (or why its output could not
    be read)."""
    rc, out, err = run([ip, *IP_ADDR])
    if rc == 0:
        try:
            return parse_ip_addr_json(out), None
        except RoceError as exc:
            err = str(exc)
    return addresses_from_gids(sysfs_root), (rc, err)
