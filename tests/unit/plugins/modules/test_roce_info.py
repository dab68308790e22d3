# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the roce_info module: main() over the sysfs fixture trees, with ``ip`` mocked."""

from __future__ import annotations

import json
import typing as t
from pathlib import Path
from unittest.mock import MagicMock, patch

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args
from ansible_collections.sparkops.inference.plugins.modules import roce_info
from sysfs_tree import materialise as make_sysfs

IP = "/usr/sbin/ip"
FABRIC_IP = "192.168.200.11"


def ip_json(addresses: dict[str, list[str]]) -> str:
    """What ``ip -j -4 addr show`` prints for these addresses (a link without IPv4 prints as {})."""
    links: list[dict[str, t.Any]] = [{"ifindex": 1, "ifname": "lo", "addr_info": [{"family": "inet", "local": "127.0.0.1", "prefixlen": 8}]}, {}]
    for index, (name, addrs) in enumerate(addresses.items(), start=2):
        info = [{"family": "inet", "local": a, "prefixlen": 24, "scope": "global", "label": name} for a in addrs]
        links.append({"ifindex": index, "ifname": name, "flags": ["BROADCAST", "UP"], "addr_info": info})
    return json.dumps(links)


# The default route goes through enP7s7, listed first; the fabric address is on enp1s0f1np1.
HOST = {"enP7s7": ["10.0.0.5"], "enp1s0f1np1": [FABRIC_IP], "enP2p1s0f1np1": ["192.168.201.11"]}


class Run(t.NamedTuple):
    result: dict[str, t.Any]
    warnings: list[str]
    run_command: MagicMock


def run_module(
    args: dict[str, t.Any],
    capsys: pytest.CaptureFixture[str],
    ip_path: str | None = IP,
    ip_result: tuple[int, str, str] | None = None,
) -> Run:
    """Run main() and return its JSON result, its warnings and the run_command mock.

    AnsibleModule.warn is mocked to record the warnings: once a controller module is imported (the action plugin
    tests do), ansible-core sends module warnings to the display instead of the result.
    """
    run_command = MagicMock(return_value=ip_result or (0, ip_json(HOST), ""))
    warn = MagicMock()
    with (
        patch_module_args(args),
        patch.object(AnsibleModule, "get_bin_path", MagicMock(return_value=ip_path)),
        patch.object(AnsibleModule, "run_command", run_command),
        patch.object(AnsibleModule, "warn", warn),
        pytest.raises(SystemExit),
    ):
        roce_info.main()
    return Run(json.loads(capsys.readouterr().out), [c.args[0] for c in warn.call_args_list], run_command)


def test_both_halves_by_address(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result, warnings, run_command = run_module({"address": FABRIC_IP, "sysfs_root": str(make_sysfs("both_halves", tmp_path))}, capsys)
    run_command.assert_called_once_with([IP, "-j", "-4", "addr", "show"])
    assert not result.get("failed"), result
    assert result["changed"] is False
    assert warnings == []
    assert result["interface"] == "enp1s0f1np1"
    assert result["address"] == FABRIC_IP
    assert result["pci_address"] == "0000:01:00.1"
    assert result["link"] == {"operstate": "up", "up": True, "carrier": True, "mtu": 9000, "mac": "4c:bb:47:2c:1d:a1", "speed_mbps": 200000}
    assert result["rdma_devices"] == [{"name": "rocep1s0f1", "port": 1, "state": "ACTIVE", "active": True, "gid_index": 3}]
    assert result["gid_index"] == 3
    assert result["twin"]["interface"] == "enP2p1s0f1np1"
    assert result["twin"]["gid_index"] == 3
    assert result["twin"]["rdma_devices"][0]["name"] == "roceP2p1s0f1"
    assert result["hca_list"] == ["rocep1s0f1", "roceP2p1s0f1"]
    assert result["transport"] == "ib"


def test_by_interface_in_check_mode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = {"interface": "enp1s0f1np1", "sysfs_root": str(make_sysfs("gid_index_5", tmp_path)), "_ansible_check_mode": True}
    result = run_module(args, capsys).result
    assert not result.get("failed"), result
    assert result["changed"] is False
    assert (result["interface"], result["address"], result["gid_index"], result["twin"]) == ("enp1s0f1np1", FABRIC_IP, 5, None)


def test_no_rdma_is_socket(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_module({"address": FABRIC_IP, "sysfs_root": str(make_sysfs("no_rdma", tmp_path))}, capsys).result
    assert not result.get("failed"), result
    assert (result["transport"], result["rdma_devices"], result["hca_list"], result["gid_index"]) == ("socket", [], [], None)


def test_warnings_are_module_warnings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result, warnings = run_module({"address": FABRIC_IP, "sysfs_root": str(make_sysfs("ipv6_only_gids", tmp_path))}, capsys)[:2]
    assert not result.get("failed"), result
    assert result["gid_index"] is None
    assert warnings == ["rocep1s0f1 has no RoCE v2 GID for 192.168.200.11 (only IPv6 GIDs): NCCL_IB_GID_INDEX left to NCCL"]


def test_link_down_warns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result, warnings = run_module({"address": FABRIC_IP, "sysfs_root": str(make_sysfs("link_down", tmp_path))}, capsys)[:2]
    assert not result.get("failed"), result
    assert result["link"]["up"] is False
    assert result["rdma_devices"][0]["active"] is False
    assert warnings == ["enp1s0f1np1 is not up (operstate down, carrier 0)", "rocep1s0f1 port 1 is DOWN, not ACTIVE"]


def test_unknown_address_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_module({"address": "192.168.200.99", "sysfs_root": str(make_sysfs("both_halves", tmp_path))}, capsys).result
    assert result["failed"] is True
    assert result["msg"] == (
        "no interface holds 192.168.200.99; interfaces with IPv4: enP2p1s0f1np1 (192.168.201.11), enP7s7 (10.0.0.5), "
        "enp1s0f1np1 (192.168.200.11), lo (127.0.0.1)"
    )


def test_unknown_interface_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_sysfs("single_port", tmp_path)
    result = run_module({"interface": "enp9s0", "sysfs_root": str(root)}, capsys).result
    assert result["failed"] is True
    assert result["msg"] == f"interface enp9s0 does not exist under {root / 'class' / 'net'}"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "one of the following is required: address, interface"),
        ({"address": FABRIC_IP, "interface": "enp1s0f1np1"}, "parameters are mutually exclusive: address|interface"),
    ],
)
def test_argument_errors(capsys: pytest.CaptureFixture[str], args: dict[str, t.Any], message: str) -> None:
    run = run_module(args, capsys)
    result, run_command = run.result, run.run_command
    assert result["failed"] is True
    assert result["msg"] == message
    run_command.assert_not_called()


def test_without_ip_addresses_come_from_gids(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result, warnings, run_command = run_module({"address": "192.168.201.11", "sysfs_root": str(make_sysfs("both_halves", tmp_path))}, capsys, ip_path=None)
    run_command.assert_not_called()
    assert not result.get("failed"), result
    assert (result["interface"], result["gid_index"], result["twin"]["interface"]) == ("enP2p1s0f1np1", 3, "enp1s0f1np1")
    assert result["twin"]["address"] == FABRIC_IP
    assert warnings == []


def test_failing_ip_falls_back_with_a_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_sysfs("single_port", tmp_path)
    result, warnings = run_module({"address": FABRIC_IP, "sysfs_root": str(root)}, capsys, ip_result=(255, "", "Option -j is unknown\n"))[:2]
    assert not result.get("failed"), result
    assert result["gid_index"] == 3
    assert warnings == ["ip -j -4 addr show failed (rc 255: Option -j is unknown); IPv4 addresses taken from the RoCE v2 GIDs in sysfs"]
