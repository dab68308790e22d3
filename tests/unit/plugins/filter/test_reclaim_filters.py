# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the reclaim_plan and reclaim_verdict filters, through their FilterModule."""

from __future__ import annotations

import typing as t

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.sparkops.inference.plugins.filter.reclaim_plan import FilterModule as PlanFilters
from ansible_collections.sparkops.inference.plugins.filter.reclaim_verdict import FilterModule as VerdictFilters

reclaim_plan = PlanFilters().filters()["reclaim_plan"]
reclaim_verdict = VerdictFilters().filters()["reclaim_verdict"]

VLLM = {"pid": 118211, "name": "VLLM::EngineCore", "used_mib": 87212, "unit": "vllm-cluster.service", "user_unit": False, "cmdline": "VLLM::EngineCore"}
GPU_INFO = {"processes": [VLLM], "unified_memory": True, "total_mib": 124610, "available_mib": 28000}
SERVICES = {"vllm-cluster.service": {"name": "vllm-cluster.service", "state": "running", "status": "enabled", "source": "systemd"}}


def test_filters_are_registered() -> None:
    assert list(PlanFilters().filters()) == ["reclaim_plan"]
    assert list(VerdictFilters().filters()) == ["reclaim_verdict"]


def test_reclaim_plan() -> None:
    result = reclaim_plan(GPU_INFO, SERVICES, {"units": ["vllm-*"]})
    assert result["units"] == ["vllm-cluster.service"]
    assert result["freed"][0]["by"] == "stopping unit vllm-cluster.service"
    assert result["nothing_to_do"] is False


def test_reclaim_plan_without_settings_refuses() -> None:
    result = reclaim_plan(GPU_INFO, SERVICES)
    assert result["units"] == []
    assert result["refused_table"] == "   PID    MiB  NAME              OWNER\n118211  87212  VLLM::EngineCore  unit vllm-cluster.service"


def test_reclaim_plan_never_plans_ssh_for_a_pattern() -> None:
    """ATTACK (issue 15): gpu_reclaim_units ['s*'] through the filter as the role calls it."""
    services = {**SERVICES, **{name: {"name": name, "state": "running", "status": "enabled", "source": "systemd"} for name in ("ssh.service", "sshd.service")}}
    services["spark-old.service"] = {"name": "spark-old.service", "state": "running", "status": "enabled", "source": "systemd"}
    result = reclaim_plan(GPU_INFO, services, {"units": ["s*"]})
    assert result["units"] == ["spark-old.service"]
    assert result["units_protected"] == [{"unit": "ssh.service", "configured": "s*"}, {"unit": "sshd.service", "configured": "s*"}]
    assert reclaim_plan(GPU_INFO, services, {"units": ["ssh"]})["units_protected_named"] == ["ssh"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((None, SERVICES), "the input must be a sparkops.inference.gpu_info result"),
        (({"failed": True, "msg": "nvidia-smi not found"}, SERVICES), "the input must be a sparkops.inference.gpu_info result"),
        ((GPU_INFO, ["vllm-cluster.service"]), "services must be ansible_facts.services (a dict), not list"),
        ((GPU_INFO, SERVICES, {"units": "vllm-*"}), "reclaim setting units must be a list of strings, got 'vllm-*'"),
        ((GPU_INFO, SERVICES, {"remove_containers": True}), "unknown reclaim setting(s): remove_containers"),
        ((GPU_INFO, SERVICES, ["units"]), "reclaim settings must be a dict, got list"),
    ],
)
def test_reclaim_plan_input_errors(args: tuple[t.Any, ...], message: str) -> None:
    with pytest.raises(AnsibleFilterError) as caught:
        reclaim_plan(*args)
    assert str(caught.value).startswith("sparkops.inference.reclaim_plan: ")
    assert message in str(caught.value)


def test_reclaim_verdict() -> None:
    stopped = {**GPU_INFO, "processes": [], "available_mib": 115787}
    result = reclaim_verdict(stopped, {}, 0, 0.8)
    assert (result["ok"], result["required_mib"], result["available_mib"]) == (True, 99688, 115787)


def test_reclaim_verdict_own_and_strings() -> None:
    """Values templated from role variables may arrive as strings."""
    own = {**GPU_INFO, "processes": [{**VLLM, "unit": "sparkops-vllm.service"}]}
    result = reclaim_verdict(own, None, "100000", "0.8")
    assert (result["ok"], result["own_used_mib"], result["required_mib"]) == (True, 87212, 100000)
    assert reclaim_verdict(GPU_INFO)["problems"] == ["1 GPU process(es) still hold memory"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (([],), "the input must be a sparkops.inference.gpu_info result"),
        ((GPU_INFO, {"include_own": "no"}), "reclaim setting include_own must be true or false, got 'no'"),
        ((GPU_INFO, "include_own"), "reclaim settings must be a dict, got str"),
        ((GPU_INFO, {}, "lots"), "invalid literal for int()"),
        ((GPU_INFO, {}, 0, "most"), "could not convert string to float"),
        ((GPU_INFO, {}, -1), "min_available_mib must be >= 0 and min_available_fraction within 0..1, got -1 and 0.0"),
        ((GPU_INFO, {}, 0, 80), "min_available_mib must be >= 0 and min_available_fraction within 0..1, got 0 and 80.0"),
    ],
)
def test_reclaim_verdict_input_errors(args: tuple[t.Any, ...], message: str) -> None:
    with pytest.raises(AnsibleFilterError) as caught:
        reclaim_verdict(*args)
    assert str(caught.value).startswith("sparkops.inference.reclaim_verdict: ")
    assert message in str(caught.value)
