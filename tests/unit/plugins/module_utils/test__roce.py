# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the _roce module util, over the sysfs trees in tests/unit/fixtures/sysfs.

Each tree lists its symlinks (the ``device`` links of the netdevs and /sys/class/infiniband) in symlinks.txt
rather than holding them: git trees of collections may not hold directory symlinks (ansible-test's symlinks
sanity test refuses them, and tools/ansible_test.sh copies the checkout file by file). ``make_sysfs`` copies a
tree and makes those links, relative, as a real sysfs has them.
"""

from __future__ import annotations

import json
import os
import shutil
import typing as t
from pathlib import Path

import pytest
from ansible_collections.sparkops.inference.plugins.module_utils._roce import (
    RoceError,
    addresses_from_gids,
    parse_ip_addr_json,
    roce_info,
)
from sysfs_tree import materialise as make_sysfs

CASES = ("single_port", "both_halves", "gid_index_5", "link_down", "no_rdma", "ipv6_only_gids")
FABRIC_IP = "192.168.200.11"
TWIN_IP = "192.168.201.11"
# enP7s7 is the 10 GbE management NIC: the default route goes through it, the fabric does not.
ADDRESSES: dict[str, list[str]] = {"lo": ["127.0.0.1"], "enP7s7": ["10.0.0.5"], "enp1s0f1np1": [FABRIC_IP], "enP2p1s0f1np1": [TWIN_IP]}
PORT_1 = "devices/pci0000:00/0000:00:01.0/0000:01:00.1/infiniband/rocep1s0f1/ports/1"
TWIN_PORT_1 = "devices/pci0002:00/0002:00:01.0/0002:01:00.1/infiniband/roceP2p1s0f1/ports/1"


def mapped(address: str) -> str:
    a, b, c, d = (int(x) for x in address.split("."))
    return f"0000:0000:0000:0000:0000:ffff:{a * 256 + b:04x}:{c * 256 + d:04x}"


def add_gid(port: Path, index: int, address: str, gid_type: str | None, ndev: str) -> None:
    (port / "gids" / str(index)).write_text(mapped(address) + "\n", encoding="utf-8")
    if gid_type is not None:
        (port / "gid_attrs" / "types" / str(index)).write_text(gid_type + "\n", encoding="utf-8")
        (port / "gid_attrs" / "ndevs" / str(index)).write_text(ndev + "\n", encoding="utf-8")


@pytest.mark.parametrize(
    ("case", "pci", "gid_index", "hcas", "transport", "twin", "up", "warnings"),
    [
        ("single_port", "0000:01:00.1", 3, ["rocep1s0f1"], "ib", None, True, []),
        ("both_halves", "0000:01:00.1", 3, ["rocep1s0f1", "roceP2p1s0f1"], "ib", "enP2p1s0f1np1", True, []),
        ("gid_index_5", "0000:01:00.1", 5, ["rocep1s0f1"], "ib", None, True, []),
        (
            "link_down",
            "0000:01:00.1",
            3,
            ["rocep1s0f1"],
            "ib",
            None,
            False,
            ["enp1s0f1np1 is not up (operstate down, carrier 0)", "rocep1s0f1 port 1 is DOWN, not ACTIVE"],
        ),
        ("no_rdma", None, None, [], "socket", None, True, []),
        (
            "ipv6_only_gids",
            "0000:01:00.1",
            None,
            ["rocep1s0f1"],
            "ib",
            None,
            True,
            ["rocep1s0f1 has no RoCE v2 GID for 192.168.200.11 (only IPv6 GIDs): NCCL_IB_GID_INDEX left to NCCL"],
        ),
    ],
)
@pytest.mark.parametrize("mode", ["address", "interface"])
def test_every_fixture(
    tmp_path: Path,
    mode: str,
    case: str,
    pci: str | None,
    gid_index: int | None,
    hcas: list[str],
    transport: str,
    twin: str | None,
    up: bool,
    warnings: list[str],
) -> None:
    root = make_sysfs(case, tmp_path)
    selector = {"address": FABRIC_IP} if mode == "address" else {"interface": "enp1s0f1np1"}
    info = roce_info(root, ADDRESSES, **selector)
    result = info.as_dict()
    assert result["interface"] == "enp1s0f1np1"
    assert result["address"] == FABRIC_IP
    assert result["pci_address"] == pci
    assert result["gid_index"] == gid_index
    assert result["hca_list"] == hcas
    assert result["transport"] == transport
    assert (result["twin"] or {}).get("interface") == twin
    assert result["link"]["up"] is up
    assert list(info.warnings) == warnings
    assert [d["gid_index"] for d in result["rdma_devices"]] == ([gid_index] if hcas else [])
    json.dumps(result)  # the module returns it as is


def test_single_port_result(tmp_path: Path) -> None:
    info = roce_info(make_sysfs("single_port", tmp_path), {"enp1s0f1np1": [FABRIC_IP]}, address=FABRIC_IP)
    assert info.as_dict() == {
        "interface": "enp1s0f1np1",
        "pci_address": "0000:01:00.1",
        "address": FABRIC_IP,
        "link": {"operstate": "up", "up": True, "carrier": True, "mtu": 9000, "mac": "4c:bb:47:2c:1d:a1", "speed_mbps": 200000},
        "rdma_devices": [{"name": "rocep1s0f1", "port": 1, "state": "ACTIVE", "active": True, "gid_index": 3}],
        "gid_index": 3,
        "twin": None,
        "hca_list": ["rocep1s0f1"],
        "transport": "ib",
    }
    assert info.warnings == ()


def test_both_halves_twin(tmp_path: Path) -> None:
    info = roce_info(make_sysfs("both_halves", tmp_path), ADDRESSES, address=FABRIC_IP)
    assert info.as_dict()["twin"] == {
        "interface": "enP2p1s0f1np1",
        "pci_address": "0002:01:00.1",
        "address": TWIN_IP,
        "link": {"operstate": "up", "up": True, "carrier": True, "mtu": 9000, "mac": "4c:bb:47:2c:1d:a5", "speed_mbps": 200000},
        "rdma_devices": [{"name": "roceP2p1s0f1", "port": 1, "state": "ACTIVE", "active": True, "gid_index": 3}],
        "gid_index": 3,
    }


def test_both_halves_from_the_twin_address(tmp_path: Path) -> None:
    info = roce_info(make_sysfs("both_halves", tmp_path), ADDRESSES, address=TWIN_IP)
    result = info.as_dict()
    assert result["interface"] == "enP2p1s0f1np1"
    assert result["pci_address"] == "0002:01:00.1"
    assert result["twin"]["interface"] == "enp1s0f1np1"
    assert result["twin"]["address"] == FABRIC_IP
    assert result["hca_list"] == ["roceP2p1s0f1", "rocep1s0f1"]


def test_twin_without_address_has_no_gid_and_no_warning(tmp_path: Path) -> None:
    info = roce_info(make_sysfs("both_halves", tmp_path), {"enp1s0f1np1": [FABRIC_IP]}, address=FABRIC_IP)
    assert info.twin is not None
    assert info.twin.address is None
    assert info.twin.gid_index is None
    assert info.hca_list == ["rocep1s0f1", "roceP2p1s0f1"]
    assert info.warnings == ()


def test_picks_by_address_not_by_default_route(tmp_path: Path) -> None:
    # enP7s7 comes first (as the default route's netdev would) and holds an address too.
    addresses = {"enP7s7": ["10.0.0.5", "10.0.0.6"], "enP2p1s0f1np1": [TWIN_IP], "enp1s0f1np1": ["10.9.9.9", FABRIC_IP]}
    info = roce_info(make_sysfs("both_halves", tmp_path), addresses, address=FABRIC_IP)
    assert info.netdev.interface == "enp1s0f1np1"
    assert info.netdev.gid_index == 3


def test_management_nic_is_socket_without_twin(tmp_path: Path) -> None:
    info = roce_info(make_sysfs("both_halves", tmp_path), ADDRESSES, address="10.0.0.5")
    result = info.as_dict()
    assert result["interface"] == "enP7s7"
    assert result["pci_address"] == "0007:01:00.0"
    assert result["link"]["mtu"] == 1500
    assert (result["rdma_devices"], result["twin"], result["hca_list"], result["transport"]) == ([], None, [], "socket")
    assert result["gid_index"] is None
    assert info.warnings == ()


def test_twin_needs_an_rdma_device(tmp_path: Path) -> None:
    root = make_sysfs("both_halves", tmp_path)
    shutil.rmtree(root / "devices/pci0002:00/0002:00:01.0/0002:01:00.1/infiniband")
    (root / "class/infiniband/roceP2p1s0f1").unlink()
    info = roce_info(root, ADDRESSES, address=FABRIC_IP)
    assert info.twin is None
    assert info.hca_list == ["rocep1s0f1"]


def test_twin_is_on_another_pcie_domain(tmp_path: Path) -> None:
    # A second netdev on the same PCI function (a switchdev representor) has an RDMA device but is no twin.
    root = make_sysfs("single_port", tmp_path)
    rep = root / "class/net/pf1vf0"
    rep.mkdir()
    for attr, value in (("operstate", "up"), ("carrier", "1"), ("mtu", "1500"), ("address", "4c:bb:47:2c:1d:b0")):
        (rep / attr).write_text(value + "\n", encoding="utf-8")
    os.symlink("../../../devices/pci0000:00/0000:00:01.0/0000:01:00.1", rep / "device")
    info = roce_info(root, ADDRESSES, address=FABRIC_IP)
    assert info.twin is None
    assert info.hca_list == ["rocep1s0f1"]


def test_twin_gid_index_differs(tmp_path: Path) -> None:
    root = make_sysfs("both_halves", tmp_path)
    add_gid(root / TWIN_PORT_1, 5, "192.168.201.12", "RoCE v2", "enP2p1s0f1np1")
    addresses = {"enp1s0f1np1": [FABRIC_IP], "enP2p1s0f1np1": ["192.168.201.12"]}
    info = roce_info(root, addresses, address=FABRIC_IP)
    assert info.twin is not None and info.twin.gid_index == 5
    assert info.warnings == ("enp1s0f1np1 uses GID index 3 but its twin enP2p1s0f1np1 uses 5: NCCL_IB_GID_INDEX is one value for every HCA",)


def test_twin_address_without_gid_warns(tmp_path: Path) -> None:
    addresses = {"enp1s0f1np1": [FABRIC_IP], "enP2p1s0f1np1": ["192.168.201.99"]}
    info = roce_info(make_sysfs("both_halves", tmp_path), addresses, address=FABRIC_IP)
    assert info.netdev.gid_index == 3
    assert info.warnings == ("twin roceP2p1s0f1 has no RoCE v2 GID for 192.168.201.99 (RoCE v2 IPv4 GIDs only for 192.168.201.11)",)


def test_gid_of_another_netdev_is_not_taken(tmp_path: Path) -> None:
    # gid_index_5: indices 2 and 3 map 10.20.0.11 for the VLAN enp1s0f1np1.20, not for enp1s0f1np1.
    info = roce_info(make_sysfs("gid_index_5", tmp_path), {"enp1s0f1np1": ["10.20.0.11"]}, address="10.20.0.11")
    assert info.netdev.gid_index is None
    assert info.warnings == (
        "rocep1s0f1 has no RoCE v2 GID for 10.20.0.11 (its RoCE v2 GID 3 for that address belongs to enp1s0f1np1.20): NCCL_IB_GID_INDEX left to NCCL",
    )


def test_unreadable_gid_type_is_absent(tmp_path: Path) -> None:
    root = make_sysfs("single_port", tmp_path)
    (root / PORT_1 / "gid_attrs/types/3").unlink()  # as a read failing with EINVAL
    info = roce_info(root, {"enp1s0f1np1": [FABRIC_IP]}, address=FABRIC_IP)
    assert info.netdev.gid_index is None
    assert info.warnings == ("rocep1s0f1 has no RoCE v2 GID for 192.168.200.11 (only a IB/RoCE v1 GID at index 2): NCCL_IB_GID_INDEX left to NCCL",)


def test_interface_prefers_the_address_with_a_gid(tmp_path: Path) -> None:
    info = roce_info(make_sysfs("gid_index_5", tmp_path), {"enp1s0f1np1": ["10.9.9.9/24", FABRIC_IP]}, interface="enp1s0f1np1")
    assert info.netdev.address == FABRIC_IP
    assert info.netdev.gid_index == 5
    assert info.warnings == ()


def test_interface_without_ipv4(tmp_path: Path) -> None:
    info = roce_info(make_sysfs("single_port", tmp_path), {}, interface="enp1s0f1np1")
    assert info.netdev.address is None
    assert info.netdev.gid_index is None
    assert info.transport == "ib"
    assert info.warnings == ("enp1s0f1np1 has no IPv4 address: NCCL_IB_GID_INDEX left to NCCL",)


def test_interface_without_rdma_and_ipv4_has_no_warning(tmp_path: Path) -> None:
    info = roce_info(make_sysfs("no_rdma", tmp_path), {}, interface="enp1s0f1np1")
    assert (info.netdev.address, info.transport, info.warnings) == (None, "socket", ())


@pytest.mark.parametrize(("carrier", "up"), [("1", True), ("0", False)])
def test_operstate_unknown_is_up_with_carrier(tmp_path: Path, carrier: str, up: bool) -> None:
    root = make_sysfs("no_rdma", tmp_path)
    (root / "class/net/enp1s0f1np1/operstate").write_text("unknown\n", encoding="utf-8")
    (root / "class/net/enp1s0f1np1/carrier").write_text(carrier + "\n", encoding="utf-8")
    info = roce_info(root, {"enp1s0f1np1": [FABRIC_IP]}, address=FABRIC_IP)
    assert info.netdev.link.operstate == "unknown"
    assert info.netdev.link.up is up
    assert info.warnings == (() if up else ("enp1s0f1np1 is not up (operstate unknown, carrier 0)",))


def test_unreadable_carrier_is_none(tmp_path: Path) -> None:
    root = make_sysfs("link_down", tmp_path)
    (root / "class/net/enp1s0f1np1/carrier").unlink()  # an administratively down netdev: EINVAL
    info = roce_info(root, {"enp1s0f1np1": [FABRIC_IP]}, address=FABRIC_IP)
    assert info.netdev.link.carrier is None
    assert "enp1s0f1np1 is not up (operstate down, carrier unknown)" in info.warnings


def test_several_holders_prefer_rdma(tmp_path: Path) -> None:
    info = roce_info(make_sysfs("both_halves", tmp_path), {"enP7s7": [FABRIC_IP], "enp1s0f1np1": [FABRIC_IP]}, address=FABRIC_IP)
    assert info.netdev.interface == "enp1s0f1np1"
    assert info.warnings == ("192.168.200.11 is held by several interfaces (enP7s7, enp1s0f1np1); using enp1s0f1np1",)


@pytest.mark.parametrize(
    ("kwargs", "addresses", "message"),
    [
        (
            {"address": "192.168.200.99"},
            ADDRESSES,
            "no interface holds 192.168.200.99; interfaces with IPv4: enP2p1s0f1np1 (192.168.201.11), enP7s7 (10.0.0.5), "
            "enp1s0f1np1 (192.168.200.11), lo (127.0.0.1)",
        ),
        ({"address": "192.168.200.99"}, {"eth0": []}, "no interface holds 192.168.200.99; interfaces with IPv4: none"),
        ({"address": "192.168.200.11/24"}, ADDRESSES, "address '192.168.200.11/24' is not an IPv4 address"),
        ({"address": "fe80::1"}, ADDRESSES, "address 'fe80::1' is not an IPv4 address"),
        ({"address": "10.1.1.1"}, {"eth0": ["10.1.1.1"]}, "10.1.1.1 is held by eth0, which does not exist under {net}"),
        ({"interface": "enp9s0"}, ADDRESSES, "interface enp9s0 does not exist under {net}"),
        ({"interface": "../net"}, ADDRESSES, "interface ../net does not exist under {net}"),
        ({}, ADDRESSES, "give exactly one of address and interface"),
        ({"address": FABRIC_IP, "interface": "enp1s0f1np1"}, ADDRESSES, "give exactly one of address and interface"),
    ],
)
def test_errors_name_the_address_or_interface(tmp_path: Path, kwargs: dict[str, t.Any], addresses: dict[str, list[str]], message: str) -> None:
    root = make_sysfs("both_halves", tmp_path)
    with pytest.raises(RoceError) as excinfo:
        roce_info(root, addresses, **kwargs)
    assert str(excinfo.value) == message.format(net=root / "class" / "net")
    assert isinstance(excinfo.value, ValueError)


def test_error_when_sysfs_root_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(RoceError, match="class/net does not exist"):
        roce_info(tmp_path, ADDRESSES, address=FABRIC_IP)


def test_addresses_from_gids(tmp_path: Path) -> None:
    assert addresses_from_gids(make_sysfs("both_halves", tmp_path)) == {"enP2p1s0f1np1": [TWIN_IP], "enp1s0f1np1": [FABRIC_IP]}
    assert addresses_from_gids(make_sysfs("gid_index_5", tmp_path)) == {"enp1s0f1np1": [FABRIC_IP], "enp1s0f1np1.20": ["10.20.0.11"]}
    assert addresses_from_gids(make_sysfs("ipv6_only_gids", tmp_path)) == {}
    assert addresses_from_gids(make_sysfs("no_rdma", tmp_path)) == {}


def test_parse_ip_addr_json() -> None:
    text = json.dumps(
        [
            {"ifindex": 1, "ifname": "lo", "addr_info": [{"family": "inet", "local": "127.0.0.1", "prefixlen": 8}]},
            {},
            {"ifindex": 2, "ifname": "enP7s7", "addr_info": [{"family": "inet", "local": "10.0.0.5", "prefixlen": 24, "dynamic": True}]},
            {
                "ifindex": 4,
                "ifname": "enp1s0f1np1",
                "addr_info": [
                    {"family": "inet", "local": "192.168.200.11", "prefixlen": 24},
                    {"family": "inet", "local": "192.168.200.12", "prefixlen": 24},
                ],
            },
        ]
    )
    assert parse_ip_addr_json(text) == {"lo": ["127.0.0.1"], "enP7s7": ["10.0.0.5"], "enp1s0f1np1": ["192.168.200.11", "192.168.200.12"]}
    assert parse_ip_addr_json("") == {}


@pytest.mark.parametrize("text", ["not json", '{"ifname": "eth0"}'])
def test_parse_ip_addr_json_rejects_garbage(text: str) -> None:
    with pytest.raises(RoceError, match="cannot parse the output of ip -j -4 addr show"):
        parse_ip_addr_json(text)


@pytest.mark.parametrize(("content", "speed"), [("200000\n", 200000), ("13000\n", 13000), ("-1\n", None), ("", None), (None, None)])
def test_link_speed_is_none_where_the_kernel_gives_none(tmp_path: Path, content: str | None, speed: int | None) -> None:
    root = make_sysfs("single_port", tmp_path)
    speed_file = root / "class" / "net" / "enp1s0f1np1" / "speed"
    if content is None:
        speed_file.unlink()  # a down link: reading it fails with EINVAL, as a missing file does here
    else:
        speed_file.write_text(content, encoding="utf-8")
    assert roce_info(root, ADDRESSES, interface="enp1s0f1np1").as_dict()["link"]["speed_mbps"] == speed


def test_twin_link_has_its_speed(tmp_path: Path) -> None:
    root = make_sysfs("both_halves", tmp_path)
    (root / "class" / "net" / "enP2p1s0f1np1" / "speed").write_text("100000\n", encoding="utf-8")
    result = roce_info(root, ADDRESSES, address=FABRIC_IP).as_dict()
    assert result["link"]["speed_mbps"] == 200000
    assert result["twin"]["link"]["speed_mbps"] == 100000
