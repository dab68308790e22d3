# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the _fabric_gate plugin util, over roce_info results read from the sysfs fixtures (fixtures/sysfs)."""

from __future__ import annotations

import typing as t
from pathlib import Path

import pytest
from ansible_collections.sparkops.inference.plugins.module_utils._roce import roce_info
from ansible_collections.sparkops.inference.plugins.plugin_utils._fabric_gate import FabricGateError, GateSettings, fabric_gate
from sysfs_tree import materialise

ADDRESSES = {"enp1s0f1np1": ["192.168.200.11"], "enP2p1s0f1np1": ["192.168.201.11"]}
NET = Path("class") / "net"


def node(tmp_path: Path, name: str, case: str = "both_halves", **files: str) -> dict[str, t.Any]:
    """roce_info's result for a materialised fixture, with sysfs attributes overridden: ``speed="13000"``,
    ``twin_speed="100000"``, ``mtu="1500"``, ``twin_mtu=...``."""
    root = materialise(case, tmp_path / name)
    for key, value in files.items():
        netdev = "enP2p1s0f1np1" if key.startswith("twin_") else "enp1s0f1np1"
        attribute = root / NET / netdev / key.removeprefix("twin_")
        if value == "absent":
            attribute.unlink()
        else:
            attribute.write_text(value + "\n", encoding="utf-8")
    return roce_info(root, ADDRESSES, interface="enp1s0f1np1").as_dict()


def test_two_healthy_sparks_pass(tmp_path: Path) -> None:
    report = fabric_gate({"spark-head": node(tmp_path, "head"), "spark-worker1": node(tmp_path, "w1")}, GateSettings(min_mtu=9000))
    assert report.ok, report.failures
    assert report.notes == ()
    assert report.mtu == {"spark-head": 9000, "spark-worker1": 9000}


def test_degraded_link_fails_naming_node_interface_and_speed(tmp_path: Path) -> None:
    nodes = {"spark-head": node(tmp_path, "head"), "spark-worker1": node(tmp_path, "w1", speed="13000")}
    report = fabric_gate(nodes, GateSettings())
    assert report.failures == ("spark-worker1: fabric link enp1s0f1np1 runs at 13000 Mb/s, expected 200000 (at least 90 %)",)


def test_degraded_twin_fails_naming_the_twin(tmp_path: Path) -> None:
    report = fabric_gate({"spark-head": node(tmp_path, "head", twin_speed="100000")}, GateSettings())
    assert report.failures == ("spark-head: fabric link enP2p1s0f1np1 (twin of enp1s0f1np1) runs at 100000 Mb/s, expected 200000 (at least 90 %)",)


@pytest.mark.parametrize(("speed", "fraction", "ok"), [("180000", 0.9, True), ("179999", 0.9, False), ("199999", 1.0, False), ("100000", 0.5, True)])
def test_speed_threshold_is_the_fraction_of_the_expected_rate(tmp_path: Path, speed: str, fraction: float, ok: bool) -> None:
    assert fabric_gate({"h": node(tmp_path, "h", speed=speed)}, GateSettings(min_speed_fraction=fraction)).ok is ok


def test_mtu_mismatch_fails_naming_the_odd_node(tmp_path: Path) -> None:
    nodes = {"spark-head": node(tmp_path, "head"), "spark-worker1": node(tmp_path, "w1"), "spark-worker2": node(tmp_path, "w2", mtu="1500", twin_mtu="1500")}
    report = fabric_gate(nodes, GateSettings())
    assert report.failures == (
        "spark-worker2: fabric link enp1s0f1np1 has MTU 1500, the other nodes 9000 (spark-head, spark-worker1): the fabric MTU must be the same on every node",
    )


def test_mtu_mismatch_of_two_nodes_names_the_one_that_differs_from_the_head(tmp_path: Path) -> None:
    report = fabric_gate({"spark-head": node(tmp_path, "head"), "spark-worker1": node(tmp_path, "w1", mtu="1500", twin_mtu="1500")}, GateSettings())
    assert len(report.failures) == 1 and report.failures[0].startswith("spark-worker1: fabric link enp1s0f1np1 has MTU 1500, the other nodes 9000 (spark-head)")


def test_mtu_below_the_minimum_fails(tmp_path: Path) -> None:
    report = fabric_gate({"spark-head": node(tmp_path, "head", mtu="1500")}, GateSettings(min_mtu=9000))
    assert report.failures == ("spark-head: fabric link enp1s0f1np1 has MTU 1500, below the minimum 9000 (nccl_env_min_mtu)",)


@pytest.mark.parametrize("speed", ["-1", "absent"])
def test_auto_skips_a_link_without_speed_and_says_so(tmp_path: Path, speed: str) -> None:
    report = fabric_gate({"spark-head": node(tmp_path, "head", speed=speed)}, GateSettings())
    assert report.ok
    assert report.notes == ("spark-head: fabric link enp1s0f1np1 reports no speed (the kernel gives none): speed not checked (nccl_env_speed_check: auto)",)


def test_required_fails_a_link_without_speed(tmp_path: Path) -> None:
    report = fabric_gate({"spark-head": node(tmp_path, "head", speed="-1")}, GateSettings(speed_check="required"))
    assert report.failures == (
        "spark-head: fabric link enp1s0f1np1 reports no speed (the kernel gives none), expected 200000 Mb/s (nccl_env_speed_check: required)",
    )


def test_auto_skips_a_virtual_link_whatever_it_reports(tmp_path: Path) -> None:
    # no_rdma: a netdev without a PCI device, like the lab's veths, whose driver always reports 10000 Mb/s
    report = fabric_gate({"lab-head": node(tmp_path, "head", case="no_rdma")}, GateSettings())
    assert report.ok
    assert report.notes == (
        "lab-head: fabric link enp1s0f1np1 is a virtual netdev (no PCI device, e.g. a veth) reporting 10000 Mb/s: "
        "speed not checked (nccl_env_speed_check: auto)",
    )
    required = fabric_gate({"lab-head": node(tmp_path, "head2", case="no_rdma")}, GateSettings(speed_check="required"))
    assert required.failures == ("lab-head: fabric link enp1s0f1np1 runs at 10000 Mb/s, expected 200000 (at least 90 %)",)


def test_off_checks_no_speed(tmp_path: Path) -> None:
    report = fabric_gate({"spark-head": node(tmp_path, "head", speed="13000")}, GateSettings(speed_check="off"))
    assert report.ok
    assert report.notes[0] == "spark-head: fabric link enp1s0f1np1: speed not checked (nccl_env_speed_check: off)"


def test_link_down_fails(tmp_path: Path) -> None:
    report = fabric_gate({"spark-head": node(tmp_path, "head", case="link_down")}, GateSettings())
    assert report.failures == ("spark-head: fabric link enp1s0f1np1 is not up (operstate down)",)


def test_every_problem_at_once(tmp_path: Path) -> None:
    nodes = {"spark-head": node(tmp_path, "head"), "spark-worker1": node(tmp_path, "w1", speed="13000", mtu="1500", twin_mtu="1500")}
    report = fabric_gate(nodes, GateSettings())
    assert [f.split(":")[0] for f in report.failures] == ["spark-worker1"] * 2
    assert "13000 Mb/s" in report.failures[0] and "MTU 1500" in report.failures[1]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (GateSettings(expected_speed_mbps=0), "expected_speed_mbps must be a whole number of Mb/s above 0, got 0"),
        (GateSettings(expected_speed_mbps=-200000), "expected_speed_mbps must be a whole number of Mb/s above 0"),
        (GateSettings(min_speed_fraction=0), "min_speed_fraction must be above 0 and at most 1, got 0"),
        (GateSettings(min_speed_fraction=1.5), "min_speed_fraction must be above 0 and at most 1, got 1.5"),
        (GateSettings(min_mtu=575), "min_mtu must be a whole number of at least 576, got 575"),
        (GateSettings(speed_check="sometimes"), "speed_check must be one of auto, required, off"),
    ],
)
def test_nonsense_settings_are_refused(tmp_path: Path, settings: GateSettings, message: str) -> None:
    with pytest.raises(FabricGateError, match=message):
        fabric_gate({"h": node(tmp_path, "h")}, settings)


def test_no_nodes_is_refused() -> None:
    with pytest.raises(FabricGateError, match="at least one node"):
        fabric_gate({}, GateSettings())
