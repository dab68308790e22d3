# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the _reclaim_check plugin util: the verdict on a gpu_info result read after reclaiming."""

from __future__ import annotations

import typing as t

import pytest
from ansible_collections.sparkops.inference.plugins.plugin_utils._reclaim_check import required_mib, verdict
from ansible_collections.sparkops.inference.plugins.plugin_utils._reclaim_plan import Settings

XORG = {"pid": 2741, "name": "/usr/lib/xorg/Xorg", "used_mib": 18, "unit": "session-c1.scope", "user_unit": False}
RAY_HEAD = {"pid": 501, "name": "ray::IDLE", "used_mib": 2000, "unit": "sparkops-ray-head.service", "user_unit": False}
JUPYTER = {"pid": 4242, "name": "python3", "used_mib": 20480, "unit": "jupyter.service", "user_unit": False}


def gb10(processes: list[dict[str, t.Any]], available: int = 115787, total: int = 124610) -> dict[str, t.Any]:
    return {"processes": processes, "unified_memory": True, "total_mib": total, "available_mib": available}


def test_ok() -> None:
    result = verdict(gb10([XORG]), Settings(), min_available_fraction=0.8)
    assert result == {
        "ok": True,
        "problems": [],
        "remaining": [],
        "remaining_table": "",
        "available_mib": 115787,
        "own_used_mib": 0,
        "required_mib": 99688,  # ceil(0.8 * 124610)
        "total_mib": 124610,
    }


def test_remaining_process_is_a_problem_with_a_table() -> None:
    result = verdict(gb10([XORG, JUPYTER]), Settings())
    assert result["ok"] is False
    assert result["problems"] == ["1 GPU process(es) still hold memory"]
    assert result["remaining"] == [JUPYTER]
    assert result["remaining_table"] == " PID    MiB  NAME     OWNER\n4242  20480  python3  unit jupyter.service"


@pytest.mark.parametrize(
    ("mib", "fraction", "required"),
    [(0, 0.8, 99688), (110000, 0.8, 110000), (50000, 0.95, 118380), (0, 0.0, 0), (120000, 0.0, 120000)],
)
def test_required_is_the_larger_threshold(mib: int, fraction: float, required: int) -> None:
    assert required_mib(124610, mib, fraction) == required


def test_required_ignores_float_error() -> None:
    assert required_mib(100, 0, 0.07) == 7
    assert required_mib(100, 0, 0.571) == 58


def test_below_fraction_on_unified_memory() -> None:
    result = verdict(gb10([], available=90000), Settings(), min_available_fraction=0.8)
    assert result["ok"] is False
    assert result["problems"] == ["MemAvailable (unified memory) is 90000 MiB, below the required 99688 MiB of 124610 MiB"]


def test_below_absolute_on_discrete_gpus() -> None:
    h200 = {"processes": [], "unified_memory": False, "total_mib": 143771, "available_mib": 122058}
    result = verdict(h200, Settings(), min_available_mib=130000, min_available_fraction=0.5)
    assert result["required_mib"] == 130000
    assert result["problems"] == ["free GPU memory is 122058 MiB, below the required 130000 MiB of 143771 MiB"]


def test_own_service_memory_counts_as_available() -> None:
    result = verdict(gb10([XORG, RAY_HEAD], available=98000), Settings(), min_available_fraction=0.8)
    assert (result["ok"], result["own_used_mib"], result["remaining"]) == (True, 2000, [])
    short = verdict(gb10([RAY_HEAD], available=97000), Settings(), min_available_fraction=0.8)
    assert short["problems"] == [
        "MemAvailable (unified memory) is 97000 MiB + 2000 MiB held by the collection's own services, below the required 99688 MiB of 124610 MiB"
    ]


def test_include_own_makes_own_processes_remaining() -> None:
    result = verdict(gb10([RAY_HEAD]), Settings(include_own=True))
    assert result["ok"] is False
    assert result["own_used_mib"] == 0
    assert result["remaining"] == [RAY_HEAD]
    assert result["problems"] == ["1 GPU process(es) still hold memory"]


def test_own_pattern_in_a_user_unit_is_remaining() -> None:
    user = {**RAY_HEAD, "user_unit": True}
    assert verdict(gb10([user]), Settings())["remaining"] == [user]


def test_own_container_memory_counts_as_available() -> None:
    """Issue 15: with the docker runtime the collection's own vLLM/Ray run in their containers' scopes, not in the
    sparkops-* units; kept by the plan, they must count as the collection's own here too, not as GPU memory left."""
    vllm_id = "a91c7e2d44b05f3e6a7b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b"
    vllm = {"pid": 3200, "name": "VLLM::EngineCore", "used_mib": 80000, "unit": f"docker-{vllm_id}.scope", "user_unit": False}
    vllm |= {"container_id": vllm_id, "container_name": "sparkops-vllm", "container_running": True}
    result = verdict(gb10([vllm], available=30000), Settings(), min_available_fraction=0.8)
    assert (result["ok"], result["own_used_mib"], result["remaining"]) == (True, 80000, [])
    assert verdict(gb10([vllm]), Settings(include_own=True))["remaining"] == [vllm]
    # A name docker did not confirm (gpu_info reports no name then), or a gone container, is not the collection's own.
    gone = {**vllm, "container_running": False}
    assert verdict(gb10([gone]), Settings())["remaining"] == [gone]


def test_both_problems() -> None:
    result = verdict(gb10([JUPYTER], available=1000), Settings(), min_available_mib=2000)
    assert result["problems"] == [
        "1 GPU process(es) still hold memory",
        "MemAvailable (unified memory) is 1000 MiB, below the required 2000 MiB of 124610 MiB",
    ]
