# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for sparklab.topology."""

from __future__ import annotations

import ipaddress

import pytest
from sparklab.topology import MAX_NODES, Network, build_topology

IMAGE = "localhost/spark-node:test"


@pytest.mark.parametrize("count", [2, 3, 4, MAX_NODES])
def test_node_names_roles_and_count(count: int) -> None:
    topo = build_topology(count, IMAGE)
    assert len(topo.nodes) == count
    assert topo.head.name == "spark-head"
    assert topo.head.role == "head"
    assert topo.head is topo.nodes[0]
    assert [w.name for w in topo.workers] == [f"spark-worker{i}" for i in range(1, count)]
    assert all(w.role == "worker" for w in topo.workers)
    assert topo.image == IMAGE


@pytest.mark.parametrize("count", [2, 4, MAX_NODES])
def test_fabric_ips_are_sequential_from_dot_11(count: int) -> None:
    topo = build_topology(count, IMAGE)
    assert [n.fabric_ip for n in topo.nodes] == [f"192.168.200.{11 + i}" for i in range(count)]
    subnet = ipaddress.IPv4Network(topo.fabric.subnet)
    assert all(ipaddress.IPv4Address(n.fabric_ip) in subnet for n in topo.nodes)


def test_only_head_has_mgmt_ip() -> None:
    topo = build_topology(4, IMAGE)
    assert topo.head.mgmt_ip == "10.89.200.11"
    assert ipaddress.IPv4Address(topo.head.mgmt_ip) in ipaddress.IPv4Network(topo.mgmt.subnet)
    assert [w.mgmt_ip for w in topo.workers] == [None, None, None]


def test_networks() -> None:
    topo = build_topology(2, IMAGE)
    assert topo.name == "spark-lab"
    assert topo.mgmt == Network("spark-mgmt", "10.89.200.0/24", internal=False)
    assert topo.fabric == Network("spark-ib", "192.168.200.0/24", internal=True)


def test_custom_names_and_subnets() -> None:
    topo = build_topology(
        3,
        IMAGE,
        name="lab2",
        node_prefix="dgx",
        mgmt_network="m",
        mgmt_subnet="10.1.0.0/24",
        fabric_network="f",
        fabric_subnet="172.16.5.0/24",
        first_host=21,
    )
    assert topo.name == "lab2"
    assert [n.name for n in topo.nodes] == ["dgx-head", "dgx-worker1", "dgx-worker2"]
    assert [n.fabric_ip for n in topo.nodes] == ["172.16.5.21", "172.16.5.22", "172.16.5.23"]
    assert topo.head.mgmt_ip == "10.1.0.21"
    assert (topo.mgmt.name, topo.fabric.name) == ("m", "f")


@pytest.mark.parametrize("count", [-1, 0, 1, MAX_NODES + 1, 100])
def test_node_count_out_of_bounds(count: int) -> None:
    with pytest.raises(ValueError, match="SPARK_LAB_NODES") as excinfo:
        build_topology(count, IMAGE)
    assert str(count) in str(excinfo.value)
    assert str(MAX_NODES) in str(excinfo.value)


def test_max_nodes_is_sixteen() -> None:
    assert MAX_NODES == 16


@pytest.mark.parametrize(("index", "expected"), [(1, "192.168.200.1"), (11, "192.168.200.11"), (254, "192.168.200.254")])
def test_network_address(index: int, expected: str) -> None:
    assert Network("n", "192.168.200.0/24", internal=True).address(index) == expected


@pytest.mark.parametrize("index", [0, 255, 256, 1000])
def test_network_address_outside_subnet(index: int) -> None:
    with pytest.raises(ValueError, match="outside 192.168.200.0/24"):
        Network("n", "192.168.200.0/24", internal=True).address(index)


def test_subnet_too_small_for_node_count() -> None:
    with pytest.raises(ValueError, match="outside"):
        build_topology(4, IMAGE, fabric_subnet="192.168.200.8/29", first_host=5)
