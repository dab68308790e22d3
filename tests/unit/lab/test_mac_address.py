# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for sparklab.nodes.mac_address."""

from __future__ import annotations

import re

import pytest
from sparklab.nodes import mac_address

MAC = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")
MGMT, FABRIC = 0x3A, 0xFA
IPS = ["10.89.200.11", "192.168.200.11", "192.168.200.12", "192.168.200.26", "0.0.0.1", "255.255.255.254"]


@pytest.mark.parametrize("network", [MGMT, FABRIC])
@pytest.mark.parametrize("ip", IPS)
def test_format_and_locally_administered_unicast(network: int, ip: str) -> None:
    mac = mac_address(network, ip)
    assert MAC.match(mac), mac
    first = int(mac.split(":")[0], 16)
    assert first & 0x02, "locally administered bit must be set"
    assert not first & 0x01, "must be unicast"


@pytest.mark.parametrize(
    ("network", "ip", "expected"),
    [
        (FABRIC, "192.168.200.11", "02:fa:c0:a8:c8:0b"),
        (MGMT, "10.89.200.11", "02:3a:0a:59:c8:0b"),
    ],
)
def test_known_values(network: int, ip: str, expected: str) -> None:
    assert mac_address(network, ip) == expected


@pytest.mark.parametrize("ip", IPS)
def test_stable(ip: str) -> None:
    assert mac_address(FABRIC, ip) == mac_address(FABRIC, ip)


@pytest.mark.parametrize("ip", IPS)
def test_distinct_per_network(ip: str) -> None:
    assert mac_address(MGMT, ip) != mac_address(FABRIC, ip)


def test_distinct_per_node() -> None:
    macs = [mac_address(network, f"192.168.200.{host}") for network in (MGMT, FABRIC) for host in range(1, 255)]
    assert len(set(macs)) == len(macs)
