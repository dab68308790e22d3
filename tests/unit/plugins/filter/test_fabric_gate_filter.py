# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The fabric_gate filter: wiring to the _fabric_gate module util, and errors that name the filter."""

from __future__ import annotations

import typing as t

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.sparkops.inference.plugins.filter.fabric_gate import FilterModule

fabric_gate = FilterModule().filters()["fabric_gate"]


def roce(speed: int | None, mtu: int = 9000) -> dict[str, t.Any]:
    return {"interface": "enp1s0f1np1", "pci_address": "0000:01:00.1", "link": {"up": True, "operstate": "up", "mtu": mtu, "speed_mbps": speed}, "twin": None}


def test_filter_returns_the_verdict() -> None:
    verdict = fabric_gate({"spark-head": roce(200000), "spark-worker1": roce(13000)})
    assert verdict == {
        "ok": False,
        "failures": ["spark-worker1: fabric link enp1s0f1np1 runs at 13000 Mb/s, expected 200000 (at least 90 %)"],
        "notes": [],
        "mtu": {"spark-head": 9000, "spark-worker1": 9000},
    }
    assert fabric_gate({"spark-head": roce(200000)}, expected_speed_mbps=100000, min_speed_fraction=1.0, min_mtu=9000)["ok"] is True


@pytest.mark.parametrize(
    ("value", "kwargs"),
    [(["spark-head"], {}), ({"spark-head": roce(1)}, {"min_mtu": 100}), ({"spark-head": roce(1)}, {"min_speed_fraction": 0}), ({"h": "x"}, {})],
)
def test_filter_errors_name_the_filter(value: t.Any, kwargs: dict[str, t.Any]) -> None:
    with pytest.raises(AnsibleFilterError, match="sparkops.inference.fabric_gate"):
        fabric_gate(value, **kwargs)
