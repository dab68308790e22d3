# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A node's memory guard settings (the vllm_serve role's memory_guard_settings filter): the resume level raised to
what vLLM's memory gate waits for on that node, and levels checked against its MemTotal, naming the variables."""

from __future__ import annotations

import math
import typing as t

import pytest
from ansible_collections.sparkops.inference.plugins.module_utils._memory_guard import GuardSettings, MemoryGuardError
from ansible_collections.sparkops.inference.plugins.plugin_utils._memory_guard_settings import gate_level_mib, node_settings

GB10 = "MemTotal:       125526716 kB\nMemFree:         1000000 kB\nMemAvailable:   18912256 kB\nSwapFree:              0 kB\n"
GB10_TOTAL_MIB = 125526716 // 1024
NAMES = {
    "stop_available_mib": "vllm_serve_memory_guard_stop_available_mib",
    "resume_available_mib": "vllm_serve_memory_guard_resume_available_mib",
    "interval_s": "vllm_serve_memory_guard_interval_s",
}


def settings(meminfo: str = GB10, **kwargs: t.Any) -> dict[str, t.Any]:
    kwargs.setdefault("levels", {"stop_available_mib": 2048, "resume_available_mib": 8192})
    return node_settings(meminfo, units=["sparkops-vllm.service"], names=NAMES, state_path="/var/lib/sparkops/vllm-memory-guard.json", **kwargs)


def test_on_a_gb10_the_resume_level_is_the_gates_share_of_memtotal_and_the_guard_reads_the_result() -> None:
    found = settings(gpu_memory_utilization=0.85, textfile_dir="/var/lib/prometheus/node-exporter")
    assert found["resume_available_mib"] == math.ceil(GB10_TOTAL_MIB * 0.85) == 104_197
    parsed = GuardSettings.from_dict(found, mem_total_mib=GB10_TOTAL_MIB)
    assert (parsed.levels.stop_available_mib, parsed.levels.resume_available_mib, parsed.textfile_dir) == (2048, 104_197, "/var/lib/prometheus/node-exporter")
    assert parsed.levels.name("resume_available_mib") == "vllm_serve_memory_guard_resume_available_mib"


def test_a_gate_level_set_in_mib_wins_over_the_share_and_a_higher_asked_level_stays() -> None:
    assert settings(gate_min_available_mib=512, gpu_memory_utilization=0.85)["resume_available_mib"] == 8192
    assert settings(gate_min_available_mib=20_000, gpu_memory_utilization=0.85)["resume_available_mib"] == 20_000
    assert gate_level_mib(1000, None, 0.5) == 500 and gate_level_mib(1000, 0, 0.5) == 500 and gate_level_mib(1000, 300, 0.5) == 300


def test_defaults_apply_to_levels_left_out_and_a_null_psi_level_is_kept_as_off() -> None:
    found = settings(levels={"stop_psi_full_pct": None, "interval_s": None})
    assert found["stop_psi_full_pct"] is None and "interval_s" not in found and "textfile_dir" not in found
    assert "resume_available_mib" not in found  # the guard's default (8192 MiB), above the gate's share of 0
    assert GuardSettings.from_dict(found).levels.resume_available_mib == 8192


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"levels": {"stop_available_mib": 200_000}}, "vllm_serve_memory_guard_stop_available_mib is 200000 MiB, not below this host's MemTotal of 122584 MiB"),
        ({"levels": {"interval_s": 0}}, "vllm_serve_memory_guard_interval_s is 0.0: seconds above 0"),
        (
            {"levels": {"stop_available_mib": 9000}},
            "vllm_serve_memory_guard_resume_available_mib (8192 MiB) must be above vllm_serve_memory_guard_stop_available_mib (9000 MiB)",
        ),
        ({"levels": {"stop_pct": 3}}, "unknown level(s) stop_pct"),
        ({"gpu_memory_utilization": 1.0}, "(the resume level is the memory gate's, 122584 MiB"),
        ({"gpu_memory_utilization": 1.5}, "gpu_memory_utilization is 1.5: a fraction from 0 to 1"),
        ({"gate_min_available_mib": -1}, "the memory gate's level is -1"),
    ],
)
def test_levels_that_make_no_sense_on_this_node_are_refused_naming_the_variable(kwargs: dict[str, t.Any], message: str) -> None:
    with pytest.raises(MemoryGuardError) as caught:
        settings(**kwargs)
    assert message in str(caught.value)


def test_a_meminfo_that_is_not_one_is_a_clear_error() -> None:
    with pytest.raises(MemoryGuardError, match="MemTotal"):
        settings(meminfo="MemFree: 1 kB\n")


def test_a_raised_resume_level_refused_names_the_gates_variables_from_names_and_keeps_them_out_of_the_settings() -> None:
    gate_names = {"gate_min_available_mib": "vllm_serve_gate_min_available_mib", "gpu_memory_utilization": "vllm_serve_gpu_memory_utilization"}
    with pytest.raises(MemoryGuardError) as caught:
        node_settings(
            GB10, units=["u.service"], levels={"stop_available_mib": 2048}, names={**NAMES, **gate_names}, state_path="/s.json", gpu_memory_utilization=1.0
        )
    assert "122584 MiB: vllm_serve_gate_min_available_mib, else vllm_serve_gpu_memory_utilization x MemTotal 122584 MiB" in str(caught.value)
    with pytest.raises(MemoryGuardError) as unnamed:
        settings(gpu_memory_utilization=1.0)
    assert "122584 MiB: gate_min_available_mib, else gpu_memory_utilization x MemTotal" in str(unnamed.value)
    found = node_settings(GB10, units=["u.service"], levels={}, names={**NAMES, **gate_names}, state_path="/s.json", gpu_memory_utilization=0.5)
    assert found["names"] == NAMES
