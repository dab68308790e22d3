# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_version_drift: every node compared with the head, each difference named with host, component and both values."""

from __future__ import annotations

import pytest
from ansible_collections.sparkops.inference.plugins.module_utils._version_drift import COMPONENTS, version_drift

SAME: dict[str, str | None] = {
    "kernel": "6.11.0-1016-nvidia",
    "driver": "580.95.05",
    "cuda": "13.0",
    "nccl": "2.28.3",
    "python": "3.12.3",
    "ray": "2.60.0",
    "vllm": "0.30.0",
}


def test_matching_nodes() -> None:
    drift = version_drift("head", {"head": SAME, "w1": dict(SAME), "w2": dict(SAME)})
    assert drift.matches and drift.problems == drift.allowed == drift.unknown == []


def test_every_difference_at_once_naming_host_component_and_both_values() -> None:
    drift = version_drift("head", {"head": SAME, "w1": {**SAME, "ray": "2.59.1"}, "w2": {**SAME, "kernel": "6.8.0-1010-nvidia", "vllm": "0.29.1"}})
    assert drift.problems == [
        "host w2: kernel 6.8.0-1010-nvidia, the head head has 6.11.0-1016-nvidia",
        "host w1: ray 2.59.1, the head head has 2.60.0",
        "host w2: vllm 0.29.1, the head head has 0.30.0",
    ]


def test_a_deliberate_mix_is_allowed_and_still_reported() -> None:
    drift = version_drift("head", {"head": SAME, "w1": {**SAME, "kernel": "6.8.0"}}, allowed=["kernel"])
    assert drift.matches and drift.allowed == ["host w1: kernel 6.8.0, the head head has 6.11.0-1016-nvidia"]


def test_what_a_node_cannot_report_is_listed_not_compared() -> None:
    drift = version_drift("head", {"head": {**SAME, "cuda": None}, "w1": {**SAME, "nccl": None, "cuda": "12.9"}})
    assert drift.matches
    assert drift.unknown == ["cuda: the head head did not report it; not compared", "nccl: host w1 did not report it; not compared"]


def test_bad_input_is_named() -> None:
    with pytest.raises(ValueError, match="sparkops_drift_allowed names kernal: the components are " + ", ".join(COMPONENTS)):
        version_drift("head", {"head": SAME}, allowed=["kernal"])
    with pytest.raises(ValueError, match="the head spark-head reported no versions"):
        version_drift("spark-head", {"head": SAME})
